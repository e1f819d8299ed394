"""The billed audit's acceptance test on the real Codex CLI: the audit of the rollout Codex
writes must find exactly the cache misses the scripted session caused, with their causes, and
no other.

Each scenario of ``_codex_sessions.py`` runs the pinned ``codex exec`` then ``codex exec
resume <id>`` (0.171.0) offline against the fake Responses API of ``_fake_responses.py`` with
``cache="by_key"``: its usage comes from a simulated OpenAI prompt cache (the leading prompt
items equal to the previous request's with the same ``model`` and ``prompt_cache_key``).
``audit_file`` on the ``$CODEX_HOME/sessions`` folder Codex wrote must report the misses that
cache produced, and each request's billed ``read`` must be the ``cached_tokens`` the fake
reported for it (matched through the ``response_id`` Codex records).

The idle gap is not run here: the npm package's Linux binary is a static-pie musl executable
(libfaketime's ``LD_PRELOAD`` never reaches it, so its clock cannot be moved) and a real
10-minute wait is too long for CI. The fixture ``tests/fixtures/transcripts/codex/idle_wait``,
recorded with a real 10-minute pause, covers it in the fast tests
(``tests/audit/test_billed.py``, ``CODEX``), as it does the rollout without usage.

Opt-in like ``test_codex_cli.py`` (``AGENT_REMINDERS_SLOW=1``, which CI sets): it uses the
same npm install of the CLI (``.venv/codex``, about 420 MB the first time; a worktree can point
``AGENT_REMINDERS_CODEX_PREFIX`` at the main checkout's); each scenario runs once per module,
on first use.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from _agent_clis import CODEX, ROOT, slow_only
from _codex_sessions import SCENARIOS, Session

from agent_reminders.audit import BilledReport, audit_file

pytestmark = slow_only(CODEX)

# The misses each scenario must show, (request, cause) in order.
EXPECTED: dict[str, list[tuple[int, str]]] = {
    "baseline": [],
    "agents_md": [],  # a changed AGENTS.md is appended as a new message, never re-rendered
    "hook_context": [],  # likewise the SessionStart hook's context of each run
    "model_switch": [(2, "model_changed")],
    # before the second turn: the summary request, then the conversation rebuilt after it
    "compaction": [(2, "compaction"), (3, "compaction")],
    # inside the first turn, before the tool's output is sent
    "compaction_mid_turn": [(1, "compaction"), (2, "compaction")],
    # The tools (--disable goals) and the base instructions (model_instructions_file) change
    # the prompt's first items, but nothing in the rollout shows either change (no tools, no
    # instructions text, no setting that names them): the audit cannot tell why, and says so.
    "tools_change": [(2, "unexplained")],
    "base_instructions": [(2, "unexplained")],
}
MODELS = {"model_switch": ("gpt-fake", "other-model")}


@pytest.fixture(scope="module")
def codex() -> Path:
    return CODEX.installed_or_skip(
        "the pinned Codex CLI could not be installed (npm missing or failed)"
    )


@pytest.fixture(scope="module")
def session(
    codex: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[[str], Session]]:
    """``session(name)``: scenario ``name``, run once for the module (the driver checks that
    every run succeeded and the fake saw no error); the servers close at the end."""
    done: dict[str, Session] = {}

    def get(name: str) -> Session:
        if name not in done:
            done[name] = SCENARIOS[name](codex, tmp_path_factory.mktemp(name))
        return done[name]

    yield get
    for recorded in done.values():
        recorded.server.close()


def folder(recorded: Session) -> Path:
    return recorded.codex_home / "sessions"


def billed(recorded: Session) -> BilledReport:
    report = audit_file(folder(recorded))
    assert report.format == "directory"
    assert report.billed is not None
    assert report.billed.provider == "openai"
    return report.billed


@pytest.mark.parametrize("name", list(EXPECTED))
def test_the_audit_finds_exactly_the_misses_that_happened(
    session: Callable[[str], Session], name: str
) -> None:
    recorded = session(name)
    assert len(recorded.rollouts()) == 1  # the resumed run appends to the first run's rollout
    report = billed(recorded)
    found = [(m.request, m.cause) for m in report.misses]
    assert found == EXPECTED[name], [(m.request, m.cause, m.detail) for m in report.misses]
    assert all(m.tokens > 0 for m in report.misses)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_each_billed_read_is_what_the_fake_reported(
    session: Callable[[str], Session], name: str
) -> None:
    """Row by row, through the ``response_id`` of the rollout's ``token_usage_record``: the
    audit reads the cached tokens the fake's cache answered, for every response, once."""
    recorded = session(name)
    server = recorded.server
    reported = dict(server.usages)
    report = billed(recorded)
    seen: list[int] = []
    for row in report.rows:
        assert row.call.source is not None
        assert row.call.line is not None
        lines = Path(row.call.source).read_text(encoding="utf-8").splitlines()
        entry = json.loads(lines[row.call.line - 1])
        assert entry["type"] == "token_usage_record"
        request = server.responses[entry["payload"]["response_id"]]
        usage = reported[request]
        assert row.call.read == usage["input_tokens_details"]["cached_tokens"], row
        assert row.call.prompt == usage["input_tokens"], row
        assert row.call.model == server.requests[request].json["model"]
        seen.append(request)
    assert seen == sorted(reported)  # every reported usage, in the order it was sent


@pytest.mark.parametrize("name", list(EXPECTED))
def test_the_fake_models_are_not_priced(session: Callable[[str], Session], name: str) -> None:
    report = billed(session(name))
    assert report.unpriced == MODELS.get(name, ("gpt-fake",))
    assert report.to_json()["cost"]["unpriced_models"] == list(report.unpriced)
    assert all(r.cost is None for r in report.rows)
    assert all(m.cost is None for m in report.misses)
    assert report.cost == report.miss_cost == 0


@pytest.mark.parametrize("name", ["baseline", "compaction"])
def test_fail_on_miss_exits_1_on_a_miss(session: Callable[[str], Session], name: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agent_reminders", "audit", str(folder(session(name))),
         "--fail-on-miss"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        timeout=120,
        check=False,
    )  # fmt: skip
    assert done.returncode == (1 if EXPECTED[name] else 0), done.stdout + done.stderr
    for _, cause in EXPECTED[name]:
        assert cause in done.stdout
