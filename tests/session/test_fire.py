"""Tests for providers and ``session.fire``: registry, results, enablement, order, budget,
unchanged durable reminders, short repeats and the provider lint.

The rules: docs/session-loop.md, "Providers" and "Canonical providers" (the table order);
docs/core.md, "Errors" (codes RMD-001/005/006/007) and "Lifecycle events" (event order for
a provider fire then a request).
"""

from __future__ import annotations

from typing import Any

import pytest

from agent_reminders import (
    Diagnostic,
    EventLog,
    FireResult,
    ProviderContext,
    ReminderError,
    ReminderOptions,
    Session,
    Source,
    lint_agent_options,
)

PROVIDER_EVALUATED = "transcript.reminder.provider_evaluated"
LIFECYCLE_PREFIX = "transcript.reminder."

# The fixed evaluation order and the events each canonical provider subscribes to
# (docs/session-loop.md, "Canonical providers").
CANONICAL_TABLE: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("token_pressure", ("on_budget_threshold",)),
    ("idle_nudge", ("session_idle",)),
    ("tool_output_truncated", ("post_tool_use",)),
    ("post_compact_recap", ("post_compact",)),
    ("resume_continuity", ("worker_resumed",)),
    ("project_facts", ("session_start", "on_budget_threshold")),
    ("workspace_anchor", ("session_start", "on_budget_threshold")),
    ("grounded_review", ("post_tool_use", "post_step", "post_agent_turn")),
)
CANONICAL_IDS = tuple(pid for pid, _ in CANONICAL_TABLE)
EVENTS = (
    "session_start",
    "on_budget_threshold",
    "session_idle",
    "post_tool_use",
    "post_step",
    "post_agent_turn",
    "post_compact",
    "worker_resumed",
)


def _evaluated(log: EventLog, start: int = 0) -> list[dict[str, Any]]:
    return [r.payload for r in log.records[start:] if r.kind == PROVIDER_EVALUATED]


def _const(result: object) -> Any:
    return lambda ctx: result


def _by_body(session: Session, body: str) -> list[Any]:
    return [r for r in session.transcript.reminders if r.body == body]


# -- registry -----------------------------------------------------------------------------------


def test_registered_provider_fires_and_injects() -> None:
    s = Session()
    s.providers.register("mine", subscribes_to="post_step", evaluate=_const({"body": "hello"}))
    result = s.fire("post_step", {"iteration": 0})
    assert isinstance(result, FireResult)
    assert result.fired_count == 1
    (report,) = result.reports
    assert set(report) == {"provider", "reminder_id", "deduped_count", "body_bytes"}
    assert report["provider"] == "mine"
    assert report["deduped_count"] == 0
    assert report["body_bytes"] == 5
    (r,) = s.transcript.reminders
    assert r.id == report["reminder_id"]
    assert r.body == "hello"
    assert r.source is Source.STDLIB_PROVIDER
    assert r.fired_at_turn == 0


def test_provider_reminder_is_stamped_with_session_turn() -> None:
    s = Session()
    s.providers.register("mine", subscribes_to="post_step", evaluate=_const({"body": "hello"}))
    for _ in range(3):
        s.prepare_request()
    s.fire("post_step")
    (r,) = s.transcript.reminders
    assert r.fired_at_turn == 3 == s.turn
    assert r.source is Source.STDLIB_PROVIDER


def test_provider_context_fields() -> None:
    seen: list[ProviderContext] = []

    def evaluate(ctx: ProviderContext) -> None:
        seen.append(ctx)

    s = Session("sess-ctx", reminders={"config": {"mine": {"threshold": 3}}})
    s.providers.register("mine", subscribes_to="PostToolUse", evaluate=evaluate)
    s.providers.register("other", subscribes_to="post_tool_use", evaluate=evaluate)
    payload = {"tool_name": "bash", "result": {"ok": True}}
    s.fire("PostToolUse", payload)
    mine, other = seen
    assert isinstance(mine, ProviderContext)
    assert mine.event == "post_tool_use"
    assert mine.session_id == "sess-ctx"
    assert dict(mine.payload) == payload
    assert isinstance(mine.options, ReminderOptions)
    assert mine.options == s.reminder_options
    assert mine.config is not None
    assert dict(mine.config) == {"threshold": 3}
    assert other.config is None


