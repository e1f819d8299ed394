"""Tests for the pure lifecycle transforms: inject, insert, clear, post_turn, compact, handoff.

The rules: docs/core.md, "The turn, step by step" (pure transforms) and "Lifecycle events"
(sub-agent propagation, the payloads).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agent_reminders import (
    ENVELOPE_INSTRUCTIONS,
    LIFECYCLE_TOPIC,
    Authority,
    Cleared,
    Compacted,
    EventLog,
    Injected,
    Message,
    MessageError,
    PostTurn,
    Propagate,
    Reminder,
    ReminderError,
    RoleHint,
    Source,
    Transcript,
    clear_reminders,
    commit_directives,
    compact,
    handoff_reminders,
    inject_reminder,
    insert_reminder,
    post_turn,
    seed_inherited,
)

INJECTED = "transcript.reminder.injected"
DEDUPED = "transcript.reminder.deduped"
EXPIRED = "transcript.reminder.expired"
INHERITED = "transcript.reminder.inherited"
IDS = {"session_id", "task_id", "agent_id"}
INJECTED_KEYS = IDS | {
    "reminder_id",
    "tags",
    "dedupe_key",
    "source",
    "role_hint",
    "authority",
    "ttl_turns",
    "propagate",
    "originating_agent_id",
}
DEDUPED_KEYS = IDS | {"replaced_id", "replacing_id", "replaced_ids", "dedupe_key", "dropped_count"}
EXPIRED_KEYS = IDS | {
    "reminder_id",
    "reason",
    "ttl_turns_before",
    "expired_at_turn",
    "expired_at_boundary",
}
INHERITED_KEYS = IDS | {"reminder_id", "originating_agent_id", "sub_agent_id", "propagate"}


def counter_ids(prefix: str = "r") -> Callable[[], str]:
    state = {"n": 0}

    def factory() -> str:
        state["n"] += 1
        return f"{prefix}-{state['n']}"

    return factory


def rem(rid: str, **fields) -> Reminder:
    fields.setdefault("body", f"body of {rid}")
    return Reminder(id=rid, **fields)


def user(text: str) -> Message:
    return {"role": "user", "content": text}


def assistant(text: str) -> Message:
    return {"role": "assistant", "content": text}


def with_reminders(*reminders: Reminder, messages=(), tid: str = "t") -> Transcript:
    return Transcript(messages, reminders, id=tid)


def ids(transcript: Transcript) -> list[str]:
    return [r.id for r in transcript.reminders]


def kinds(log: EventLog) -> list[str]:
    return [r.kind for r in log.records]


def payloads(log: EventLog, kind: str | None = None) -> list[dict[str, Any]]:
    return [r.payload for r in log.records if kind is None or r.kind == kind]


def conversation(n: int, *, system: bool = True) -> list[Message]:
    out: list[Message] = [{"role": "system", "content": "SYS"}] if system else []
    for i in range(n):
        out.append(user(f"u{i}") if i % 2 == 0 else assistant(f"a{i}"))
    return out


# == inject_reminder ===========================================================================


def test_inject_appends_a_reminder_with_defaults_and_returns_injected():
    t = Transcript(id="t").append(user("hi"))
    done = inject_reminder(t, {"body": "Run the tests."}, id_factory=lambda: "r-1")
    assert isinstance(done, Injected)
    assert done.reminder_id == "r-1"
    assert done.deduped_count == 0
    (r,) = done.transcript.reminders
    assert r == Reminder(
        id="r-1",
        body="Run the tests.",
        tags=(),
        dedupe_key=None,
        ttl_turns=None,
        preserve_on_compact=False,
        propagate=Propagate.SESSION,
        role_hint=RoleHint.SYSTEM,
        authority=Authority.CONTRACT,
        source=Source.IN_PIPELINE,
        fired_at_turn=0,
        originating_agent_id=None,
    )
    assert done.transcript.messages == t.messages
    assert done.transcript.id == t.id


def test_inject_applies_every_option():
    done = inject_reminder(
        Transcript(),
        {
            "body": "  keep as given  ",
            "tags": [" a ", "b", "a"],
            "dedupe_key": " k ",
            "ttl_turns": 3,
            "preserve_on_compact": True,
            "propagate": "all",
            "role_hint": "developer",
            "authority": "advisory",
        },
        id_factory=lambda: "r-x",
    )
    (r,) = done.transcript.reminders
    assert r.body == "  keep as given  "
    assert r.tags == ("a", "b")
    assert r.dedupe_key == "k"
    assert r.ttl_turns == 3
    assert r.preserve_on_compact is True
    assert r.propagate is Propagate.ALL
    assert r.role_hint is RoleHint.DEVELOPER
    assert r.authority is Authority.ADVISORY


def test_inject_new_reminder_goes_to_the_end_of_the_queue():
    t = with_reminders(rem("a"), rem("b"))
    done = inject_reminder(t, {"body": "c"}, id_factory=lambda: "c")
    assert ids(done.transcript) == ["a", "b", "c"]


def test_inject_dedupe_removes_every_pending_reminder_with_the_key_of_any_age():
    t = with_reminders(
        rem("old1", dedupe_key="plan", fired_at_turn=0),
        rem("keep1", dedupe_key="other"),
        rem("old2", dedupe_key="plan", fired_at_turn=5, ttl_turns=2),
        rem("keep2"),
        rem("old3", dedupe_key="plan", fired_at_turn=9, preserve_on_compact=True),
        messages=[user("hi")],
    )
    done = inject_reminder(
        t, {"body": "new plan", "dedupe_key": "plan"}, fired_at_turn=10, id_factory=lambda: "new"
    )
    assert done.deduped_count == 3
    assert ids(done.transcript) == ["keep1", "keep2", "new"]
    assert done.transcript.messages == t.messages


def test_inject_blank_dedupe_key_does_not_dedupe():
    t = with_reminders(rem("a"), rem("b"))
    done = inject_reminder(t, {"body": "c", "dedupe_key": "   "}, id_factory=lambda: "c")
    assert done.deduped_count == 0
    assert ids(done.transcript) == ["a", "b", "c"]
    assert done.transcript.reminders[-1].dedupe_key is None


def test_inject_without_dedupe_key_keeps_reminders_with_keys():
    t = with_reminders(rem("a", dedupe_key="k"))
    done = inject_reminder(t, {"body": "b"}, id_factory=lambda: "b")
    assert done.deduped_count == 0
    assert ids(done.transcript) == ["a", "b"]


def test_inject_events_are_deduped_then_injected_with_exact_payloads():
    t = with_reminders(rem("old", dedupe_key="plan"), rem("other"), tid="sess")
    log = EventLog()
    inject_reminder(
        t,
        {
            "body": "new plan",
            "dedupe_key": "plan",
            "tags": ["plan", "x"],
            "ttl_turns": 2,
            "propagate": "none",
            "role_hint": "user_block",
            "authority": "corrective",
        },
        source="hook",
        event_log=log,
        id_factory=lambda: "new",
    )
    assert kinds(log) == [DEDUPED, INJECTED]
    deduped, injected = log.records
    assert deduped.topic == injected.topic == LIFECYCLE_TOPIC
    assert set(deduped.payload) == DEDUPED_KEYS
    assert deduped.payload == {
        "session_id": "sess",
        "task_id": None,
        "agent_id": "sess",
        "replaced_id": "old",
        "replacing_id": "new",
        "replaced_ids": ["old"],
        "dedupe_key": "plan",
        "dropped_count": 1,
    }
    assert set(injected.payload) == INJECTED_KEYS
    assert injected.payload == {
        "session_id": "sess",
        "task_id": None,
        "agent_id": "sess",
        "reminder_id": "new",
        "tags": ["plan", "x"],
        "dedupe_key": "plan",
        "source": "hook",
        "role_hint": "user_block",
        "authority": "corrective",
        "ttl_turns": 2,
        "propagate": "none",
        "originating_agent_id": None,
    }


def test_inject_deduped_event_lists_every_replaced_id_in_queue_order():
    t = with_reminders(rem("p1", dedupe_key="k"), rem("x"), rem("p2", dedupe_key="k"))
    log = EventLog()
    done = inject_reminder(
        t, {"body": "n", "dedupe_key": "k"}, event_log=log, id_factory=lambda: "n"
    )
    assert done.deduped_count == 2
    assert kinds(log) == [DEDUPED, INJECTED]
    (deduped,) = payloads(log, DEDUPED)
    assert set(deduped) == DEDUPED_KEYS
    assert deduped["replaced_ids"] == ["p1", "p2"]
    assert deduped["replaced_id"] in {"p1", "p2"}
    assert deduped["replacing_id"] == "n"
    assert deduped["dedupe_key"] == "k"
    assert deduped["dropped_count"] == 2


def test_inject_without_dedupe_emits_only_injected_with_default_payload():
    log = EventLog()
    inject_reminder(Transcript(id="t"), {"body": "x"}, event_log=log, id_factory=lambda: "r")
    assert kinds(log) == [INJECTED]
    assert log.records[0].payload == {
        "session_id": "t",
        "task_id": None,
        "agent_id": "t",
        "reminder_id": "r",
        "tags": [],
        "dedupe_key": None,
        "source": "in_pipeline",
        "role_hint": "system",
        "authority": "contract",
        "ttl_turns": None,
        "propagate": "session",
        "originating_agent_id": None,
    }


@pytest.mark.parametrize("source", [*list(Source), *[s.value for s in Source]])
def test_inject_source_keyword_accepts_every_source(source):
    done = inject_reminder(Transcript(), {"body": "x"}, source=source)
    assert done.transcript.reminders[0].source is Source(source)


@pytest.mark.parametrize("bad", ["nowhere", "", "HOOK", None, 3])
def test_inject_bad_source_raises_rmd_001(bad):
    t = Transcript()
    with pytest.raises(ReminderError) as info:
        inject_reminder(t, {"body": "x"}, source=bad)
    assert info.value.code == "RMD-001"
    assert t.reminders == ()


def test_inject_fired_at_turn_is_stamped():
    done = inject_reminder(Transcript(), {"body": "x"}, fired_at_turn=12)
    assert done.transcript.reminders[0].fired_at_turn == 12


def test_inject_id_factory_gives_deterministic_ids():
    factory = counter_ids()
    t = Transcript()
    for body in ("a", "b", "c"):
        t = inject_reminder(t, {"body": body}, id_factory=factory).transcript
    assert ids(t) == ["r-1", "r-2", "r-3"]


def test_inject_default_ids_are_unique():
    t = Transcript()
    for body in ("a", "b", "c", "d"):
        t = inject_reminder(t, {"body": body}).transcript
    assert len(set(ids(t))) == 4


@pytest.mark.parametrize("bad", [None, "transcript", {"messages": []}, [], 0])
def test_inject_non_transcript_first_argument_raises_type_error(bad):
    with pytest.raises(TypeError):
        inject_reminder(bad, {"body": "x"})


@pytest.mark.parametrize(
    ("options", "code", "text"),
    [
        (None, "RMD-001", None),
        ({"body": "x", "colour": 1, "alpha": 2}, "RMD-001", "unknown option(s): alpha, colour"),
        ({"body": "x", "ttl_turns": 0}, "RMD-001", None),
        ({"body": "x", "ttl_turns": True}, "RMD-001", None),
        ({"body": "x", "propagate": "everyone"}, "RMD-005", None),
        ({"body": "x", "authority": "supreme"}, "RMD-001", None),
        ({"body": "   "}, "RMD-001", None),
    ],
)
def test_inject_invalid_options_raise_and_do_not_emit(options, code, text):
    log = EventLog()
    with pytest.raises(ReminderError) as info:
        inject_reminder(Transcript(), options, event_log=log)
    assert info.value.code == code
    if text is not None:
        assert info.value.message == text
        assert str(info.value) == f"{code}: {text}"
    assert log.records == []


# == insert_reminder ===========================================================================


def test_insert_reminder_keeps_the_given_reminder_and_dedupes():
    t = with_reminders(rem("a", dedupe_key="k"), rem("b"), rem("c", dedupe_key="k"))
    new = rem("mine", dedupe_key="k", source=Source.BRIDGE, ttl_turns=4)
    log = EventLog()
    done = insert_reminder(t, new, event_log=log)
    assert done.reminder_id == "mine"
    assert done.deduped_count == 2
    assert done.transcript.reminders == (t.reminders[1], new)
    assert kinds(log) == [DEDUPED, INJECTED]
    assert payloads(log, DEDUPED)[0]["replaced_ids"] == ["a", "c"]
    assert payloads(log, INJECTED)[0]["source"] == "bridge"
    assert payloads(log, INJECTED)[0]["ttl_turns"] == 4


def test_insert_reminder_rejects_non_reminders_and_non_transcripts():
    with pytest.raises(TypeError):
        insert_reminder(Transcript(), {"body": "x"})  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        insert_reminder("t", rem("a"))  # type: ignore[arg-type]


# == clear_reminders ===========================================================================


def clear_fixture() -> Transcript:
    return with_reminders(
        rem("a", tags=("plan", "x"), dedupe_key="k1"),
        rem("b", tags=("x",), dedupe_key="k2"),
        rem("c", tags=("plan",), dedupe_key="k2", ttl_turns=3),
        rem("d"),
        messages=[user("hi")],
    )


@pytest.mark.parametrize(
    ("selector", "removed", "left"),
    [
        ({"id": "b"}, ["b"], ["a", "c", "d"]),
        ({"tag": "plan"}, ["a", "c"], ["b", "d"]),
        ({"tag": "x"}, ["a", "b"], ["c", "d"]),
        ({"dedupe_key": "k2"}, ["b", "c"], ["a", "d"]),
        ({"tag": "plan", "dedupe_key": "k2"}, ["c"], ["a", "b", "d"]),
        ({"id": "a", "tag": "x"}, ["a"], ["b", "c", "d"]),
        ({"id": "a", "tag": "x", "dedupe_key": "k1"}, ["a"], ["b", "c", "d"]),
        ({"id": "b", "dedupe_key": "k1"}, [], ["a", "b", "c", "d"]),
        ({"tag": "pla"}, [], ["a", "b", "c", "d"]),
        ({"id": "a", "tag": ""}, ["a"], ["b", "c", "d"]),
        ({"id": "d", "tag": None}, ["d"], ["a", "b", "c"]),
    ],
)
def test_clear_selectors_match_with_and_semantics(selector, removed, left):
    t = clear_fixture()
    log = EventLog()
    done = clear_reminders(t, selector, event_log=log)
    assert isinstance(done, Cleared)
    assert done.removed_count == len(removed)
    assert ids(done.transcript) == left
    assert done.transcript.messages == t.messages
    assert [p["reminder_id"] for p in payloads(log)] == removed
    assert kinds(log) == [EXPIRED] * len(removed)


def test_clear_emits_one_expired_cleared_event_per_reminder_with_the_documented_keys():
    t = clear_fixture()
    log = EventLog()
    clear_reminders(t, {"tag": "plan"}, event_log=log)
    assert len(log.records) == 2
    for rec, (rid, ttl) in zip(log.records, [("a", None), ("c", 3)], strict=True):
        assert rec.topic == LIFECYCLE_TOPIC
        assert set(rec.payload) == EXPIRED_KEYS
        assert rec.payload["reminder_id"] == rid
        assert rec.payload["reason"] == "cleared"
        assert rec.payload["ttl_turns_before"] == ttl
        assert rec.payload["session_id"] == "t"
        assert rec.payload["agent_id"] == "t"
        assert rec.payload["task_id"] is None


def test_clear_with_nothing_matched_returns_the_same_transcript():
    t = clear_fixture()
    log = EventLog()
    done = clear_reminders(t, {"id": "missing"}, event_log=log)
    assert done.removed_count == 0
    assert done.transcript is t
    assert log.records == []


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ({"ids": "a"}, "unknown option(s): ids"),
        ({"tag": "x", "zeta": 1, "alpha": 2}, "unknown option(s): alpha, zeta"),
        ({"tags": ["x"]}, "unknown option(s): tags"),
        ({"body": "x", "id": "a"}, "unknown option(s): body"),
    ],
)
def test_clear_unknown_selector_keys_raise_rmd_001(selector, message):
    with pytest.raises(ReminderError) as info:
        clear_reminders(clear_fixture(), selector)
    assert info.value.code == "RMD-001"
    assert info.value.message == message


@pytest.mark.parametrize(
    "selector",
    [
        {},
        {"id": ""},
        {"tag": "   "},
        {"id": None, "tag": None, "dedupe_key": None},
        {"id": " ", "tag": ""},
    ],
)
def test_clear_needs_at_least_one_non_blank_selector(selector):
    t = clear_fixture()
    with pytest.raises(ReminderError) as info:
        clear_reminders(t, selector)
    assert info.value.code == "RMD-001"
    assert ids(t) == ["a", "b", "c", "d"]


def test_clear_non_transcript_raises_type_error():
    with pytest.raises(TypeError):
        clear_reminders([rem("a")], {"id": "a"})  # type: ignore[arg-type]


# == post_turn =================================================================================


def test_post_turn_leaves_future_reminders_untouched():
    t = with_reminders(rem("future", ttl_turns=1, fired_at_turn=5))
    done = post_turn(t, 4)
    assert done.transcript.reminders == t.reminders
    assert (done.expired_count, done.decremented_count, done.remaining_count) == (0, 0, 1)


def test_post_turn_leaves_reminders_without_ttl_untouched():
    t = with_reminders(rem("forever"))
    done = post_turn(t, 100)
    assert done.transcript.reminders == t.reminders
    assert (done.expired_count, done.decremented_count, done.remaining_count) == (0, 0, 1)


def test_post_turn_expires_ttl_one_with_the_documented_event():
    t = with_reminders(rem("once", ttl_turns=1, fired_at_turn=2), tid="sess")
    log = EventLog()
    done = post_turn(t, 3, event_log=log)
    assert isinstance(done, PostTurn)
    assert done.transcript.reminders == ()
    assert (done.expired_count, done.decremented_count, done.remaining_count) == (1, 0, 0)
    (rec,) = log.records
    assert rec.kind == EXPIRED
    assert rec.topic == LIFECYCLE_TOPIC
    assert set(rec.payload) == EXPIRED_KEYS
    assert rec.payload["session_id"] == "sess"
    assert rec.payload["task_id"] is None
    assert rec.payload["agent_id"] == "sess"
    assert rec.payload["reminder_id"] == "once"
    assert rec.payload["reason"] == "ttl"
    assert rec.payload["ttl_turns_before"] == 1
    assert rec.payload["expired_at_turn"] == 3


def test_post_turn_fired_at_the_same_turn_counts():
    t = with_reminders(rem("now", ttl_turns=1, fired_at_turn=3))
    assert post_turn(t, 3).transcript.reminders == ()


def test_post_turn_decrements_finite_ttl():
    t = with_reminders(rem("three", ttl_turns=3))
    log = EventLog()
    done = post_turn(t, 0, event_log=log)
    (r,) = done.transcript.reminders
    assert r == rem("three", ttl_turns=2)
    assert (done.expired_count, done.decremented_count, done.remaining_count) == (0, 1, 1)
    assert log.records == []


def test_post_turn_counts_and_keeps_queue_order():
    t = with_reminders(
        rem("a", ttl_turns=1),
        rem("b", ttl_turns=3),
        rem("c"),
        rem("d", ttl_turns=1, fired_at_turn=9),
        rem("e", ttl_turns=2),
        rem("f", ttl_turns=1),
    )
    log = EventLog()
    done = post_turn(t, 4, event_log=log)
    assert ids(done.transcript) == ["b", "c", "d", "e"]
    assert [r.ttl_turns for r in done.transcript.reminders] == [2, None, 1, 1]
    assert done.expired_count == 2
    assert done.decremented_count == 2
    assert done.remaining_count == 4
    assert [(p["reminder_id"], p["reason"]) for p in payloads(log)] == [
        ("a", "ttl"),
        ("f", "ttl"),
    ]


def test_ttl_one_stamped_for_the_next_turn_survives_this_turn_then_expires():
    t = inject_reminder(
        Transcript(), {"body": "x", "ttl_turns": 1}, fired_at_turn=6, id_factory=lambda: "r"
    ).transcript
    log = EventLog()
    after5 = post_turn(t, 5, event_log=log)
    assert ids(after5.transcript) == ["r"]
    assert after5.transcript.reminders[0].ttl_turns == 1
    assert after5.expired_count == 0
    assert after5.decremented_count == 0
    assert log.records == []
    after6 = post_turn(after5.transcript, 6, event_log=log)
    assert after6.transcript.reminders == ()
    assert after6.expired_count == 1
    (rec,) = log.records
    assert rec.payload["expired_at_turn"] == 6
    assert rec.payload["ttl_turns_before"] == 1


def test_ttl_three_lives_exactly_three_post_turn_passes():
    t = with_reminders(rem("r", ttl_turns=3, fired_at_turn=0))
    seen = []
    for turn in range(4):
        t = post_turn(t, turn).transcript
        seen.append([r.ttl_turns for r in t.reminders])
    assert seen == [[2], [1], [], []]


def test_post_turn_leaves_messages_alone_and_rejects_bad_input():
    t = with_reminders(rem("a", ttl_turns=1), messages=[user("hi")])
    assert post_turn(t, 0).transcript.messages == t.messages
    with pytest.raises(TypeError):
        post_turn("t", 0)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        post_turn(t, "1")  # type: ignore[arg-type]
    with pytest.raises(ReminderError):
        post_turn(t, -1)


# == compact ===================================================================================


def test_compact_event_order_ttl_then_dedupe_then_compaction():
    t = with_reminders(
        rem("keep-old", dedupe_key="k", authority=Authority.ADVISORY),
        rem("tick", ttl_turns=1),
        rem("plain"),
        rem("keep-new", dedupe_key="k", preserve_on_compact=True),
        rem("ttl2", ttl_turns=2),
        messages=conversation(6),
        tid="sess",
    )
    log = EventLog()
    done = compact(t, event_log=log)
    assert kinds(log) == [EXPIRED, DEDUPED, EXPIRED, EXPIRED]
    ttl, deduped, c1, c2 = payloads(log)

    assert set(ttl) == EXPIRED_KEYS
    assert ttl["reminder_id"] == "tick"
    assert ttl["reason"] == "ttl"
    assert ttl["expired_at_boundary"] == "pre_compact"
    assert ttl["ttl_turns_before"] == 1

    assert set(deduped) == DEDUPED_KEYS | {"boundary"}
    assert deduped["boundary"] == "pre_compact"
    assert deduped["replacing_id"] == "keep-new"
    assert deduped["replaced_ids"] == ["keep-old"]
    assert deduped["replaced_id"] == "keep-old"
    assert deduped["dedupe_key"] == "k"
    assert deduped["dropped_count"] == 1

    for p in (c1, c2):
        assert set(p) == EXPIRED_KEYS
        assert p["reason"] == "compaction"
    assert [c1["reminder_id"], c2["reminder_id"]] == ["plain", "ttl2"]
    assert c2["ttl_turns_before"] == 1  # ticked from 2 before the compaction drop

    for rec in log.records:
        assert rec.topic == LIFECYCLE_TOPIC
        assert rec.payload["session_id"] == "sess"
        assert rec.payload["agent_id"] == "sess"
        assert rec.payload["task_id"] is None

    assert isinstance(done, Compacted)
    assert ids(done.transcript) == ["keep-new"]
    assert done.deduped_count == 1
    assert done.expired_count == 3
    assert done.preserved_count == 1


@pytest.mark.parametrize(
    ("authorities", "winner"),
    [
        (["advisory", "contract", "corrective", "contract"], 3),
        (["contract", "advisory"], 0),
        (["corrective", "advisory", "corrective"], 2),
        (["advisory", "advisory", "advisory"], 2),
        (["advisory", "corrective"], 1),
        (["contract", "contract", "corrective"], 1),
    ],
)
def test_compact_dedupe_highest_authority_wins_ties_go_to_the_most_recent(authorities, winner):
    reminders = [
        rem(f"r{i}", dedupe_key="k", authority=a, preserve_on_compact=True)
        for i, a in enumerate(authorities)
    ]
    log = EventLog()
    done = compact(with_reminders(*reminders), event_log=log)
    assert ids(done.transcript) == [f"r{winner}"]
    losers = [f"r{i}" for i in range(len(authorities)) if i != winner]
    assert done.deduped_count == len(losers)
    (deduped,) = payloads(log, DEDUPED)
    assert deduped["replacing_id"] == f"r{winner}"
    assert deduped["replaced_ids"] == losers
    assert deduped["replaced_id"] in losers
    assert deduped["dropped_count"] == len(losers)
    assert deduped["boundary"] == "pre_compact"
    assert deduped["dedupe_key"] == "k"


def test_compact_one_deduped_event_per_key():
    t = with_reminders(
        rem("a1", dedupe_key="a", preserve_on_compact=True),
        rem("b1", dedupe_key="b", preserve_on_compact=True),
        rem("a2", dedupe_key="a", preserve_on_compact=True),
        rem("b2", dedupe_key="b", preserve_on_compact=True),
        rem("a3", dedupe_key="a", preserve_on_compact=True),
    )
    log = EventLog()
    done = compact(t, event_log=log)
    assert ids(done.transcript) == ["b2", "a3"]
    assert done.deduped_count == 3
    by_key = {p["dedupe_key"]: p for p in payloads(log, DEDUPED)}
    assert len(payloads(log, DEDUPED)) == 2
    assert by_key["a"]["replaced_ids"] == ["a1", "a2"]
    assert by_key["a"]["replacing_id"] == "a3"
    assert by_key["b"]["replaced_ids"] == ["b1"]
    assert by_key["b"]["replacing_id"] == "b2"
    assert sum(p["dropped_count"] for p in payloads(log, DEDUPED)) == done.deduped_count


def test_compact_ttl_expiry_happens_before_dedupe():
    # The newer reminder with the key expires at the TTL tick, so it cannot win the dedupe.
    t = with_reminders(
        rem("old", dedupe_key="k", preserve_on_compact=True),
        rem("new", dedupe_key="k", ttl_turns=1, preserve_on_compact=True),
    )
    log = EventLog()
    done = compact(t, event_log=log)
    assert ids(done.transcript) == ["old"]
    assert done.deduped_count == 0
    assert kinds(log) == [EXPIRED]
    assert payloads(log)[0]["reminder_id"] == "new"
    assert payloads(log)[0]["reason"] == "ttl"


def test_compact_ticks_finite_ttls_of_preserved_reminders_once():
    t = with_reminders(
        rem("a", ttl_turns=3, preserve_on_compact=True),
        rem("b", preserve_on_compact=True),
        rem("c", ttl_turns=1, preserve_on_compact=True),
    )
    done = compact(t)
    assert ids(done.transcript) == ["a", "b"]
    assert [r.ttl_turns for r in done.transcript.reminders] == [2, None]
    assert done.preserved_count == 2
    assert done.expired_count == 1


def test_compact_only_preserved_reminders_survive():
    t = with_reminders(
        rem("p1", preserve_on_compact=True),
        rem("d1"),
        rem("p2", preserve_on_compact=True, tags=("x",)),
        rem("d2", ttl_turns=5),
    )
    log = EventLog()
    done = compact(t, event_log=log)
    assert ids(done.transcript) == ["p1", "p2"]
    assert all(r.preserve_on_compact for r in done.transcript.reminders)
    assert done.preserved_count == 2
    assert [(p["reminder_id"], p["reason"]) for p in payloads(log)] == [
        ("d1", "compaction"),
        ("d2", "compaction"),
    ]
    assert done.expired_count == 2
    assert done.deduped_count == 0


def test_compact_expired_count_matches_expired_events():
    t = with_reminders(
        rem("t1", ttl_turns=1),
        rem("t2", ttl_turns=1, preserve_on_compact=True),
        rem("x"),
        rem("p", preserve_on_compact=True),
    )
    log = EventLog()
    done = compact(t, event_log=log)
    assert done.expired_count == len(payloads(log, EXPIRED)) == 3
    assert [p["reason"] for p in payloads(log, EXPIRED)] == ["ttl", "ttl", "compaction"]


def test_compact_default_layout_keeps_first_system_summary_and_last_keep_last():
    msgs = conversation(10)  # system + 10
    t = with_reminders(messages=msgs)
    done = compact(t, keep_last=4)
    out = done.transcript.messages
    assert len(out) == 1 + 1 + 4
    assert out[0] == msgs[0]
    assert out[1]["role"] == "user"
    assert out[1]["content"] == done.summary
    assert list(out[2:]) == msgs[-4:]
    assert done.archived_messages == 6
    assert "6" in done.summary


@pytest.mark.parametrize("keep_last", [0, 1, 2, 3, 5, 7])
def test_compact_keep_last_counts(keep_last):
    msgs = conversation(8)
    done = compact(with_reminders(messages=msgs), keep_last=keep_last)
    out = done.transcript.messages
    assert out[0] == msgs[0]
    assert out[1]["role"] == "user"
    assert out[1]["content"] == done.summary
    tail = list(out[2:])
    assert len(tail) == keep_last
    assert tail == (msgs[len(msgs) - keep_last :] if keep_last else [])
    assert done.archived_messages == 8 - keep_last
    assert str(8 - keep_last) in done.summary


def test_compact_default_keep_last_is_four():
    msgs = conversation(9)
    done = compact(with_reminders(messages=msgs))
    assert list(done.transcript.messages[2:]) == msgs[-4:]
    assert done.archived_messages == 5


def test_compact_without_leading_system_message_has_no_head():
    msgs = conversation(6, system=False)
    done = compact(with_reminders(messages=msgs), keep_last=2)
    out = done.transcript.messages
    assert out[0] == {"role": "user", "content": done.summary}
    assert list(out[1:]) == msgs[-2:]
    assert done.archived_messages == 4


def test_compact_explicit_summary_is_used():
    msgs = conversation(7)
    done = compact(with_reminders(messages=msgs), keep_last=2, summary="We fixed the parser.")
    assert done.summary == "We fixed the parser."
    assert done.transcript.messages == (
        msgs[0],
        {"role": "user", "content": "We fixed the parser."},
        *msgs[-2:],
    )
    assert done.archived_messages == 5


def test_compact_kept_tail_never_starts_with_an_orphaned_tool_result():
    call = {"id": "c1", "name": "run", "arguments": {"cmd": "pytest"}}
    msgs = [
        {"role": "system", "content": "SYS"},
        user("u0"),
        assistant("a0"),
        user("u1"),
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "name": "run", "content": "1 failed"},
        {"role": "tool", "tool_call_id": "c1", "name": "run", "content": "more output"},
        assistant("done"),
    ]
    done = compact(with_reminders(messages=msgs), keep_last=3)
    out = done.transcript.messages
    tail = list(out[2:])
    assert tail[0]["role"] != "tool"
    assert tail == msgs[4:]
    assert tail[0]["tool_calls"][0]["id"] == "c1"
    assert done.archived_messages == 3
    for i, m in enumerate(out):
        if m["role"] == "tool":
            earlier_calls = [
                c["id"] for prev in out[:i] for c in prev.get("tool_calls", []) if "id" in c
            ]
            assert m["tool_call_id"] in earlier_calls


def test_compact_nothing_to_archive_keeps_messages():
    msgs = conversation(3)
    done = compact(with_reminders(messages=msgs), keep_last=4)
    assert done.archived_messages == 0
    kept = [m for m in done.transcript.messages if m in msgs]
    extra = [m for m in done.transcript.messages if m not in msgs]
    assert kept == msgs
    assert extra in ([], [{"role": "user", "content": done.summary}])


def test_custom_compactor_receives_all_surviving_reminders_before_the_preserve_filter():
    msgs = conversation(6)
    t = with_reminders(
        rem("gone-ttl", ttl_turns=1),
        rem("loser", dedupe_key="k", authority=Authority.ADVISORY),
        rem("winner", dedupe_key="k", authority=Authority.CONTRACT),
        rem("discardable", ttl_turns=3),
        rem("kept", preserve_on_compact=True),
        messages=msgs,
    )
    seen: dict[str, Any] = {}

    def compactor(messages, reminders):
        seen["messages"] = messages
        seen["reminders"] = reminders
        return "custom summary"

    done = compact(t, keep_last=2, custom_compactor=compactor)
    assert list(seen["messages"]) == msgs
    assert [r.id for r in seen["reminders"]] == ["winner", "discardable", "kept"]
    assert [r.ttl_turns for r in seen["reminders"]] == [None, 2, None]
    assert done.summary == "custom summary"
    assert done.transcript.messages == (
        msgs[0],
        {"role": "user", "content": "custom summary"},
        *msgs[-2:],
    )
    assert done.archived_messages == 4
    assert ids(done.transcript) == ["kept"]


def test_custom_compactor_returning_messages_replaces_them():
    msgs = conversation(5)
    replacement: list[Message] = [msgs[0], {"role": "user", "content": "recap"}, msgs[-1]]
    done = compact(with_reminders(messages=msgs), custom_compactor=lambda m, r: replacement)
    assert done.transcript.messages == tuple(replacement)
    assert done.archived_messages == 4


def test_custom_compactor_returning_only_new_messages_archives_everything():
    msgs = conversation(5)
    done = compact(
        with_reminders(messages=msgs),
        custom_compactor=lambda m, r: ({"role": "user", "content": "all new"},),
    )
    assert done.transcript.messages == ({"role": "user", "content": "all new"},)
    assert done.archived_messages == 6


def test_custom_compactor_returning_an_invalid_message_raises():
    with pytest.raises(MessageError) as info:
        compact(
            with_reminders(messages=conversation(2)),
            custom_compactor=lambda m, r: [{"role": "bot", "content": "x"}],  # type: ignore[typeddict-item]
        )
    assert info.value.code == "RMD-101"


@pytest.mark.parametrize("bad", [42, None, 3.5, {"role": "user"}])
def test_custom_compactor_returning_a_non_summary_raises_type_error(bad):
    t = with_reminders(rem("a"), messages=conversation(3))
    log = EventLog()
    with pytest.raises(TypeError):
        compact(t, custom_compactor=lambda m, r: bad, event_log=log)
    assert ids(t) == ["a"]


@pytest.mark.parametrize("bad", [-1, "4", 2.0, None, True])
def test_compact_bad_keep_last_raises_reminder_error(bad):
    with pytest.raises(ReminderError) as info:
        compact(with_reminders(messages=conversation(4)), keep_last=bad)
    assert info.value.code == "RMD-001"


def test_compact_keeps_the_transcript_id():
    t = with_reminders(rem("a"), messages=conversation(6), tid="sess")
    done = compact(t, keep_last=1)
    assert done.transcript.id == "sess"
    assert done.transcript.reminders == ()


def test_compact_removes_the_instructions_so_the_next_envelope_carries_them_again():
    t = with_reminders(rem("durable", preserve_on_compact=True), messages=conversation(2), tid="s")
    first = commit_directives(t, turn=0)
    assert first.message is not None
    assert ENVELOPE_INSTRUCTIONS in first.message["content"]
    t2 = first.transcript
    for i in range(6):
        t2 = t2.append(user(f"more {i}"))
    done = compact(t2, keep_last=2)
    assert all(ENVELOPE_INSTRUCTIONS not in str(m["content"]) for m in done.transcript.messages)
    again = commit_directives(done.transcript, turn=1)
    assert again.fired == ("durable",)
    assert again.message is not None
    assert ENVELOPE_INSTRUCTIONS in again.message["content"]


# == handoff_reminders / seed_inherited ========================================================


def handoff_fixture() -> Transcript:
    return with_reminders(
        rem("all-own", propagate=Propagate.ALL),
        rem("all-inh", propagate=Propagate.ALL, source=Source.INHERITED, originating_agent_id="g"),
        rem("sess-own", propagate=Propagate.SESSION, source=Source.HOOK),
        rem("sess-inh", propagate=Propagate.SESSION, source=Source.INHERITED),
        rem("none-own", propagate=Propagate.NONE),
        rem("none-inh", propagate=Propagate.NONE, source=Source.INHERITED),
        tid="parent-t",
    )


def test_handoff_selects_by_propagate_and_source():
    out = handoff_reminders(handoff_fixture(), parent_agent_id="parent")
    assert isinstance(out, tuple)
    assert [r.id for r in out] == ["all-own", "all-inh", "sess-own"]


def test_handoff_copies_keep_id_and_propagate_and_become_inherited():
    t = handoff_fixture()
    out = handoff_reminders(t, parent_agent_id="parent")
    originals = {r.id: r for r in t.reminders}
    for copy_ in out:
        original = originals[copy_.id]
        assert copy_.source is Source.INHERITED
        assert copy_.propagate is original.propagate
        assert copy_.body == original.body
        assert copy_.tags == original.tags
        assert copy_.ttl_turns == original.ttl_turns
        assert copy_.authority == original.authority
        assert copy_.preserve_on_compact == original.preserve_on_compact
        assert copy_.dedupe_key == original.dedupe_key
    assert [r.originating_agent_id for r in out] == ["parent", "g", "parent"]


def test_handoff_does_not_change_the_parent():
    t = handoff_fixture()
    before = t.to_json()
    handoff_reminders(t, parent_agent_id="parent")
    assert t.to_json() == before
    assert t.reminders[0].source is Source.IN_PIPELINE


def test_handoff_to_a_grandchild_still_names_the_first_parent():
    parent = handoff_fixture()
    to_child = handoff_reminders(parent, parent_agent_id="parent")
    child = seed_inherited(Transcript(id="child-t"), to_child, sub_agent_id="child")
    to_grandchild = handoff_reminders(child, parent_agent_id="child")
    # `session` reminders are not re-inherited; `all` ones are, naming the first parent.
    assert [r.id for r in to_grandchild] == ["all-own", "all-inh"]
    assert [r.originating_agent_id for r in to_grandchild] == ["parent", "g"]
    assert all(r.source is Source.INHERITED for r in to_grandchild)


def test_handoff_of_an_empty_queue_is_empty():
    assert handoff_reminders(Transcript(), parent_agent_id="p") == ()


@pytest.mark.parametrize("bad", ["", "  "])
def test_handoff_blank_parent_id_is_rejected(bad):
    with pytest.raises(ReminderError):
        handoff_reminders(handoff_fixture(), parent_agent_id=bad)


def test_seed_inherited_adds_reminders_and_emits_injected_then_inherited():
    inherited = handoff_reminders(handoff_fixture(), parent_agent_id="parent")
    child = Transcript(id="child-t").append(user("task"))
    log = EventLog()
    seeded = seed_inherited(child, inherited, sub_agent_id="sub-1", event_log=log)
    assert isinstance(seeded, Transcript)
    assert seeded.reminders == inherited
    assert seeded.messages == child.messages
    assert seeded.id == "child-t"
    assert kinds(log) == [INJECTED, INHERITED] * 3
    for i, r in enumerate(inherited):
        injected = log.records[2 * i].payload
        inh = log.records[2 * i + 1].payload
        assert set(injected) == INJECTED_KEYS
        assert injected["reminder_id"] == r.id
        assert injected["source"] == "inherited"
        assert injected["originating_agent_id"] == r.originating_agent_id
        assert injected["propagate"] == r.propagate.value
        assert set(inh) == INHERITED_KEYS
        assert inh == {
            "session_id": "child-t",
            "task_id": None,
            "agent_id": "child-t",
            "reminder_id": r.id,
            "originating_agent_id": r.originating_agent_id,
            "sub_agent_id": "sub-1",
            "propagate": r.propagate.value,
        }
    assert [rec.seq for rec in log.records] == list(range(1, 7))


def test_seed_inherited_dedupes_by_key_against_the_child_queue():
    child = with_reminders(rem("local", dedupe_key="plan"), tid="c")
    parent_copy = rem(
        "from-parent", dedupe_key="plan", source=Source.INHERITED, originating_agent_id="p"
    )
    log = EventLog()
    seeded = seed_inherited(child, [parent_copy], sub_agent_id="c", event_log=log)
    assert ids(seeded) == ["from-parent"]
    assert kinds(log) == [DEDUPED, INJECTED, INHERITED]


def test_seed_inherited_with_nothing_is_the_same_content():
    child = Transcript(id="c").append(user("x"))
    log = EventLog()
    seeded = seed_inherited(child, (), sub_agent_id="c", event_log=log)
    assert seeded == child
    assert log.records == []


# == purity ====================================================================================


def purity_fixture() -> Transcript:
    return with_reminders(
        rem("a", ttl_turns=1, tags=("x",), dedupe_key="k"),
        rem("b", ttl_turns=3, preserve_on_compact=True, propagate=Propagate.ALL),
        rem("c", dedupe_key="k", authority=Authority.ADVISORY),
        rem("d", fired_at_turn=9, ttl_turns=1),
        messages=conversation(8),
        tid="pure",
    )


TRANSFORMS: list[tuple[str, Callable[[Transcript], object]]] = [
    ("inject", lambda t: inject_reminder(t, {"body": "n", "dedupe_key": "k"})),
    ("inject-plain", lambda t: inject_reminder(t, {"body": "n"})),
    ("insert", lambda t: insert_reminder(t, rem("z", dedupe_key="k"))),
    ("clear", lambda t: clear_reminders(t, {"tag": "x"})),
    ("clear-none", lambda t: clear_reminders(t, {"id": "missing"})),
    ("post_turn", lambda t: post_turn(t, 1)),
    ("compact", lambda t: compact(t, keep_last=2)),
    ("compact-custom", lambda t: compact(t, custom_compactor=lambda m, r: [user("s")])),
    ("handoff", lambda t: handoff_reminders(t, parent_agent_id="p")),
    ("seed", lambda t: seed_inherited(t, [rem("s", dedupe_key="k")], sub_agent_id="s")),
    ("commit", lambda t: commit_directives(t, turn=0)),
    ("append", lambda t: t.append(user("more"))),
]


@pytest.mark.parametrize(("name", "transform"), TRANSFORMS, ids=[n for n, _ in TRANSFORMS])
def test_no_transform_mutates_its_input(name, transform):
    t = purity_fixture()
    json_before = t.to_json()
    reminders_before = t.reminders
    messages_before = t.messages
    transform(t)
    transform(t)
    assert t.to_json() == json_before
    assert t.reminders == reminders_before
    assert t.messages == messages_before
    assert t == purity_fixture()


@pytest.mark.parametrize(("name", "transform"), TRANSFORMS, ids=[n for n, _ in TRANSFORMS])
def test_transforms_are_deterministic_for_the_same_input(name, transform):
    t = purity_fixture()
    a = transform(t)
    b = transform(t)
    if name.startswith("inject"):
        # default ids are fresh each call, so compare everything but the new id
        assert a.transcript.messages == b.transcript.messages
        assert ids(a.transcript)[:-1] == ids(b.transcript)[:-1]
    elif isinstance(a, tuple | Transcript):
        assert a == b
    else:
        assert a.transcript == b.transcript


def test_pipeline_branches_from_one_base_stay_independent():
    base = with_reminders(rem("r", ttl_turns=2), messages=[user("q")], tid="b")
    base_json = base.to_json()
    left = inject_reminder(base, {"body": "left"}, id_factory=lambda: "L").transcript
    right = inject_reminder(base, {"body": "right"}, id_factory=lambda: "R").transcript
    left = commit_directives(left, turn=0).transcript.append(assistant("left answer"))
    right = post_turn(right, 0).transcript.append(assistant("right answer"))
    assert ids(left) == ["r", "L"]
    assert ids(right) == ["r", "R"]
    assert right.reminders[0].ttl_turns == 1
    assert left.reminders[0].ttl_turns == 2
    assert [m["content"] for m in right.messages] == ["q", "right answer"]
    assert left.messages[-1] == assistant("left answer")
    assert len(left.messages) == 3
    assert base.to_json() == base_json


def test_no_event_log_means_the_same_results_and_no_records():
    def run(log: EventLog | None) -> Transcript:
        t = Transcript(id="t").append(user("q"))
        factory = counter_ids()
        t = inject_reminder(
            t, {"body": "a", "dedupe_key": "k", "ttl_turns": 1}, event_log=log, id_factory=factory
        ).transcript
        t = inject_reminder(
            t, {"body": "b", "dedupe_key": "k"}, event_log=log, id_factory=factory
        ).transcript
        done = inject_reminder(t, {"body": "c", "ttl_turns": 1}, event_log=log, id_factory=factory)
        t = done.transcript
        t = commit_directives(t, turn=0, event_log=log).transcript
        t = post_turn(t, 0, event_log=log).transcript
        t = clear_reminders(t, {"id": "r-2"}, event_log=log).transcript
        t = inject_reminder(t, {"body": "d"}, event_log=log, id_factory=factory).transcript
        t = compact(t, keep_last=1, event_log=log).transcript
        return seed_inherited(t, [rem("s")], sub_agent_id="x", event_log=log)

    log = EventLog()
    with_log = run(log)
    bystander = EventLog()
    without = run(None)
    assert with_log == without
    assert len(log.records) > 0
    assert bystander.records == []
