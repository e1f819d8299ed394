"""The recording model server on its own: routes, scripts, errors, usage figures."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from agent_reminders import ModelResponse, ScriptError, Usage
from agent_reminders.testing import (
    RecordedRequest,
    RecordingModelServer,
    strip_cache_control,
)


def post(url: str, body: Any, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="POST", headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.loads(exc.read())


def test_records_raw_bytes_headers_and_query() -> None:
    with RecordingModelServer(["hi"]) as server:
        raw = b'{"model":"m","messages":[{"role":"user","content":"x"}]}'
        status, reply = post(server.base_url + "/chat/completions?trace=1", raw, {"X-Test": "yes"})
    assert status == 200
    assert reply["choices"][0]["message"] == {"role": "assistant", "content": "hi"}
    (record,) = server.requests
    assert isinstance(record, RecordedRequest)
    assert (record.api, record.path, record.query, record.body) == (
        "chat",
        "/v1/chat/completions",
        "trace=1",
        raw,
    )
    assert record.headers["x-test"] == "yes"
    assert server.bodies("chat") == [json.loads(raw)]


def test_routes_by_path_suffix_so_either_base_url_works() -> None:
    script = [{"content": "a"}, {"content": "b"}, {"content": "c"}]
    with RecordingModelServer(script) as server:
        assert post(server.url + "/v1/messages", {"messages": []})[1]["type"] == "message"
        assert post(server.base_url + "/v1/messages", {"messages": []})[0] == 200
        assert post(server.base_url + "/responses", {"input": []})[1]["object"] == "response"
    assert [r.api for r in server.requests] == ["messages", "messages", "responses"]


def test_tool_calls_in_each_shape() -> None:
    call = {"id": "c1", "name": "ls", "arguments": {"path": "."}}
    with RecordingModelServer([{"tool_calls": [call]}], loop=True) as server:
        chat = post(server.base_url + "/chat/completions", {"messages": []})[1]
        resp = post(server.base_url + "/responses", {"input": []})[1]
        msg = post(server.base_url + "/messages", {"messages": []})[1]
    wire = chat["choices"][0]
    assert wire["finish_reason"] == "tool_calls"
    assert wire["message"]["content"] is None
    assert json.loads(wire["message"]["tool_calls"][0]["function"]["arguments"]) == {"path": "."}
    assert resp["output"][0]["call_id"] == "c1"
    assert msg["content"] == [
        {"type": "tool_use", "id": "c1", "name": "ls", "input": {"path": "."}}
    ]
    assert msg["stop_reason"] == "tool_use"


@pytest.mark.parametrize(
    ("path", "status", "fragment"),
    [
        ("/nowhere", 404, "unknown path /v1/nowhere"),
        ("/chat/completions", 400, "does not stream"),
    ],
)
def test_bad_requests_get_an_http_error(path: str, status: int, fragment: str) -> None:
    with RecordingModelServer(["x"]) as server:
        got, body = post(server.base_url + path, {"stream": True})
    assert got == status
    assert fragment in body["error"]["message"]


def test_non_json_body_is_a_400() -> None:
    with RecordingModelServer(["x"]) as server:
        assert post(server.base_url + "/messages", b"not json")[0] == 400
    assert server.requests[0].json is None


def test_scripted_errors_in_the_provider_shape() -> None:
    script: list[dict[str, Any]] = [
        {"error": "slow down", "status": 429, "headers": {"retry-after": "0"}},
        {"error": "boom"},
    ]
    with RecordingModelServer(script) as server:
        assert post(server.base_url + "/chat/completions", {}) == (
            429,
            {
                "error": {
                    "message": "slow down",
                    "type": "rate_limit_error",
                    "param": None,
                    "code": None,
                }
            },
        )
        status, body = post(server.base_url + "/messages", {})
    assert status == 500
    assert body == {"type": "error", "error": {"type": "api_error", "message": "boom"}}


def test_exhausted_script_and_raising_handler_are_500s() -> None:
    with RecordingModelServer([]) as server:
        status, body = post(server.base_url + "/chat/completions", {})
    assert status == 500
    assert "script exhausted after 0 replies" in body["error"]["message"]

    def handler(request: RecordedRequest) -> str:
        raise LookupError("no answer for " + request.path)

    with RecordingModelServer(handler) as server:
        status, body = post(server.base_url + "/responses", {})
    assert status == 500
    assert body["error"]["message"] == "LookupError: no answer for /v1/responses"
    assert isinstance(server.errors[0], LookupError)


def test_handler_sees_the_request_and_loop_starts_over() -> None:
    seen: list[str] = []

    def handler(request: RecordedRequest) -> ModelResponse:
        seen.append(request.api)
        return ModelResponse(message={"role": "assistant", "content": "ok"})

    with RecordingModelServer(handler) as server:
        post(server.base_url + "/messages", {})
    assert seen == ["messages"]
    with RecordingModelServer(["one", "two"], loop=True) as server:
        texts = [post(server.base_url + "/messages", {})[1]["content"][0]["text"] for _ in range(3)]
    assert texts == ["one", "two", "one"]


def test_a_malformed_script_fails_when_the_server_is_built() -> None:
    with pytest.raises(ScriptError, match="response 1"):
        RecordingModelServer(["fine", {"contnet": "typo"}])


def test_measured_usage_counts_the_common_prefix_per_cache_key() -> None:
    first = {"prompt_cache_key": "k", "messages": [{"role": "user", "content": "x" * 40}]}
    second = {
        "prompt_cache_key": "k",
        "messages": [*first["messages"], {"role": "user", "content": "y"}],
    }
    other = {"prompt_cache_key": "other", "messages": second["messages"]}
    with RecordingModelServer(["a"], loop=True) as server:
        u1 = post(server.base_url + "/chat/completions", first)[1]["usage"]
        u2 = post(server.base_url + "/chat/completions", second)[1]["usage"]
        u3 = post(server.base_url + "/chat/completions", other)[1]["usage"]
    assert u1["prompt_tokens_details"] == {"cached_tokens": 0}
    assert 0 < u2["prompt_tokens_details"]["cached_tokens"] < u2["prompt_tokens"]
    assert u2["prompt_tokens_details"]["cached_tokens"] >= u1["prompt_tokens"] - 1
    assert u3["prompt_tokens_details"] == {"cached_tokens": 0}


def test_anthropic_usage_reads_up_to_the_last_breakpoint() -> None:
    marker = {"type": "ephemeral"}
    msgs = [
        {"role": "user", "content": [{"type": "text", "text": "q" * 80, "cache_control": marker}]}
    ]
    more = [
        {"role": "user", "content": [{"type": "text", "text": "q" * 80}]},
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": [{"type": "text", "text": "z", "cache_control": marker}]},
    ]
    with RecordingModelServer(["a"], loop=True) as server:
        u1 = post(server.base_url + "/messages", {"messages": msgs})[1]["usage"]
        u2 = post(server.base_url + "/messages", {"messages": more})[1]["usage"]
        u3 = post(server.base_url + "/messages", {"messages": [{"role": "user", "content": "n"}]})[
            1
        ]["usage"]
    assert u1["cache_read_input_tokens"] == 0
    assert u1["cache_creation_input_tokens"] > 20
    assert u2["cache_read_input_tokens"] == u1["cache_creation_input_tokens"]
    assert u3["cache_read_input_tokens"] == 0
    assert u3["cache_creation_input_tokens"] == 0


def test_scripted_usage_and_raw_usage_and_no_cached_figures() -> None:
    usage = {"input_tokens": 100, "output_tokens": 7, "cached_input_tokens": 60}
    script = [
        {"content": "a", "usage": usage},
        {"content": "b", "usage": usage},
        {"content": "c", "usage": usage},
        {"content": "d", "raw_usage": {"input_tokens": 1, "output_tokens": 2}},
    ]
    with RecordingModelServer(script) as server:
        chat = post(server.base_url + "/chat/completions", {})[1]["usage"]
        resp = post(server.base_url + "/responses", {})[1]["usage"]
        msg = post(server.base_url + "/messages", {})[1]["usage"]
        raw = post(server.base_url + "/messages", {})[1]["usage"]
    assert chat == {
        "prompt_tokens": 100,
        "completion_tokens": 7,
        "total_tokens": 107,
        "prompt_tokens_details": {"cached_tokens": 60},
    }
    assert resp["input_tokens_details"] == {"cached_tokens": 60}
    assert msg == {
        "input_tokens": 40,
        "output_tokens": 7,
        "cache_read_input_tokens": 60,
        "cache_creation_input_tokens": 0,
    }
    assert raw == {"input_tokens": 1, "output_tokens": 2}
    with RecordingModelServer(["a"], loop=True, cached_tokens=False) as server:
        assert (
            "prompt_tokens_details"
            not in post(server.base_url + "/chat/completions", {})[1]["usage"]
        )
        assert "input_tokens_details" not in post(server.base_url + "/responses", {})[1]["usage"]
        assert "cache_read_input_tokens" not in post(server.base_url + "/messages", {})[1]["usage"]


def test_delay_and_close_twice() -> None:
    server = RecordingModelServer([{"content": "late", "delay_seconds": 0.05}])
    assert post(server.base_url + "/chat/completions", {})[0] == 200
    server.close()
    server.close()
    assert Usage(1, 1).cached_input_tokens is None


def test_strip_cache_control() -> None:
    value = {"system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}]}
    assert strip_cache_control(value) == {"system": [{"type": "text", "text": "s"}]}


def test_a_messages_request_with_stream_true_gets_the_sse_events() -> None:
    """What the Claude Code CLI reads: the Messages API's event stream, text and tool use."""
    import anthropic

    answer = "The parser test fails on empty input; the fix is a guard at the top of parse()."
    call = {"id": "toolu_1", "name": "Bash", "arguments": {"command": "pytest -q"}}
    script: list[dict[str, Any]] = [{"tool_calls": [call]}, {"content": answer}]
    with (
        RecordingModelServer(script, loop=True) as server,
        anthropic.Anthropic(base_url=server.url, api_key="test") as client,
    ):
        ask: dict[str, Any] = {"model": "m", "max_tokens": 100}
        with client.messages.stream(messages=[{"role": "user", "content": "go"}], **ask) as s:
            first = s.get_final_message()
        with client.messages.stream(messages=[{"role": "user", "content": "and?"}], **ask) as s:
            texts = list(s.text_stream)
            second = s.get_final_message()
        raw = urllib.request.urlopen(
            urllib.request.Request(
                server.url + "/v1/messages?beta=true",
                data=json.dumps({"stream": True, "messages": []}).encode(),
                method="POST",
            ),
            timeout=10,
        )
        with raw:
            assert raw.headers["content-type"] == "text/event-stream"
            events = [
                line[7:] for line in raw.read().decode().splitlines() if line[:7] == "event: "
            ]
    assert first.stop_reason == "tool_use"
    assert [(b.type, b.name, b.input) for b in first.content] == [  # type: ignore[union-attr]
        ("tool_use", "Bash", {"command": "pytest -q"})
    ]
    assert second.stop_reason == "end_turn"
    assert "".join(texts) == answer
    assert len(texts) > 1  # in pieces, as text_delta events
    assert second.usage.output_tokens > 0
    assert events[0] == "message_start"
    assert events[-2:] == ["message_delta", "message_stop"]
    assert {"content_block_start", "content_block_delta", "content_block_stop"} <= set(events)
    assert [r.json["stream"] for r in server.requests] == [True, True, True]
    assert server.replies[0][1]["content"][0]["type"] == "tool_use"