def test_register_replaces_in_place_and_moves_last() -> None:
    log = EventLog()
    s = Session(event_log=log, reminders={"providers": ["-grounded_review"]})
    calls: list[str] = []

    def make(tag: str) -> Any:
        def evaluate(ctx: ProviderContext) -> None:
            calls.append(tag)

        return evaluate

    s.providers.register("a", subscribes_to="post_step", evaluate=make("a1"))
    s.providers.register("b", subscribes_to="post_step", evaluate=make("b"))
    s.providers.register("c", subscribes_to="post_step", evaluate=make("c"))
    s.providers.register("a", subscribes_to="post_step", evaluate=make("a2"))
    s.fire("post_step")
    assert calls == ["b", "c", "a2"]
    assert [p["provider_id"] for p in _evaluated(log)] == ["b", "c", "a"]


def test_register_replacement_changes_subscriptions() -> None:
    s = Session()
    calls: list[str] = []
    s.providers.register("a", subscribes_to="post_step", evaluate=lambda ctx: calls.append("1"))
    s.providers.register("a", subscribes_to="session_idle", evaluate=lambda ctx: calls.append("2"))
    s.fire("post_step")
    assert calls == []
    s.fire("session_idle", {"wake_interval_ms": 1})
    assert calls == ["2"]


def test_unregister_returns_bool_and_clear_removes_user_providers_only() -> None:
    log = EventLog()
    s = Session(event_log=log)
    calls: list[str] = []
    s.providers.register("a", subscribes_to="post_tool_use", evaluate=lambda c: calls.append("a"))
    s.providers.register("b", subscribes_to="post_tool_use", evaluate=lambda c: calls.append("b"))
    assert s.providers.unregister("a") is True
    assert s.providers.unregister("a") is False
    assert s.providers.unregister("never-registered") is False
    assert s.providers.unregister("token_pressure") is False
    s.fire("post_tool_use", {"tool_name": "x"})
    assert calls == ["b"]
    s.providers.clear()
    start = len(log.records)
    s.fire("post_tool_use", {"tool_name": "x"})
    assert calls == ["b"]
    ids = [p["provider_id"] for p in _evaluated(log, start)]
    assert ids == ["tool_output_truncated", "grounded_review"]


@pytest.mark.parametrize(
    "subscribes_to",
    [
        "post_tool_use",
        "PostToolUse",
        ["post_step", "PostToolUse"],
        ("session_idle", "post_tool_use"),
    ],
)
def test_subscribes_to_one_name_or_list_with_pascal_case(subscribes_to: Any) -> None:
    s = Session()
    calls: list[str] = []
    s.providers.register("a", subscribes_to=subscribes_to, evaluate=lambda c: calls.append(c.event))
    s.fire("post_tool_use", {"tool_name": "x"})
    s.fire("post_agent_turn")
    assert calls == ["post_tool_use"]


def test_subscribes_to_list_fires_on_each_event() -> None:
    s = Session()
    calls: list[str] = []
    s.providers.register(
        "a", subscribes_to=["SessionStart", "post_step"], evaluate=lambda c: calls.append(c.event)
    )
    s.fire("session_start")
    s.fire("PostStep")
    s.fire("session_idle", {"wake_interval_ms": 0})
    assert calls == ["session_start", "post_step"]


@pytest.mark.parametrize("bad", ["post_tool", "PreToolUse", "", ["post_step", "nope"]])
def test_subscribes_to_unknown_event_raises_value_error(bad: Any) -> None:
    s = Session()
    with pytest.raises(ValueError):  # noqa: PT011
        s.providers.register("a", subscribes_to=bad, evaluate=_const(None))
    s.fire("post_step")  # nothing half-registered


