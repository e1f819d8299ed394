"""bench/soak.py end to end, briefly: a real ``serve --ws`` subprocess, real WebSocket clients,
memory and open files sampled, every acknowledged reminder found in the store once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_soak_benchmark_runs_and_accounts_for_every_acknowledgement(tmp_path: Path) -> None:
    out = tmp_path / "results.md"
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "soak.py"), "--minutes", "0.1", "--sessions", "3",
         "--sample-every", "2", "--json", "--output", str(out)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    figures = json.loads(done.stdout)
    assert figures["acked"] > 0
    assert figures["prompts"] > 0
    assert figures["errors"] == []
    assert (figures["found_once"], figures["missing"], figures["duplicated"]) == (
        figures["acked"],
        0,
        0,
    )
    assert len(figures["samples"]) >= 3
    assert all(rss > 0 and fds > 0 for _, rss, fds in figures["samples"])
    text = out.read_text(encoding="utf-8")
    assert "## Soak: `serve` over WebSocket (`bench/soak.py`)" in text
    assert "exactly once, 0 missing, 0 duplicated" in text
