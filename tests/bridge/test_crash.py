"""The crash test (docs/storage.md, the ``SQLiteStore`` backend): ``serve`` on SQLite,
SIGKILLed at random moments while it
takes a stream of reminders, restarted on the same file, many rounds.

30 rounds by default; ``AGENT_REMINDERS_SLOW=1`` runs 100 (``bench/crash.py`` reports the
figures of its own run in ``bench/results.md``).
"""

from __future__ import annotations

import os
from pathlib import Path

from crashkit import CrashRun

ROUNDS = 100 if os.environ.get("AGENT_REMINDERS_SLOW") == "1" else 30


def test_every_acknowledged_reminder_survives_sigkill_exactly_once(tmp_path: Path) -> None:
    figures = CrashRun(tmp_path, seed=6).run(ROUNDS)
    assert figures.failures == []
    assert figures.rounds == ROUNDS
    # the rounds did real work: reminds were acknowledged, prompts drained the queue
    assert figures.acked > ROUNDS
    assert figures.prompts > 0
