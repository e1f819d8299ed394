"""Every public function rejects bad input with ReminderError (with a code) or TypeError."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import agent_reminders as ar
from agent_reminders import AgentRemindersError, MessageError, ReminderError, StateError, Transcript

T = Transcript()
R = ar.Reminder(body="x")

# (call, expected exception, text the message must contain)
CASES: list[tuple[str, Callable[[], Any], type[Exception], str]] = [
    (
        "inject non-transcript",
        lambda: ar.inject_reminder({}, {"body": "x"}),  # type: ignore[arg-type]
        TypeError,
        "Transcript",
    ),
    (
        "inject bad source",
        lambda: ar.inject_reminder(T, {"body": "x"}, source="web"),
        ReminderError,
        "source",
    ),
    (
        "inject bad turn type",
        lambda: ar.inject_reminder(T, {"body": "x"}, fired_at_turn="1"),  # type: ignore[arg-type]
        TypeError,
        "fired_at_turn",
    ),
    (
        "inject negative turn",
        lambda: ar.inject_reminder(T, {"body": "x"}, fired_at_turn=-1),
        ReminderError,
        "fired_at_turn",
    ),
    (
        "inject bad log",
        lambda: ar.inject_reminder(T, {"body": "x"}, event_log=[]),  # type: ignore[arg-type]
        TypeError,
        "event_log",
    ),
    ("insert non-reminder", lambda: ar.insert_reminder(T, {"body": "x"}), TypeError, "Reminder"),  # type: ignore[arg-type]
    ("clear non-mapping", lambda: ar.clear_reminders(T, "tag"), ReminderError, "selector"),  # type: ignore[arg-type]
    ("clear bad value", lambda: ar.clear_reminders(T, {"tag": 3}), ReminderError, "tag"),
    ("post_turn bad turn", lambda: ar.post_turn(T, 1.5), TypeError, "turn"),  # type: ignore[arg-type]
    ("post_turn negative", lambda: ar.post_turn(T, -1), ReminderError, "turn"),
    ("compact keep_last", lambda: ar.compact(T, keep_last=-1), ReminderError, "keep_last"),
    ("compact summary", lambda: ar.compact(T, summary=3), TypeError, "summary"),  # type: ignore[arg-type]
    ("compact compactor", lambda: ar.compact(T, custom_compactor=3), TypeError, "custom_compactor"),  # type: ignore[arg-type]
    (
        "handoff parent",
        lambda: ar.handoff_reminders(T, parent_agent_id=" "),
        ReminderError,
        "parent_agent_id",
    ),
    (
        "seed sub agent",
        lambda: ar.seed_inherited(T, [R], sub_agent_id=""),
        ReminderError,
        "sub_agent_id",
    ),
    (
        "seed non-reminder",
        lambda: ar.seed_inherited(T, ["x"], sub_agent_id="c"),  # type: ignore[list-item]
        TypeError,
        "Reminder",
    ),
    ("commit turn", lambda: ar.commit_directives(T, turn="0"), TypeError, "turn"),  # type: ignore[arg-type]
    ("commit style", lambda: ar.commit_directives(T, turn=0, style="xml"), ReminderError, "style"),  # type: ignore[arg-type]
    (
        "commit instructions",
        lambda: ar.commit_directives(T, turn=0, instructions=True),  # type: ignore[arg-type]
        ReminderError,
        "instructions",
    ),
    ("project item", lambda: ar.project(["x"]), TypeError, "Reminder"),  # type: ignore[list-item]
    ("render_directive", lambda: ar.render_directive({"body": "x"}), TypeError, "Reminder"),  # type: ignore[arg-type]
    ("render_envelope item", lambda: ar.render_envelope([R, "x"]), TypeError, "Reminder"),  # type: ignore[list-item]
    ("render_envelope empty", lambda: ar.render_envelope([]), ReminderError, "reminders"),
    ("neutralize", lambda: ar.neutralize_untrusted(b"<directive>"), TypeError, "str"),  # type: ignore[arg-type]
    ("check_append_only", lambda: ar.check_append_only([5]), TypeError, "requests[0]"),
    ("append non-mapping", lambda: T.append("hi"), TypeError, "message"),  # type: ignore[arg-type]
    (
        "append bad role",
        lambda: T.append({"role": "bot", "content": "x"}),  # type: ignore[typeddict-item]
        MessageError,
        "message.role",
    ),
    (
        "append bad content",
        lambda: T.append({"role": "user", "content": 3}),  # type: ignore[typeddict-item]
        MessageError,
        "message.content",
    ),
    (
        "append bad tool call",
        lambda: T.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "1", "name": "x", "arguments": "{}"}],  # type: ignore[typeddict-item]
            }
        ),
        MessageError,
        "tool_calls[0].arguments",
    ),
    ("transcript bad id", lambda: Transcript(id=" "), ReminderError, "transcript id"),
    ("transcript bad reminders", lambda: Transcript(reminders=["x"]), TypeError, "Reminder"),  # type: ignore[list-item]
    ("from_json garbage", lambda: Transcript.from_json("{nope"), StateError, "does not parse"),
    ("from_json wrong doc", lambda: Transcript.from_json("[]"), StateError, "format"),
    ("from_json type", lambda: Transcript.from_json(3), TypeError, "text"),  # type: ignore[arg-type]
    (
        "from_events kind",
        lambda: Transcript.from_events([{"kind": "note"}]),
        ReminderError,
        "events[0].kind",
    ),
    ("from_events item", lambda: Transcript.from_events([3]), TypeError, "events[0]"),  # type: ignore[list-item]
    ("reminder_event", lambda: ar.reminder_event("x"), TypeError, "payload"),  # type: ignore[arg-type]
    (
        "from_dict",
        lambda: ar.Reminder.from_dict({"body": "x", "colour": 1}),
        ReminderError,
        "colour",
    ),
    ("lint", lambda: ar.lint_reminder_options("x"), TypeError, "mapping"),  # type: ignore[arg-type]
    ("explain", lambda: ar.explain(4), TypeError, "code"),  # type: ignore[arg-type]
    ("emit kind", lambda: ar.EventLog().emit(""), TypeError, "kind"),
    ("emit payload", lambda: ar.EventLog().emit("x", [1]), TypeError, "payload"),  # type: ignore[arg-type]
    ("subscribe", lambda: ar.EventLog().subscribe(3), TypeError, "callback"),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(
    ("call", "error", "needle"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_input_is_a_clear_error(
    call: Callable[[], Any], error: type[Exception], needle: str
) -> None:
    with pytest.raises(error) as info:
        call()
    assert needle in str(info.value)
    if isinstance(info.value, AgentRemindersError):
        assert info.value.code.startswith("RMD-")


def test_bad_input_leaves_the_transcript_unchanged() -> None:
    t = ar.inject_reminder(Transcript(), {"body": "keep me"}).transcript
    before = t.to_json()
    with pytest.raises(ReminderError):
        ar.inject_reminder(t, {"body": "x", "ttl_turns": 0})
    with pytest.raises(MessageError):
        t.append({"role": "robot", "content": "x"})  # type: ignore[typeddict-item]
    assert t.to_json() == before