@pytest.mark.parametrize("canonical", CANONICAL_IDS)
def test_registering_a_canonical_id_raises_value_error(canonical: str) -> None:
    s = Session()
    with pytest.raises(ValueError, match=canonical):
        s.providers.register(canonical, subscribes_to="post_step", evaluate=_const(None))


def test_fire_unknown_event_raises_value_error() -> None:
    s = Session()
    with pytest.raises(ValueError, match="pre_tool_use"):
        s.fire("pre_tool_use")


# -- result shapes ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("result", "bodies"),
    [
        (None, []),
        ([], []),
        ({"body": "bare"}, ["bare"]),
        ({"reminder": {"body": "wrapped"}}, ["wrapped"]),
        ([{"body": "one"}, {"reminder": {"body": "two"}}], ["one", "two"]),
    ],
)
def test_return_shapes(result: object, bodies: list[str]) -> None:
    s = Session()
    s.providers.register("mine", subscribes_to="post_step", evaluate=_const(result))
    fired = s.fire("post_step")
    assert fired.fired_count == len(bodies)
    assert [r["provider"] for r in fired.reports] == ["mine"] * len(bodies)
    assert [r.body for r in s.transcript.reminders] == bodies
    assert all(r.source is Source.STDLIB_PROVIDER for r in s.transcript.reminders)


def test_provider_options_are_applied_strictly() -> None:
    s = Session()
    s.providers.register(
        "mine",
        subscribes_to="post_step",
        evaluate=_const(
            {
                "body": "  keep spacing  ",
                "tags": ["plan", "plan", " x "],
                "dedupe_key": " k ",
                "ttl_turns": 2,
                "preserve_on_compact": True,
                "propagate": "none",
                "role_hint": "developer",
                "authority": "corrective",
            }
        ),
    )
    s.fire("post_step")
    (r,) = s.transcript.reminders
    assert r.body == "  keep spacing  "
    assert r.tags == ("plan", "x")
    assert r.dedupe_key == "k"
    assert r.ttl_turns == 2
    assert r.preserve_on_compact is True
    assert (r.propagate.value, r.role_hint.value, r.authority.value) == (
        "none",
        "developer",
        "corrective",
    )


@pytest.mark.parametrize(
    "result",
    [
        {"body": "x", "colour": "red"},
        {"body": "x", "source": "hook"},
        {"body": "x", "fired_at_turn": 3},
        {"reminder": {"body": "x", "colour": "red"}},
        [{"body": "ok"}, {"body": "x", "priority": 1}],
    ],
)
def test_unknown_keys_raise_rmd_001(result: object) -> None:
    s = Session()
    s.providers.register("mine", subscribes_to="post_step", evaluate=_const(result))
    with pytest.raises(ReminderError) as info:
        s.fire("post_step")
    assert info.value.code == "RMD-001"


def test_unknown_key_beside_reminder_wrapper_raises_rmd_001() -> None:
    s = Session()
    s.providers.register(
        "mine", subscribes_to="post_step", evaluate=_const({"reminder": {"body": "x"}, "then": 1})
    )
    with pytest.raises(ReminderError) as info:
        s.fire("post_step")
    assert info.value.code == "RMD-001"


def test_bad_propagate_raises_rmd_005() -> None:
    s = Session()
    s.providers.register(
        "mine", subscribes_to="post_step", evaluate=_const({"body": "x", "propagate": "everyone"})
    )
    with pytest.raises(ReminderError) as info:
        s.fire("post_step")
    assert info.value.code == "RMD-005"


@pytest.mark.parametrize(
    "result",
    [
        {"tags": ["x"]},
        {"body": ""},
        {"body": "   "},
        {"body": 5},
        {"body": "x", "ttl_turns": "2"},
        {"body": "x", "ttl_turns": 0},
        {"body": "x", "tags": "plan"},
        {"body": "x", "preserve_on_compact": "yes"},
        {"body": "x", "role_hint": "narrator"},
        {"body": "x", "authority": "boss"},
        42,
        "just text",
        [{"body": "ok"}, 42],
        {"reminder": "text"},
    ],
)
def test_malformed_results_raise_rmd_006_naming_the_provider(result: object) -> None:
    s = Session()
    s.providers.register("my_checker", subscribes_to="post_step", evaluate=_const(result))
    with pytest.raises(ReminderError, match="my_checker") as info:
        s.fire("post_step")
    assert info.value.code == "RMD-006"


