"""bench/audit_speed.py runs (on a short log) and writes its section; the timing itself is
context in bench/results.md, never an assertion."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_audit_speed_benchmark_runs(tmp_path: Path) -> None:
    out = tmp_path / "results.md"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "audit_speed.py"),
            "--requests",
            "5",
            "--runs",
            "1",
            "--output",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    text = out.read_text(encoding="utf-8")
    assert "## Audit speed (`bench/audit_speed.py`)" in text
    for row in ("| request log | log |", "| OpenAI Chat | openai_chat |", "| Anthropic"):
        assert row in text
    assert "breaks [(3, 'message_changed')]" in text  # the compaction, 3/5 of the way
