"""pydantic-ai: which part ``ReminderCapability`` gives an envelope.

A ``SystemPromptPart`` in a request of its own only where pydantic-ai sends it in place — the
model's profile sets ``supports_inline_system_prompts`` — and the capability table (or the
``channel`` setting) says the model takes it; a ``UserPromptPart`` otherwise, so pydantic-ai
never rewrites an envelope as ``<system>``-tagged user text.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx
import openai
import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models import Model
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.profiles import ModelProfile
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider

from agent_reminders import ModelInfo
from agent_reminders.integrations.pydantic_ai import (
    ReminderCapability,
    _in_place,
    _model_info,
)
from agent_reminders.testing import RecordingModelServer

NOTE = "Keep every change small."
ENVELOPE = "<context-directives"
INLINE = ModelProfile(supports_inline_system_prompts=True)


def _claude(name: str) -> Model:
    return AnthropicModel(name, provider=AnthropicProvider(api_key="k"))


def _openai(name: str, base_url: str | None = None) -> Model:
    return OpenAIChatModel(name, provider=OpenAIProvider(api_key="k", base_url=base_url))


def _nothing(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart("")])


MODELS: dict[str, tuple[Model, str, bool]] = {
    # model -> (its key in the capability table, in place)
    "opus-4-8": (_claude("claude-opus-4-8"), "anthropic:claude-opus-4-8", True),
    # pydantic-ai leaves Sonnet 5 out: it accepts the entry but ignores it
    "sonnet-5": (_claude("claude-sonnet-5"), "anthropic:claude-sonnet-5", False),
    "claude-test": (_claude("claude-test"), "anthropic:claude-test", False),
    "openai": (_openai("gpt-5"), "openai:gpt-5", True),
    # pydantic-ai sends it in place to any OpenAI-compatible server; the table decides
    "openai-compatible": (
        _openai("qwen3", "http://127.0.0.1:8080/v1"),
        "openai-compatible:qwen3",
        True,
    ),
    "test": (TestModel(), "test:test", False),
    "function": (FunctionModel(_nothing), "function:function:_nothing:", False),
    "function-inline": (
        FunctionModel(_nothing, profile=INLINE),
        "function:function:_nothing:",
        True,
    ),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_what_each_model_takes(name: str) -> None:
    model, key, in_place = MODELS[name]
    assert _model_info(model).key == key
    assert _in_place(model) is in_place


def _script(seen: list[list[ModelMessage]]) -> Any:
    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        if len(seen) == 1:
            return ModelResponse(parts=[ToolCallPart("check", {}, tool_call_id="c1")])
        return ModelResponse(parts=[TextPart("done")])

    return script


async def _run(model: Model, capability: ReminderCapability) -> Any:
    agent = Agent(model, system_prompt="You are careful.", capabilities=[capability])

    @agent.tool_plain
    def check() -> str:
        """Check the build."""
        capability.session.inject({"body": "The build is red.", "ttl_turns": 2})
        return "red"

    capability.session.inject({"body": NOTE, "ttl_turns": 5})
    return await agent.run("go")


def _parts(messages: list[ModelMessage]) -> list[Any]:
    """The parts of the requests that hold an envelope."""
    return [
        p
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if ENVELOPE in str(getattr(p, "content", ""))
    ]


@pytest.mark.parametrize(
    ("profile", "channel", "kind"),
    [
        (INLINE, "system", SystemPromptPart),
        (INLINE, "auto", UserPromptPart),  # the table has no row for FunctionModel
        (INLINE, "user", UserPromptPart),
        (None, "system", UserPromptPart),  # pydantic-ai would wrap it in <system> tags
        (None, "auto", UserPromptPart),
    ],
)
@pytest.mark.anyio
async def test_the_envelope_part_follows_the_profile_and_the_setting(
    profile: ModelProfile | None, channel: str, kind: type[Any]
) -> None:
    seen: list[list[ModelMessage]] = []
    capability = ReminderCapability(channel=channel)
    result = await _run(FunctionModel(_script(seen), profile=profile), capability)
    parts = _parts(result.all_messages())
    assert len(parts) == 2
    assert {type(p) for p in parts} == {kind}
    # what the model received: the same part, in place, never rewritten as <system> text
    received = _parts(seen[-1])
    assert [type(p) for p in received] == [kind, kind]
    assert all(str(p.content).startswith(ENVELOPE) for p in received)
    assert capability.session.model == ModelInfo(provider="function", name="function:script:")
    # each of its own request in the history, after the turn it follows
    history = result.all_messages()
    holders = [i for i, m in enumerate(history) if _parts([m])]
    assert all(len(history[i].parts) == 1 for i in holders)
    assert all(isinstance(history[i + 1], ModelResponse) for i in holders)


class ToServer(httpx.AsyncBaseTransport):
    """Sends what the client addresses to the provider's own endpoint to the recording server."""

    def __init__(self, server: RecordingModelServer) -> None:
        self.port = server.port
        self.inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        request.url = request.url.copy_with(scheme="http", host="127.0.0.1", port=self.port)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