def test_exception_in_evaluate_is_evented_then_propagates() -> None:
    log = EventLog()
    s = Session(event_log=log)

    def boom(ctx: ProviderContext) -> None:
        raise RuntimeError("disk on fire")

    s.providers.register("boom", subscribes_to="post_step", evaluate=boom)
    with pytest.raises(RuntimeError, match="disk on fire"):
        s.fire("post_step")
    last = _evaluated(log)[-1]
    assert last["provider_id"] == "boom"
    assert last["event"] == "post_step"
    assert "disk on fire" in last["error"]
    assert all("error" not in p for p in _evaluated(log)[:-1])


# -- enablement and order -----------------------------------------------------------------------

CRITICAL = {"context_tokens": 96, "context_window": 100}


def _token_pressure_ran(s: Session, log: EventLog) -> bool:
    start = len(log.records)
    s.fire("on_budget_threshold", CRITICAL)
    return any(p["provider_id"] == "token_pressure" for p in _evaluated(log, start))


def test_default_enables_token_pressure() -> None:
    log = EventLog()
    s = Session(event_log=log)
    assert _token_pressure_ran(s, log)
    assert any("token_pressure" in r.tags for r in s.transcript.reminders)


def test_minus_id_disables_a_canonical_provider() -> None:
    log = EventLog()
    s = Session(event_log=log, reminders={"providers": ["-token_pressure"]})
    assert not _token_pressure_ran(s, log)
    assert not any("token_pressure" in r.tags for r in s.transcript.reminders)


@pytest.mark.parametrize(
    ("entries", "enabled"),
    [
        (["-token_pressure", "token_pressure"], True),
        (["token_pressure", "-token_pressure"], False),
        (["-token_pressure", "token_pressure", "-token_pressure"], False),
    ],
)
def test_provider_entries_apply_in_order(entries: list[str], enabled: bool) -> None:
    log = EventLog()
    s = Session(event_log=log, reminders={"providers": entries})
    assert _token_pressure_ran(s, log) is enabled


@pytest.mark.parametrize(
    ("entries", "enabled"),
    [([], True), (["-mine"], False), (["-mine", "mine"], True), (["mine", "-mine"], False)],
)
def test_user_providers_follow_the_same_list(entries: list[str], enabled: bool) -> None:
    s = Session(reminders={"providers": entries})
    calls: list[str] = []
    s.providers.register("mine", subscribes_to="post_step", evaluate=lambda c: calls.append("x"))
    s.fire("post_step")
    assert (calls == ["x"]) is enabled


@pytest.mark.parametrize("reminders", [False, {"enabled": False}, ReminderOptions(enabled=False)])
def test_disabled_reminders_run_no_provider(reminders: Any) -> None:
    log = EventLog()
    s = Session(event_log=log, reminders=reminders)
    calls: list[str] = []
    s.providers.register("mine", subscribes_to="post_step", evaluate=lambda c: calls.append("x"))
    for event, payload in [("on_budget_threshold", CRITICAL), ("post_step", {})]:
        result = s.fire(event, payload)
        assert result.fired_count == 0
    assert calls == []
    assert _evaluated(log) == []
    assert s.transcript.reminders == ()


def test_enabled_false_with_providers_listed_still_runs_none() -> None:
    s = Session(reminders={"enabled": False, "providers": ["mine"]})
    calls: list[str] = []
    s.providers.register("mine", subscribes_to="post_step", evaluate=lambda c: calls.append("x"))
    s.fire("post_step")
    assert calls == []


