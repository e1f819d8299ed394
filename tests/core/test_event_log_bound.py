"""The EventLog bound: the latest ``max_records`` are kept, the oldest dropped and counted.

The rules: docs/core.md, "Lifecycle events" (EventLog); issue 8 deliverable 10 (a bounded
in-memory log; a store, docs/storage.md, is where a full log lives).
"""

from __future__ import annotations

import pytest

from agent_reminders import EventLog, EventRecord, Session


def test_the_oldest_records_are_dropped_and_counted() -> None:
    log = EventLog(max_records=3)
    for n in range(5):
        log.emit("demo.tick", {"n": n})
    assert [r.payload["n"] for r in log.records] == [2, 3, 4]
    assert [r.seq for r in log.records] == [3, 4, 5]  # seq keeps counting past the bound
    assert log.dropped_count == 2
    assert len(log) == 3
    assert log.max_records == 3
    assert log.kinds() == ["demo.tick"] * 3


def test_nothing_is_dropped_below_the_bound_and_the_default_is_generous() -> None:
    log = EventLog()
    for n in range(10):
        log.emit("demo.tick", {"n": n})
    assert log.dropped_count == 0
    assert [r.seq for r in log.records] == list(range(1, 11))
    assert log.max_records >= 100_000


def test_subscribers_see_every_record_even_those_dropped_later() -> None:
    log = EventLog(max_records=1)
    seen: list[int] = []
    log.subscribe(lambda record: seen.append(record.seq))
    for n in range(4):
        log.emit("demo.tick", {"n": n})
    assert seen == [1, 2, 3, 4]
    assert [r.seq for r in log.records] == [4]


def test_bound_views_share_the_records_the_bound_and_the_count() -> None:
    log = EventLog(max_records=2)
    view = log.bind(session_id="s1")
    view.lifecycle("transcript.reminder.fired", "t", {"reminder_id": "r1"})
    log.emit("demo.tick")
    view.emit("demo.tock")
    assert view.max_records == 2
    assert log.dropped_count == view.dropped_count == 1
    assert [r.kind for r in log.records] == [r.kind for r in view.records]
    assert [r.kind for r in view.records] == ["demo.tick", "demo.tock"]


def test_a_session_log_keeps_its_bound() -> None:
    log = EventLog(max_records=5)
    session = Session(event_log=log)
    for k in range(8):
        session.inject({"body": f"note {k}"})  # one injected record each
    assert session.event_log.kinds() == ["transcript.reminder.injected"] * 5
    assert log.dropped_count == 3
    assert log.records[-1].seq == 8


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "10", None])
def test_max_records_must_be_a_positive_int(bad: object) -> None:
    with pytest.raises(ValueError, match="max_records"):
        EventLog(max_records=bad)  # type: ignore[arg-type]


def test_lifecycle_and_other_records_keep_one_order_however_they_are_read() -> None:
    """Lifecycle records nobody receives are kept lean and made into records when read: the
    reads give EventRecords in emit order, the same objects each time, and a subscriber added
    later gets records from then on."""
    log = EventLog(max_records=4)
    log.lifecycle("transcript.reminder.fired", "t1", {"reminder_id": "r1"})
    log.emit("demo.tick", {"n": 1})
    log.lifecycle("transcript.reminder.expired", "t1", {"reminder_id": "r2"})
    first = log.records
    assert [type(r) for r in first] == [EventRecord] * 3
    assert [(r.seq, r.kind) for r in first] == [
        (1, "transcript.reminder.fired"),
        (2, "demo.tick"),
        (3, "transcript.reminder.expired"),
    ]
    assert first[0].topic == "transcript.reminder.lifecycle"
    assert first[0].payload == {
        "session_id": "t1",
        "task_id": None,
        "agent_id": "t1",
        "reminder_id": "r1",
    }
    assert all(a is b for a, b in zip(first, log.records, strict=True))
    seen: list[EventRecord] = []
    log.subscribe(seen.append)
    log.lifecycle("transcript.reminder.fired", "t1", {"reminder_id": "r3"})
    log.lifecycle("transcript.reminder.fired", "t1", {"reminder_id": "r4"})
    assert [r.payload["reminder_id"] for r in seen] == ["r3", "r4"]
    assert [r.seq for r in log.records] == [2, 3, 4, 5]  # the bound drops the oldest
    assert log.records[-1] is seen[-1]
    assert log.dropped_count == 1
    assert len(log) == 4


def test_kept_records_are_owned_and_reach_subscribers_of_their_topic_prefix() -> None:
    log = EventLog()
    payload = {"seam": "iteration_start"}
    log.keep("loop.checkpoint", "loop", payload)
    seen: list[str] = []
    log.subscribe(lambda record: seen.append(record.topic), kind_prefix="loop.")
    log.keep("loop.checkpoint", "loop", {"seam": "iteration_end"})
    log.emit("demo.tick")
    assert seen == ["loop"]
    assert [r.kind for r in log.records] == ["loop.checkpoint", "loop.checkpoint", "demo.tick"]
    assert log.records[0].payload is payload  # owned by the log, not copied
