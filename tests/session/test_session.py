"""Tests for ``Session``: construction, state, requests, turns, compaction and sub-agents.

The rules: docs/session-loop.md (the session, "Turn stamping", "Seams and delivery modes",
"Providers", "Hooks") and docs/core.md ("Committing an envelope": append-only placement;
"Lifecycle events": sub-agent propagation, the event log).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import Any, Literal

import pytest

from agent_reminders import (
    ENVELOPE_INSTRUCTIONS,
    Cleared,
    Compacted,
    EventLog,
    Hooks,
    Injected,
    ModelRequest,
    PostTurn,
    Propagate,
    ReminderError,
    ReminderOptions,
    Session,
    Source,
    check_append_only,
)

INJECTED = "transcript.reminder.injected"
INHERITED = "transcript.reminder.inherited"
FIRED = "transcript.reminder.fired"
EXPIRED = "transcript.reminder.expired"
PROVIDER_EVALUATED = "transcript.reminder.provider_evaluated"

BODY = "Re-read the failing test before editing anything."


def _text(message: Mapping[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if isinstance(b, dict))


def _pending(session: Session, body: str = BODY) -> list[Any]:
    return [r for r in session.transcript.reminders if r.body == body]


def _answer(session: Session, turn: int) -> None:
    session.append({"role": "assistant", "content": f"answer {turn}"})


def _advance_to(session: Session, turn: int) -> None:
    """Run full request/answer/post_turn cycles until ``session.turn == turn``."""
    while session.turn < turn:
        t = session.turn
        session.prepare_request(turn=t)
        _answer(session, t)
        session.post_turn(t)
    assert session.turn == turn


# -- construction -------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["", "   ", 123])
def test_constructor_rejects_bad_session_id(bad: object) -> None:
    with pytest.raises((TypeError, ValueError), match="session_id"):
        Session(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["", "  ", 7])
def test_constructor_rejects_bad_agent_id(bad: object) -> None:
    with pytest.raises((TypeError, ValueError), match="agent_id"):
        Session(agent_id=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [[], "log", object()])
def test_constructor_rejects_bad_event_log(bad: object) -> None:
    with pytest.raises((TypeError, ValueError), match="event_log"):
        Session(event_log=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        ("yes", "reminders"),
        (42, "reminders"),
        ({"bogus": 1}, "bogus"),
        ({"enabled": "yes"}, "enabled"),
        ({"providers": "token_pressure"}, "providers"),
        ({"providers": [3]}, "providers"),
        ({"config": ["token_pressure"]}, "config"),
        ({"max_iteration_bytes": "big"}, "max_iteration_bytes"),
    ],
)
def test_constructor_rejects_bad_reminders(bad: object, fragment: str) -> None:
    with pytest.raises(ReminderError, match=fragment) as info:
        Session(reminders=bad)  # type: ignore[arg-type]
    assert info.value.code == "RMD-001"


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        ("/repo", "workspace"),
        ({"primary": ""}, "primary"),
        ({"roots": []}, "primary"),
        ({"primary": "/repo", "extra": 1}, "extra"),
        ({"primary": "/repo", "roots": "/other"}, "roots"),
        ({"primary": "/repo", "roots": [{"path": "/x", "mount_mode": "rx"}]}, "mount_mode"),
        ({"primary": "/repo", "roots": [{"path": "", "mount_mode": "ro"}]}, "path"),
    ],
)
def test_constructor_rejects_bad_workspace(bad: object, fragment: str) -> None:
    with pytest.raises((TypeError, ValueError), match=fragment):
        Session(workspace=bad)  # type: ignore[arg-type]


def test_constructor_rejects_bad_envelope_options() -> None:
    with pytest.raises((TypeError, ValueError), match="style"):
        Session(envelope_style="xml")  # type: ignore[arg-type]
    with pytest.raises((TypeError, ValueError), match="envelope_instructions"):
        Session(envelope_instructions="sometimes")  # type: ignore[arg-type]


def test_constructor_defaults_and_accepted_values(tmp_path: Any) -> None:
    s = Session()
    assert isinstance(s.id, str)
    assert s.id.strip()
    assert s.turn == 0
    assert s.system == ""
    assert s.transcript.messages == ()
    assert s.transcript.reminders == ()
    named = Session(
        "sess-1",
        system="You are terse.",
        agent_id="agent-1",
        reminders=ReminderOptions(providers=("-idle_nudge",)),
        workspace={"primary": str(tmp_path), "roots": [{"path": "/data", "mount_mode": "ro"}]},
        envelope_style="system_reminder",
        envelope_instructions="never",
    )
    assert named.id == "sess-1"
    assert named.system == "You are terse."
    assert (
        Session(reminders={"max_iteration_bytes": 1000}).reminder_options.max_iteration_bytes
        == 1000
    )


# -- system, append, inject, clear --------------------------------------------------------------


def test_system_is_a_read_only_property() -> None:
    s = Session(system="You are terse.")
    with pytest.raises(AttributeError):
        s.system = "You are verbose."  # type: ignore[misc]
    assert s.system == "You are terse."


def test_system_is_byte_stable_across_requests() -> None:
    system = "You are terse. ünïcode ✓"
    s = Session(system=system)
    s.append({"role": "user", "content": "hi"})
    requests = []
    for t in range(3):
        s.inject({"body": f"note {t}", "ttl_turns": 1})
        requests.append(s.prepare_request())
        _answer(s, t)
        s.post_turn(t)
    assert all(r.system == system for r in requests)
    assert all(r.system.encode() == system.encode() for r in requests)
    assert s.system == system
    serialized = [{"system": r.system, "messages": list(r.messages)} for r in requests]
    assert check_append_only(serialized) == []


def test_append_adds_messages_in_order() -> None:
    s = Session()
    s.append({"role": "user", "content": "one"})
    s.append({"role": "assistant", "content": "two"})
    assert [m["content"] for m in s.transcript.messages] == ["one", "two"]
    assert [m["role"] for m in s.transcript.messages] == ["user", "assistant"]


def test_inject_stamps_source_in_pipeline_and_current_turn() -> None:
    s = Session()
    done = s.inject({"body": BODY, "tags": ["plan"], "ttl_turns": 2})
    assert isinstance(done, Injected)
    assert done.deduped_count == 0
    (r,) = s.transcript.reminders
    assert r.id == done.reminder_id
    assert r.source is Source.IN_PIPELINE
    assert r.fired_at_turn == 0
    assert r.tags == ("plan",)
    assert r.ttl_turns == 2
    _advance_to(s, 3)
    later = s.inject({"body": "later note"})
    (r2,) = [r for r in s.transcript.reminders if r.id == later.reminder_id]
    assert r2.fired_at_turn == 3 == s.turn


def test_inject_dedupes_by_key_and_validates_strictly() -> None:
    s = Session()
    s.inject({"body": "v1", "dedupe_key": "plan"})
    second = s.inject({"body": "v2", "dedupe_key": "plan"})
    assert second.deduped_count == 1
    assert [r.body for r in s.transcript.reminders] == ["v2"]
    with pytest.raises(ReminderError) as info:
        s.inject({"body": "x", "colour": "red"})
    assert info.value.code == "RMD-001"
    with pytest.raises(ReminderError) as info:
        s.inject({"body": "x", "propagate": "everyone"})
    assert info.value.code == "RMD-005"


def test_clear_removes_matching_reminders() -> None:
    s = Session()
    s.inject({"body": "a", "tags": ["plan"]})
    s.inject({"body": "b", "tags": ["other"]})
    s.inject({"body": "c", "tags": ["plan", "x"]})
    done = s.clear({"tag": "plan"})
    assert isinstance(done, Cleared)
    assert done.removed_count == 2
    assert [r.body for r in s.transcript.reminders] == ["b"]
    with pytest.raises(ReminderError):
        s.clear({})


# -- requests and turns -------------------------------------------------------------------------


def test_turn_starts_at_zero_and_prepare_request_advances_it() -> None:
    s = Session("s-1", system="sys")
    s.append({"role": "user", "content": "hi"})
    assert s.turn == 0
    req = s.prepare_request()
    assert isinstance(req, ModelRequest)
    assert req.turn == 0
    assert s.turn == 1
    assert req.system == "sys"
    assert req.session_id == "s-1"
    assert req.tools == []
    assert req.messages == [{"role": "user", "content": "hi"}]
    req = s.prepare_request()
    assert (req.turn, s.turn) == (1, 2)
    req = s.prepare_request(turn=7)
    assert (req.turn, s.turn) == (7, 8)


def test_prepare_request_commits_envelope_and_strips_directive_ids() -> None:
    s = Session(system="sys")
    s.append({"role": "user", "content": "hi"})
    first = s.inject({"body": "First directive.", "ttl_turns": 1})
    req0 = s.prepare_request()
    assert len(req0.messages) == 2
    envelope = req0.messages[-1]
    assert envelope["role"] == "user"
    assert "First directive." in _text(envelope)
    assert all("directive_ids" not in m for m in req0.messages)
    # the transcript keeps the internal metadata
    assert s.transcript.messages[-1]["directive_ids"] == [first.reminder_id]
    _answer(s, 0)
    s.post_turn(0)
    second = s.inject({"body": "Second directive."})
    req1 = s.prepare_request()
    assert all("directive_ids" not in m for m in req1.messages)
    stored = [m.get("directive_ids") for m in s.transcript.messages if "directive_ids" in m]
    assert stored == [[first.reminder_id], [second.reminder_id]]


def test_prepare_request_without_pending_reminders_adds_no_message() -> None:
    s = Session()
    s.append({"role": "user", "content": "hi"})
    req = s.prepare_request()
    assert req.messages == [{"role": "user", "content": "hi"}]


def test_requests_are_append_only_across_turns() -> None:
    s = Session(system="sys")
    s.append({"role": "user", "content": "start"})
    s.inject({"body": "durable plan", "dedupe_key": "plan", "preserve_on_compact": True})
    requests: list[ModelRequest] = []
    for t in range(5):
        if t % 2 == 0:
            s.inject({"body": f"step note {t}", "ttl_turns": 1})
        if t == 3:
            s.inject({"body": "durable plan v2", "dedupe_key": "plan"})
        requests.append(s.prepare_request())
        _answer(s, t)
        s.post_turn(t)
    assert check_append_only([list(r.messages) for r in requests]) == []
    for earlier, later in itertools.pairwise(requests):
        assert later.messages[: len(earlier.messages)] == earlier.messages


def test_envelope_style_system_reminder_is_passed_through() -> None:
    s = Session(envelope_style="system_reminder")
    s.inject({"body": "Use the new API."})
    req = s.prepare_request()
    text = _text(req.messages[-1])
    assert text == "<system-reminder>\nUse the new API.\n</system-reminder>"


def test_envelope_instructions_modes_are_passed_through() -> None:
    def two_envelopes(mode: str) -> list[str]:
        s = Session(envelope_instructions=mode)  # type: ignore[arg-type]
        out = []
        for t in range(2):
            s.inject({"body": f"directive {t}", "ttl_turns": 1})
            out.append(_text(s.prepare_request().messages[-1]))
            _answer(s, t)
            s.post_turn(t)
        return out

    auto = two_envelopes("auto")
    assert ENVELOPE_INSTRUCTIONS in auto[0]
    assert ENVELOPE_INSTRUCTIONS not in auto[1]
    assert all(ENVELOPE_INSTRUCTIONS in e for e in two_envelopes("always"))
    assert all(ENVELOPE_INSTRUCTIONS not in e for e in two_envelopes("never"))
    assert all("<context-directives" in e for e in two_envelopes("never"))


def test_post_turn_ages_reminders() -> None:
    s = Session()
    s.inject({"body": "one turn", "ttl_turns": 1})
    s.inject({"body": "two turns", "ttl_turns": 2})
    s.inject({"body": "forever"})
    s.prepare_request()
    done = s.post_turn(0)
    assert isinstance(done, PostTurn)
    assert (done.expired_count, done.decremented_count, done.remaining_count) == (1, 1, 2)
    assert [(r.body, r.ttl_turns) for r in s.transcript.reminders] == [
        ("two turns", 1),
        ("forever", None),
    ]


# -- compaction ---------------------------------------------------------------------------------


def _chatty(session: Session, n: int) -> None:
    for i in range(n):
        role: Literal["user", "assistant"] = "user" if i % 2 == 0 else "assistant"
        session.append({"role": role, "content": f"message {i}"})


def test_compact_fires_post_compact_and_injects_durable_recap() -> None:
    log = EventLog()
    s = Session(event_log=log)
    _chatty(s, 8)
    s.inject({"body": "goes away at compaction"})
    done = s.compact(keep_last=2, summary="We fixed the parser bug.")
    assert isinstance(done, Compacted)
    assert done.archived_messages > 0
    recaps = [r for r in s.transcript.reminders if "recap" in r.tags]
    assert len(recaps) == 1
    recap = recaps[0]
    assert "We fixed the parser bug." in recap.body
    assert recap.source is Source.STDLIB_PROVIDER
    assert recap.preserve_on_compact is True
    assert recap.ttl_turns is None
    assert recap.fired_at_turn == s.turn
    assert all(r.body != "goes away at compaction" for r in s.transcript.reminders)
    evaluated = [r.payload for r in log.records if r.kind == PROVIDER_EVALUATED]
    assert {"provider_id": "post_compact_recap", "event": "post_compact", "fired": 1}.items() <= (
        evaluated[-1].items()
    )
    # the recap reaches the next request
    req = s.prepare_request()
    assert "We fixed the parser bug." in _text(req.messages[-1])


def test_second_identical_compact_recap_is_unchanged_durable_reminder() -> None:
    s = Session()
    _chatty(s, 8)
    done = s.compact(keep_last=2, summary="Recap text.")
    (recap,) = [r for r in s.transcript.reminders if "recap" in r.tags]
    again = s.fire(
        "post_compact", {"archived_messages": done.archived_messages, "summary": done.summary}
    )
    assert again.fired_count == 0
    assert again.reports == []
    skips = [x for x in again.skipped_reports if x["provider"] == "post_compact_recap"]
    assert len(skips) == 1
    assert skips[0]["reason"] == "unchanged_durable_reminder"
    assert skips[0]["reminder_id"] == recap.id
    assert [r.id for r in s.transcript.reminders if "recap" in r.tags] == [recap.id]


def test_compact_without_archived_messages_injects_no_recap() -> None:
    s = Session()
    _chatty(s, 2)
    done = s.compact(keep_last=4)
    assert done.archived_messages == 0
    assert not [r for r in s.transcript.reminders if "recap" in r.tags]


# -- the key rule: ttl_turns=1 reaches exactly request t+1 --------------------------------------


def _create_by_inject(session: Session, t: int) -> None:
    session.inject({"body": BODY, "ttl_turns": 1})


def _create_by_provider(session: Session, t: int) -> None:
    session.providers.register(
        "nudger", subscribes_to="post_step", evaluate=lambda ctx: {"body": BODY, "ttl_turns": 1}
    )
    result = session.fire("post_step", {"iteration": t})
    assert result.fired_count == 1


def _create_by_hook(session: Session, t: int) -> None:
    hooks = Hooks()
    hooks.step(lambda iteration, payload: {"body": BODY, "ttl_turns": 1})
    done = hooks.dispatch("post_step", {"iteration": t}, session=session)
    assert len(done.reminders) == 1


def _create_by_queue_drain(session: Session, t: int) -> None:
    session.queue.remind({"body": BODY, "ttl_turns": 1, "fired_at_turn": 0})
    done = session.run_seam("iteration_end", iteration=t)
    assert len(done.delivered) == 1


CREATORS: dict[str, tuple[Callable[[Session, int], None], Source]] = {
    "inject": (_create_by_inject, Source.IN_PIPELINE),
    "provider": (_create_by_provider, Source.STDLIB_PROVIDER),
    "hook": (_create_by_hook, Source.HOOK),
    "queue": (_create_by_queue_drain, Source.BRIDGE),
}


@pytest.mark.parametrize("t", [0, 3])
@pytest.mark.parametrize("creator", sorted(CREATORS))
def test_ttl_one_reminder_created_after_request_t_reaches_exactly_request_t_plus_1(
    creator: str, t: int
) -> None:
    create, source = CREATORS[creator]
    log = EventLog()
    s = Session(event_log=log)
    s.append({"role": "user", "content": "task"})
    _advance_to(s, t)

    req_t = s.prepare_request(turn=t)
    _answer(s, t)
    create(s, t)
    (made,) = _pending(s)
    assert made.fired_at_turn == t + 1
    assert made.source is source
    assert made.ttl_turns == 1
    # the assistant turn t that was already running when it was made does not age it
    s.post_turn(t)
    assert [r.id for r in _pending(s)] == [made.id]
    assert not any(BODY in _text(m) for m in req_t.messages)

    req_t1 = s.prepare_request(turn=t + 1)
    assert req_t1.turn == t + 1
    assert BODY in _text(req_t1.messages[-1])
    _answer(s, t + 1)
    aged = s.post_turn(t + 1)
    assert aged.expired_count == 1
    assert _pending(s) == []

    req_t2 = s.prepare_request(turn=t + 2)
    assert req_t2.messages[: len(req_t1.messages)] == req_t1.messages
    assert BODY not in _text(req_t2.messages[-1])
    assert not any(BODY in _text(m) for m in req_t2.messages[len(req_t1.messages) :])
    fired = [r.payload for r in log.records if r.kind == FIRED]
    assert [(p["reminder_id"], p["turn_number"]) for p in fired if p["reminder_id"] == made.id] == [
        (made.id, t + 1)
    ]


# -- sub-agents ---------------------------------------------------------------------------------


def _parent_with_reminders(log: EventLog | None = None) -> Session:
    parent = Session(
        "parent-s",
        system="parent system",
        agent_id="parent-agent",
        event_log=log,
        reminders={"providers": ["-idle_nudge"], "max_iteration_bytes": 4096},
        workspace={"primary": "/repo", "roots": [{"path": "/data", "mount_mode": "ro"}]},
        envelope_style="system_reminder",
        envelope_instructions="never",
    )
    parent.inject({"body": "to all", "propagate": "all"})
    parent.inject({"body": "to session", "propagate": "session"})
    parent.inject({"body": "to none", "propagate": "none"})
    return parent


def test_child_inherits_handoff_by_propagate_rules() -> None:
    parent = _parent_with_reminders()
    ids = {r.body: r.id for r in parent.transcript.reminders}
    child = Session.child(parent, session_id="child-s")
    assert child.id == "child-s"
    assert child.agent_id == "child-s"
    assert child.turn == 0
    got = {r.body: r for r in child.transcript.reminders}
    assert set(got) == {"to all", "to session"}
    for body, r in got.items():
        assert r.id == ids[body]
        assert r.source is Source.INHERITED
        assert r.originating_agent_id == "parent-agent"
    assert got["to all"].propagate is Propagate.ALL
    assert got["to session"].propagate is Propagate.SESSION
    assert [r.id for r in child.transcript.reminders] == [r.id for r in parent.handoff()]
    # parent untouched
    assert len(parent.transcript.reminders) == 3

    grandchild = Session.child(child, session_id="grandchild-s")
    (only,) = grandchild.transcript.reminders
    assert only.body == "to all"
    assert only.originating_agent_id == "parent-agent"
    assert only.source is Source.INHERITED


def test_child_events_on_shared_log_with_child_ids() -> None:
    log = EventLog()
    parent = _parent_with_reminders(log)
    before = len(log.records)
    child = Session.child(parent, session_id="child-s", agent_id="child-agent")
    new = log.records[before:]
    assert [r.kind for r in new] == [INJECTED, INHERITED, INJECTED, INHERITED]
    inherited_ids = [r.id for r in child.transcript.reminders]
    for i, rid in enumerate(inherited_ids):
        injected, inherited = new[2 * i], new[2 * i + 1]
        for record in (injected, inherited):
            assert record.payload["session_id"] == "child-s"
            assert record.payload["agent_id"] == "child-agent"
            assert record.payload["reminder_id"] == rid
        assert injected.payload["source"] == "inherited"
        assert inherited.payload["originating_agent_id"] == "parent-agent"
        assert inherited.payload["sub_agent_id"] == "child-agent"
    assert [r.payload["propagate"] for r in new[1::2]] == ["all", "session"]
    # the child's own events go to the same log
    child.inject({"body": "child note"})
    assert log.records[-1].kind == INJECTED
    assert log.records[-1].payload["session_id"] == "child-s"
    assert child.event_log.records == log.records


def test_inherited_ttl_reminder_ages_on_the_childs_clock() -> None:
    parent = Session("p")
    _advance_to(parent, 5)
    parent.inject({"body": "one more turn", "ttl_turns": 1, "propagate": "all"})
    assert parent.transcript.reminders[0].fired_at_turn == 5
    child = Session.child(parent)
    (inherited,) = child.transcript.reminders
    assert inherited.fired_at_turn == child.turn == 0
    req = child.prepare_request()
    assert "one more turn" in _text(req.messages[-1])
    aged = child.post_turn(0)
    assert aged.expired_count == 1
    assert child.transcript.reminders == ()


def test_child_defaults_to_parent_settings_unless_overridden() -> None:
    parent = _parent_with_reminders()
    child = Session.child(parent)
    assert child.id != parent.id
    assert child.system == parent.system
    assert child.reminder_options == parent.reminder_options
    assert child.workspace == parent.workspace
    assert child.envelope_style == parent.envelope_style
    assert child.envelope_instructions == parent.envelope_instructions
    req = child.prepare_request()
    assert req.system == "parent system"
    assert _text(req.messages[-1]).startswith("<system-reminder>\n")

    other = Session.child(
        parent,
        system="child system",
        reminders=False,
        envelope_style="context_directives",
        envelope_instructions="always",
    )
    assert other.system == "child system"
    assert other.reminder_options.enabled is False
    assert other.envelope_style == "context_directives"
    req = other.prepare_request()
    assert req.system == "child system"
    assert ENVELOPE_INSTRUCTIONS in _text(req.messages[-1])


def test_child_requires_a_session_parent() -> None:
    with pytest.raises(TypeError):
        Session.child(object())  # type: ignore[arg-type]


def test_requests_after_repeated_compactions_show_the_compacted_history() -> None:
    s = Session()
    for i in range(8):
        s.append({"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"})
        s.inject({"body": f"note {i}", "ttl_turns": 1})
        s.prepare_request()
    for summary in ("first recap", "second recap", "third recap"):
        s.compact(keep_last=2, summary=summary)
        request = s.prepare_request()
        expected = [
            {k: v for k, v in m.items() if k != "directive_ids"} for m in s.transcript.messages
        ]
        assert request.messages == expected
        assert any(m["content"] == summary for m in request.messages)
