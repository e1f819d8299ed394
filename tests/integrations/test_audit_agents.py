"""The billed audit's acceptance test on the real Claude Code CLI: the audit of the transcript
Claude Code writes must find exactly the cache misses that happened, with their causes, and
no other.

Each scenario of ``_claude_code_sessions.py`` runs the pinned ``claude -p`` (2.1.332) offline
against a ``RecordingModelServer`` whose usage comes from the library's simulated prompt cache
(``AnthropicPromptCache`` on a ``FakeClock``); an idle gap moves that clock and, with
libfaketime, the CLI's (so the transcript's timestamps move too). ``audit_file`` on the
project folder Claude Code wrote must then report the misses the cache produced.

Opt-in like ``test_claude_code_cli.py`` (``AGENT_REMINDERS_SLOW=1``, which CI sets): it uses
the same npm install of the CLI (about 400 MB the first time); each scenario runs once per
module, on first use.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _agent_clis import CLAUDE_CODE, ROOT, slow_only
from _claude_code_sessions import (
    SCENARIOS,
    Recorded,
    faketime_library,
    run_scenario,
)

from agent_reminders.audit import BilledReport, audit_file

pytestmark = slow_only(CLAUDE_CODE)

# The misses each scenario must show, (request, cause) in order; request None where the
# position is a race (a sub-agent runs in the background: its first request and the parent's
# next one go out together, and the folder's timeline orders them by their timestamps).
EXPECTED: dict[str, list[tuple[int | None, str]]] = {
    "baseline": [],
    "hook-context": [],  # a hook's context is appended each run, never re-rendered
    "ttl-1h": [],  # ten minutes idle, but the 1-hour entries survive
    "idle-gap": [(2, "idle_gap")],  # ten minutes idle past the 5-minute entries
    "compact": [(2, "compaction")],
    "model-switch": [(2, "model_changed"), (3, "model_changed")],  # sonnet → opus → haiku
    "subagent": [(None, "subagent_cold_start")],
}
GAPPED = {"idle-gap", "ttl-1h"}


@pytest.fixture(scope="module")
def claude() -> Path:
    return CLAUDE_CODE.installed_or_skip(
        "the pinned Claude Code CLI could not be installed (npm missing or failed)"
    )


@pytest.fixture(scope="module")
def session(claude: Path, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Recorded]:
    """``session(name)``: scenario ``name``, run once for the module, every run checked."""
    done: dict[str, Recorded] = {}

    def get(name: str) -> Recorded:
        if name not in done:
            if name in GAPPED and faketime_library() is None:
                pytest.skip("no libfaketime.so.1: pip install libfaketime (the dev extra)")
            recorded = run_scenario(name, claude, tmp_path_factory.mktemp(name))
            for run in recorded.runs:
                assert run.returncode == 0, (run.prompt, run.stderr, run.result)
            assert [status for status, _ in recorded.replies] == [200] * len(recorded.replies)
            done[name] = recorded
        return done[name]

    return get


def billed(recorded: Recorded) -> BilledReport:
    report = audit_file(recorded.folder)
    assert report.format == "directory"
    assert report.billed is not None
    return report.billed


def assistant_entries(recorded: Recorded) -> list[dict[str, Any]]:
    """Every billed ``assistant`` entry Claude Code wrote, in every transcript file."""
    entries = [
        json.loads(line)
        for path in recorded.transcript_files()
        if path.suffix == ".jsonl"
        for line in path.read_text(encoding="utf-8").splitlines()
    ]
    return [
        e
        for e in entries
        if e.get("type") == "assistant"
        and e["message"].get("model") != "<synthetic>"
        and not e.get("isApiErrorMessage")
    ]


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_the_audit_finds_exactly_the_misses_that_happened(
    session: Callable[[str], Recorded], name: str
) -> None:
    recorded = session(name)
    report = billed(recorded)
    found = [(m.request, m.cause) for m in report.misses]
    expected = EXPECTED[name]
    assert [cause for _, cause in found] == [cause for _, cause in expected], found
    for (request, _), (want, _) in zip(found, expected, strict=True):
        if want is not None:
            assert request == want, found
    rows = report.rows
    if name in GAPPED:  # libfaketime moved the transcript's clock by the ten idle minutes
        main = [r.call for r in rows if r.call.agent is None]
        before, after = main[-2].timestamp, main[-1].timestamp
        assert before is not None
        assert after is not None
        gap = (after - before).total_seconds()
        assert 600 <= gap < 660, gap
    if name == "ttl-1h":  # every write asked for an hour
        assert all(r.call.written_1h == r.call.written > 0 for r in rows)
    if name == "model-switch":
        models = [r.call.model for r in rows]
        switches = sum(a != b for a, b in itertools.pairwise(models))
        assert models[0] == models[1] == "claude-sonnet-4-5"
        assert models[-1] == "claude-haiku-4-5"
        assert switches == 2
    if name == "subagent":
        (miss,) = report.misses
        (row,) = [r for r in rows if r.call.index == miss.request]
        assert row.call.agent is not None
        assert row.expected_read is None  # the first of its chain
        assert len({r.call.agent for r in rows if r.call.agent is not None}) == 1
        assert miss.tokens == row.call.written > 0
    if name == "hook-context":  # the hook's context changed at every run, and stayed
        last = json.dumps(recorded.requests[-1].json["messages"])
        assert sorted(re.findall(r"hook run (\d+) at", last)) == [str(n) for n in range(1, 7)]


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_costs(session: Callable[[str], Recorded], name: str) -> None:
    report = billed(session(name))
    assert report.unpriced == ()
    assert report.cost > 0
    assert all(r.cost is not None and r.cost > 0 for r in report.rows)
    missed = bool(EXPECTED[name])
    assert all(m.tokens > 0 and m.cost is not None and m.cost > 0 for m in report.misses)
    assert (report.cost - report.miss_cost < report.cost) == missed
    assert (report.miss_cost > 0) == missed


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_the_transcript_says_what_the_servers_cache_answered(
    session: Callable[[str], Recorded], name: str
) -> None:
    """The rig itself: each assistant entry's usage is what the server's simulated cache
    answered for that request (by message id), so the audit reads the cache's own figures."""
    recorded = session(name)
    answered = {
        body["id"]: body
        for status, body in recorded.replies
        if status == 200 and isinstance(body, dict) and body.get("type") == "message"
    }
    entries = assistant_entries(recorded)
    assert entries
    for entry in entries:
        message = entry["message"]
        reply = answered[message["id"]]
        assert message["model"] == reply["model"]
        for figure in ("cache_read_input_tokens", "cache_creation_input_tokens", "input_tokens"):
            assert message["usage"][figure] == reply["usage"][figure], (message["id"], figure)
    report = billed(recorded)
    assert len(report.rows) == len({e["message"]["id"] for e in entries})


@pytest.mark.parametrize("name", ["baseline", "idle-gap", "subagent"])
def test_fail_on_miss_exits_1_on_a_miss(session: Callable[[str], Recorded], name: str) -> None:
    folder = session(name).folder
    done = subprocess.run(
        [sys.executable, "-m", "agent_reminders", "audit", str(folder), "--fail-on-miss"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        timeout=120,
        check=False,
    )
    assert done.returncode == (1 if EXPECTED[name] else 0), done.stdout + done.stderr
    for _, cause in EXPECTED[name]:
        assert cause in done.stdout