SCRIPT: list[dict[str, Any]] = [
    {"tool_calls": [{"id": "c1", "name": "check", "arguments": {}}]},
    {"content": "done"},
]


@pytest.mark.anyio
async def test_openai_on_its_own_endpoint_gets_system_messages_in_place() -> None:
    """pydantic-ai's OpenAI chat model sends a ``SystemPromptPart`` as a ``system`` message
    where it stands (its profile names no other role for these models)."""
    with RecordingModelServer(SCRIPT) as server:
        async with (
            httpx.AsyncClient(transport=ToServer(server)) as http,
            openai.AsyncOpenAI(api_key="k", max_retries=0, http_client=http) as client,  # type: ignore[arg-type]
        ):
            # gpt-4.1: a model no provider has deprecated (pydantic-ai warns for the others)
            model = OpenAIChatModel("gpt-4.1", provider=OpenAIProvider(openai_client=client))
            capability = ReminderCapability()
            agent = Agent(model, system_prompt="You are careful.", capabilities=[capability])

            @agent.tool_plain
            def check() -> str:
                """Check the build."""
                capability.session.inject({"body": "The build is red.", "ttl_turns": 2})
                return "red"

            capability.session.inject({"body": NOTE, "ttl_turns": 5})
            await agent.run("go")
    assert capability.session.model == ModelInfo(
        provider="openai", name="gpt-4.1", base_url="https://api.openai.com/v1/"
    )
    first, second = (r.json["messages"] for r in server.requests)
    roles = [(m["role"], ENVELOPE in json.dumps(m.get("content"))) for m in second]
    assert roles == [
        ("system", False),
        ("user", False),
        ("system", True),
        ("assistant", False),
        ("tool", False),
        ("system", True),
    ]
    assert second[: len(first)] == first


@pytest.mark.anyio
async def test_claude_opus_gets_system_entries_the_server_accepts() -> None:
    with RecordingModelServer(SCRIPT) as server:
        async with anthropic.AsyncAnthropic(
            base_url=server.url, api_key="k", max_retries=0
        ) as client:
            model = AnthropicModel(
                "claude-opus-4-8", provider=AnthropicProvider(anthropic_client=client)
            )
            capability = ReminderCapability()
            agent = Agent(model, system_prompt="You are careful.", capabilities=[capability])

            @agent.tool_plain
            def check() -> str:
                """Check the build."""
                capability.session.inject({"body": "The build is red.", "ttl_turns": 2})
                return "red"

            capability.session.inject({"body": NOTE, "ttl_turns": 5})
            await agent.run("go")
    assert [status for status, _ in server.replies] == [200, 200]
    first, second = (r.json["messages"] for r in server.requests)
    roles = [(m["role"], ENVELOPE in json.dumps(m.get("content"))) for m in second]
    assert roles == [
        ("user", False),
        ("system", True),
        ("assistant", False),
        ("user", False),  # the tool result
        ("system", True),
    ]
    assert second[: len(first)] == first
