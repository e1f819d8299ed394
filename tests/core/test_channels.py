"""The channel of an envelope: committed on ``user`` or ``system`` and kept, the capability
table, Anthropic's placement rules and downgrades, the nonce, and the saved state."""

from __future__ import annotations

import json

import pytest

from agent_reminders import (
    ENVELOPE_INSTRUCTIONS,
    EventLog,
    ModelCapabilities,
    ModelInfo,
    Reminder,
    ReminderError,
    Session,
    SessionState,
    Transcript,
    capabilities_for,
    check_append_only,
    commit_directives,
    inject_reminder,
    placement,
    register_model_capabilities,
    render_envelope,
)
from agent_reminders.integrations import to_anthropic

OPUS = ModelInfo(provider="anthropic", name="claude-opus-4-8")
SONNET_4 = ModelInfo(provider="anthropic", name="claude-sonnet-4-5")
GPT = ModelInfo(provider="openai", name="gpt-5")
LOCAL = ModelInfo(
    provider="openai", name="unregistered-local-llm", base_url="http://127.0.0.1:8080/v1"
)
GEMINI = ModelInfo(provider="gemini", name="gemini-2.5-pro")


def _pending(*bodies: str, **options: object) -> Transcript:
    t = Transcript()
    for body in bodies:
        t = inject_reminder(t, {"body": body, **options}).transcript
    return t


# -- commit ----------------------------------------------------------------------------------


def test_commit_defaults_to_the_user_channel_and_auto_means_user_without_a_model() -> None:
    for channel in ("user", "auto"):
        done = commit_directives(_pending("x"), turn=0, channel=channel)
        assert done.message is not None
        assert done.message["role"] == "user"


def test_commit_on_the_system_channel_keeps_the_same_text() -> None:
    user = commit_directives(_pending("CI is red"), turn=0)
    system = commit_directives(_pending("CI is red"), turn=0, channel="system")
    assert user.message is not None
    assert system.message is not None
    assert system.message["role"] == "system"
    assert system.message["content"] == user.message["content"]
    assert system.transcript.messages[-1]["role"] == "system"
    assert system.transcript.request_messages()[-1] == {
        "role": "system",
        "content": user.message["content"],
    }


def test_the_persons_own_words_always_go_as_user() -> None:
    done = commit_directives(_pending("my words", role_hint="user_block"), turn=0, channel="system")
    assert done.message is not None
    assert done.message["role"] == "user"
    assert 'speaker="person"' in done.message["content"]


def test_fired_events_name_the_channel() -> None:
    log = EventLog()
    commit_directives(_pending("x"), turn=0, channel="system", event_log=log)
    fired = [r for r in log.records if r.kind.endswith(".fired")]
    assert [r.payload["rendered_role"] for r in fired] == ["system"]


def test_a_bad_channel_is_refused_naming_it() -> None:
    with pytest.raises(ReminderError, match="channel must be one of 'auto', 'user', 'system'"):
        commit_directives(_pending("x"), turn=0, channel="developer")  # type: ignore[arg-type]
    with pytest.raises(ReminderError, match="channel must be one of"):
        Session(channel="assistant")  # type: ignore[arg-type]


# -- the capability table --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        (OPUS, ModelCapabilities(system_messages=True, clear_at=True, tool_changes=True)),
        (
            ModelInfo(provider="anthropic", name="claude-opus-4-8-20260528"),
            ModelCapabilities(system_messages=True, clear_at=True, tool_changes=True),
        ),
        (
            ModelInfo(provider="anthropic", name="claude-sonnet-5"),
            ModelCapabilities(system_messages=True, clear_at=True, tool_changes=False),
        ),
        (SONNET_4, ModelCapabilities()),
        (GPT, ModelCapabilities(system_messages=True)),
        (
            ModelInfo(provider="openai", name="gpt-5", base_url="https://api.openai.com/v1"),
            ModelCapabilities(system_messages=True),
        ),
        (LOCAL, ModelCapabilities()),
        (GEMINI, ModelCapabilities()),
        (None, ModelCapabilities()),
    ],
)
def test_the_table_answers_for_each_provider(
    model: ModelInfo | None, expected: ModelCapabilities
) -> None:
    assert capabilities_for(model) == expected


