"""The recording server refuses what the APIs refuse about a mid-conversation system entry,
with the API's own 400 body, through the real SDK clients: Anthropic's placement and text
rules, the capability table, the clear_at and tool-change betas; OpenAI takes ``developer``
and ``system`` anywhere and refuses an unknown role."""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import pytest

from agent_reminders.capabilities import register_model_capabilities
from agent_reminders.integrations.anthropic import CLEAR_AT_BETA, TOOL_CHANGES_BETA
from agent_reminders.testing import RecordingModelServer

# A Claude model of this process's table that takes a system entry but not clear_at.
NO_CLEAR = "claude-server-no-clear"
register_model_capabilities(f"anthropic:{NO_CLEAR}", system_messages=True, clear_at=False)

OPUS, SONNET_4, SONNET_5 = "claude-opus-4-8", "claude-sonnet-4-5", "claude-sonnet-5"
U = {"role": "user", "content": "hi"}
A = {"role": "assistant", "content": "ok"}
S = {"role": "system", "content": "Be brief."}
CLEAR = {**S, "clear_at": "next_user_message"}
ADD = {"type": "tool_addition", "tool": {"type": "tool_reference", "name": "ls"}}
REMOVE = {"type": "tool_removal", "tool": {"type": "tool_reference", "name": "ls"}}
SEARCH = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
IMAGE = {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}
MARKED = {"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}
BOTH = f"{CLEAR_AT_BETA},{TOOL_CHANGES_BETA}"
PLACEMENT = "invalid placement of a system message"


class _AnyText:
    def __eq__(self, other: object) -> bool:
        return isinstance(other, str)


ANY = _AnyText()  # equal to any message text


def system(*blocks: Any) -> dict[str, Any]:
    return {"role": "system", "content": list(blocks)}


# (id, model, messages, anthropic-beta header, how the message starts, what it says)
REFUSED = [
    ("first", OPUS, [S, U], None, f"messages.0: {PLACEMENT}", "first message"),
    ("after-assistant", OPUS, [U, A, S], None, f"messages.2: {PLACEMENT}", "follow a user"),
    ("before-user", OPUS, [U, S, U], None, f"messages.1: {PLACEMENT}", "followed by an assistant"),
    ("two-in-a-row", OPUS, [U, S, S], None, f"messages.1: {PLACEMENT}", "next to another"),
    ("image", OPUS, [U, system(IMAGE)], None, "messages.1.content.0", "text blocks only"),
    ("empty-text", OPUS, [U, {**S, "content": ""}], None, "messages.1.content", "empty"),
    ("model-without", SONNET_4, [U, S], None, "messages.1: system messages", SONNET_4),
    ("clear-at-no-header", OPUS, [U, CLEAR], None, "messages.1.clear_at", CLEAR_AT_BETA),
    ("clear-at-on-user", OPUS, [{**U, "clear_at": "never"}], BOTH, "messages.0.clear_at", "only"),
    ("clear-at-model-without", NO_CLEAR, [U, CLEAR], BOTH, "messages.1.clear_at", "not supported"),
    ("clear-at-value", OPUS, [U, {**S, "clear_at": "later"}], BOTH, "messages.1.clear_at", "never"),
    (
        "tool-add-no-header",
        OPUS,
        [U, system(ADD)],
        CLEAR_AT_BETA,
        "messages.1.content.0: tool_addition",
        TOOL_CHANGES_BETA,
    ),
    (
        "tool-remove-in-user",
        OPUS,
        [{"role": "user", "content": [REMOVE]}],
        BOTH,
        "messages.0.content.0: tool_removal",
        "only permitted in system messages",
    ),
    ("tool-add-model-without", SONNET_5, [U, system(ADD)], BOTH, "messages.1.content.0", "not"),
    ("developer-role", OPUS, [U, {**S, "role": "developer"}], None, "messages.1.role", "'system'"),
]

ACCEPTED = [
    # as the Claude Code CLI sends them (no text: an empty block list)
    ("no-blocks", OPUS, [U, system()], None),
    ("last", OPUS, [U, S], None),
    ("before-assistant", OPUS, [U, S, A, U], None),
    ("after-server-tool-use", OPUS, [U, {"role": "assistant", "content": [SEARCH]}, S], None),
    ("cache-control", OPUS, [U, system(MARKED)], None),
    ("clear-at", OPUS, [U, CLEAR, A, U], CLEAR_AT_BETA),
    ("clear-at-never", SONNET_5, [U, {**S, "clear_at": "never"}], CLEAR_AT_BETA),
    ("tool-changes", OPUS, [U, system({"type": "text", "text": "x"}, ADD, REMOVE)], BOTH),
    ("registered", NO_CLEAR, [U, S], None),
    ("no-system-entry", SONNET_4, [U, A, U], None),
]


def create(server: RecordingModelServer, model: str, messages: list[Any], beta: str | None) -> Any:
    with anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0) as client:
        headers = {"anthropic-beta": beta} if beta else None
        return client.messages.create(
            model=model, max_tokens=16, messages=messages, extra_headers=headers
        )


