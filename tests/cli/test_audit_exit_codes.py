"""``agent-reminders audit`` exit codes, as CI reads them: 0 a clean run, 1 a prefix break with
``--fail-on-break``, 2 an error — and every error is one ``error: RMD-NNN: …`` line."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from cli_process import run

ROOT = Path(__file__).resolve().parents[2]
ERROR = re.compile(r"^error: RMD-\d{3}: ")


def chat(*texts: str) -> dict[str, Any]:
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": t}
                for i, t in enumerate(texts)]  # fmt: skip
    return {"messages": [{"role": "system", "content": "Be brief."}, *messages]}


def write(path: Path, *lines: Any) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


@pytest.fixture
def clean(tmp_path: Path) -> Path:
    return write(tmp_path / "clean.jsonl", chat("a"), chat("a", "b"), chat("a", "b", "c"))


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    return write(tmp_path / "broken.jsonl", chat("a"), chat("a", "b"), chat("a", "x"))


def test_clean_run_0_break_1_error_2(tmp_path: Path, clean: Path, broken: Path) -> None:
    ok = run("audit", str(clean), "--fail-on-break", "--encoding", "bytes/4", cwd=tmp_path)
    assert (ok.code, ok.err) == (0, "")
    found = run("audit", str(broken), "--fail-on-break", "--json", cwd=tmp_path)
    assert found.code == 1
    assert json.loads(found.out)["prefix_breaks"]  # the report comes first
    assert "error:" not in found.err
    # without --fail-on-break a break is a finding, not a failure
    assert run("audit", str(broken), "--json", cwd=tmp_path).code == 0
    bad = write(tmp_path / "bad.jsonl", chat("a"))
    with bad.open("a", encoding="utf-8") as f:
        f.write("{oops\n")
    for extra in ([], ["--fail-on-break"]):
        failed = run("audit", str(bad), *extra, cwd=tmp_path)
        assert failed.code == 2, failed
        assert failed.out == ""
        assert failed.line.startswith(f"error: RMD-111: {bad} line 2: not valid JSON")


def _unreadable(tmp_path: Path) -> str:
    path = write(tmp_path / "secret.jsonl", chat("a"))
    path.chmod(0)
    return str(path)


CASES = {
    "missing file": lambda tmp: [str(tmp / "nope.jsonl")],
    "a directory": lambda tmp: [str(tmp)],
    "no request": lambda tmp: [str(write(tmp / "empty.jsonl"))],
    "unknown encoding": lambda tmp: [str(write(tmp / "r.jsonl", chat("a"))), "--encoding", "o300k"],
    "unknown format": lambda tmp: [str(write(tmp / "r.jsonl", chat("a"))), "--format", "gemini"],
    "negative price": lambda tmp: [str(write(tmp / "r.jsonl", chat("a"))), "--price-read", "-1"],
    "html into a missing folder": lambda tmp: [
        str(write(tmp / "r.jsonl", chat("a"))),
        "--html",
        str(tmp / "no" / "such" / "report.html"),
    ],
    "unreadable file": _unreadable,
}


@pytest.mark.parametrize("case", CASES)
def test_every_error_is_one_rmd_line_and_exit_2(tmp_path: Path, case: str) -> None:
    if case == "unreadable file" and os.geteuid() == 0:
        pytest.skip("root reads a file whatever its mode")
    args = CASES[case](tmp_path)
    for extra in ([], ["--fail-on-break"]):
        done = run("audit", *args, *extra, cwd=tmp_path)
        assert done.code == 2, done
        assert done.out == ""
        assert ERROR.match(done.line), done.line


def test_a_missing_file_names_the_file_and_the_reason(tmp_path: Path) -> None:
    done = run("audit", "nope.jsonl", cwd=tmp_path)
    assert done.line == "error: RMD-111: nope.jsonl: cannot be read (No such file or directory)"


def test_the_exit_codes_are_documented() -> None:
    help_text = " ".join(run("audit", "--help", cwd=ROOT, env={"COLUMNS": "2000"}).out.split())
    for said in (
        "Exit codes: 0 a clean run",
        "1 a prefix break with --fail-on-break",
        "2 an error",
    ):
        assert said in help_text, said
    doc = (ROOT / "docs" / "audit.md").read_text(encoding="utf-8")
    assert "| `2` |" in doc
    assert "| `1` |" in doc
    assert "| `0` |" in doc
