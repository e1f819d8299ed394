"""Tests for the in-memory EventLog and the ids stamped on lifecycle records.

The rules: docs/core.md, "Lifecycle events" (EventLog, EventRecord, lifecycle topic, subscribe,
the three ids).
"""

from __future__ import annotations

import dataclasses

import pytest

from agent_reminders import (
    LIFECYCLE_TOPIC,
    EventLog,
    EventRecord,
    Propagate,
    Reminder,
    Transcript,
    clear_reminders,
    commit_directives,
    compact,
    handoff_reminders,
    inject_reminder,
    post_turn,
    seed_inherited,
)

LIFECYCLE_KINDS = [
    "transcript.reminder.injected",
    "transcript.reminder.deduped",
    "transcript.reminder.expired",
    "transcript.reminder.fired",
    "transcript.reminder.iteration_summary",
    "transcript.reminder.dropped",
    "transcript.reminder.inherited",
    "transcript.reminder.provider_evaluated",
]


def full_lifecycle(log: EventLog | None, tid: str = "t") -> Transcript:
    """Run a transcript through every transform that emits, producing each lifecycle kind."""
    t = Transcript.from_events(
        [
            {"kind": "message", "message": {"role": "user", "content": "go"}},
            {"id": "evt-bad", "kind": "system_reminder", "reminder": {"body": " "}},
        ],
        id=tid,
    )
    t = inject_reminder(
        t, {"body": "a", "dedupe_key": "k"}, event_log=log, id_factory=lambda: "a"
    ).transcript
    t = inject_reminder(
        t, {"body": "b", "dedupe_key": "k", "ttl_turns": 1}, event_log=log, id_factory=lambda: "b"
    ).transcript
    t = inject_reminder(
        t, {"body": "c", "tags": ["x"]}, event_log=log, id_factory=lambda: "c"
    ).transcript
    t = commit_directives(t, turn=0, event_log=log).transcript
    t = post_turn(t, 0, event_log=log).transcript
    t = clear_reminders(t, {"tag": "x"}, event_log=log).transcript
    t = inject_reminder(t, {"body": "d"}, event_log=log, id_factory=lambda: "d").transcript
    t = compact(t, keep_last=1, event_log=log).transcript
    inherited: tuple[Reminder, ...] = (Reminder(id="h", body="h", propagate=Propagate.ALL),)
    inherited = handoff_reminders(Transcript(reminders=inherited), parent_agent_id="parent")
    return seed_inherited(t, inherited, sub_agent_id="sub", event_log=log)


# -- emit / records ----------------------------------------------------------------------------


def test_new_log_is_empty():
    log = EventLog()
    assert log.records == []


def test_emit_returns_the_record_and_appends_it():
    log = EventLog()
    rec = log.emit("transcript.reminder.fired", {"reminder_id": "r1"})
    assert isinstance(rec, EventRecord)
    assert rec.seq == 1
    assert rec.kind == "transcript.reminder.fired"
    assert rec.topic == LIFECYCLE_TOPIC
    assert rec.payload == {"reminder_id": "r1"}
    assert type(rec.payload) is dict
    assert log.records == [rec]


def test_records_are_numbered_from_one_in_order():
    log = EventLog()
    for i in range(5):
        log.emit("transcript.reminder.injected", {"i": i})
    assert [r.seq for r in log.records] == [1, 2, 3, 4, 5]
    assert [r.payload["i"] for r in log.records] == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("kind", LIFECYCLE_KINDS)
def test_lifecycle_kinds_are_on_the_lifecycle_topic(kind):
    log = EventLog()
    assert log.emit(kind, {}).topic == "transcript.reminder.lifecycle"
    assert LIFECYCLE_TOPIC == "transcript.reminder.lifecycle"


def test_record_has_seq_topic_kind_payload_attributes():
    rec = EventLog().emit("transcript.reminder.expired", {"reason": "ttl"})
    assert {f.name for f in dataclasses.fields(rec)} == {"seq", "topic", "kind", "payload"}