@pytest.mark.parametrize(
    ("model", "messages", "beta", "where", "why"),
    [case[1:] for case in REFUSED],
    ids=[case[0] for case in REFUSED],
)
def test_a_refused_body_gets_the_apis_400(
    model: str, messages: list[Any], beta: str | None, where: str, why: str
) -> None:
    with RecordingModelServer(["never played"]) as server:
        with pytest.raises(anthropic.BadRequestError) as caught:
            create(server, model, messages, beta)
        assert server.requests[0].json["messages"] == messages  # the SDK sent it unchanged
    body = caught.value.body
    assert isinstance(body, dict)
    assert body == {"type": "error", "error": {"type": "invalid_request_error", "message": ANY}}
    message = body["error"]["message"]
    assert message.startswith(where)
    assert why in message
    assert server.replies == [(400, body)]


@pytest.mark.parametrize(
    ("model", "messages", "beta"),
    [case[1:] for case in ACCEPTED],
    ids=[case[0] for case in ACCEPTED],
)
def test_a_valid_body_is_answered(model: str, messages: list[Any], beta: str | None) -> None:
    with RecordingModelServer(["fine"]) as server:
        answer = create(server, model, messages, beta)
    assert answer.content[0].text == "fine"


def test_a_refused_body_does_not_use_up_the_script() -> None:
    with RecordingModelServer(["first", "second"]) as server:
        with pytest.raises(anthropic.BadRequestError):
            create(server, OPUS, [S, U], None)
        assert create(server, OPUS, [U, S], None).content[0].text == "first"
    assert [status for status, _ in server.replies] == [400, 200]


def test_a_streamed_request_is_checked_too() -> None:
    with (
        RecordingModelServer(["never played"]) as server,
        anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0) as client,
        pytest.raises(anthropic.BadRequestError, match=r"messages\.1: invalid placement"),
        client.messages.stream(model=OPUS, max_tokens=16, messages=[U, S, U]) as stream,  # type: ignore[list-item]
    ):
        stream.get_final_message()


def test_openai_takes_developer_and_system_anywhere_and_refuses_unknown_roles() -> None:
    chat = [
        {"role": "user", "content": "a"},
        {"role": "developer", "content": "b"},
        {"role": "assistant", "content": "c"},
        {"role": "system", "content": "d"},
        {"role": "user", "content": "e"},
    ]
    items = [{"type": "message", **m} for m in chat]
    with (
        RecordingModelServer(["ok"], loop=True) as server,
        openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as client,
    ):
        answer = client.chat.completions.create(model="m", messages=chat)  # type: ignore[arg-type]
        assert answer.choices[0].message.content == "ok"
        assert client.responses.create(model="m", input=items).output_text == "ok"  # type: ignore[arg-type]
        with pytest.raises(openai.BadRequestError) as caught:
            client.chat.completions.create(
                model="m",
                messages=[*chat, {"role": "boss", "content": "f"}],  # type: ignore[list-item, misc]
            )
    error = caught.value.body
    assert isinstance(error, dict)
    assert error["param"] == "messages[5].role"
    assert error["code"] == "invalid_value"
    assert error["message"].startswith("Invalid value: 'boss'. Supported values are:")