@pytest.mark.parametrize("event", EVENTS)
def test_canonical_first_in_table_order_then_user_in_registration_order(event: str) -> None:
    log = EventLog()
    s = Session(event_log=log)
    s.providers.register("zeta", subscribes_to=list(EVENTS), evaluate=_const(None))
    s.providers.register("alpha", subscribes_to=list(EVENTS), evaluate=_const(None))
    s.providers.register("unsubscribed", subscribes_to="post_compact", evaluate=_const(None))
    s.fire(event, {})
    expected = [pid for pid, events in CANONICAL_TABLE if event in events]
    expected += ["zeta", "alpha"]
    if event == "post_compact":
        expected.append("unsubscribed")
    got = _evaluated(log)
    assert [p["provider_id"] for p in got] == expected
    assert all(p["event"] == event for p in got)


def test_provider_evaluated_reports_fired_count() -> None:
    log = EventLog()
    s = Session(event_log=log, reminders={"providers": ["-grounded_review"]})
    s.providers.register(
        "two", subscribes_to="post_step", evaluate=_const([{"body": "a"}, {"body": "b"}])
    )
    s.providers.register("none", subscribes_to="post_step", evaluate=_const(None))
    result = s.fire("post_step")
    got = {p["provider_id"]: p["fired"] for p in _evaluated(log)}
    # `fired` is a boolean (issue 8: the same for providers and generators); how many
    # reminders a provider fired is in the FireResult reports
    assert got == {"two": True, "none": False}
    assert all(type(v) is bool for v in got.values())
    assert [r["provider"] for r in result.reports] == ["two", "two"]
    got_counts = {p["provider_id"]: p["fired_count"] for p in _evaluated(log)}
    assert got_counts == {"two": 2, "none": 0}


# -- budget -------------------------------------------------------------------------------------


def test_budget_defaults_and_minimum() -> None:
    assert Session().fire("post_step").budget_bytes == 16384
    assert Session(reminders={"max_iteration_bytes": 10}).fire("post_step").budget_bytes == 256
    assert Session(reminders={"max_iteration_bytes": 0}).fire("post_step").budget_bytes == 256
    assert Session(reminders={"max_iteration_bytes": 300}).fire("post_step").budget_bytes == 300


def test_budget_counts_utf8_bytes_and_skips_what_no_longer_fits() -> None:
    s = Session(reminders={"max_iteration_bytes": 10})  # raised to 256
    wide = "é" * 100  # 100 characters, 200 bytes
    narrow = "a" * 100  # 100 bytes: 300 > 256 in bytes (200 characters would fit)
    s.providers.register(
        "mine", subscribes_to="post_step", evaluate=_const([{"body": wide}, {"body": narrow}])
    )
    result = s.fire("post_step")
    assert result.budget_bytes == 256
    assert result.fired_count == 1
    assert result.used_body_bytes == 200
    assert [r["body_bytes"] for r in result.reports] == [200]
    assert result.skipped_count == 1
    (skip,) = result.skipped_reports
    assert skip["provider"] == "mine"
    assert skip["reason"] == "reminder_iteration_budget_exceeded"
    assert skip.get("body_bytes", 100) == 100
    assert [r.body for r in s.transcript.reminders] == [wide]


def test_budget_is_shared_across_providers_within_one_fire_and_resets_per_fire() -> None:
    s = Session(reminders={"max_iteration_bytes": 256, "providers": ["-grounded_review"]})
    s.providers.register("first", subscribes_to="post_step", evaluate=_const({"body": "x" * 200}))
    s.providers.register("second", subscribes_to="post_step", evaluate=_const({"body": "y" * 100}))
    result = s.fire("post_step")
    assert [r["provider"] for r in result.reports] == ["first"]
    assert [(k["provider"], k["reason"]) for k in result.skipped_reports] == [
        ("second", "reminder_iteration_budget_exceeded")
    ]
    s.providers.unregister("first")
    again = s.fire("post_step")
    assert again.fired_count == 1
    assert again.used_body_bytes == 100
    assert again.skipped_count == 0


def test_exact_fit_is_not_skipped() -> None:
    s = Session(reminders={"max_iteration_bytes": 256})
    s.providers.register(
        "mine",
        subscribes_to="post_step",
        evaluate=_const([{"body": "a" * 156}, {"body": "b" * 100}]),
    )
    result = s.fire("post_step")
    assert result.fired_count == 2
    assert result.used_body_bytes == 256
    assert result.skipped_count == 0


