"""Unit tests of the pure wire formats (docs/wire-formats.md), one group per function and shape."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_reminders import MessageError, ModelRequest, Session
from agent_reminders.integrations import (
    from_anthropic,
    from_openai_chat,
    to_anthropic,
    to_gemini,
    to_openai_chat,
    to_openai_responses,
)

EPHEMERAL = {"type": "ephemeral"}
LS = {"name": "ls", "description": "List files.", "parameters": {"type": "object"}}


def tool_session() -> tuple[Session, ModelRequest]:
    """user, envelope, assistant with two calls, two results, a second envelope."""
    s = Session(system="Be brief.", session_id="s1")
    s.append({"role": "user", "content": "list it"})
    s.inject({"body": "Run the tests.", "ttl_turns": 2})
    s.prepare_request(tools=[LS])
    s.append(
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "name": "ls", "arguments": {"path": "."}},
                {"id": "c2", "name": "ls", "arguments": {}},
            ],
        }
    )
    s.append({"role": "tool", "tool_call_id": "c1", "name": "ls", "content": "a.py"})
    s.append({"role": "tool", "tool_call_id": "c2", "name": "ls", "content": "b.py"})
    s.inject({"body": "Mind the lint.", "ttl_turns": 1})
    return s, s.prepare_request(tools=[LS])


def request(messages: list[dict[str, Any]], system: str = "sys", **kw: Any) -> ModelRequest:
    return ModelRequest(system=system, messages=messages, **kw)  # type: ignore[arg-type]


def strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def markers(body: dict[str, Any]) -> list[tuple[int, int]]:
    """(message index, block index) of every marked block; message -1 is the system."""
    found = [(-1, j) for j, b in enumerate(body["system"]) if "cache_control" in b]
    for i, message in enumerate(body["messages"]):
        found += [(i, j) for j, b in enumerate(message["content"]) if "cache_control" in b]
    return found


ALL = [to_openai_chat, to_openai_responses, to_anthropic, to_gemini]


# ------------------------------------------------------------------------ common rules


@pytest.mark.parametrize("convert", ALL)
def test_same_request_same_bytes_and_no_directive_ids(convert: Any) -> None:
    s, req = tool_session()
    assert any("directive_ids" in m for m in s.transcript.messages)  # stored, never sent
    _, req2 = tool_session()
    first = json.dumps(convert(req))
    assert first == json.dumps(convert(req))
    assert first == json.dumps(convert(req2))  # a second, identical session
    assert "directive_ids" not in first


@pytest.mark.parametrize("convert", ALL)
def test_the_output_is_the_callers_to_change(convert: Any) -> None:
    s, req = tool_session()
    before = json.dumps(list(req.messages))
    body = convert(req)
    for value in body.values():
        if isinstance(value, list):
            for item in value:
                if isinstance(item, dict):
                    item.clear()
    assert json.dumps(list(s.transcript.request_messages())) == before


@pytest.mark.parametrize("convert", ALL)
def test_other_block_types_pass_through(convert: Any) -> None:
    image = {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}
    body = json.dumps(strip(convert(request([{"role": "user", "content": [image]}]))))
    assert json.dumps(image) in body


# ------------------------------------------------------------------------ OpenAI chat


def test_openai_chat_shapes() -> None:
    _, req = tool_session()
    body = to_openai_chat(req)
    assert list(body) == ["messages", "tools"]
    messages = body["messages"]
    assert messages[0] == {"role": "system", "content": "Be brief."}
    assert messages[1] == {"role": "user", "content": "list it"}
    assert messages[2]["role"] == "user"
    assert messages[2]["content"].startswith("<context-directives")
    assert messages[3] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "ls", "arguments": '{"path":"."}'},
            },
            {"id": "c2", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
        ],
    }
    assert messages[4] == {"role": "tool", "tool_call_id": "c1", "content": "a.py"}
    assert messages[5] == {"role": "tool", "tool_call_id": "c2", "content": "b.py"}
    assert messages[6]["role"] == "user"
    assert "Mind the lint." in messages[6]["content"]
    assert len(messages) == 7
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "ls",
                "description": "List files.",
                "parameters": {"type": "object"},
            },
        }
    ]


def test_openai_chat_empty_system_is_left_out_and_text_beside_calls_is_kept() -> None:
    call = {"id": "c1", "name": "ls", "arguments": {"a": [1, "é"]}}
    body = to_openai_chat(
        request([{"role": "assistant", "content": "Looking.", "tool_calls": [call]}], system="")
    )
    assert body["messages"][0]["content"] == "Looking."
    assert body["messages"][0]["tool_calls"][0]["function"]["arguments"] == '{"a":[1,"é"]}'
    assert body["tools"] == []


# ------------------------------------------------------------------------ OpenAI Responses


def test_openai_responses_shapes() -> None:
    _, req = tool_session()
    body = to_openai_responses(req)
    assert list(body) == ["instructions", "input", "tools"]
    assert body["instructions"] == "Be brief."
    items = body["input"]
    assert items[0] == {"type": "message", "role": "user", "content": "list it"}
    assert items[1]["type"] == "message"
    assert items[1]["content"].startswith("<context-directives")
    assert items[2:6] == [
        {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": '{"path":"."}'},
        {"type": "function_call", "call_id": "c2", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "a.py"},
        {"type": "function_call_output", "call_id": "c2", "output": "b.py"},
    ]
    assert items[6]["role"] == "user"
    assert len(items) == 7
    assert body["tools"] == [
        {
            "type": "function",
            "name": "ls",
            "description": "List files.",
            "parameters": {"type": "object"},
        }
    ]


def test_openai_responses_text_blocks_and_assistant_text() -> None:
    blocks = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    call = {"id": "c1", "name": "ls", "arguments": {}}
    body = to_openai_responses(
        request(
            [
                {"role": "user", "content": blocks},
                {"role": "assistant", "content": blocks, "tool_calls": [call]},
            ]
        )
    )
    assert body["input"][0]["content"] == [
        {"type": "input_text", "text": "a"},
        {"type": "input_text", "text": "b"},
    ]
    assert body["input"][1] == {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "a"}, {"type": "output_text", "text": "b"}],
    }
    assert body["input"][2]["type"] == "function_call"


# ------------------------------------------------------------------------ Anthropic


def test_anthropic_shapes_and_envelope_after_tool_results() -> None:
    _, req = tool_session()
    body = to_anthropic(req, cache=False)
    assert list(body) == ["system", "messages", "tools"]
    assert body["system"] == [{"type": "text", "text": "Be brief."}]
    messages = body["messages"]
    assert [m["role"] for m in messages] == ["user", "user", "assistant", "user", "user"]
    assert messages[0] == {"role": "user", "content": [{"type": "text", "text": "list it"}]}
    assert messages[2]["content"] == [
        {"type": "tool_use", "id": "c1", "name": "ls", "input": {"path": "."}},
        {"type": "tool_use", "id": "c2", "name": "ls", "input": {}},
    ]
    # The two results of one assistant turn share one user message ...
    assert messages[3]["content"] == [
        {"type": "tool_result", "tool_use_id": "c1", "content": "a.py"},
        {"type": "tool_result", "tool_use_id": "c2", "content": "b.py"},
    ]
    # ... and the envelope is the next message, never folded into it.
    assert len(messages[4]["content"]) == 1
    assert "Mind the lint." in messages[4]["content"][0]["text"]
    assert body["tools"] == [
        {"name": "ls", "description": "List files.", "input_schema": {"type": "object"}}
    ]


def test_anthropic_breakpoints_system_and_last_block() -> None:
    _, req = tool_session()
    body = to_anthropic(req)
    assert markers(body) == [(-1, 0), (4, 0)]
    assert body["system"][0]["cache_control"] == EPHEMERAL
    # The marker is the block's last key: removing it leaves the block's other bytes.
    assert list(body["messages"][4]["content"][0]) == ["type", "text", "cache_control"]
    assert strip(body) == to_anthropic(req, cache=False)


def test_anthropic_last_block_of_a_tool_result_turn_is_marked() -> None:
    call = {"id": "c1", "name": "ls", "arguments": {}}
    body = to_anthropic(
        request(
            [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": "ok", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "name": "ls", "content": "x"},
            ]
        )
    )
    assert markers(body) == [(-1, 0), (2, 0)]
    assert body["messages"][1]["content"][0] == {"type": "text", "text": "ok"}


def _look_back(assistant_blocks: int) -> dict[str, Any]:
    """user "q" (block 0), an assistant of n text blocks (1..n), user "next" (block n+1)."""
    texts = [{"type": "text", "text": f"t{i}"} for i in range(assistant_blocks)]
    return to_anthropic(
        request(
            [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": texts},
                {"role": "user", "content": "next"},
            ]
        )
    )


def test_anthropic_look_back_breakpoint_when_more_than_20_blocks_back() -> None:
    # (2) is block 21, the previous request's end is block 0: 21 blocks back, marked too.
    assert markers(_look_back(20)) == [(-1, 0), (0, 0), (2, 0)]


def test_anthropic_no_look_back_breakpoint_at_exactly_20_blocks() -> None:
    assert markers(_look_back(19)) == [(-1, 0), (2, 0)]


def test_anthropic_look_back_counts_tool_use_and_tool_result_blocks() -> None:
    calls = [{"id": f"c{i}", "name": "ls", "arguments": {}} for i in range(10)]
    results = [
        {"role": "tool", "tool_call_id": f"c{i}", "name": "ls", "content": "x"} for i in range(10)
    ]
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "q"},  # block 0
        {"role": "assistant", "content": "", "tool_calls": calls},  # blocks 1..10
        *results,  # one user message, blocks 11..20
        {"role": "user", "content": "envelope"},  # block 21
    ]
    body = to_anthropic(request(messages, system=""))
    assert body["system"] == []
    assert markers(body) == [(0, 0), (3, 0)]
    assert markers(to_anthropic(request(messages[:-1], system=""))) == [(2, 9)]


def test_anthropic_later_system_message_is_a_user_turn() -> None:
    body = to_anthropic(request([{"role": "system", "content": "note"}]), cache=False)
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "note"}]}]


# ------------------------------------------------------------------------ Gemini


def test_gemini_shapes() -> None:
    _, req = tool_session()
    body = to_gemini(req)
    assert list(body) == ["systemInstruction", "contents", "tools"]
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    contents = body["contents"]
    assert [c["role"] for c in contents] == ["user", "user", "model", "user", "user"]
    assert contents[2]["parts"] == [
        {"functionCall": {"id": "c1", "name": "ls", "args": {"path": "."}}},
        {"functionCall": {"id": "c2", "name": "ls", "args": {}}},
    ]
    assert contents[3]["parts"] == [
        {"functionResponse": {"id": "c1", "name": "ls", "response": {"output": "a.py"}}},
        {"functionResponse": {"id": "c2", "name": "ls", "response": {"output": "b.py"}}},
    ]
    assert "Mind the lint." in contents[4]["parts"][0]["text"]
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {"name": "ls", "description": "List files.", "parameters": {"type": "object"}}
            ]
        }
    ]


def test_gemini_without_system_or_tools() -> None:
    body = to_gemini(request([{"role": "assistant", "content": "hi"}], system=""))
    assert body == {"contents": [{"role": "model", "parts": [{"text": "hi"}]}], "tools": []}


# ------------------------------------------------------------------------ from_openai_chat


def test_from_openai_chat_round_trip() -> None:
    _, req = tool_session()
    assert from_openai_chat(to_openai_chat(req)) == ("Be brief.", list(req.messages))
    assert from_openai_chat(to_openai_chat(req)["messages"]) == ("Be brief.", list(req.messages))


def test_from_openai_chat_developer_null_content_and_parts() -> None:
    system, messages = from_openai_chat(
        [
            {"role": "system", "content": "One."},
            {"role": "developer", "content": [{"type": "text", "text": "Two."}]},
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": ""}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "x"},
            {"role": "developer", "content": "Later."},
        ]
    )
    assert system == "One.\n\nTwo."
    assert messages == [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "name": "ls", "arguments": {}}],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "ls", "content": "x"},
        {"role": "system", "content": "Later."},
    ]
    messages[0]["content"] = "mine"  # plain values the caller owns


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [('{"path": ', "is not valid JSON"), ("[1, 2]", "must be a JSON object, not list")],
)
def test_from_openai_chat_bad_arguments_name_the_path(arguments: str, problem: str) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": arguments}}
    with pytest.raises(MessageError) as info:
        from_openai_chat(
            [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": None, "tool_calls": [call]},
            ]
        )
    assert info.value.code == "RMD-101"
    assert "messages[1].tool_calls[0].function.arguments" in str(info.value)
    assert problem in str(info.value)


@pytest.mark.parametrize(
    ("history", "path"),
    [
        ([{"role": "function", "content": "x"}], "messages[0].role"),
        ([{"role": "user", "content": 3}], "messages[0].content"),
        (
            [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": "c", "type": "function"}],
                }
            ],
            "messages[0].tool_calls[0].function",
        ),
        ([{"role": "user", "content": "a"}, "b"], "messages[1]"),
    ],
)
def test_from_openai_chat_bad_shapes(history: list[Any], path: str) -> None:
    with pytest.raises(MessageError, match=path.replace("[", r"\[").replace("]", r"\]")):
        from_openai_chat(history)


# ------------------------------------------------------------------------ from_anthropic


def test_from_anthropic_round_trip_with_and_without_markers() -> None:
    _, req = tool_session()
    expected = ("Be brief.", list(req.messages))
    assert from_anthropic(to_anthropic(req)) == expected
    assert from_anthropic(to_anthropic(req, cache=False)) == expected


def test_from_anthropic_blocks_tool_results_and_markers() -> None:
    system, messages = from_anthropic(
        {
            "system": [
                {"type": "text", "text": "One."},
                {"type": "text", "text": "Two.", "cache_control": EPHEMERAL},
            ],
            "messages": [
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "Looking."},
                        {"type": "tool_use", "id": "t1", "name": "ls", "input": {"p": 1}},
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "t1",
                            "content": [{"type": "text", "text": "a", "cache_control": EPHEMERAL}],
                        },
                        {"type": "text", "text": "and then?"},
                        {"type": "text", "text": "quickly"},
                    ],
                },
            ],
        }
    )
    assert system == "One.\n\nTwo."
    assert messages == [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": "Looking.",
            "tool_calls": [{"id": "t1", "name": "ls", "arguments": {"p": 1}}],
        },
        {"role": "tool", "tool_call_id": "t1", "name": "ls", "content": "a"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "and then?"}, {"type": "text", "text": "quickly"}],
        },
    ]
    assert "cache_control" not in json.dumps(messages)


def test_from_anthropic_bad_shapes_name_the_path() -> None:
    with pytest.raises(MessageError, match=r"messages\[0\]\.role"):
        from_anthropic({"messages": [{"role": "developer", "content": "x"}]})
    with pytest.raises(MessageError, match=r"messages\[0\]\.content\[0\]\.content"):
        from_anthropic(
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": "t", "content": 5}],
                    }
                ]
            }
        )


# ------------------------------------------------------------------------ back into a Session


@pytest.mark.parametrize("convert", ["openai", "anthropic"])
def test_session_from_messages_accepts_the_way_back(convert: str) -> None:
    _, req = tool_session()
    if convert == "openai":
        system, messages = from_openai_chat(to_openai_chat(req))
    else:
        system, messages = from_anthropic(to_anthropic(req))
    again = Session.from_messages(messages, system=system)
    assert again.system == "Be brief."
    assert list(again.transcript.request_messages()) == list(req.messages)
    # The envelopes already sent are recognised: nothing pending is issued twice.
    assert len(again.prepare_request().messages) == len(req.messages)
