"""Restraint (docs/core.md, "Restraint"): the canonical providers' default cadences, provider
intervals and config cadences, resolution, and the directive budget — on by default, off with
``reminders={"restraint": False}``."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_reminders import ConfigError, ReminderError, Session, SessionState

DROPPED = "transcript.reminder.dropped"
EXPIRED = "transcript.reminder.expired"
OVER = "transcript.reminder.over_budget"
WINDOW = 1000


def events(session: Session, kind: str) -> list[dict[str, Any]]:
    return [r.payload for r in session.event_log.records if r.kind == kind]


def turn(session: Session) -> str:
    """One model call after a user message: commit the envelope, age the reminders; the
    envelope's text ('' when the request carried none)."""
    session.append({"role": "user", "content": "Go on."})
    request = session.prepare_request()
    session.post_turn(request.turn)
    text = str(request.messages[-1]["content"])
    return text if "<context-directives" in text else ""


def pressure(session: Session, used: int) -> int:
    fired = session.fire("on_budget_threshold", {"context_tokens": used, "context_window": WINDOW})
    return fired.fired_count


# --- the canonical providers' default cadences ----------------------------------------------


def test_token_pressure_paces_each_level_apart() -> None:
    session = Session("s1")
    fired = []
    for used in (750, 760, 770, 900, 910, 780, 790, 800, 810, 960, 970):
        fired.append(pressure(session, used))
        turn(session)
    # CAUTION at 0, held back for 5 turns; WARNING at 3 is another level; CAUTION again at 5;
    # CRITICAL at 9, then held
    assert fired == [1, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0]
    reasons = {p["reason"] for p in events(session, DROPPED)}
    assert reasons == {"cooldown"}


def test_without_restraint_every_fire_goes_through() -> None:
    session = Session("s1", reminders={"restraint": False})
    assert [pressure(session, u) + 0 * len(turn(session)) for u in (750, 760, 770)] == [1, 1, 1]
    assert session.reminder_options.budget is None


def test_workspace_anchor_and_project_facts_come_back_every_ten_turns() -> None:
    session = Session(
        "s1", workspace={"primary": "/repo"}, reminders={"providers": ["-token_pressure"]}
    )
    fired = [session.fire("session_start").fired_count]
    turn(session)
    for _ in range(12):
        fired.append(pressure(session, 100))
        turn(session)
    # the start states it; the first refresh goes through (the start's fire is not paced), then
    # the refreshes rest for 10 turns
    assert fired == [1, 1] + [0] * 9 + [1, 0]


def test_a_config_cadence_overrides_the_default_field_by_field() -> None:
    config = {"token_pressure": {"cadence": {"cooldown_turns": None, "max_fires": 2}}}
    session = Session("s1", reminders={"config": config})
    fired = []
    for used in (750, 760, 770, 780):
        fired.append(pressure(session, used))
        turn(session)
    assert fired == [1, 1, 0, 0]
    assert [p["reason"] for p in events(session, DROPPED)] == ["max_fires", "max_fires"]


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        ({"token_pressure": {"cadence": {"every": 2}}}, "unknown key(s) every"),
        (
            {"token_pressure": {"cadence": {"cooldown_turns": 0}}},
            "cooldown_turns must be an int > 0",
        ),
        ({"token_pressure": {"cadence": "often"}}, "cadence must be a table"),
        ({"token_pressure": {"interval": -1}}, "interval must be an int > 0"),
        ({"mine": {"interval": "2"}}, "reminders.config.mine.interval must be an int > 0"),
    ],
)
def test_bad_cadence_or_interval_config_is_one_error_naming_it(
    config: dict[str, Any], fragment: str
) -> None:
    with pytest.raises(ConfigError, match="RMD-104") as info:
        Session("s1", reminders={"config": config})
    assert fragment in str(info.value)


# --- intervals ----------------------------------------------------------------------------------


def test_a_provider_with_an_interval_is_not_asked_until_it_is_due() -> None:
    session = Session("s1", reminders={"providers": ["-grounded_review"]})
    asked: list[int] = []

    def plan(ctx: Any) -> dict[str, Any]:
        asked.append(ctx.turn)
        return {"body": f"Keep the plan current ({ctx.turn}).", "ttl_turns": 1}

    session.providers.register("plan", subscribes_to="post_step", evaluate=plan, interval=3)
    for _ in range(8):
        session.fire("post_step")
        turn(session)
    assert asked == [0, 3, 6]
    # the config overrides it, and the state keeps it
    state = SessionState.from_json(session.state().to_json())
    assert state.providers.fired_turns == {"plan": 6}


