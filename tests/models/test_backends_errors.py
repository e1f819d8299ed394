"""Backend failures: HTTP errors after the SDK's retries, no response, bad tool-call JSON,
missing keys, missing usage figures, conflicting settings."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import anthropic
import openai
import pytest

from agent_reminders import (
    ConfigError,
    ModelError,
    ModelRequest,
    Session,
    Usage,
    agent_loop,
)
from agent_reminders.models import AnthropicModel, OpenAIChatModel, OpenAIResponsesModel
from agent_reminders.testing import RecordingModelServer

pytestmark = pytest.mark.anyio

REQUEST = ModelRequest(system="sys", messages=[{"role": "user", "content": "hi"}], session_id="s-1")


def chat(server: RecordingModelServer, **kw: Any) -> OpenAIChatModel:
    return OpenAIChatModel("m", base_url=server.base_url, api_key="k", **kw)


def responses(server: RecordingModelServer, **kw: Any) -> OpenAIResponsesModel:
    return OpenAIResponsesModel("m", base_url=server.base_url, api_key="k", **kw)


def claude(server: RecordingModelServer, **kw: Any) -> AnthropicModel:
    return AnthropicModel("m", base_url=server.url, api_key="k", **kw)


MAKERS: dict[str, Callable[..., OpenAIChatModel | OpenAIResponsesModel | AnthropicModel]] = {
    "chat": chat,
    "responses": responses,
    "anthropic": claude,
}
PROVIDERS = {"chat": "openai", "responses": "openai", "anthropic": "anthropic"}


@pytest.mark.parametrize("status", [500, 429])
@pytest.mark.parametrize("backend", sorted(MAKERS))
async def test_http_error_after_retries_is_one_model_error(backend: str, status: int) -> None:
    failure: dict[str, Any] = {"error": f"the server says no ({status})", "status": status}
    with RecordingModelServer([failure]) as server:
        async with MAKERS[backend](server, max_retries=0) as model:
            with pytest.raises(ModelError) as caught:
                await agent_loop(model, "hi", session=Session())
    err = caught.value
    assert err.code == "RMD-108"
    assert err.provider == PROVIDERS[backend]
    assert err.status == status
    assert err.server_message == f"the server says no ({status})"
    assert f"HTTP {status}" in str(err)
    assert f"the server says no ({status})" in str(err)
    assert err.__suppress_context__  # no SDK traceback is printed with it
    assert len(server.requests) == 1  # max_retries=0: the SDK tried once


async def test_the_sdk_retries_are_used() -> None:
    busy = {"error": "busy", "status": 503, "headers": {"retry-after-ms": "1"}}
    with RecordingModelServer([busy, busy, "finally"]) as server:
        async with chat(server, max_retries=2) as model:
            response = await model(REQUEST)
    assert response.message["content"] == "finally"
    assert [r.headers["x-stainless-retry-count"] for r in server.requests] == ["0", "1", "2"]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("backend", ["chat", "anthropic"])
async def test_no_server_is_a_model_error_without_status(backend: str) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    model: Any = (
        OpenAIChatModel("m", base_url=url, api_key="k", max_retries=0)
        if backend == "chat"
        else AnthropicModel("m", base_url=url, api_key="k", max_retries=0)
    )
    async with model:
        with pytest.raises(ModelError, match="could not connect") as caught:
            await model(REQUEST)
    assert caught.value.status is None
    assert caught.value.provider == PROVIDERS[backend]


@pytest.mark.parametrize("backend", sorted(MAKERS))
async def test_a_timeout_is_a_model_error(backend: str) -> None:
    with RecordingModelServer([{"content": "late", "delay_seconds": 1.0}]) as server:
        async with MAKERS[backend](server, max_retries=0, timeout=0.2) as model:
            with pytest.raises(ModelError, match="timed out") as caught:
                await model(REQUEST)
    assert caught.value.status is None


BAD_CHAT = {
    "id": "x",
    "object": "chat.completion",
    "created": 0,
    "model": "m",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "ls", "arguments": '{"path": "."'},
                    }
                ],
            },
        }
    ],
}


async def test_bad_tool_call_json_is_a_clear_model_error() -> None:
    with RecordingModelServer([{"raw_response": BAD_CHAT}]) as server:
        async with chat(server) as model:
            with pytest.raises(ModelError, match="malformed tool-call arguments") as caught:
                await model(REQUEST)
    assert "tool_calls[0] (ls)" in str(caught.value)
    assert '{"path": "."' in str(caught.value)


async def test_bad_responses_arguments_and_empty_arguments() -> None:
    output = [
        {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": ""},
        {"type": "reasoning", "id": "r1", "summary": []},
    ]
    bad = [{"type": "function_call", "call_id": "c2", "name": "ls", "arguments": "[1]"}]
    script: list[dict[str, Any]] = [
        {"raw_response": {"id": "r", "object": "response", "output": output}},
        {"raw_response": {"id": "r", "object": "response", "output": bad}},
    ]
    with RecordingModelServer(script) as server:
        async with responses(server) as model:
            first = await model(REQUEST)
            with pytest.raises(ModelError, match="must be a JSON object, not list"):
                await model(REQUEST)
    assert first.message == {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c1", "name": "ls", "arguments": {}}],
    }
    assert first.usage is None  # no usage object at all


async def test_chat_without_choices_is_a_model_error() -> None:
    raw = {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": []}
    with RecordingModelServer([{"raw_response": raw}]) as server:
        async with chat(server) as model:
            with pytest.raises(ModelError, match="no choices"):
                await model(REQUEST)


@pytest.mark.parametrize("backend", sorted(MAKERS))
async def test_no_cached_figure_maps_to_none(backend: str) -> None:
    with RecordingModelServer(["a"], cached_tokens=False) as server:
        async with MAKERS[backend](server) as model:
            response = await model(REQUEST)
    assert response.usage is not None
    assert response.usage.cached_input_tokens is None
    assert response.usage.input_tokens > 0


async def test_anthropic_usage_adds_the_cache_fields() -> None:
    raw_usage = {
        "input_tokens": 5,
        "cache_read_input_tokens": 100,
        "cache_creation_input_tokens": 20,
        "output_tokens": 3,
    }
    with RecordingModelServer([{"content": "a", "raw_usage": raw_usage}]) as server:
        async with claude(server) as model:
            response = await model(REQUEST)
    assert response.usage == Usage(
        input_tokens=125, output_tokens=3, cached_input_tokens=100, cache_write_tokens=20
    )


async def test_refusal_text_and_text_blocks() -> None:
    refusal = {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": None, "refusal": "I can't."},
            }
        ],
    }
    with RecordingModelServer([{"raw_response": refusal}]) as server:
        async with chat(server) as model:
            assert (await model(REQUEST)).message["content"] == "I can't."


@pytest.mark.parametrize(
    ("cls", "env"),
    [(OpenAIChatModel, "OPENAI_API_KEY"), (AnthropicModel, "ANTHROPIC_API_KEY")],
)
async def test_missing_key_is_a_config_error_on_first_use(
    cls: Any, env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(env, raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    model = cls("m")  # building needs no credentials
    with pytest.raises(ConfigError, match=f"no API key: set {env}"):
        await model(REQUEST)


async def test_key_from_the_environment_and_placeholder_for_local_servers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with RecordingModelServer(["a", "b"]) as server:
        async with OpenAIChatModel("m", base_url=server.base_url) as model:
            await model(REQUEST)
        monkeypatch.setenv("OPENAI_API_KEY", "from-env")
        async with OpenAIChatModel("m", base_url=server.base_url) as model:
            await model(REQUEST)
    assert [r.headers["authorization"] for r in server.requests] == [
        "Bearer no-key",
        "Bearer from-env",
    ]


async def test_a_given_client_is_used_and_left_open() -> None:
    with RecordingModelServer(["a", "b"]) as server:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="own") as client:
            model = OpenAIChatModel("m", client=client)
            assert model.client is client
            await model(REQUEST)
            await model.aclose()
            await model(REQUEST)  # still open: the caller owns it
        async with anthropic.AsyncAnthropic(base_url=server.url, api_key="own") as aclient:
            assert AnthropicModel("m", client=aclient).client is aclient
    assert len(server.requests) == 2


@pytest.mark.parametrize("cls", [OpenAIChatModel, OpenAIResponsesModel, AnthropicModel])
def test_settings_a_given_client_would_ignore_are_refused(cls: Any) -> None:
    with pytest.raises(ConfigError, match="base_url, max_retries cannot be combined with client"):
        cls("m", client=object(), base_url="http://x", max_retries=1)
    with pytest.raises(ConfigError, match="non-blank"):
        cls(" ")


def test_bad_settings_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="prompt_cache_key must be"):
        OpenAIChatModel("m", prompt_cache_key=3)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="max_tokens must be"):
        AnthropicModel("m", max_tokens=0)


@pytest.mark.parametrize(
    ("setting", "expected"), [(None, "s-1"), ("fixed", "fixed"), (False, None)]
)
async def test_prompt_cache_key_setting(setting: Any, expected: str | None) -> None:
    with RecordingModelServer(["a", "b"]) as server:
        async with chat(server, prompt_cache_key=setting) as model:
            await model(REQUEST)
            await model(ModelRequest(system="", messages=[{"role": "user", "content": "x"}]))
    first, unnamed = server.bodies()
    assert first.get("prompt_cache_key") == expected
    assert unnamed.get("prompt_cache_key") == (None if setting is None else expected)
    assert "messages" in first
    assert first["messages"][0]["role"] == "system"
    assert unnamed["messages"][0]["role"] == "user"  # an empty system prompt is left out


def test_names_and_reprs() -> None:
    assert repr(OpenAIChatModel("m", base_url="http://h/v1")) == (
        "OpenAIChatModel('m', base_url='http://h/v1')"
    )
    assert repr(AnthropicModel("m")) == "AnthropicModel('m', base_url=None)"
    assert OpenAIResponsesModel("m").name == "openai-responses:m"
