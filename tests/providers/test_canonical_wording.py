"""The library's own words pass its wording lint: the body of every canonical provider, fired
with a payload that makes it fire, and ``ENVELOPE_INSTRUCTIONS`` (with and without a nonce)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_reminders import ENVELOPE_INSTRUCTIONS, Reminder, lint_body, render_envelope
from agent_reminders.config import ReminderOptions
from agent_reminders.facts import FactStore
from agent_reminders.providers import (
    CANONICAL_PROVIDERS,
    grounded_review,
    idle_nudge,
    post_compact_recap,
    project_facts,
    resume_continuity,
    token_pressure,
    tool_output_truncated,
    workspace_anchor,
)
from agent_reminders.providers.base import ProviderContext

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "verifier_output"


def body(module: Any, event: str, payload: Any, config: Any = None, workspace: Any = None) -> str:
    ctx = ProviderContext(
        event=event,
        session_id="s",
        payload=payload,
        options=ReminderOptions(),
        config=config,
        workspace=workspace,
    )
    result = module.evaluate(ctx)
    assert result is not None, f"{module.__name__} did not fire"
    text = result["body"]
    assert isinstance(text, str)
    return text


@pytest.fixture
def facts() -> Iterator[FactStore]:
    store = FactStore(":memory:")
    store.store_fact(
        {
            "kind": "decision",
            "claim": "Use PostgreSQL for storage.",
            "confidence": 0.9,
            "evidence": [{"kind": "adr", "ref": "ADR-7"}],
        }
    )
    yield store
    store.close()


def _tool(content: str, command: str | None, ok: bool = True) -> dict[str, Any]:
    return {"tool_name": "bash", "command": command, "result": {"content": content, "ok": ok}}


def canonical_bodies(store: FactStore) -> dict[str, str]:
    """One fired body per situation each canonical provider words differently."""
    window = {"context_window": 1000}
    return {
        **{
            f"token_pressure {used}": body(
                token_pressure, "on_budget_threshold", {"context_tokens": used, **window}
            )
            for used in (700, 850, 960)
        },
        "idle_nudge": body(idle_nudge, "session_idle", {"wake_interval_ms": 125_000}),
        "tool_output_truncated": body(
            tool_output_truncated,
            "post_tool_use",
            {"tool_name": "read_file", "truncated": True, "original_size": 90_000},
        ),
        "tool_output_truncated unknown": body(
            tool_output_truncated, "post_tool_use", {"result": {"truncated": True}}
        ),
        "post_compact_recap summary": body(
            post_compact_recap,
            "post_compact",
            {"archived_messages": 12, "summary": "Plan: refactor the loader."},
        ),
        "post_compact_recap count": body(
            post_compact_recap, "post_compact", {"archived_messages": 1}
        ),
        "resume_continuity": body(
            resume_continuity,
            "worker_resumed",
            {
                "suspended_at_turn": 14,
                "reason": "waiting for CI",
                "initiator": "trigger",
                "trigger_id": "trg-7",
                "event_id": "evt-42",
                "input": "CI finished: green",
                "continue_transcript": False,
                "digest": "Refactored storage; two tests left.",
            },
        ),
        "resume_continuity empty": body(resume_continuity, "worker_resumed", {}),
        "project_facts": body(
            project_facts, "session_start", {"task": "storage"}, config={"store": store}
        ),
        "workspace_anchor": body(
            workspace_anchor,
            "session_start",
            {},
            workspace={
                "primary": "/repo",
                "roots": [{"path": "/data", "mount_mode": "ro"}, {"path": "/tmp/out"}],
            },
        ),
        "workspace_anchor primary only": body(
            workspace_anchor, "session_start", {}, workspace={"primary": "/repo"}
        ),
        "grounded_review pytest": body(
            grounded_review,
            "post_tool_use",
            _tool((FIXTURES / "pytest_failed.txt").read_text(encoding="utf-8"), "pytest -q", False),
        ),
        "grounded_review many": body(
            grounded_review,
            "post_step",
            {
                "tool_calls": [
                    _tool((FIXTURES / name).read_text(encoding="utf-8"), command, False)
                    for name, command in (
                        ("mypy_errors.txt", "mypy --strict src"),
                        ("ruff_errors.txt", "ruff check ."),
                        ("cargo_test_failed.txt", "cargo test"),
                        ("tsc_errors.txt", "npx tsc --noEmit"),
                    )
                ]
                + [_tool("Traceback: boom\nValueError: bad input", "python run.py", False)]
            },
            config={"max_findings": 2},
        ),
    }


def test_every_canonical_provider_is_covered(facts: FactStore) -> None:
    covered = {name.split()[0] for name in canonical_bodies(facts)}
    assert covered == {spec.id for spec in CANONICAL_PROVIDERS}


def test_canonical_bodies_lint_clean(facts: FactStore) -> None:
    flagged = {
        name: [(f.code, f.excerpt) for f in lint_body(text)]
        for name, text in canonical_bodies(facts).items()
    }
    assert {name: found for name, found in flagged.items() if found} == {}


def test_the_level_word_stays_in_capitals_as_the_provider_table_names_it(facts: FactStore) -> None:
    # token_pressure's body states the level word CAUTION, WARNING or CRITICAL; inside a
    # sentence it is a level, not a shout
    bodies = canonical_bodies(facts)
    for used, level in ((700, "CAUTION"), (850, "WARNING"), (960, "CRITICAL")):
        assert f"Context pressure {level}:" in bodies[f"token_pressure {used}"]


@pytest.mark.parametrize("nonce", [None, "n1f2e3d4c5b6a7980"])
def test_envelope_instructions_lint_clean(nonce: str | None) -> None:
    envelope = render_envelope([Reminder(id="r1", body="Run the tests.")], nonce=nonce)
    (line,) = [line for line in envelope.splitlines() if line.startswith(ENVELOPE_INSTRUCTIONS)]
    assert (line == ENVELOPE_INSTRUCTIONS) is (nonce is None)
    assert lint_body(line) == []