def test_an_interval_must_be_a_positive_int() -> None:
    with pytest.raises(ValueError, match="interval must be an int > 0; got 0"):
        Session("s1").providers.register(
            "plan", subscribes_to="post_step", evaluate=lambda ctx: None, interval=0
        )


# --- resolution ---------------------------------------------------------------------------------

TODO = {"body": "Update the to-do list with what is done.", "dedupe_key": "todo", "ttl_turns": 3}


def todo_session() -> Session:
    session = Session("s1", reminders={"providers": ["-grounded_review"]})

    def todo(ctx: Any) -> Any:
        if ctx.payload.get("tool_name") == "TodoWrite":
            return {"resolved": "todo", "body": "The to-do list is up to date."}
        return TODO

    session.providers.register("todo", subscribes_to="post_tool_use", evaluate=todo)
    return session


def test_a_resolution_withdraws_an_unsent_reminder_without_a_word() -> None:
    session = todo_session()
    session.fire("post_tool_use", {"tool_name": "Edit"})
    result = session.fire("post_tool_use", {"tool_name": "TodoWrite"})
    assert result.fired_count == 0
    assert session.transcript.reminders == ()
    assert [p["reason"] for p in events(session, EXPIRED)] == ["resolved"]
    # and nothing of that key comes back in the same turn
    again = session.fire("post_tool_use", {"tool_name": "Edit"})
    assert again.skipped_reports[0]["reason"] == "resolved"
    assert turn(session) == ""


def test_a_resolution_of_what_the_model_was_told_closes_it_in_one_line_once() -> None:
    session = todo_session()
    session.fire("post_tool_use", {"tool_name": "Edit"})
    assert "Update the to-do list" in turn(session)
    result = session.fire("post_tool_use", {"tool_name": "TodoWrite"})
    assert result.reports[0]["resolved"] == "todo"
    (note,) = session.transcript.reminders
    assert note.body == "The to-do list is up to date."
    assert note.ttl_turns == 1
    assert note.dedupe_key == "todo:resolved"
    assert "up to date" in turn(session)
    session.fire("post_tool_use", {"tool_name": "TodoWrite"})  # nothing pending: no second note
    assert session.transcript.reminders == ()
    # the next turn the key may come again (it has no cooldown of its own)
    turn(session)
    assert session.fire("post_tool_use", {"tool_name": "Edit"}).fired_count == 1


@pytest.mark.parametrize(
    ("result", "fragment"),
    [
        ({"resolved": ""}, "'resolved' names a dedupe key"),
        ({"resolved": "k", "body": "two\nlines"}, "one non-blank line"),
        ({"resolved": "k", "ttl_turns": 1}, "ttl_turns"),
    ],
)
def test_a_malformed_resolution_is_an_error_naming_the_provider(
    result: dict[str, Any], fragment: str
) -> None:
    session = Session("s1")
    session.providers.register("bad", subscribes_to="post_step", evaluate=lambda ctx: result)
    with pytest.raises(ReminderError, match="bad") as info:
        session.fire("post_step")
    assert fragment in str(info.value)


def pytest_run(ok: bool) -> dict[str, Any]:
    content = "FAILED tests/test_a.py::test_one - assert 1 == 2\n1 failed in 0.1s"
    if ok:
        content = "3 passed in 0.1s"
    return {
        "tool_name": "bash",
        "arguments": {"command": "pytest -q"},
        "command": "pytest -q",
        "result": {"content": content, "ok": ok},
    }


def test_grounded_review_ends_when_the_same_command_passes() -> None:
    session = Session("s1")
    assert session.fire("post_tool_use", pytest_run(False)).fired_count == 1
    assert "Grounded review" in turn(session)
    passed = session.fire("post_tool_use", pytest_run(True))
    assert passed.reports[0]["resolved"].startswith("grounded_review:post_tool_use:")
    (note,) = session.transcript.reminders
    assert note.body == "Resolved: `pytest -q` now passes; the failures it reported are fixed."
    assert note.role_hint.value == "developer"
    turn(session)
    # a regression later is news again
    assert session.fire("post_tool_use", pytest_run(False)).fired_count == 1


