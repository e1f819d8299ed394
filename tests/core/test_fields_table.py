"""Issue 8: one table of reminder fields, and the bad-input items that go with it.

Covers: the strict ``Transcript.from_json``, message errors as ``MessageError``
(``RMD-101``), lone surrogates refused where text enters, ``check_append_only`` refusing
messages that are not mappings, and the profiles reading one table (the camelCase pending row,
event payloads, enum coercion with a code).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import agent_reminders as ar
from agent_reminders import (
    EventLog,
    InjectionQueue,
    MessageError,
    Reminder,
    ReminderError,
    StateError,
    Transcript,
    inject_reminder,
    reminder_event,
)
from agent_reminders.providers.base import canonical_reminder
from agent_reminders.queue import validate_reminder_payload

LONE = "\ud800"


def saved_with(**fields: Any) -> str:
    """A saved transcript whose one stored reminder has ``fields`` changed."""
    t = inject_reminder(Transcript(id="t"), {"body": "keep the tests green"}).transcript
    doc = json.loads(t.to_json())
    (event,) = [e for e in doc["events"] if e["kind"] == "system_reminder"]
    event["reminder"].update(fields)
    event["metadata"].update(fields)
    return json.dumps(doc)


# -- from_json is strict ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("ttl_turns", "1"),
        ("ttl_turns", float("nan")),
        ("ttl_turns", 0),
        ("authority", "god"),
        ("role_hint", "boss"),
        ("source", "web"),
        ("tags", "ci"),
        ("tags", [""]),
        ("preserve_on_compact", "yes"),
        ("fired_at_turn", -1),
        ("dedupe_key", 3),
        ("body", "   "),
        ("id", ""),
    ],
)
def test_from_json_refuses_an_invalid_stored_reminder_naming_the_field(
    field: str, value: Any
) -> None:
    text = saved_with(**{field: value})
    with pytest.raises(ReminderError) as info:
        Transcript.from_json(text)
    assert info.value.code == "RMD-001"
    assert field in info.value.message
    assert "events[" in info.value.message


def test_from_json_refuses_an_unknown_stored_propagate_with_rmd_005() -> None:
    with pytest.raises(ReminderError) as info:
        Transcript.from_json(saved_with(propagate="children"))
    assert info.value.code == "RMD-005"
    assert "propagate" in info.value.message


def test_from_json_refuses_unknown_keys_in_a_stored_reminder() -> None:
    with pytest.raises(ReminderError) as info:
        Transcript.from_json(saved_with(colour="red"))
    assert info.value.code == "RMD-001"
    assert "colour" in info.value.message


def test_from_events_stays_lenient_for_the_same_events() -> None:
    doc = json.loads(saved_with(ttl_turns="1", authority="god"))
    (r,) = Transcript.from_events(doc["events"]).reminders
    assert r.ttl_turns is None
    assert r.authority is ar.Authority.CONTRACT


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        b"\xff\xfe",
        "[]",
        '{"id": "x", "events": []}',
        '{"format": "other", "id": "x", "events": []}',
        '{"format": "agent-reminders.transcript.v1", "id": "x", "events": {}}',
        '{"format": "agent-reminders.transcript.v1", "id": 3, "events": []}',
    ],
)
def test_from_json_document_problems_are_state_errors(text: str | bytes) -> None:
    with pytest.raises(StateError) as info:
        Transcript.from_json(text)
    assert info.value.code == "RMD-106"


def test_from_json_keeps_unreported_invalid_events_of_its_own_output() -> None:
    foreign = [{"id": "e1", "kind": "system_reminder", "reminder": {"id": "r1", "body": " "}}]
    t = Transcript.from_events(foreign, id="t")
    back = Transcript.from_json(t.to_json())
    assert back == t
    log = EventLog()
    ar.commit_directives(back, turn=0, event_log=log)
    assert [r.payload["reminder_id"] for r in log.records] == ["r1"]


def test_a_valid_saved_transcript_still_round_trips() -> None:
    t = inject_reminder(
        Transcript(id="t"), {"body": "b", "tags": ["x"], "ttl_turns": 2, "authority": "advisory"}
    ).transcript
    assert Transcript.from_json(t.to_json()) == t
    assert "unreported" not in t.to_json()


# -- message shape errors are MessageError ----------------------------------------------------


@pytest.mark.parametrize(
    ("message", "path"),
    [
        ({"role": "bot", "content": "x"}, "message.role"),
        ({"role": "user", "content": 3}, "message.content"),
        ({"role": "user", "content": [{"text": "x"}]}, "message.content[0]"),
    ],
)
def test_message_shape_problems_are_message_errors(message: Any, path: str) -> None:
    with pytest.raises(MessageError) as info:
        Transcript().append(message)
    assert info.value.code == "RMD-101"
    assert path in info.value.message
    assert not isinstance(info.value, ReminderError)


# -- lone surrogates are refused where they enter ---------------------------------------------


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"body": f"text {LONE}"}, "body"),
        ({"body": "x", "tags": ["ok", f"t{LONE}"]}, "tags[1]"),
        ({"body": "x", "dedupe_key": f"k{LONE}"}, "dedupe_key"),
    ],
)
def test_a_lone_surrogate_in_options_is_rmd_001_naming_the_field(
    options: dict[str, Any], field: str
) -> None:
    with pytest.raises(ReminderError) as info:
        inject_reminder(Transcript(), options)
    assert info.value.code == "RMD-001"
    assert field in info.value.message
    assert "surrogate" in info.value.message


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"body": f"text {LONE}"}, "body"),
        ({"body": "x", "tags": [f"t{LONE}"]}, "tags[0]"),
        ({"body": "x", "dedupe_key": f"k{LONE}"}, "dedupe_key"),
    ],
)
def test_a_lone_surrogate_in_a_bridge_payload_is_rmd_002_naming_the_field(
    payload: dict[str, Any], field: str
) -> None:
    with pytest.raises(ReminderError) as info:
        InjectionQueue().remind(payload)
    assert info.value.code == "RMD-002"
    assert field in info.value.message


def test_a_lone_surrogate_in_a_reminder_record_is_refused() -> None:
    with pytest.raises(ReminderError) as info:
        Reminder(body=LONE)
    assert info.value.code == "RMD-001"
    assert "body" in info.value.message


def test_valid_non_ascii_text_is_accepted_everywhere() -> None:
    done = inject_reminder(Transcript(), {"body": "naïve 😀", "tags": ["é"], "dedupe_key": "ü"})
    (r,) = done.transcript.reminders
    assert (r.body, r.tags, r.dedupe_key) == ("naïve 😀", ("é",), "ü")
    assert Transcript.from_json(done.transcript.to_json()) == done.transcript


@pytest.mark.parametrize(
    ("message", "path"),
    [
        ({"role": "user", "content": f"hi {LONE}"}, "message.content"),
        (
            {"role": "user", "content": [{"type": "text", "text": LONE}]},
            "message.content[0].text",
        ),
        (
            {"role": "tool", "tool_call_id": "c1", "name": "sh", "content": f"out {LONE}"},
            "message.content",
        ),
        (
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "c1", "name": "sh", "arguments": {"cmd": LONE}}],
            },
            "message.tool_calls[0].arguments.cmd",
        ),
    ],
)
def test_a_lone_surrogate_in_message_text_is_a_message_error_naming_the_path(
    message: Any, path: str
) -> None:
    with pytest.raises(MessageError) as info:
        Transcript().append(message)
    assert info.value.code == "RMD-101"
    assert path in info.value.message


def test_a_lone_surrogate_in_a_queued_user_message_is_refused_at_inject() -> None:
    queue = InjectionQueue()
    with pytest.raises(MessageError) as info:
        queue.inject(f"hello {LONE}")
    assert "content" in info.value.message
    assert len(queue) == 0


def test_a_lone_surrogate_in_a_foreign_reminder_event_drops_it_leniently() -> None:
    events = [{"id": "e1", "kind": "system_reminder", "reminder": {"id": "r1", "body": LONE}}]
    t = Transcript.from_events(events, id="t")
    assert t.reminders == ()
    ev = reminder_event({"body": "x", "tags": ["ok", LONE], "dedupe_key": LONE})
    assert ev["reminder"]["tags"] == ["ok"]
    assert "dedupe_key" not in ev["reminder"]


# -- the profiles read one table --------------------------------------------------------------


def test_pending_reminder_row_has_the_documented_camel_case_keys() -> None:
    queue = InjectionQueue()
    rid = queue.remind({"body": "b", "tags": ["x"], "ttl_turns": 2})
    (row,) = queue.pending()
    assert list(row) == [
        "kind",
        "id",
        "reminderId",
        "mode",
        "position",
        "body",
        "tags",
        "dedupeKey",
        "ttlTurns",
        "preserveOnCompact",
        "propagate",
        "roleHint",
        "authority",
        "source",
        "firedAtTurn",
    ]
    assert (row["reminderId"], row["ttlTurns"], row["tags"], row["source"]) == (
        rid,
        2,
        ["x"],
        "bridge",
    )


def test_validate_reminder_payload_is_still_served_by_the_queue_module() -> None:
    fields = validate_reminder_payload({"body": "b"}, grant=ar.Authority.ADVISORY)
    assert fields["authority"] == "advisory"
    assert fields["source"] == "bridge"
    assert fields["propagate"] == "session"


def test_a_string_grant_is_accepted_and_a_bad_one_is_rmd_001() -> None:
    assert validate_reminder_payload({"body": "b"}, grant="corrective")["authority"] == (  # type: ignore[arg-type]
        "corrective"
    )
    with pytest.raises(ReminderError) as info:
        InjectionQueue().remind({"body": "b"}, grant="god")
    assert info.value.code == "RMD-001"
    assert "grant" in info.value.message


def test_a_bad_queue_max_authority_is_rmd_001_naming_the_allowed_values() -> None:
    with pytest.raises(ReminderError) as info:
        InjectionQueue(max_authority="god")
    assert info.value.code == "RMD-001"
    assert "max_authority" in info.value.message
    assert "'advisory'" in info.value.message


def test_lifecycle_events_carry_the_table_fields() -> None:
    log = EventLog()
    t = inject_reminder(
        Transcript(id="t"), {"body": "b", "tags": ["x"], "ttl_turns": 1}, event_log=log
    ).transcript
    ar.commit_directives(t, turn=0, event_log=log)
    injected, fired = (r.payload for r in log.records if r.kind.endswith(("injected", "fired")))
    assert {k: injected[k] for k in ("tags", "ttl_turns", "propagate", "authority")} == {
        "tags": ["x"],
        "ttl_turns": 1,
        "propagate": "session",
        "authority": "contract",
    }
    assert {k: fired[k] for k in ("tags", "source", "rendered_role", "turn_number")} == {
        "tags": ["x"],
        "source": "in_pipeline",
        "rendered_role": "user",
        "turn_number": 0,
    }


def test_canonical_reminder_fills_every_option_and_refuses_unknown_ones() -> None:
    spec = canonical_reminder("p", "body", ttl_turns=1, role_hint="developer")
    assert spec == {
        "body": "body",
        "tags": ["p"],
        "dedupe_key": "p",
        "ttl_turns": 1,
        "first_after": None,
        "cooldown_turns": None,
        "max_fires": None,
        "preserve_on_compact": False,
        "propagate": "session",
        "role_hint": "developer",
        "authority": "contract",
    }
    with pytest.raises(ReminderError) as info:
        canonical_reminder("p", "body", ttl_turns=1, colour="red")
    assert info.value.code == "RMD-001"
    assert "colour" in info.value.message
