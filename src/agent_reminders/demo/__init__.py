"""The demo a newcomer runs first (``agent-reminders demo``, ``make demo``).

A scripted coding-agent session of about 30 turns on the real ``agent_loop``: the canonical
providers, a generator announcing a new tool, hooks, host pushes in each delivery mode, a
compaction with its recap and a reviewer sub-agent. Offline and deterministic. The scenario
(files, tasks, facts, pushes, the script) lives in :mod:`agent_reminders.demo.scenario`.

Example:
    >>> result = run_demo(turns=MIN_TURNS)
    >>> len(result.requests), result.compaction_request, result.statuses
    (22, 14, {'task 1': 'completed', 'reviewer': 'completed', 'task 2': 'completed'})
    >>> [(row.title, row.entries[0].kind) for row in result.rows[:2]]
    [('task 1', 'user'), ('turn 0', 'sent')]
"""

from __future__ import annotations

from .run import DemoResult, demo_script, run_demo
from .scenario import DEFAULT_TURNS, MAX_TURNS, MIN_TURNS
from .timeline import ENTRY_KINDS, Delivery, Entry, EntryKind, Recorder, Row

__all__ = [
    "DEFAULT_TURNS",
    "Delivery",
    "DemoResult",
    "ENTRY_KINDS",
    "Entry",
    "EntryKind",
    "MAX_TURNS",
    "MIN_TURNS",
    "Recorder",
    "Row",
    "demo_script",
    "run_demo",
]