def test_a_registered_row_comes_first_and_is_checked() -> None:
    model = ModelInfo(provider="openai", name="test-channels-late-system", base_url="http://x/v1")
    assert not capabilities_for(model).system_messages
    register_model_capabilities("openai-compatible:test-channels-late-*", system_messages=True)
    assert capabilities_for(model) == ModelCapabilities(system_messages=True)
    # a later row wins; the betas never go without the system entry itself
    register_model_capabilities(
        "openai-compatible:test-channels-late-system", system_messages=False, clear_at=True
    )
    assert capabilities_for(model) == ModelCapabilities()
    with pytest.raises(ValueError, match="provider:model"):
        register_model_capabilities("no-provider", system_messages=True)
    with pytest.raises(ValueError, match="system_messages must be True or False"):
        register_model_capabilities("x:y", system_messages="yes")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("model", "setting", "channel"),
    [
        (OPUS, "auto", "system"),
        (GPT, "auto", "system"),
        (SONNET_4, "auto", "user"),
        (LOCAL, "auto", "user"),
        (GEMINI, "auto", "user"),
        (None, "auto", "user"),
        (SONNET_4, "system", "system"),
        (OPUS, "user", "user"),
    ],
)
def test_auto_resolves_through_the_table(
    model: ModelInfo | None, setting: str, channel: str
) -> None:
    session = Session(channel=setting, model=model)  # type: ignore[arg-type]
    assert session.envelope_channel() == channel
    session.append({"role": "user", "content": "hi"})
    session.inject({"body": "x"})
    assert session.prepare_request().messages[-1]["role"] == channel


def test_a_committed_envelope_keeps_its_role_when_the_model_changes() -> None:
    session = Session(model=OPUS)
    session.append({"role": "user", "content": "hi"})
    session.inject({"body": "first"})
    first = session.prepare_request()
    session.append({"role": "assistant", "content": "ok"})
    session.model = SONNET_4  # a model switch: new envelopes go as user, old ones stay system
    session.append({"role": "user", "content": "go on"})
    session.inject({"body": "second"})
    second = session.prepare_request()
    assert [m["role"] for m in second.messages] == ["user", "system", "assistant", "user", "user"]
    assert list(second.messages[: len(first.messages)]) == list(first.messages)


def _turn(session: Session, body: str, ttl_turns: int | None) -> str:
    session.append({"role": "user", "content": f"about {body}"})
    session.inject({"body": body, **({"ttl_turns": ttl_turns} if ttl_turns else {})})
    envelope = session.prepare_request().messages[-1]
    session.append({"role": "assistant", "content": "ok"})
    return str(envelope["content"])


@pytest.mark.parametrize(
    ("model", "again"),
    [
        (OPUS, [True, True, False, False]),  # cleared carriers: the next envelope repeats them
        (SONNET_4, [True, False, False, False]),  # no clear_at: once per context, as ever
    ],
)
def test_instructions_stay_in_view_when_clear_at_drops_their_envelope(
    model: ModelInfo, again: list[bool]
) -> None:
    """An envelope that lasts one turn leaves the model's view with ``clear_at``; if it held
    the instructions, the next envelope carries them, until one that stays in view has."""
    session = Session(model=model)
    texts = [
        _turn(session, "one turn", 1),
        _turn(session, "lasting", None),
        _turn(session, "one turn again", 1),
        _turn(session, "lasting again", None),
    ]
    assert [ENVELOPE_INSTRUCTIONS in t for t in texts] == again
    body = to_anthropic(session.prepare_request(), cache=False, clear_at=model == OPUS)
    cleared = [m for m in body["messages"] if "clear_at" in m]
    assert len(cleared) == (2 if model == OPUS else 0)


# -- placement and downgrades ----------------------------------------------------------------

U = {"role": "user", "content": "u"}
A = {"role": "assistant", "content": "a"}
T = {"role": "tool", "tool_call_id": "c", "content": "t"}
S = {"role": "system", "content": "s"}


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        ([U, S], {}),
        ([U, S, A], {}),
        ([A, T, S], {}),  # tool results travel in a user entry
        ([S, U], {0: "first_entry"}),
        ([U, A, S], {2: "not_after_user"}),
        ([U, S, U], {1: "not_before_assistant"}),
        ([U, S, S], {1: "not_before_assistant"}),  # the first goes as user; the second then fits
        ([U, {"role": "system", "content": [{"type": "image", "source": {}}]}], {1: "not_text"}),
        ([U, {"role": "system", "content": [{"type": "tool_removal", "name": "x"}]}], {}),
    ],
)
def test_placement_rules(messages: list[dict[str, object]], expected: dict[int, str]) -> None:
    assert placement(messages) == expected


