"""The EventLog bound: the latest ``max_records`` are kept, the oldest dropped and counted.

Contract: spec 01-core §10 (EventLog); issue 8 deliverable 10 (a bounded in-memory log; a store,
spec 06, is where a full log lives).
"""

from __future__ import annotations

import pytest

from agent_reminders import EventLog, Session


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
