"""The OpenAI Agents SDK: which role ``ReminderInputFilter`` gives an envelope item.

``developer`` for the SDK's OpenAI models where the capability table takes it (OpenAI's own
endpoint, or a compatible server it is told about), and for a model given by name when the
session options say which model it is; ``user`` for any other ``Model``, which converts the
input for another provider. A remembered ``developer`` item re-inserted for such a model goes
as a user item from then on (``channel_downgraded`` once per item).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from agents import (
    Agent,
    ModelResponse,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    Usage,
    function_tool,
)
from agents.models.interface import Model
from agents.testing import assistant_message, function_call
from openai import AsyncOpenAI

from agent_reminders import ModelInfo, Session
from agent_reminders.integrations.driver import NOT_SUPPORTED
from agent_reminders.integrations.openai_agents import (
    ReminderInputFilter,
    ReminderRunHooks,
    _in_place,
    _model_info,
)

pytestmark = pytest.mark.anyio

SYSTEM = "You are a careful coding agent."
ENVELOPE = "<context-directives"
OPENAI = ModelInfo(provider="openai", name="gpt-5")


class Steps(Model):
    """A model of our own (not one of the SDK's OpenAI models): answers from a list of
    outputs and keeps a copy of every input."""

    def __init__(self, outputs: list[list[Any]]) -> None:
        self.outputs = outputs
        self.inputs: list[list[Any]] = []

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[Any],
        model_settings: Any,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: Any,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: Any,
    ) -> ModelResponse:
        assert isinstance(input, list)
        self.inputs.append(copy.deepcopy(input))
        usage = Usage(requests=1, input_tokens=10, output_tokens=1, total_tokens=11)
        return ModelResponse(output=self.outputs.pop(0), usage=usage, response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def _client(base_url: str | None = None) -> AsyncOpenAI:
    return AsyncOpenAI(api_key="k", base_url=base_url)


LOCAL = "http://127.0.0.1:8080/v1"


@pytest.mark.parametrize(
    ("model", "in_place", "key"),
    [
        (OpenAIResponsesModel("gpt-5", openai_client=_client()), True, "openai:gpt-5"),
        (OpenAIChatCompletionsModel("gpt-5", openai_client=_client()), True, "openai:gpt-5"),
        (
            OpenAIResponsesModel("qwen3", openai_client=_client(LOCAL)),
            True,
            "openai-compatible:qwen3",
        ),
        (Steps([]), False, None),
        ("gpt-5", None, None),  # a name: the run's model provider resolves it
        (None, None, None),
    ],
    ids=["responses", "chat", "compatible", "own-model", "name", "default"],
)
def test_what_each_agent_model_takes(model: Any, in_place: bool | None, key: str | None) -> None:
    agent = Agent(name="a", model=model)
    assert _in_place(agent) is in_place
    info = _model_info(agent)
    assert (info.key if info is not None else None) == key


def _envelopes(items: list[Any]) -> list[tuple[int, str]]:
    return [(n, i["role"]) for n, i in enumerate(items) if ENVELOPE in str(i.get("content"))]


async def _run(agent: Agent[Any], reminders: ReminderInputFilter, task: Any, **kw: Any) -> Any:
    config = RunConfig(call_model_input_filter=reminders, tracing_disabled=True, **kw)
    return await Runner.run(agent, task, run_config=config, hooks=ReminderRunHooks(reminders))


@pytest.mark.parametrize(
    ("options", "role"),
    [
        ({}, "user"),  # a name and nothing said about it: "auto" means user
        ({"model": OPENAI}, "developer"),  # told it is OpenAI's: the table takes it
        ({"model": ModelInfo(provider="openai", name="x", base_url=LOCAL)}, "user"),
        ({"channel": "system"}, "developer"),  # the setting, for a model the filter cannot see
    ],
)
async def test_a_model_given_by_name_follows_the_session_options(
    options: dict[str, Any], role: str
) -> None:
    reminders = ReminderInputFilter(**options)
    reminders.session.inject({"body": "Keep every change small."})
    model = Steps([[assistant_message("ok")]])
    agent = Agent(name="coder", instructions=SYSTEM, model="gpt-5")
    await _run(agent, reminders, "go", model=model)
    assert _envelopes(model.inputs[0]) == [(1, role)]


async def test_another_model_gets_user_items_even_on_the_system_setting() -> None:
    reminders = ReminderInputFilter(channel="system", model=OPENAI)
    reminders.session.inject({"body": "Keep every change small."})
    model = Steps([[assistant_message("ok")]])
    await _run(Agent(name="coder", instructions=SYSTEM, model=model), reminders, "go")
    assert _envelopes(model.inputs[0]) == [(1, "user")]
    assert reminders.session.model == OPENAI  # what the session was told stays


def _session_downgrades(session: Session) -> list[dict[str, Any]]:
    return [
        dict(r.payload)
        for r in session.event_log.records
        if r.kind == "transcript.channel_downgraded"
    ]


async def test_a_handoff_to_another_model_resends_developer_items_as_user_items() -> None:
    """An OpenAI agent (named, told it is OpenAI's) works with two envelopes, then the
    conversation goes on with an agent on a model of another kind: from its first request
    the two items go as user items, at their positions, and each downgrade is recorded once."""
    reminders = ReminderInputFilter(model=OPENAI)
    session = reminders.session

    @function_tool
    def bash(command: str) -> str:
        """Run a shell command."""
        session.inject({"body": "Read the output twice.", "ttl_turns": 9})
        return "ok"

    openai_steps = Steps([[function_call("bash", {"command": "ls"}, call_id="c1")]])
    openai_steps.outputs.append([assistant_message("Listed.")])
    first = Agent(name="openai", instructions=SYSTEM, tools=[bash], model="gpt-5")
    session.inject({"body": "Keep every change small.", "ttl_turns": 9})
    result = await _run(first, reminders, "go", model=openai_steps)
    assert _envelopes(openai_steps.inputs[-1]) == [(1, "developer"), (4, "developer")]
    other = Steps([[assistant_message("one")], [assistant_message("two")]])
    second = Agent(name="other", instructions=SYSTEM, model=other)
    history = result.to_input_list()
    await _run(second, reminders, [*history, {"role": "user", "content": "more"}])
    again = other.inputs[-1]
    await _run(second, reminders, [*history, {"role": "user", "content": "more"}])
    for items in other.inputs:
        assert _envelopes(items) == [(1, "user"), (4, "user")]
    assert other.inputs[1] == again  # the same bytes, request after request
    # what the filter remembers keeps its channel; only these requests show the downgrade
    assert [item["role"] for _, item in reminders.remembered()] == ["developer", "developer"]
    events = _session_downgrades(session)
    assert [(e["message_index"], e["reason"]) for e in events] == [
        (1, NOT_SUPPORTED),
        (4, NOT_SUPPORTED),
    ]
    # back on the OpenAI agent: every envelope a developer item again, the new one too
    back = Steps([[assistant_message("Back.")]])
    session.inject({"body": "Back on OpenAI."})
    await _run(first, reminders, [*history, {"role": "user", "content": "again"}], model=back)
    assert _envelopes(back.inputs[0]) == [(1, "developer"), (4, "developer"), (7, "developer")]