def test_grounded_review_withdraws_an_unsent_review_and_leaves_others() -> None:
    session = Session("s1")
    session.fire("post_tool_use", pytest_run(False))
    other = {"tool_name": "bash", "command": "mypy src", "arguments": {"command": "mypy src"}}
    other["result"] = {
        "content": "src/a.py:1: error: bad [misc]\nFound 1 error in 1 file",
        "ok": False,
    }
    session.fire("post_tool_use", other)
    assert session.fire("post_tool_use", pytest_run(True)).fired_count == 0  # never told
    (left,) = session.transcript.reminders
    assert "mypy src" in left.body


def test_grounded_review_does_not_resolve_without_restraint() -> None:
    session = Session("s1", reminders={"restraint": False})
    session.fire("post_tool_use", pytest_run(False))
    turn(session)
    session.fire("post_tool_use", pytest_run(True))
    assert len(session.transcript.reminders) == 1


# --- the directive budget -----------------------------------------------------------------------


def advisory(text: str, **more: Any) -> dict[str, Any]:
    return {"body": text, "authority": "advisory", "ttl_turns": 1, **more}


def test_the_budget_drops_lower_authority_first_then_the_older() -> None:
    budget = {"tokens": 10, "turns": 3}
    session = Session("s1", reminders={"providers": [], "directive_budget": budget})
    session.inject(advisory("a" * 16, dedupe_key="old"))  # 4 tokens
    session.inject({"body": "c" * 16, "authority": "corrective", "ttl_turns": 1})  # 4
    session.inject(advisory("b" * 16, dedupe_key="new"))  # 4: only 10 fit
    text = turn(session)
    assert "c" * 16 in text
    assert "b" * 16 in text
    assert "a" * 16 not in text
    (drop,) = events(session, DROPPED)
    assert drop["reason"] == "budget"
    assert drop["dedupe_key"] == "old"
    assert drop["tokens"] == 4
    # the window remembers: 8 of 10 spent, one more 4-token advisory does not fit for 3 turns
    outcomes = []
    for _ in range(4):
        session.inject(advisory("d" * 16))
        outcomes.append("d" * 16 in turn(session))
    assert outcomes == [False, False, True, True]


def test_contract_directives_are_never_dropped_and_going_over_is_recorded() -> None:
    session = Session("s1", reminders={"providers": [], "directive_budget": {"tokens": 5}})
    session.inject({"body": "x" * 40, "ttl_turns": 1})  # contract by default: 10 tokens
    assert "x" * 40 in turn(session)
    (over,) = events(session, OVER)
    assert over["budget_tokens"] == 5
    assert over["used_tokens"] == 10
    assert events(session, DROPPED) == []


def test_the_default_budget_is_a_share_of_the_window_the_session_learns() -> None:
    session = Session("s1", reminders={"providers": ["-token_pressure"]})
    session.inject(advisory("y" * 16_000))  # 4,000 tokens; no window known yet: no limit
    assert "y" * 16_000 in turn(session)
    session.fire("on_budget_threshold", {"context_tokens": 10, "context_window": 100_000})
    session.inject(advisory("z" * 4_000))  # 5 % of 100,000 = 5,000, and 4,000 were spent
    assert "z" * 4_000 in turn(session)
    session.inject(advisory("w" * 400))
    assert "w" * 400 not in turn(session)
    assert session.state().cadence.context_window == 100_000


def test_a_small_window_still_leaves_the_floor() -> None:
    session = Session("s1", reminders={"providers": ["-token_pressure"]})
    session.fire("on_budget_threshold", {"context_tokens": 10, "context_window": 1000})
    session.inject(advisory("y" * 16_000))  # 4,000 tokens: under the 4,096 floor
    assert "y" * 16_000 in turn(session)
    session.inject(advisory("z" * 400))  # 100 more: over it
    assert "z" * 400 not in turn(session)


@pytest.mark.parametrize(
    ("budget", "fragment"),
    [
        ({"share": 0}, "share must be a number in (0, 1]"),
        ({"turns": 0}, "turns must be an int > 0"),
        ({"tokens": 1.5}, "tokens must be an int > 0"),
        ({"min_tokens": None}, "min_tokens must be an int > 0"),
        ({"size": 3}, "unknown reminders.directive_budget key(s) size"),
        ("lots", "must be a mapping, true or false"),
    ],
)
def test_a_bad_budget_is_one_error_naming_it(budget: object, fragment: str) -> None:
    with pytest.raises(ReminderError) as info:
        Session("s1", reminders={"directive_budget": budget})
    assert fragment in str(info.value)