def test_records_are_frozen():
    rec = EventLog().emit("transcript.reminder.expired", {"reason": "ttl"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        rec.seq = 5  # type: ignore[misc]


def test_emit_without_payload_gives_an_empty_dict():
    rec = EventLog().emit("transcript.reminder.fired")
    assert rec.payload == {}
    assert type(rec.payload) is dict


def test_emit_copies_a_mapping_payload_into_a_plain_dict():
    from types import MappingProxyType

    source = {"a": 1}
    rec = EventLog().emit("transcript.reminder.fired", MappingProxyType(source))
    assert type(rec.payload) is dict
    assert rec.payload == {"a": 1}


# -- subscribe ---------------------------------------------------------------------------------


def test_subscriber_receives_event_records():
    log = EventLog()
    seen: list[EventRecord] = []
    log.subscribe(seen.append)
    rec = log.emit("transcript.reminder.fired", {"reminder_id": "r"})
    assert seen == [rec]
    assert isinstance(seen[0], EventRecord)


def test_subscriber_only_sees_later_records():
    log = EventLog()
    log.emit("transcript.reminder.fired", {"n": 1})
    seen: list[EventRecord] = []
    log.subscribe(seen.append)
    log.emit("transcript.reminder.fired", {"n": 2})
    assert [r.payload["n"] for r in seen] == [2]
    assert [r.seq for r in seen] == [2]


def test_subscribe_kind_prefix_filters():
    log = EventLog()
    expired: list[EventRecord] = []
    everything: list[EventRecord] = []
    reminders: list[EventRecord] = []
    log.subscribe(expired.append, kind_prefix="transcript.reminder.expired")
    log.subscribe(everything.append)
    log.subscribe(reminders.append, kind_prefix="transcript.reminder.")
    log.emit("transcript.reminder.injected", {})
    log.emit("transcript.reminder.expired", {})
    log.emit("loop.checkpoint", {})
    log.emit("transcript.reminder.expired", {})
    assert [r.seq for r in expired] == [2, 4]
    assert [r.seq for r in everything] == [1, 2, 3, 4]
    assert [r.seq for r in reminders] == [1, 2, 4]


def test_unsubscribe_stops_delivery_and_is_harmless_twice():
    log = EventLog()
    a: list[EventRecord] = []
    b: list[EventRecord] = []
    stop_a = log.subscribe(a.append)
    log.subscribe(b.append)
    log.emit("transcript.reminder.fired", {"n": 1})
    assert callable(stop_a)
    stop_a()
    log.emit("transcript.reminder.fired", {"n": 2})
    stop_a()
    log.emit("transcript.reminder.fired", {"n": 3})
    assert [r.payload["n"] for r in a] == [1]
    assert [r.payload["n"] for r in b] == [1, 2, 3]
    assert len(log.records) == 3


def test_subscribers_see_lifecycle_records_from_transforms():
    log = EventLog()
    seen: list[EventRecord] = []
    log.subscribe(seen.append, kind_prefix="transcript.reminder.inj")
    inject_reminder(Transcript(id="t"), {"body": "x"}, event_log=log, id_factory=lambda: "r")
    assert [(r.kind, r.payload["reminder_id"]) for r in seen] == [
        ("transcript.reminder.injected", "r")
    ]


# -- lifecycle records from the transforms -----------------------------------------------------


def test_full_lifecycle_emits_every_transform_kind_on_the_lifecycle_topic():
    log = EventLog()
    full_lifecycle(log)
    kinds = {r.kind for r in log.records}
    assert kinds == {
        "transcript.reminder.dropped",
        "transcript.reminder.injected",
        "transcript.reminder.deduped",
        "transcript.reminder.fired",
        "transcript.reminder.iteration_summary",
        "transcript.reminder.expired",
        "transcript.reminder.inherited",
    }
    assert all(r.topic == LIFECYCLE_TOPIC for r in log.records)
    assert [r.seq for r in log.records] == list(range(1, len(log.records) + 1))


def test_lifecycle_payload_ids_default_to_the_transcript_id():
    log = EventLog()
    full_lifecycle(log, tid="tr-1")
    for rec in log.records:
        assert rec.payload["session_id"] == "tr-1"
        assert rec.payload["task_id"] is None
        assert rec.payload["agent_id"] == "tr-1"


def test_agent_id_defaults_to_the_log_session_id():
    log = EventLog(session_id="sess")
    full_lifecycle(log, tid="tr-1")
    for rec in log.records:
        assert rec.payload["session_id"] == "sess"
        assert rec.payload["task_id"] is None
        assert rec.payload["agent_id"] == "sess"


def test_log_ids_are_stamped_on_every_lifecycle_payload():
    log = EventLog(session_id="sess", task_id="task-1", agent_id="agent-1")
    full_lifecycle(log, tid="tr-1")
    for rec in log.records:
        assert (rec.payload["session_id"], rec.payload["task_id"], rec.payload["agent_id"]) == (
            "sess",
            "task-1",
            "agent-1",
        )


def test_agent_id_without_session_id_keeps_the_transcript_session():
    log = EventLog(agent_id="agent-1")
    inject_reminder(Transcript(id="tr"), {"body": "x"}, event_log=log)
    (rec,) = log.records
    assert rec.payload["session_id"] == "tr"
    assert rec.payload["agent_id"] == "agent-1"
    assert rec.payload["task_id"] is None


def test_task_id_only():
    log = EventLog(task_id="T")
    inject_reminder(Transcript(id="tr"), {"body": "x"}, event_log=log)
    (rec,) = log.records
    assert (rec.payload["session_id"], rec.payload["task_id"], rec.payload["agent_id"]) == (
        "tr",
        "T",
        "tr",
    )


def test_lifecycle_payloads_start_with_the_three_ids():
    log = EventLog()
    full_lifecycle(log)
    for rec in log.records:
        assert list(rec.payload)[:3] == ["session_id", "task_id", "agent_id"]


# -- bind --------------------------------------------------------------------------------------


def test_bind_shares_records_and_numbering():
    log = EventLog(session_id="parent")
    child = log.bind(session_id="child", agent_id="sub")
    log.emit("transcript.reminder.fired", {"n": 1})
    child.emit("transcript.reminder.fired", {"n": 2})
    log.emit("transcript.reminder.fired", {"n": 3})
    assert [r.seq for r in log.records] == [1, 2, 3]
    assert log.records == child.records
    assert [r.payload["n"] for r in child.records] == [1, 2, 3]


def test_bind_view_stamps_its_own_ids_and_the_parent_keeps_its_ids():
    log = EventLog(session_id="parent-s", task_id="task", agent_id="parent-a")
    child = log.bind(session_id="child-s", task_id="task", agent_id="child-a")
    inject_reminder(Transcript(id="pt"), {"body": "p"}, event_log=log, id_factory=lambda: "p")
    inject_reminder(Transcript(id="ct"), {"body": "c"}, event_log=child, id_factory=lambda: "c")
    inject_reminder(Transcript(id="pt"), {"body": "q"}, event_log=log, id_factory=lambda: "q")
    stamped = [
        (
            r.payload["reminder_id"],
            r.payload["session_id"],
            r.payload["task_id"],
            r.payload["agent_id"],
        )
        for r in log.records
    ]
    assert stamped == [
        ("p", "parent-s", "task", "parent-a"),
        ("c", "child-s", "task", "child-a"),
        ("q", "parent-s", "task", "parent-a"),
    ]
    assert [r.seq for r in log.records] == [1, 2, 3]


def test_bind_without_ids_falls_back_to_the_transcript_id():
    log = EventLog(session_id="parent-s")
    view = log.bind(agent_id="worker")
    inject_reminder(Transcript(id="wt"), {"body": "x"}, event_log=view)
    (rec,) = log.records
    assert rec.payload["agent_id"] == "worker"
    assert rec.payload["session_id"] in {"wt", "parent-s"}
    assert rec.payload["task_id"] is None


def test_bind_shares_subscribers_both_ways():
    log = EventLog()
    view = log.bind(session_id="v")
    from_parent: list[EventRecord] = []
    from_view: list[EventRecord] = []
    log.subscribe(from_parent.append)
    stop = view.subscribe(from_view.append)
    view.emit("transcript.reminder.fired", {"n": 1})
    log.emit("transcript.reminder.fired", {"n": 2})
    stop()
    log.emit("transcript.reminder.fired", {"n": 3})
    assert [r.payload["n"] for r in from_parent] == [1, 2, 3]
    assert [r.payload["n"] for r in from_view] == [1, 2]


def test_parent_and_sub_agent_write_one_log():
    log = EventLog(session_id="parent")
    parent = inject_reminder(
        Transcript(id="pt"),
        {"body": "share", "propagate": "all"},
        event_log=log,
        id_factory=lambda: "s",
    ).transcript
    handed = handoff_reminders(parent, parent_agent_id="parent")
    sub_log = log.bind(session_id="child", agent_id="child-agent")
    seed_inherited(Transcript(id="ct"), handed, sub_agent_id="child-agent", event_log=sub_log)
    assert [(r.kind, r.payload["session_id"], r.payload["agent_id"]) for r in log.records] == [
        ("transcript.reminder.injected", "parent", "parent"),
        ("transcript.reminder.injected", "child", "child-agent"),
        ("transcript.reminder.inherited", "child", "child-agent"),
    ]
    inherited = log.records[-1].payload
    assert inherited["originating_agent_id"] == "parent"
    assert inherited["sub_agent_id"] == "child-agent"
    assert inherited["propagate"] == "all"
    assert inherited["reminder_id"] == "s"


# -- no log ------------------------------------------------------------------------------------


def test_nothing_is_emitted_without_a_log():
    watcher = EventLog()
    seen: list[EventRecord] = []
    watcher.subscribe(seen.append)
    with_log = EventLog()
    a = full_lifecycle(with_log)
    b = full_lifecycle(None)
    assert a == b
    assert len(with_log.records) > 0
    assert watcher.records == []
    assert seen == []


@pytest.mark.parametrize("bad", ["log", [], object()])
def test_a_non_log_event_log_argument_is_rejected(bad):
    with pytest.raises(TypeError):
        inject_reminder(Transcript(), {"body": "x"}, event_log=bad)


def test_unsubscribing_twice_leaves_a_second_subscription_of_the_same_callback() -> None:
    log = EventLog()
    seen: list[str] = []
    first = log.subscribe(lambda r: seen.append(r.kind))
    callback = log._shared.subscribers[0][1]
    log.subscribe(callback)
    first()
    first()  # harmless: the other subscription of the same callback stays
    log.emit("x.one")
    assert seen == ["x.one"]