# -- unchanged durable reminders ----------------------------------------------------------------

DURABLE = {
    "body": "The plan: fix the parser, then the CLI.",
    "dedupe_key": "plan",
    "preserve_on_compact": True,
}


def test_unchanged_durable_reminder_is_not_injected_again() -> None:
    log = EventLog()
    s = Session(event_log=log)
    s.providers.register("plan", subscribes_to="post_step", evaluate=_const(dict(DURABLE)))
    first = s.fire("post_step")
    assert first.fired_count == 1
    rid = first.reports[0]["reminder_id"]
    s.prepare_request()
    before = len(log.records)
    second = s.fire("post_step")
    assert second.fired_count == 0
    assert second.reports == []
    assert second.used_body_bytes == 0
    plan_skips = [k for k in second.skipped_reports if k["provider"] == "plan"]
    assert len(plan_skips) == 1
    assert plan_skips[0]["reason"] == "unchanged_durable_reminder"
    assert plan_skips[0]["reminder_id"] == rid
    assert second.skipped_count == len(second.skipped_reports)
    assert [r.id for r in s.transcript.reminders] == [rid]
    assert "transcript.reminder.injected" not in [r.kind for r in log.records[before:]]
    # nothing new reaches the next request
    messages_before = len(s.transcript.messages)
    s.prepare_request()
    assert len(s.transcript.messages) == messages_before


@pytest.mark.parametrize(
    "change",
    [
        {"body": "The plan changed."},
        {"ttl_turns": 3},
        {"authority": "advisory"},
        {"tags": ["plan"]},
        {"role_hint": "developer"},
        {"propagate": "all"},
        {"preserve_on_compact": False},
    ],
)
def test_changed_durable_reminder_is_injected(change: dict[str, Any]) -> None:
    s = Session()
    current = dict(DURABLE)
    s.providers.register("plan", subscribes_to="post_step", evaluate=lambda ctx: dict(current))
    first = s.fire("post_step")
    current.update(change)
    second = s.fire("post_step")
    assert second.fired_count == 1
    assert second.reports[0]["deduped_count"] == 1
    assert all(k["reason"] != "unchanged_durable_reminder" for k in second.skipped_reports)
    (r,) = s.transcript.reminders
    assert r.id != first.reports[0]["reminder_id"]


def test_durable_reminder_is_injected_again_after_it_was_cleared() -> None:
    s = Session()
    s.providers.register("plan", subscribes_to="post_step", evaluate=_const(dict(DURABLE)))
    s.fire("post_step")
    s.clear({"dedupe_key": "plan"})
    again = s.fire("post_step")
    assert again.fired_count == 1
    assert [r.body for r in s.transcript.reminders] == [DURABLE["body"]]


# -- short repeats ------------------------------------------------------------------------------

LONG = (
    "The test suite has three failing tests in tests/test_parser.py; fix them before touching "
    "anything else in the repository, and run the full suite afterwards."
)
KEYED = {"body": LONG, "dedupe_key": "failing-tests", "ttl_turns": 3}


def _keyed_session(result: dict[str, Any] | None = None) -> Session:
    s = Session()
    s.providers.register("tests", subscribes_to="post_step", evaluate=_const(dict(result or KEYED)))
    return s


def _only_body(s: Session) -> str:
    (r,) = s.transcript.reminders
    return r.body


def test_short_repeat_after_the_full_text_was_committed() -> None:
    s = _keyed_session()
    s.fire("post_step")
    assert _only_body(s) == LONG
    s.prepare_request()
    second = s.fire("post_step")
    assert second.fired_count == 1
    assert second.reports[0]["deduped_count"] == 1
    short = _only_body(s)
    assert short != LONG
    assert len(short.encode()) < len(LONG.encode())
    assert "failing-tests" in short
    assert "unchanged" in short.lower()
    assert second.reports[0]["body_bytes"] == len(short.encode())
    assert second.used_body_bytes == len(short.encode())
    # the short form is committed as a new directive
    req = s.prepare_request()
    assert short in req.messages[-1]["content"]