SIZES = st.lists(
    st.lists(
        st.tuples(st.integers(1, 40), st.sampled_from(["corrective", "advisory"])), max_size=4
    ),
    max_size=25,
)


@settings(max_examples=120, deadline=None)
@given(plan=SIZES, limit=st.integers(5, 60), window=st.integers(1, 5))
def test_the_budget_holds_over_every_window(
    plan: list[list[tuple[int, str]]], limit: int, window: int
) -> None:
    budget = {"tokens": limit, "turns": window}
    session = Session("s1", reminders={"providers": [], "directive_budget": budget})
    sizes: dict[str, int] = {}
    for turn_plan in plan:
        for size, authority in turn_plan:
            options = {"body": "w" * (4 * size), "authority": authority, "ttl_turns": 1}
            sizes[session.inject(options).reminder_id] = size
        turn(session)
    spent = [0] * len(plan)
    for record in session.event_log.records:
        if record.kind == "transcript.reminder.fired":
            spent[record.payload["turn_number"]] += sizes[record.payload["reminder_id"]]
    for end in range(len(spent)):
        assert sum(spent[max(0, end - window + 1) : end + 1]) <= limit


@settings(max_examples=60, deadline=None)
@given(plan=SIZES, cut=st.integers(0, 25))
def test_restore_then_continue_keeps_the_budget(
    plan: list[list[tuple[int, str]]], cut: int
) -> None:
    def run(restore_at: int | None) -> tuple[list[str], Any]:
        options = {"providers": [], "directive_budget": {"tokens": 30, "turns": 3}}
        ids = (f"r{i}" for i in itertools.count())
        session = Session("s1", reminders=options, id_factory=lambda: next(ids))
        texts = []
        for index, turn_plan in enumerate(plan):
            if index == restore_at:
                state = SessionState.from_json(session.state().to_json())
                session = Session.from_state(state, reminders=options, id_factory=lambda: next(ids))
            for size, authority in turn_plan:
                session.inject({"body": "w" * (4 * size), "authority": authority, "ttl_turns": 1})
            texts.append(turn(session))
        return texts, session.state().cadence

    assert run(cut) == run(None)


# --- goal re-anchoring --------------------------------------------------------------------------


def test_goal_anchor_is_off_by_default() -> None:
    session = Session("s1")
    session.append({"role": "user", "content": "Port the parser to the new grammar."})
    for _ in range(12):
        session.fire("post_step")
        turn(session)
    assert all("goal of this task" not in r.body for r in session.transcript.reminders)


def test_goal_anchor_restates_every_n_turns_short_once_sent_and_in_full_after_compaction() -> None:
    options = {"providers": ["goal_anchor"], "config": {"goal_anchor": {"interval": 3}}}
    session = Session("s1", reminders=options)
    session.append({"role": "user", "content": "Port the parser to the new grammar."})
    texts = []
    for _ in range(7):
        session.fire("post_step")
        texts.append(turn(session))
    said = [i for i, text in enumerate(texts) if text]
    assert said == [3, 6]
    assert "restated so it stays in view: Port the parser to the new grammar." in texts[3]
    assert "'goal_anchor' is unchanged" in texts[6]  # the short repeat
    session.compact(keep_last=0, summary="Earlier work on the parser.")
    assert "Port the parser to the new grammar." in turn(session)  # in full: its text was archived


def test_goal_anchor_takes_its_goal_from_config() -> None:
    options = {"providers": ["goal_anchor"], "config": {"goal_anchor": {"goal": "Ship 2.0"}}}
    session = Session("s1", reminders=options)
    session.fire("post_compact", {"archived_messages": 1})
    (goal, *_) = [r for r in session.transcript.reminders if r.dedupe_key == "goal_anchor"]
    assert goal.body.endswith("Ship 2.0")
    with pytest.raises(ConfigError, match=r"reminders\.config\.goal_anchor\.interval must be"):
        Session("s1", reminders={"config": {"goal_anchor": {"interval": "often"}}})
