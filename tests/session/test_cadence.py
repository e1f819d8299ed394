"""Cadence (docs/core.md, "Cadence"): first_after, cooldown_turns and max_fires, the same on
every path a reminder reaches a session by — inject, hooks, providers, pushed reminders — kept
across save and restore."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_reminders import ReminderError, Session, SessionState

TODO = {"body": "Update the to-do list.", "dedupe_key": "todo"}
DROPPED = "transcript.reminder.dropped"
KEPT_KEYS = 1024  # how many keys a session's cadence remembers


def dropped(session: Session) -> list[dict[str, Any]]:
    return [r.payload for r in session.event_log.records if r.kind == DROPPED]


def attempt(session: Session, options: dict[str, Any]) -> str | None:
    done = session.inject(options)
    session.turn += 1
    return done.dropped


def test_cooldown_drops_a_key_inside_its_window_and_says_why() -> None:
    session = Session("s1")
    outcomes = [attempt(session, {**TODO, "cooldown_turns": 3}) for _ in range(7)]
    assert outcomes == [None, "cooldown", "cooldown", None, "cooldown", "cooldown", None]
    (first, *_) = dropped(session)
    assert first["reason"] == "cooldown"
    assert first["dedupe_key"] == "todo"
    assert first["turn_number"] == 1
    assert len(session.transcript.pending) == 1  # each accepted fire replaced the one before


def test_max_fires_and_first_after() -> None:
    session = Session("s1")
    outcomes = [attempt(session, {**TODO, "first_after": 2, "max_fires": 2}) for _ in range(6)]
    assert outcomes == ["first_after", "first_after", None, None, "max_fires", "max_fires"]


def test_a_key_is_the_dedupe_key_else_the_body() -> None:
    session = Session("s1")
    assert attempt(session, {"body": "a", "cooldown_turns": 5}) is None
    assert attempt(session, {"body": "b", "cooldown_turns": 5}) is None  # another body
    assert attempt(session, {"body": "a", "cooldown_turns": 5}) == "cooldown"


def test_a_reminder_without_cadence_is_never_counted_or_dropped() -> None:
    session = Session("s1")
    assert [attempt(session, TODO) for _ in range(4)] == [None] * 4
    assert session.state().cadence.fires == {}
    assert "cadence" not in session.state().to_document()  # the saved bytes are as before


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"cooldown_turns": 0}, "cooldown_turns must be an int > 0"),
        ({"max_fires": -1}, "max_fires must be an int > 0"),
        ({"first_after": -1}, "first_after must be an int >= 0"),
        ({"first_after": "2"}, "first_after must be an int >= 0"),
        ({"max_fires": True}, "max_fires must be an int > 0"),
    ],
)
def test_bad_cadence_values_are_one_error_naming_the_field(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ReminderError, match=message) as info:
        Session("s1").inject({"body": "x", **options})
    assert info.value.code == "RMD-001"


def test_a_hooks_reminder_keeps_its_cadence() -> None:
    session = Session("s1")
    outcomes = []
    for _ in range(3):
        done = session.inject_from({**TODO, "cooldown_turns": 2}, source="hook")
        outcomes.append(done.dropped)
        session.turn += 1
    assert outcomes == [None, "cooldown", None]


def test_a_providers_reminder_keeps_its_cadence_and_fire_reports_the_skip() -> None:
    session = Session("s1")

    def nag(_: Any) -> dict[str, Any]:
        return {**TODO, "cooldown_turns": 3}

    session.providers.register("todo", subscribes_to="post_tool_use", evaluate=nag)
    results = []
    for _ in range(4):
        results.append(session.fire("post_tool_use", {"tool_name": "Edit"}))
        session.turn += 1
    assert [r.fired_count for r in results] == [1, 0, 0, 1]
    assert results[1].skipped_reports[0]["reason"] == "cooldown"
    assert results[1].skipped_reports[0]["provider"] == "todo"
    assert results[1].used_body_bytes == 0


def test_a_pushed_reminder_keeps_its_cadence() -> None:
    session = Session("s1")
    for _ in range(4):
        session.queue.remind({**TODO, "cooldown_turns": 2, "max_fires": 2})
        session.run_seam("iteration_start")
        session.turn += 1
    reasons = [p["reason"] for p in dropped(session)]
    assert reasons == ["cooldown", "max_fires"]
    assert session.queue.pending() == []  # drained: what the cadence refused is not kept


def test_the_pending_row_shows_cadence_only_when_set() -> None:
    session = Session("s1")
    session.queue.remind({"body": "plain"})
    session.queue.remind({"body": "paced", "cooldown_turns": 2})
    plain, paced = session.queue.pending()
    assert "cooldownTurns" not in plain
    assert paced["cooldownTurns"] == 2
    assert "maxFires" not in paced


def test_the_cadence_is_bounded() -> None:
    session = Session("s1")
    for i in range(KEPT_KEYS + 5):
        session.inject({"body": "x", "dedupe_key": f"k{i}", "max_fires": 1})
        session.turn += 1
    fires = session.state().cadence.fires
    assert len(fires) == KEPT_KEYS
    assert "k0" not in fires  # the one that fired longest ago went first
    assert fires[f"k{KEPT_KEYS + 4}"] == (1, KEPT_KEYS + 4)


# --- properties --------------------------------------------------------------------------------

SETTINGS = st.fixed_dictionaries(
    {},
    optional={
        "first_after": st.integers(0, 5),
        "cooldown_turns": st.integers(1, 5),
        "max_fires": st.integers(1, 4),
    },
)
# a schedule: per step, which key (0-2) fires, and how many turns pass after it
STEPS = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), max_size=40)


@settings(max_examples=150, deadline=None)
@given(cadences=st.lists(SETTINGS, min_size=3, max_size=3), steps=STEPS)
def test_no_key_fires_inside_its_cooldown_past_max_fires_or_before_first_after(
    cadences: list[dict[str, int]], steps: list[tuple[int, int]]
) -> None:
    session = Session("s1")
    accepted: dict[int, list[int]] = {0: [], 1: [], 2: []}
    for key, later in steps:
        options = {"body": f"reminder {key}", "dedupe_key": f"k{key}", **cadences[key]}
        done = session.inject(options)
        if done.dropped is None:
            accepted[key].append(session.turn)
        session.turn += later
    for key, turns in accepted.items():
        rules = cadences[key]
        assert all(t >= rules.get("first_after", 0) for t in turns)
        assert len(turns) <= rules.get("max_fires", len(turns))
        if "cooldown_turns" in rules:
            gap = rules["cooldown_turns"]
            assert all(b - a >= gap for a, b in itertools.pairwise(turns))


@settings(max_examples=100, deadline=None)
@given(
    cadences=st.lists(SETTINGS, min_size=3, max_size=3),
    steps=STEPS,
    cut=st.integers(0, 40),
)
def test_restore_then_continue_is_continue_without_restore(
    cadences: list[dict[str, int]], steps: list[tuple[int, int]], cut: int
) -> None:
    def run(restore_at: int | None) -> tuple[list[str | None], Any]:
        session = Session("s1", id_factory=lambda: "r")
        outcomes: list[str | None] = []
        for index, (key, later) in enumerate(steps):
            if index == restore_at:
                state = SessionState.from_json(session.state().to_json())
                session = Session.from_state(state, id_factory=lambda: "r")
            options = {"body": f"reminder {key}", "dedupe_key": f"k{key}", **cadences[key]}
            outcomes.append(session.inject(options).dropped)
            session.turn += later
        return outcomes, session.state().cadence

    assert run(cut) == run(None)