def test_repeated_fires_stay_short_and_do_not_alternate() -> None:
    s = _keyed_session()
    bodies = []
    for _ in range(4):
        s.fire("post_step")
        bodies.append(_only_body(s))
        s.prepare_request()
    assert bodies[0] == LONG
    assert bodies[1] != LONG
    assert bodies[1:] == [bodies[1]] * 3


def test_no_short_repeat_before_the_full_text_was_committed() -> None:
    s = _keyed_session()
    s.fire("post_step")
    s.fire("post_step")
    assert _only_body(s) == LONG
    s.prepare_request()
    s.fire("post_step")
    assert _only_body(s) != LONG


def test_no_short_repeat_when_the_short_text_is_not_shorter() -> None:
    tiny = {"body": "Fix tests.", "dedupe_key": "failing-tests", "ttl_turns": 3}
    s = _keyed_session(tiny)
    for _ in range(3):
        s.fire("post_step")
        assert _only_body(s) == "Fix tests."
        s.prepare_request()


def test_no_short_repeat_without_dedupe_key_or_for_changed_body() -> None:
    unkeyed = {"body": LONG, "ttl_turns": 3}
    s = _keyed_session(unkeyed)
    s.fire("post_step")
    s.prepare_request()
    s.fire("post_step")
    assert [r.body for r in s.transcript.reminders] == [LONG, LONG]

    current = dict(KEYED)
    s2 = Session()
    s2.providers.register("tests", subscribes_to="post_step", evaluate=lambda c: dict(current))
    s2.fire("post_step")
    s2.prepare_request()
    current["body"] = LONG + " Also update the changelog."
    s2.fire("post_step")
    assert _only_body(s2) == current["body"]


def test_no_short_repeat_when_the_previous_one_expired() -> None:
    once = {"body": LONG, "dedupe_key": "failing-tests", "ttl_turns": 1}
    s = _keyed_session(once)
    s.fire("post_step")
    s.prepare_request(turn=0)
    s.post_turn(0)
    assert s.transcript.reminders == ()
    s.fire("post_step")
    assert _only_body(s) == LONG


# -- event order and lint -----------------------------------------------------------------------


def test_event_order_for_provider_fire_then_request() -> None:
    log = EventLog()
    s = Session(event_log=log, reminders={"providers": ["-grounded_review"]})
    s.inject({"body": "old", "dedupe_key": "k"})
    s.providers.register(
        "mine",
        subscribes_to="post_step",
        evaluate=_const([{"body": "new", "dedupe_key": "k"}, {"body": "other"}]),
    )
    start = len(log.records)
    s.fire("post_step")
    s.prepare_request()
    kinds = [r.kind.removeprefix(LIFECYCLE_PREFIX) for r in log.records[start:]]
    assert kinds == [
        "provider_evaluated",
        "deduped",
        "injected",
        "injected",
        "fired",
        "fired",
        "iteration_summary",
    ]


def test_lint_agent_options_default_is_quiet() -> None:
    assert lint_agent_options() == []
    assert lint_agent_options(True) == []
    assert lint_agent_options(False) == []
    assert lint_agent_options({"providers": ["-token_pressure", "mine"]}) == []
    assert lint_agent_options({"providers": ["-token_pressure", "mine", "mine"]}) == []


@pytest.mark.parametrize(
    "reminders",
    [
        {"providers": ["a", "b"]},
        ReminderOptions(providers=("a", "b", "c")),
    ],
)
def test_lint_agent_options_rmd_007_when_more_than_eight(reminders: Any) -> None:
    (diag,) = lint_agent_options(reminders)
    assert isinstance(diag, Diagnostic)
    assert diag.code == "RMD-007"
    assert diag.severity == "info"
    assert diag.message


def test_lint_agent_options_counts_the_eight_canonical_providers() -> None:
    # eight canonical providers plus one user provider make nine
    (diag,) = lint_agent_options({"providers": ["mine"]})
    assert diag.code == "RMD-007"
    assert lint_agent_options({"enabled": False, "providers": ["a", "b"]}) == []