def test_placement_from_start_judges_only_the_tail() -> None:
    messages = [S, U, S, U, A, U, S]
    assert placement(messages) == {0: "first_entry", 2: "not_before_assistant"}
    assert placement(messages, start=5) == {}
    assert placement(messages, start=2) == {2: "not_before_assistant"}


def test_a_failed_call_then_a_user_message_is_a_downgrade_evented_once() -> None:
    log = EventLog()
    session = Session(model=OPUS, event_log=log)
    session.append({"role": "user", "content": "hi"})
    session.inject({"body": "x"})
    first = session.prepare_request()  # the model call fails: no answer is appended
    assert first.messages[-1]["role"] == "system"
    session.append({"role": "user", "content": "are you there?"})
    session.inject({"body": "y"})
    second = session.prepare_request()
    downgraded = [r for r in log.records if r.kind == "transcript.channel_downgraded"]
    assert [(r.payload["message_index"], r.payload["reason"]) for r in downgraded] == [
        (1, "not_before_assistant")
    ]
    assert placement(list(second.messages)) == {1: "not_before_assistant"}
    session.append({"role": "assistant", "content": "yes"})
    session.prepare_request()
    assert len([r for r in log.records if r.kind == "transcript.channel_downgraded"]) == 1


def test_check_append_only_names_a_downgrade() -> None:
    before = [U, {"role": "system", "content": "s"}]
    after = [U, {"role": "user", "content": [{"type": "text", "text": "s"}]}, U]
    (found,) = check_append_only([before, after])
    assert (found.request_index, found.message_index, found.reason) == (
        1,
        1,
        "channel_downgraded",
    )
    (other,) = check_append_only([before, [U, {"role": "user", "content": "other"}]])
    assert other.reason == "message_changed"


# -- the nonce -------------------------------------------------------------------------------


def test_a_nonce_goes_on_every_opening_tag_and_in_the_instructions() -> None:
    text = render_envelope([Reminder(body="x")], nonce="abcdef0123")
    assert text.startswith('<context-directives speaker="harness" nonce="abcdef0123">')
    assert ENVELOPE_INSTRUCTIONS in text
    assert 'nonce="abcdef0123" on their opening tag' in text
    reminder = render_envelope([Reminder(body="x")], style="system_reminder", nonce="abcdef0123")
    assert reminder.startswith('<system-reminder nonce="abcdef0123">')
    with pytest.raises(ReminderError, match="nonce must be None or 8 to 64"):
        render_envelope([Reminder(body="x")], nonce='x" onload="')


def test_a_session_nonce_is_random_stable_and_saved() -> None:
    a, b = Session(nonce=True), Session(nonce=True)
    assert a.nonce is not None
    assert b.nonce is not None
    assert a.nonce != b.nonce
    a.append({"role": "user", "content": "hi"})
    for body in ("x", "y"):
        a.inject({"body": body})
        a.prepare_request()
        a.append({"role": "assistant", "content": "ok"})
    envelopes = [m["content"] for m in a.transcript.messages if "directive_ids" in m]
    assert len(envelopes) == 2
    assert all(f'nonce="{a.nonce}"' in e for e in envelopes)
    restored = Session.from_state(SessionState.from_json(a.state().to_json()))
    assert restored.nonce == a.nonce
    assert Session().nonce is None


# -- the saved state -------------------------------------------------------------------------


def test_defaults_keep_the_saved_documents_bytes() -> None:
    doc = json.loads(Session(session_id="s").state().to_json())
    assert "channel" not in doc
    assert "nonce" not in doc
    assert "tools" not in doc


def test_channel_and_nonce_round_trip_and_are_checked() -> None:
    session = Session(session_id="s", channel="system", nonce="fixed-nonce-1")
    text = session.state().to_json()
    doc = json.loads(text)
    assert (doc["channel"], doc["nonce"]) == ("system", "fixed-nonce-1")
    assert list(doc) == sorted(doc)
    state = SessionState.from_json(text)
    assert (state.channel, state.nonce) == ("system", "fixed-nonce-1")
    bad = text.replace('"channel":"system"', '"channel":"sideways"')
    with pytest.raises(ValueError, match="channel must be one of"):
        SessionState.from_json(bad)
