"""The event table (``agent_reminders._core.event_payloads.EVENTS``) holds every kind of record
and every key their payloads carry: the docs' event reference is generated from it, and a
session that writes each kind is read back against it here."""

from __future__ import annotations

from typing import Any

from agent_reminders import (
    EventLog,
    Kind,
    ModelInfo,
    Propagate,
    Reminder,
    Session,
    Transcript,
    Usage,
    clear_reminders,
    compact,
    handoff_reminders,
    inject_reminder,
    seed_inherited,
)
from agent_reminders._core.event_payloads import EVENTS, LIFECYCLE_IDS, event_shape
from agent_reminders.loop.steps import Steps
from agent_reminders.toolset import ToolPlan

OPUS = ModelInfo(provider="anthropic", name="claude-opus-4-8")


def kinds() -> list[str]:
    return [v for k, v in vars(Kind).items() if k.isupper()]


def test_every_kind_has_one_row() -> None:
    assert sorted(s.kind for s in EVENTS) == sorted(kinds())
    assert event_shape(Kind.FIRED).keys[0] == "reminder_id"


def test_no_key_is_listed_twice() -> None:
    for shape in EVENTS:
        assert len(set(shape.all_keys)) == len(shape.all_keys), shape.kind


def a_session_that_writes_every_kind() -> list[Any]:
    """Every kind of record, written the way a session writes them."""
    log = EventLog()
    session = Session(
        "s", model=OPUS, event_log=log, reminders={"directive_budget": {"tokens": 10}}
    )
    session.append({"role": "user", "content": "hi"})
    session.inject({"body": "Run the tests.", "dedupe_key": "k", "max_fires": 1})
    session.inject({"body": "Run the tests again.", "dedupe_key": "k"})  # deduped
    session.inject({"body": "YOU MUST NEVER EVER DO THIS!!!", "authority": "advisory"})  # linted
    session.inject({"body": "c" * 80})  # contract, over the budget
    session.inject({"body": "a" * 80, "authority": "advisory"})  # dropped: budget
    session.fire("session_start", {})
    session.prepare_request()  # fired, iteration_summary; the model call fails
    session.append({"role": "user", "content": "are you there?"})
    session.inject({"body": "y", "ttl_turns": 1})
    session.prepare_request()  # channel_downgraded
    session.append({"role": "assistant", "content": "yes"})
    session.inject({"body": "z", "dedupe_key": "k"})  # dropped: max_fires
    Steps.note_cache_miss(
        session, Usage(900, 5, cache_miss_reason="system_changed"), "anthropic:claude-opus-4-8"
    )
    ToolPlan(specs=(), added=("search",)).record(session.event_log, 2)
    t = clear_reminders(session.transcript, {"tag": "none"}, event_log=log).transcript
    t = compact(t, keep_last=1, event_log=log).transcript
    inherited = handoff_reminders(
        Transcript(reminders=(Reminder(id="h", body="h", propagate=Propagate.ALL),)),
        parent_agent_id="parent",
    )
    seed_inherited(t, inherited, sub_agent_id="sub", event_log=log)
    t = Transcript.from_events(
        [{"id": "evt-bad", "kind": "system_reminder", "reminder": {"body": " "}}], id="t"
    )
    inject_reminder(t, {"body": "x"}, event_log=log)  # reports the invalid event: dropped
    return log.records


def test_every_record_a_session_writes_matches_its_row() -> None:
    records = a_session_that_writes_every_kind()
    assert {r.kind for r in records} >= set(kinds()), set(kinds()) - {r.kind for r in records}
    for record in records:
        shape = event_shape(record.kind)
        assert record.topic == shape.topic, record.kind
        keys = set(record.payload)
        required = set(shape.keys) | (
            set(LIFECYCLE_IDS) if shape.topic.endswith("cycle") else set()
        )
        assert required <= keys, (record.kind, required - keys)
        assert keys <= set(shape.all_keys), (record.kind, keys - set(shape.all_keys))
