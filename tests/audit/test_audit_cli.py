"""``agent-reminders audit`` (docs/audit.md) — the ``--json`` object with exactly its keys, the
table, ``--html``, ``--fail-on-break``, stdin, bad lines, the prices, and the tokenizer fallback."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from audit_helpers import assistant, run_cli, tokens_b4, user, write_jsonl
from typer.testing import CliRunner

import agent_reminders.cli.common as cli_common
from agent_reminders.audit import audit_requests, load_tokenizer
from agent_reminders.cli import app

runner = CliRunner()

KEYS = [  # the report's keys, in their documented order
    "format",
    "encoding",
    "requests",
    "prompt_tokens",
    "final_prompt_tokens",
    "prefix_breaks",
    "reuse",
    "uncached_tokens",
    "uncached_over_final",
    "cost_ratio",
    "directive_tokens",
    "directive_overhead",
    "nag",
]
MODELS = {"exact", "openai", "anthropic", "vllm"}
A, B, C = user("read the file " * 30), assistant("it says hi " * 30), user("now fix it")


@pytest.fixture(autouse=True)
def _no_debug(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_common.state, "debug", False)


def chat(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"messages": [{"role": "system", "content": "Be brief."}, *messages]}


@pytest.fixture
def clean(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "clean.jsonl", [chat(A), chat(A, B), chat(A, B, C)])


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "broken.jsonl", [chat(A), chat(A, B), chat(A, C)])


def audit(*args: str, input: str | None = None) -> Any:
    return runner.invoke(app, ["audit", *args], input=input)


@pytest.mark.usefixtures("tiktoken_encodings")
def test_json_has_exactly_the_documented_keys(clean: Path) -> None:
    result = audit(str(clean), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) == set(KEYS)
    assert list(data) == KEYS  # and in their documented order
    assert set(data["reuse"]) == set(data["uncached_tokens"]) == MODELS
    assert set(data["cost_ratio"]) == {"openai", "anthropic"}
    assert data["format"] == "openai_chat"
    assert data["encoding"] == "o200k_base"
    assert data["requests"] == 3
    assert data["prefix_breaks"] == []
    assert data["uncached_over_final"] == 1.0
    assert isinstance(data["prompt_tokens"], int)
    assert isinstance(data["directive_tokens"], int)
    assert data["uncached_tokens"]["exact"] == data["final_prompt_tokens"]


def test_json_breaks_and_fail_on_break(broken: Path, clean: Path) -> None:
    result = audit(str(broken), "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["prefix_breaks"] == [
        {"request": 2, "message": 1, "reason": "message_changed"}
    ]
    failed = audit(str(broken), "--json", "--fail-on-break")
    assert failed.exit_code == 1
    assert json.loads(failed.stdout)["prefix_breaks"]  # the report is printed first
    assert audit(str(clean), "--fail-on-break").exit_code == 0
    table = audit(str(broken), "--fail-on-break")
    assert table.exit_code == 1
    assert "message_changed" in table.stdout


def test_the_table(broken: Path) -> None:
    result = audit(str(broken))
    assert result.exit_code == 0
    out = result.stdout
    for words in ("prompt-cache audit", "openai_chat", "o200k_base", "prefix breaks", "vllm"):
        assert words in out
    report = audit_requests([chat(A), chat(A, B), chat(A, C)])
    assert f"{report.prompt_tokens:,}" in out
    assert f"{report.reuse['exact']:.2%}" in out


def test_html_is_written(tmp_path: Path, broken: Path) -> None:
    out = tmp_path / "report.html"
    result = audit(str(broken), "--html", str(out), "--json")
    assert result.exit_code == 0
    html = out.read_text(encoding="utf-8")
    assert html.startswith("<!doctype html>")
    assert html.count("<svg") == 4
    assert 'class="break" data-request="2"' in html
    assert json.loads(result.stdout)["requests"] == 3  # stdout stays the JSON alone


def test_bad_line_is_one_error_line_and_nothing_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(chat(A)) + "\n" + "{oops\n", encoding="utf-8")
    out = tmp_path / "report.html"
    done = run_cli(["audit", str(path), "--json", "--html", str(out)])
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"error: RMD-111: {path} line 2: not valid JSON")
    assert "Traceback" not in done.stderr
    assert not out.exists()


def test_stdin_dash(broken: Path) -> None:
    done = run_cli(["audit", "-", "--json"], stdin=broken.read_text(encoding="utf-8"))
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["requests"] == 3
    assert data["prefix_breaks"] == [{"request": 2, "message": 1, "reason": "message_changed"}]
    bad = run_cli(["audit", "-"], stdin='{"messages": []}\n[1]\n')
    assert bad.returncode == 2
    assert bad.stderr.strip() == "error: RMD-111: stdin line 2: not a JSON object but an array"
    failing = run_cli(["audit", "-", "--fail-on-break"], stdin=broken.read_text(encoding="utf-8"))
    assert failing.returncode == 1
    assert "message_changed" in failing.stdout


@pytest.mark.usefixtures("tiktoken_encodings")
def test_format_and_encoding_options(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "r.jsonl", [{"messages": [A]}, {"messages": [A, B]}])
    data = json.loads(audit(str(path), "--json", "--format", "anthropic").stdout)
    assert data["format"] == "anthropic"
    data = json.loads(audit(str(path), "--json", "--encoding", "bytes/4").stdout)
    assert data["encoding"] == "bytes/4"
    assert data["final_prompt_tokens"] == tokens_b4(A) + tokens_b4(B)
    assert json.loads(audit(str(path), "--json", "--encoding", "cl100k_base").stdout)[
        "encoding"
    ] == ("cl100k_base")
    bad = audit(str(path), "--encoding", "o300k")
    assert bad.exit_code == 2
    assert "--encoding 'o300k' is not a tiktoken encoding; known: " in bad.output
    wrong = audit(str(path), "--format", "gemini")
    assert wrong.exit_code == 2
    assert "--format must be one of auto, openai, anthropic, log" in wrong.output


def test_prices(broken: Path) -> None:
    plain = json.loads(audit(str(broken), "--json").stdout)["cost_ratio"]
    free = json.loads(
        audit(str(broken), "--json", "--price-read", "0", "--price-write", "1").stdout
    )["cost_ratio"]
    # these prompts are under 1,024 tokens: nothing is cached under either provider
    assert plain == free == {"openai": 1.0, "anthropic": 1.0}
    negative = audit(str(broken), "--price-read", "-1")
    assert negative.exit_code == 2
    assert "--price-read must be 0 or more" in negative.output


def test_missing_file_is_one_line(tmp_path: Path) -> None:
    result = audit(str(tmp_path / "nope.jsonl"))
    assert result.exit_code == 2
    assert result.output.startswith("error: ")
    assert "nope.jsonl" in result.output


# --- the fallback tokenizer -------------------------------------------------------------------


def test_without_tiktoken_the_fallback_is_used_and_said(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)  # import tiktoken raises ImportError
    tokenizer = load_tokenizer("o200k_base")
    assert tokenizer.name == "bytes/4"
    assert tokenizer.note is not None
    assert "tiktoken is not installed" in tokenizer.note
    assert "agent-reminders[audit]" in tokenizer.note
    report = audit_requests([chat(A), chat(A, B)])
    assert report.encoding == "bytes/4"
    assert report.tokenizer_note == tokenizer.note
    assert (
        report.prompt_tokens
        == audit_requests([chat(A), chat(A, B)], encoding="bytes/4").prompt_tokens
    )


def test_fallback_when_the_encoding_files_cannot_be_had(tmp_path: Path, clean: Path) -> None:
    """A tiktoken that cannot fetch its files (no network, no cache dir): the command says so
    on stderr and counts bytes / 4."""
    fake = tmp_path / "shadow" / "tiktoken"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(
        "def list_encoding_names():\n    return ['o200k_base', 'cl100k_base']\n"
        "def get_encoding(name):\n"
        "    raise OSError('Name or service not known: openaipublic.blob.core.windows.net')\n",
        encoding="utf-8",
    )
    done = run_cli(["audit", str(clean), "--json"], first_on_path=fake.parent)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["encoding"] == "bytes/4"
    assert done.stderr.startswith("note: token counts are bytes/4: tiktoken could not load")
    assert "TIKTOKEN_CACHE_DIR" in done.stderr
    table = run_cli(["audit", str(clean)], first_on_path=fake.parent)
    assert "tiktoken could not load o200k_base" in " ".join(table.stdout.split())


def test_fallback_note_in_process(monkeypatch: pytest.MonkeyPatch, clean: Path) -> None:
    """The same, in process: a tiktoken whose get_encoding raises OSError."""

    def get_encoding(name: str) -> None:
        raise OSError("no network\nand no cache")

    fake = types.SimpleNamespace(
        list_encoding_names=lambda: ["o200k_base"], get_encoding=get_encoding
    )
    monkeypatch.setitem(sys.modules, "tiktoken", fake)
    note = load_tokenizer().note
    assert note == (
        "tiktoken could not load o200k_base (OSError: no network and no cache); set "
        "TIKTOKEN_CACHE_DIR to a folder holding its files, or allow the download"
    )
    result = audit(str(clean), "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["encoding"] == "bytes/4"
    assert f"note: token counts are bytes/4: {note}" in result.stderr


# --- the provider's numbers ------------------------------------------------------------------

SESSIONS = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts" / "claude-code"


def test_a_claude_code_folder_prints_its_misses_and_fails_on_them(tmp_path: Path) -> None:
    folder = str(SESSIONS / "model-switch")
    shown = audit(folder)
    assert shown.exit_code == 0, shown.output
    assert "cache misses" in shown.output
    assert "model_changed" in shown.output
    assert "cost with no miss" in shown.output
    assert audit(folder, "--fail-on-miss").exit_code == 1
    assert audit(folder, "--fail-on-miss", "--ignore-cause", "model_changed").exit_code == 0
    assert audit(folder, "--max-misses", "2").exit_code == 0
    assert audit(folder, "--max-misses", "1").exit_code == 1
    assert audit(folder, "--max-miss-share", "1").exit_code == 0
    data = json.loads(audit(folder, "--json").stdout)
    assert data["format"] == "directory"
    assert [m["cause"] for m in data["billed"]["misses"]] == ["model_changed", "model_changed"]
    page = tmp_path / "r.html"
    assert audit(folder, "--html", str(page)).exit_code == 0
    assert 'data-cause="model_changed"' in page.read_text()


def test_prices_from_a_file_change_the_cost(tmp_path: Path) -> None:
    folder = str(SESSIONS / "baseline")
    before = json.loads(audit(folder, "--json").stdout)["billed"]["cost"]["actual"]
    prices = tmp_path / "p.toml"
    prices.write_text('["claude-opus"]\ninput = 50.0\noutput = 250.0\n')
    after = json.loads(audit(folder, "--json", "--prices", str(prices)).stdout)
    assert after["billed"]["cost"]["actual"] == pytest.approx(before * 10, rel=1e-3)
    prices.write_text("[claude-opus\n")
    bad = audit(folder, "--prices", str(prices))
    assert bad.exit_code == 2
    assert "RMD-104" in bad.output
    assert "not valid TOML" in bad.output


def test_miss_options_need_the_providers_numbers(clean: Path) -> None:
    done = audit(str(clean), "--fail-on-miss")
    assert done.exit_code == 2
    assert "has no provider numbers" in done.output
    unknown = audit(str(SESSIONS / "baseline"), "--ignore-cause", "bad_luck")
    assert unknown.exit_code == 2
    assert "not a cause" in unknown.output
