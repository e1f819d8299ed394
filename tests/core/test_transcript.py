"""Tests for the Transcript value, its event view, JSON round trip and lenient reminder events.

The rules: docs/core.md, "Decisions" (Transcript, system_reminder events, reminder_event,
from_events and the reporting of invalid reminder events) and "Lifecycle events" (the
``dropped`` lifecycle record).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_reminders import (
    LIFECYCLE_TOPIC,
    Authority,
    EventLog,
    Message,
    MessageError,
    Propagate,
    Reminder,
    ReminderError,
    RoleHint,
    Source,
    StateError,
    Transcript,
    commit_directives,
    compact,
    inject_reminder,
    post_turn,
    reminder_event,
)

DROPPED = "transcript.reminder.dropped"
SYSTEM_REMINDER_EVENT_KEYS = {
    "id",
    "kind",
    "role",
    "visibility",
    "text",
    "blocks",
    "reminder",
    "metadata",
}
LIFECYCLE_IDS = {"session_id", "task_id", "agent_id"}


def rich_messages() -> list[Message]:
    return [
        {"role": "system", "content": "You are a careful coding agent."},
        {"role": "user", "content": 'Fix the failing test — ünïcödé ✓ and "quotes"'},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "call_1", "name": "read_file", "arguments": {"path": "a.py"}}],
        },
        {"role": "tool", "tool_call_id": "call_1", "name": "read_file", "content": "print(1)\n"},
        {"role": "assistant", "content": [{"type": "text", "text": "Looking at it."}]},
        {
            "role": "user",
            "content": '<context-directives speaker="harness">\nx\n</context-directives>',
            "directive_ids": ["r-0"],
        },
    ]


def rich_reminders() -> list[Reminder]:
    return [
        Reminder(id="r-1", body="Run the tests before committing."),
        Reminder(
            id="r-2",
            body="  Keep <answers> & notes short  ",
            tags=("style", "brevity"),
            dedupe_key="style",
            ttl_turns=3,
            preserve_on_compact=True,
            propagate=Propagate.ALL,
            role_hint=RoleHint.USER_BLOCK,
            authority=Authority.ADVISORY,
            source=Source.INHERITED,
            fired_at_turn=7,
            originating_agent_id="parent-agent",
        ),
        Reminder(
            id="r-3",
            body="Tests fail in test_x.py",
            tags=("ci",),
            ttl_turns=1,
            propagate=Propagate.NONE,
            role_hint=RoleHint.DEVELOPER,
            authority=Authority.CORRECTIVE,
            source=Source.HOOK,
        ),
    ]


def rich_transcript() -> Transcript:
    return Transcript(rich_messages(), rich_reminders(), id="t-rich")


# -- construction ------------------------------------------------------------------------------


def test_empty_transcript_has_no_messages_no_reminders_and_a_string_id():
    t = Transcript()
    assert t.messages == ()
    assert t.reminders == ()
    assert isinstance(t.id, str)
    assert t.id.strip()
    assert t.events == []
    assert len(t) == 0


def test_each_new_empty_transcript_gets_its_own_id():
    assert Transcript().id != Transcript().id


def test_explicit_id_is_kept():
    assert Transcript(id="session-42").id == "session-42"


@pytest.mark.parametrize("bad", ["", "   "])
def test_blank_transcript_id_is_rejected(bad):
    with pytest.raises(ReminderError) as info:
        Transcript(id=bad)
    assert info.value.code == "RMD-001"


def test_constructor_takes_messages_and_reminders_in_order():
    t = rich_transcript()
    assert t.messages == tuple(rich_messages())
    assert t.reminders == tuple(rich_reminders())
    assert [r.id for r in t.reminders] == ["r-1", "r-2", "r-3"]
    assert isinstance(t.messages, tuple)
    assert isinstance(t.reminders, tuple)


def test_constructor_rejects_non_reminder_values():
    with pytest.raises(TypeError):
        Transcript(reminders=[{"body": "not a Reminder"}])  # type: ignore[list-item]


# -- append ------------------------------------------------------------------------------------


def test_append_returns_a_new_transcript_and_leaves_the_original_alone():
    base = Transcript(id="t")
    message: Message = {"role": "user", "content": "hello"}
    after = base.append(message)
    assert after is not base
    assert after.messages == ({"role": "user", "content": "hello"},)
    assert base.messages == ()
    assert after.id == base.id == "t"
    assert after.reminders == base.reminders == ()


def test_append_keeps_order_and_all_message_shapes():
    t = Transcript()
    for m in rich_messages():
        t = t.append(m)
    assert t.messages == tuple(rich_messages())


def test_append_copies_the_message_so_later_caller_mutation_does_not_leak():
    content = [{"type": "text", "text": "original"}]
    message: Message = {"role": "user", "content": content}
    t = Transcript().append(message)
    message["content"] = "changed"
    content[0]["text"] = "changed too"
    assert t.messages == ({"role": "user", "content": [{"type": "text", "text": "original"}]},)


def test_append_keeps_reminders_pending():
    t = inject_reminder(Transcript(), {"body": "pending"}).transcript
    after = t.append({"role": "user", "content": "hi"})
    assert after.reminders == t.reminders


@pytest.mark.parametrize("bad", [None, "user: hi", 3, ["role", "user"]])
def test_append_non_mapping_raises_type_error(bad):
    with pytest.raises(TypeError):
        Transcript().append(bad)


@pytest.mark.parametrize(
    ("message", "names"),
    [
        ({"role": "robot", "content": "hi"}, "role"),
        ({"content": "hi"}, "role"),
        ({"role": "user"}, "content"),
        ({"role": "user", "content": 12}, "content"),
        ({"role": "user", "content": [{"text": "no type"}]}, "content[0]"),
        ({"role": "user", "content": ["plain string block"]}, "content[0]"),
        ({"role": "assistant", "content": "", "tool_calls": "call"}, "tool_calls"),
        (
            {"role": "assistant", "content": "", "tool_calls": [{"name": "f", "arguments": {}}]},
            "tool_calls[0].id",
        ),
        (
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c", "arguments": {}}]},
            "tool_calls[0].name",
        ),
        (
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c", "name": "f"}]},
            "tool_calls[0].arguments",
        ),
        ({"role": "tool", "content": "x", "tool_call_id": 5}, "tool_call_id"),
        ({"role": "tool", "content": "x", "name": None}, "name"),
        ({"role": "user", "content": "x", "directive_ids": "r-1"}, "directive_ids"),
        ({"role": "user", "content": "x", "directive_ids": [1, 2]}, "directive_ids"),
    ],
)
def test_append_invalid_message_raises_rmd_101_naming_the_key(message, names):
    base = Transcript()
    with pytest.raises(MessageError) as info:
        base.append(message)
    assert info.value.code == "RMD-101"
    assert names in info.value.message
    assert base.messages == ()


# -- immutability ------------------------------------------------------------------------------


@pytest.mark.parametrize("attr", ["messages", "reminders", "id", "anything"])
def test_transcript_attributes_cannot_be_set(attr):
    t = rich_transcript()
    before = t.to_json()
    with pytest.raises(AttributeError):
        setattr(t, attr, ())
    assert t.to_json() == before


@pytest.mark.parametrize("attr", ["messages", "reminders", "id"])
def test_transcript_attributes_cannot_be_deleted(attr):
    t = rich_transcript()
    with pytest.raises(AttributeError):
        delattr(t, attr)
    assert t.id == "t-rich"


def test_transcript_is_not_hashable_but_compares_by_value():
    a = rich_transcript()
    b = rich_transcript()
    assert a == b
    assert a != Transcript(rich_messages(), rich_reminders(), id="other")
    with pytest.raises(TypeError):
        hash(a)


def test_mutating_the_events_view_does_not_change_the_transcript():
    # A Transcript is a frozen value and `events` is its *serialized* view; editing the
    # returned dicts (e.g. to redact before from_events) must not reach back into it.
    t = rich_transcript()
    before = t.to_json()
    events = t.events
    events[0]["message"]["content"] = "HACKED"
    events[-1]["reminder"]["body"] = "HACKED"
    events.append({"kind": "message", "message": {"role": "user", "content": "x"}})
    assert t.to_json() == before
    assert t.messages[0]["content"] == "You are a careful coding agent."
    assert t.reminders == tuple(rich_reminders())


# -- events view -------------------------------------------------------------------------------


def test_events_view_lists_messages_then_one_system_reminder_per_pending_reminder():
    t = rich_transcript()
    events = t.events
    assert [e["kind"] for e in events] == ["message"] * 6 + ["system_reminder"] * 3
    assert [e["message"] for e in events[:6]] == rich_messages()
    assert [e["reminder"]["id"] for e in events[6:]] == ["r-1", "r-2", "r-3"]


def test_system_reminder_event_has_the_exact_documented_shape():
    reminder = rich_reminders()[1]
    t = Transcript(reminders=[reminder])
    (event,) = t.events
    assert set(event) == SYSTEM_REMINDER_EVENT_KEYS
    assert event["kind"] == "system_reminder"
    assert event["role"] == "user_block"
    assert event["visibility"] == "public"
    assert event["text"] == reminder.body
    assert event["blocks"] == [{"type": "text", "text": reminder.body, "visibility": "public"}]
    assert event["reminder"] == reminder.to_dict()
    assert event["metadata"] == reminder.to_dict()
    assert isinstance(event["id"], str)
    assert event["id"]
    assert event["id"] != reminder.id


def test_system_reminder_event_role_is_the_role_hint_for_every_value():
    reminders = [Reminder(id=f"r-{h.value}", body="b", role_hint=h) for h in RoleHint]
    events = Transcript(reminders=reminders).events
    assert [e["role"] for e in events] == [h.value for h in RoleHint]


def test_event_ids_are_distinct_within_the_view():
    ids = [e["id"] for e in rich_transcript().events]
    assert len(ids) == len(set(ids))


def test_events_view_is_json_serializable():
    events = rich_transcript().events
    assert json.loads(json.dumps(events)) == events


# -- JSON round trip ---------------------------------------------------------------------------


def test_to_json_from_json_round_trips_exactly():
    t = rich_transcript()
    text = t.to_json()
    back = Transcript.from_json(text)
    assert back == t
    assert back.id == "t-rich"
    assert back.messages == t.messages
    assert back.reminders == t.reminders
    assert back.events == t.events
    assert back.to_json() == text


def test_from_json_accepts_bytes():
    t = rich_transcript()
    assert Transcript.from_json(t.to_json().encode("utf-8")) == t


def test_round_trip_of_the_empty_transcript():
    t = Transcript(id="empty")
    back = Transcript.from_json(t.to_json())
    assert back == t
    assert back.to_json() == t.to_json()


def test_round_trip_preserves_enums_as_enum_members():
    back = Transcript.from_json(rich_transcript().to_json())
    r2 = back.reminders[1]
    assert r2.propagate is Propagate.ALL
    assert r2.role_hint is RoleHint.USER_BLOCK
    assert r2.authority is Authority.ADVISORY
    assert r2.source is Source.INHERITED
    assert r2.tags == ("style", "brevity")
    assert r2.body == "  Keep <answers> & notes short  "


def test_round_trip_after_transforms():
    t = Transcript(id="t").append({"role": "user", "content": "start"})
    t = inject_reminder(t, {"body": "one", "ttl_turns": 2}, id_factory=lambda: "a").transcript
    t = commit_directives(t, turn=0).transcript
    t = t.append({"role": "assistant", "content": "ok"})
    back = Transcript.from_json(t.to_json())
    assert back == t
    assert back.to_json() == t.to_json()
    # The committed state survives: nothing is re-committed after the round trip.
    again = commit_directives(back, turn=1)
    assert again.message is None
    assert again.fired == ()


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[]",
        '{"id": "x", "events": []}',
        '{"format": "something.else", "id": "x", "events": []}',
    ],
)
def test_from_json_rejects_non_transcript_documents(text):
    with pytest.raises(StateError) as info:
        Transcript.from_json(text)
    assert info.value.code == "RMD-106"


message_strategy = st.one_of(
    st.builds(
        lambda role, text: {"role": role, "content": text},
        st.sampled_from(["system", "user", "assistant"]),
        st.text(max_size=30),
    ),
    st.builds(
        lambda text: {"role": "user", "content": [{"type": "text", "text": text}]},
        st.text(max_size=30),
    ),
    st.builds(
        lambda cid, text: {"role": "tool", "tool_call_id": cid, "name": "f", "content": text},
        st.text(min_size=1, max_size=8),
        st.text(max_size=30),
    ),
)
reminder_strategy = st.builds(
    Reminder,
    id=st.uuids().map(str),
    body=st.text(min_size=1, max_size=30).filter(lambda s: s.strip()),
    # Canonical values (as strict options produce them): stripped tags and keys, no duplicates.
    tags=st.lists(
        st.text(min_size=1, max_size=6).map(str.strip).filter(bool), max_size=3, unique=True
    ).map(tuple),
    dedupe_key=st.one_of(st.none(), st.text(min_size=1, max_size=6).map(str.strip).filter(bool)),
    ttl_turns=st.one_of(st.none(), st.integers(min_value=1, max_value=9)),
    preserve_on_compact=st.booleans(),
    propagate=st.sampled_from(list(Propagate)),
    role_hint=st.sampled_from(list(RoleHint)),
    authority=st.sampled_from(list(Authority)),
    source=st.sampled_from(list(Source)),
    fired_at_turn=st.integers(min_value=0, max_value=50),
    originating_agent_id=st.one_of(st.none(), st.text(min_size=1, max_size=6)),
)


@settings(max_examples=60, deadline=None)
@given(
    messages=st.lists(message_strategy, max_size=6),
    reminders=st.lists(reminder_strategy, max_size=4, unique_by=lambda r: r.id),
)
def test_json_round_trip_property(messages, reminders):
    t = Transcript(messages, reminders, id="prop")
    text = t.to_json()
    back = Transcript.from_json(text)
    assert back == t
    assert back.to_json() == text


@pytest.mark.parametrize(
    "fields",
    [
        {"dedupe_key": " padded-key "},
        {"dedupe_key": "   "},
        {"tags": (" padded-tag ",)},
        {"tags": ("dup", "dup")},
    ],
    ids=["padded-dedupe-key", "blank-dedupe-key", "padded-tag", "duplicate-tags"],
)
def test_round_trip_is_exact_for_every_reminder_the_constructor_accepts(fields):
    # to_json/from_json round-trip exactly. Reminder(...) and Reminder.from_dict accept
    # these values, so the transcript holding them must come back unchanged.
    reminder = Reminder(id="r", body="b", **fields)
    t = Transcript(reminders=[reminder], id="t")
    back = Transcript.from_json(t.to_json())
    assert back.reminders == (reminder,)
    assert back == t


# -- from_events -------------------------------------------------------------------------------


def test_from_events_rebuilds_the_transcript_from_its_event_view():
    t = rich_transcript()
    back = Transcript.from_events(t.events, id=t.id)
    assert back == t


def test_from_events_without_id_gets_a_new_id_but_the_same_content():
    t = rich_transcript()
    back = Transcript.from_events(t.events)
    assert back.id != t.id
    assert back.messages == t.messages
    assert back.reminders == t.reminders


def test_from_events_accepts_events_built_by_reminder_event():
    events = [
        {"kind": "message", "message": {"role": "user", "content": "hi"}},
        reminder_event({"id": "x-1", "body": "first", "tags": ["a"], "ttl_turns": 2}),
        reminder_event({"id": "x-2", "body": "second", "authority": "advisory"}),
    ]
    t = Transcript.from_events(events)
    assert t.messages == ({"role": "user", "content": "hi"},)
    assert [r.id for r in t.reminders] == ["x-1", "x-2"]
    assert t.reminders[0].tags == ("a",)
    assert t.reminders[0].ttl_turns == 2
    assert t.reminders[1].authority is Authority.ADVISORY


def test_from_events_reads_reminder_payloads_leniently():
    event = {
        "id": "e-1",
        "kind": "system_reminder",
        "reminder": {
            "id": "lenient",
            "body": "still usable",
            "propagate": "everyone",
            "role_hint": "narrator",
            "authority": "supreme",
            "source": "somewhere",
            "ttl_turns": "3",
            "tags": "not-a-list",
        },
    }
    (r,) = Transcript.from_events([event]).reminders
    assert r.id == "lenient"
    assert r.body == "still usable"
    assert r.propagate is Propagate.SESSION
    assert r.role_hint is RoleHint.SYSTEM
    assert r.authority is Authority.CONTRACT
    assert r.source is Source.IN_PIPELINE
    assert r.ttl_turns is None
    assert r.tags == ()


def test_from_events_rejects_unknown_event_kinds():
    with pytest.raises(ReminderError) as info:
        Transcript.from_events([{"kind": "tool_result", "id": "x"}])
    assert info.value.code == "RMD-001"


def test_from_events_validates_message_events():
    with pytest.raises(MessageError) as info:
        Transcript.from_events([{"kind": "message", "message": {"role": "bot", "content": "x"}}])
    assert info.value.code == "RMD-101"


def test_from_events_does_not_mutate_the_given_events():
    bad = {"id": "bad", "kind": "system_reminder", "reminder": {"id": "b", "body": " "}}
    events = [*rich_transcript().events, bad]
    snapshot = copy.deepcopy(events)
    Transcript.from_events(events)
    assert events == snapshot


# -- reminder_event (lenient builder) ----------------------------------------------------------


def test_reminder_event_builds_the_documented_event_from_a_full_payload():
    reminder = rich_reminders()[1]
    event = reminder_event(reminder.to_dict())
    assert set(event) == SYSTEM_REMINDER_EVENT_KEYS
    assert event["kind"] == "system_reminder"
    assert event["reminder"] == reminder.to_dict()
    assert event["metadata"] == reminder.to_dict()
    assert event["role"] == "user_block"
    assert event["visibility"] == "public"
    assert event["text"] == reminder.body
    assert event["blocks"] == [{"type": "text", "text": reminder.body, "visibility": "public"}]
    assert event["id"] != reminder.id


@pytest.mark.parametrize(
    ("key", "bad", "default"),
    [
        ("propagate", "everyone", "session"),
        ("role_hint", "narrator", "system"),
        ("source", "elsewhere", "in_pipeline"),
        ("authority", "supreme", "contract"),
        ("propagate", 3, "session"),
        ("authority", None, "contract"),
    ],
)
def test_reminder_event_unknown_enum_values_fall_back_to_defaults(key, bad, default):
    event = reminder_event({"id": "r", "body": "b", key: bad})
    assert event["reminder"][key] == default
    assert event["metadata"][key] == default


@pytest.mark.parametrize("bad_ttl", ["2", 2.0, None, [1], True])
def test_reminder_event_non_int_ttl_becomes_none(bad_ttl):
    event = reminder_event({"id": "r", "body": "b", "ttl_turns": bad_ttl})
    assert "ttl_turns" not in event["reminder"]
    (r,) = Transcript.from_events([event]).reminders
    assert r.ttl_turns is None


def test_reminder_event_keeps_an_int_ttl():
    event = reminder_event({"id": "r", "body": "b", "ttl_turns": 4})
    assert event["reminder"]["ttl_turns"] == 4


@pytest.mark.parametrize("bad_tags", ["a,b", ("a", "b"), {"a": 1}, 7, None])
def test_reminder_event_tags_that_are_not_a_list_become_empty(bad_tags):
    event = reminder_event({"id": "r", "body": "b", "tags": bad_tags})
    assert event["reminder"]["tags"] == []
    (r,) = Transcript.from_events([event]).reminders
    assert r.tags == ()


def test_reminder_event_missing_id_gets_a_new_unique_one():
    a = reminder_event({"body": "b"})
    b = reminder_event({"body": "b"})
    assert isinstance(a["reminder"]["id"], str)
    assert a["reminder"]["id"].strip()
    assert a["reminder"]["id"] != b["reminder"]["id"]
    assert a["id"] != a["reminder"]["id"]


def test_reminder_event_never_raises_and_keeps_a_blank_body():
    event = reminder_event({"body": "   ", "tags": 5, "ttl_turns": "x", "propagate": 1})
    assert event["reminder"]["body"] == "   "
    assert event["kind"] == "system_reminder"


def test_reminder_event_does_not_mutate_its_payload():
    payload = {"body": "b", "tags": ["a"], "propagate": "bogus"}
    snapshot = copy.deepcopy(payload)
    reminder_event(payload)
    assert payload == snapshot


def test_reminder_event_payload_round_trips_through_reminder_from_dict():
    event = reminder_event({"id": "r", "body": "b", "source": "bogus", "ttl_turns": 0.5})
    r = Reminder.from_dict(event["reminder"])
    assert r.id == "r"
    assert r.source is Source.IN_PIPELINE
    assert r.ttl_turns is None


# -- invalid reminder events: reported once as `dropped`, then pruned --------------------------


def bad_events() -> list[dict[str, Any]]:
    return [
        {"kind": "message", "message": {"role": "user", "content": "hi"}},
        # blank body, payload has its own id -> reported under the payload id
        {"id": "evt-a", "kind": "system_reminder", "reminder": {"id": "own-a", "body": "   "}},
        # payload not a mapping -> reported under the event id
        {"id": "evt-b", "kind": "system_reminder", "reminder": "not a mapping"},
        # missing body and no payload id -> reported under the event id
        {"id": "evt-c", "kind": "system_reminder", "reminder": {"tags": ["x"]}},
        # a non-string body with its own id -> the payload id
        {"id": "evt-d", "kind": "system_reminder", "reminder": {"id": "own-d", "body": 42}},
        # no reminder payload at all -> the event id
        {"id": "evt-e", "kind": "system_reminder"},
        reminder_event({"id": "good", "body": "valid reminder"}),
    ]


EXPECTED_DROPPED_IDS = ["own-a", "evt-b", "evt-c", "own-d", "evt-e"]


def test_invalid_reminder_events_are_kept_out_of_reminders():
    t = Transcript.from_events(bad_events(), id="t")
    assert [r.id for r in t.reminders] == ["good"]
    assert t.messages == ({"role": "user", "content": "hi"},)


def test_invalid_reminder_events_are_reported_once_at_the_next_commit():
    t = Transcript.from_events(bad_events(), id="t")
    log = EventLog()
    committed = commit_directives(t, turn=0, event_log=log)
    dropped = [rec for rec in log.records if rec.kind == DROPPED]
    assert [rec.payload["reminder_id"] for rec in dropped] == EXPECTED_DROPPED_IDS
    for rec in dropped:
        assert rec.topic == LIFECYCLE_TOPIC
        assert rec.payload == {
            "session_id": "t",
            "task_id": None,
            "agent_id": "t",
            "reminder_id": rec.payload["reminder_id"],
            "reason": "invalid",
        }
    # The valid reminder is committed as usual.
    assert committed.fired == ("good",)

    # Pruned: a later commit reports nothing again.
    log2 = EventLog()
    commit_directives(committed.transcript, turn=1, event_log=log2)
    assert [rec.kind for rec in log2.records if rec.kind == DROPPED] == []


def test_invalid_events_are_pruned_from_the_event_view_after_the_commit():
    t = Transcript.from_events(bad_events(), id="t")
    before_ids = [e.get("id") for e in t.events]
    for pending in ("evt-a", "evt-b", "evt-c", "evt-d", "evt-e"):
        assert pending in before_ids
    after = commit_directives(t, turn=0).transcript
    ids = [e.get("id") for e in after.events]
    for gone in ("evt-a", "evt-b", "evt-c", "evt-d", "evt-e"):
        assert gone not in ids
    assert [r.id for r in after.reminders] == ["good"]


def test_invalid_events_are_pruned_even_without_an_event_log():
    t = Transcript.from_events(bad_events(), id="t")
    after = commit_directives(t, turn=0).transcript
    log = EventLog()
    commit_directives(after, turn=1, event_log=log)
    assert [rec for rec in log.records if rec.kind == DROPPED] == []


def test_invalid_events_are_reported_even_when_nothing_is_committed():
    events = [{"id": "evt-x", "kind": "system_reminder", "reminder": {"id": "own-x", "body": ""}}]
    t = Transcript.from_events(events, id="t")
    assert t.reminders == ()
    log = EventLog()
    done = commit_directives(t, turn=0, event_log=log)
    assert done.message is None
    assert done.fired == ()
    assert [(r.kind, r.payload["reminder_id"]) for r in log.records] == [(DROPPED, "own-x")]
    log2 = EventLog()
    commit_directives(done.transcript, turn=1, event_log=log2)
    assert log2.records == []


def test_blank_payload_id_falls_back_to_the_event_id():
    events = [{"id": "evt-z", "kind": "system_reminder", "reminder": {"id": "  ", "body": ""}}]
    log = EventLog()
    commit_directives(Transcript.from_events(events, id="t"), turn=0, event_log=log)
    assert [r.payload["reminder_id"] for r in log.records] == ["evt-z"]


def test_invalid_events_survive_a_json_round_trip_until_reported():
    t = Transcript.from_events(bad_events(), id="t")
    text = t.to_json()
    back = Transcript.from_json(text)
    assert back == t
    assert back.to_json() == text
    log = EventLog()
    commit_directives(back, turn=0, event_log=log)
    assert [r.payload["reminder_id"] for r in log.records if r.kind == DROPPED] == (
        EXPECTED_DROPPED_IDS
    )


def test_reporting_does_not_change_the_transcript_it_was_given():
    t = Transcript.from_events(bad_events(), id="t")
    before = t.to_json()
    commit_directives(t, turn=0, event_log=EventLog())
    assert t.to_json() == before
    # The original still carries them, so committing it again reports them again.
    log = EventLog()
    commit_directives(t, turn=0, event_log=log)
    assert len([r for r in log.records if r.kind == DROPPED]) == len(EXPECTED_DROPPED_IDS)


def test_invalid_events_survive_other_transforms_until_the_commit_reports_them():
    t = Transcript.from_events(bad_events(), id="t")
    t = inject_reminder(t, {"body": "more"}, id_factory=lambda: "more").transcript
    t = post_turn(t, 0).transcript
    t = t.append({"role": "assistant", "content": "ok"})
    log = EventLog()
    commit_directives(t, turn=1, event_log=log)
    assert [r.payload["reminder_id"] for r in log.records if r.kind == DROPPED] == (
        EXPECTED_DROPPED_IDS
    )


def test_invalid_events_are_reported_exactly_once_across_a_compaction():
    # An invalid reminder event is "reported once" as dropped, then pruned. Compaction
    # must not prune it silently: across compact + the next commit each one is reported once.
    t = Transcript.from_events(bad_events(), id="t")
    log = EventLog()
    compacted = compact(t, keep_last=0, event_log=log).transcript
    commit_directives(compacted, turn=0, event_log=log)
    assert sorted(r.payload["reminder_id"] for r in log.records if r.kind == DROPPED) == sorted(
        EXPECTED_DROPPED_IDS
    )


def test_dropped_payload_carries_the_log_ids():
    events = [{"id": "evt-q", "kind": "system_reminder", "reminder": {"body": " "}}]
    log = EventLog(session_id="sess", task_id="task-9", agent_id="agent-3")
    commit_directives(Transcript.from_events(events, id="t"), turn=0, event_log=log)
    (rec,) = log.records
    assert rec.payload == {
        "session_id": "sess",
        "task_id": "task-9",
        "agent_id": "agent-3",
        "reminder_id": "evt-q",
        "reason": "invalid",
    }
    assert set(rec.payload) == LIFECYCLE_IDS | {"reminder_id", "reason"}


# -- branching ---------------------------------------------------------------------------------


def test_two_appends_to_one_base_give_two_independent_transcripts():
    base = Transcript(id="t").append({"role": "user", "content": "base"})
    base_json = base.to_json()
    a = base.append({"role": "assistant", "content": "A"})
    b = base.append({"role": "assistant", "content": "B"})
    assert a != b
    assert a.messages == (
        {"role": "user", "content": "base"},
        {"role": "assistant", "content": "A"},
    )
    assert b.messages == (
        {"role": "user", "content": "base"},
        {"role": "assistant", "content": "B"},
    )
    assert base.messages == ({"role": "user", "content": "base"},)
    assert base.to_json() == base_json


def test_branches_keep_growing_independently():
    base = Transcript(id="t").append({"role": "user", "content": "0"})
    a1 = base.append({"role": "user", "content": "a1"})
    a2 = a1.append({"role": "user", "content": "a2"})
    b1 = base.append({"role": "user", "content": "b1"})
    b2 = b1.append({"role": "user", "content": "b2"})
    a3 = a2.append({"role": "user", "content": "a3"})
    a1_again = a1.append({"role": "user", "content": "a1x"})
    assert [m["content"] for m in base.messages] == ["0"]
    assert [m["content"] for m in a1.messages] == ["0", "a1"]
    assert [m["content"] for m in a2.messages] == ["0", "a1", "a2"]
    assert [m["content"] for m in a3.messages] == ["0", "a1", "a2", "a3"]
    assert [m["content"] for m in b1.messages] == ["0", "b1"]
    assert [m["content"] for m in b2.messages] == ["0", "b1", "b2"]
    assert [m["content"] for m in a1_again.messages] == ["0", "a1", "a1x"]
    assert len(a3) == 4


def test_committed_directives_do_not_leak_between_branches():
    base = inject_reminder(
        Transcript(id="t").append({"role": "user", "content": "q"}),
        {"body": "Be brief."},
        id_factory=lambda: "r-1",
    ).transcript
    first = commit_directives(base, turn=0)
    assert first.fired == ("r-1",)
    # The same base committed again still commits (the first branch's message is not in it).
    second = commit_directives(base, turn=0)
    assert second.fired == ("r-1",)
    assert second.transcript == first.transcript
    # A sibling branch that diverged from base has not committed the reminder either.
    sibling = base.append({"role": "assistant", "content": "other"})
    third = commit_directives(sibling, turn=0)
    assert third.fired == ("r-1",)
    # Within the first branch it is committed.
    assert commit_directives(first.transcript, turn=1).fired == ()


def test_message_events_written_by_other_tools_are_read_from_role_and_text_or_blocks() -> None:
    t = Transcript.from_events(
        [
            {"id": "e1", "kind": "message", "role": "user", "text": "hi"},
            {
                "id": "e2",
                "kind": "message",
                "role": "assistant",
                "blocks": [{"type": "text", "text": "yo", "visibility": "public"}],
            },
        ]
    )
    assert t.messages == (
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "text", "text": "yo"}]},
    )
    event = t.events[0]
    assert (event["kind"], event["role"], event["visibility"], event["text"]) == (
        "message",
        "user",
        "public",
        "hi",
    )
    with pytest.raises(MessageError, match=r"events\[0\]\.role"):
        Transcript.from_events([{"kind": "message", "role": "robot", "text": "x"}])


def test_a_reminder_event_without_reminder_falls_back_to_metadata() -> None:
    payload = {"id": "r1", "body": "Keep the tests green.", "ttl_turns": 2}
    t = Transcript.from_events([{"id": "e1", "kind": "system_reminder", "metadata": payload}])
    assert [(r.id, r.body, r.ttl_turns) for r in t.reminders] == [
        ("r1", "Keep the tests green.", 2)
    ]


def test_last_message_is_the_newest_read_only_message_of_this_transcript():
    t = Transcript([{"role": "user", "content": "a"}])
    later = t.append({"role": "assistant", "content": "b"})
    assert later.last_message() == {"role": "assistant", "content": "b"}
    assert t.last_message() == {"role": "user", "content": "a"}  # its own length, not the log's
    with pytest.raises(TypeError):
        later.last_message()["content"] = "changed"
    with pytest.raises(IndexError, match="no messages"):
        Transcript().last_message()
