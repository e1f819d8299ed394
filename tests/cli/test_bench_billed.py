"""bench/billed.py end to end: the demo and bench/cache.py's strategies through the Anthropic
cache oracle, audited from the usage it reports (deterministic: its figures are asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def test_the_providers_numbers_of_the_demo_and_the_strategies() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "billed.py"), "--json", "--turns", "60"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)

    def causes(name: str) -> set[str]:
        return {m["cause"] for m in found[name]["misses"]}

    # the demo: one miss, its compaction (the tools it announces change there too)
    (miss,) = found["demo"]["misses"]
    assert miss["cause"] == "compaction"
    assert "the tools changed too" in miss["detail"]
    # the library appends and keeps: every request reads what the one before it cached
    library = found["envelope"]
    assert library["misses"] == []
    assert library["read_share"] > 0.95
    assert library["cost"]["misses"] == 0
    # every other strategy pays for its misses, each for the cause it has
    assert causes("system_prompt") == {"system_changed"}
    assert causes("edit_history") == {"reminder_changed"}
    assert causes("ephemeral_tail") == {"reminder_changed"}
    for name in ("system_prompt", "edit_history", "ephemeral_tail"):
        cost = found[name]["cost"]
        assert cost["actual"] > library["cost"]["actual"]
        assert cost["without_misses"] < cost["actual"]
    assert found["ephemeral_tail"]["read_share"] < 0.05
