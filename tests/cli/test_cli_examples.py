"""The command line, the example and the benchmark script run end to end."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_reminders import __version__, capabilities, explain
from agent_reminders.cli import app

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def test_explain_prints_the_paragraph() -> None:
    result = runner.invoke(app, ["explain", "rmd-004"])
    assert result.exit_code == 0
    assert result.stdout.strip() == explain("RMD-004")


def test_explain_unknown_code_is_one_line_and_exit_2() -> None:
    result = runner.invoke(app, ["explain", "RMD-999"])
    assert result.exit_code == 2
    assert "unknown diagnostic code 'RMD-999'" in result.output
    assert "Traceback" not in result.output


def test_version() -> None:
    result = runner.invoke(app, ["version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == __version__


def test_quickstart_example_runs() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "quickstart.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "prefix breaks: [(4, 'message_changed')]" in done.stdout
    assert "append-only holds" in done.stdout


def test_turn_cost_benchmark_runs(tmp_path: Path) -> None:
    out = tmp_path / "results.md"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "turn_cost.py"),
            "--turns",
            "30",
            "--rounds",
            "1",
            "--output",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    text = out.read_text(encoding="utf-8")
    assert "| 10,000 | 20 |" in text
    assert "Growth ratio t(10k)/t(100)" in text


def test_side_by_side_benchmark_runs(tmp_path: Path) -> None:
    """bench/beside.py with this tree on both sides: every row, a ratio and a verdict each."""
    out = tmp_path / "results.md"
    command = [sys.executable, str(ROOT / "bench" / "beside.py")]
    small = ["--rounds", "1", "--turns", "30", "--repeats", "1", "--output", str(out)]
    done = subprocess.run(
        [*command, str(ROOT), *small], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    text = out.read_text(encoding="utf-8")
    assert "## Beside the tree before the core restructuring" in text
    rows = [
        line for line in text.splitlines() if line.startswith("| `") or line.startswith("| same")
    ]
    assert len(rows) == 7
    assert all(row.rstrip(" |").endswith(("met", "here)")) for row in rows)
    refused = subprocess.run(
        [*command, str(tmp_path), *small], capture_output=True, text=True, timeout=60, check=False
    )
    assert refused.returncode == 2
    assert "is not a checkout of agent-reminders" in refused.stderr


def test_bridge_benchmark_runs(tmp_path: Path) -> None:
    """bench/bridge.py end to end with tiny rounds: real servers in subprocesses, real
    WebSocket clients; the figures have their shape and every acknowledged remind is stored.
    ``--beside`` runs another checkout's bridge in the same rounds (this one stands in)."""
    out = tmp_path / "results.md"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "bridge.py"),
            "--rounds",
            "1",
            "--requests",
            "50",
            "--sessions",
            "5",
            "--json",
            "--output",
            str(out),
            "--beside",
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert sorted(figures["clients"], key=int) == ["1", "10", "50"]
    for row in figures["clients"].values():
        for kind in ("bridge", "echo", "memory", "before"):
            assert row[kind]["throughput"] > 0
            assert 0 < row[kind]["p50_ms"] <= row[kind]["p99_ms"]
        assert row["ratio"] == row["bridge"]["throughput"] / row["echo"]["throughput"]
        assert row["echo"]["reply_bytes"] == row["echo"]["request_bytes"]  # sent back as is
    assert figures["stored"] == figures["acknowledged"] > 0
    assert set(figures["bytes_per_idle_session"]) == {"sqlite", "memory"}
    text = out.read_text(encoding="utf-8")
    assert "## Bridge over WebSocket (`bench/bridge.py`)" in text
    assert "| clients | bridge reminds/s |" in text
    assert "| clients | before reminds/s |" in text
    assert "| clients | on `MemoryStore` reminds/s |" in text
    assert "| `MemoryStore` |" in text


def test_workers_benchmark_runs(tmp_path: Path) -> None:
    if shutil.which("redis-server") is None:
        pytest.skip("no redis-server binary on PATH (apt-get install redis-server)")
    out = tmp_path / "results.md"
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "workers.py"), "--quick", "--output", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    text = out.read_text(encoding="utf-8")
    rows = [line.split(" | ")[:2] for line in text.splitlines() if line.startswith("| ")]
    assert rows[1:] == [["| sqlite", "1"], ["| redis", "1"], ["| redis", "2"]]


def readme_python_block(marker: str) -> str:
    """The README's one Python block that holds ``marker``."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = [b.split("```", 1)[0] for b in text.split("```python\n")[1:]]
    (code,) = [b for b in blocks if marker in b]
    return code


def test_readme_example_runs() -> None:
    code = readme_python_block("check_append_only(requests)")
    namespace: dict[str, object] = {}
    exec(compile(code, "README.md", "exec"), namespace)
    kinds = namespace["log"].records  # type: ignore[attr-defined]
    assert [r.kind.rsplit(".", 1)[1] for r in kinds] == [
        "injected",
        "fired",
        "iteration_summary",
        "expired",
    ]


def test_readme_langchain_example_runs_and_sends_the_reminder(monkeypatch) -> None:
    """The README's first example, the LangChain one, as it stands: its ``ChatOpenAI`` talks to a
    local recording server (``OPENAI_BASE_URL``), and the pushed reminder is in the request."""
    pytest.importorskip("langchain_openai")
    from agent_reminders.testing import RecordingModelServer

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    code = readme_python_block("ChatOpenAI(model=")
    assert text.index(code) < text.index(readme_python_block("check_append_only(requests)"))
    with RecordingModelServer([{"content": "On it."}]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.delenv("OPENAI_API_BASE", raising=False)
        namespace: dict[str, object] = {}
        exec(compile(code, "README.md", "exec"), namespace)
    (request,) = server.requests
    messages = request.json["messages"]
    assert messages[0] == {"role": "user", "content": "Fix the parser."}
    assert "CI is red on main." in messages[-1]["content"]
    assert "<context-directives" in messages[-1]["content"]


@pytest.mark.parametrize(
    "doc",
    [
        "docs/core.md",
        "docs/demo.md",
        "docs/session-loop.md",
        "docs/facts.md",
        "docs/generators.md",
        "docs/wire-formats.md",
        "docs/channels.md",
        "docs/models.md",
        "docs/bridge.md",
        "docs/langchain.md",
        "docs/pydantic-ai.md",
        "docs/openai-agents.md",
        "docs/protocol.md",
        "docs/audit.md",
        "docs/index.md",
        "docs/security.md",
        "docs/claude-code.md",
        "docs/many-workers.md",
        "docs/tutorial.md",
        "docs/howto-push.md",
        "docs/howto-restarts.md",
        "docs/howto-workers.md",
        "docs/howto-audit.md",
        "docs/howto-channel.md",
        "docs/howto-nagging.md",
        "docs/howto-forged-tags.md",
        "docs/restraint.md",
        "docs/concepts-append-only.md",
        "docs/concepts-lifetime.md",
        "docs/concepts-authority.md",
        "docs/concepts-channels.md",
        "docs/concepts-events.md",
    ],
)
def test_doc_examples_run(doc: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Examples register capability rows for the process; keep them out of later tests.
    monkeypatch.setattr(capabilities, "_registered", list(capabilities._registered))
    monkeypatch.setattr(capabilities, "_cache", {})
    text = (ROOT / doc).read_text(encoding="utf-8")
    blocks = [b.split("```", 1)[0] for b in text.split("```python\n")[1:]]
    assert blocks, f"{doc} has no python example"
    for index, code in enumerate(blocks):
        namespace: dict[str, object] = {}
        exec(compile(code, f"{doc}[{index}]", "exec"), namespace)
