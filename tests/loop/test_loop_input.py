"""Issue 8, the loop and its plug-ins: async providers, Usage records, bad modify actions,
arguments a given session would ignore.

The rules: docs/session-loop.md, "The loop, step by step" (agent_loop with session=),
"Providers", "Canonical providers" (token_pressure) and "Hooks".
"""

from __future__ import annotations

import functools
from typing import Any

import pytest

from agent_reminders import (
    ConfigError,
    EventLog,
    Hooks,
    ProviderContext,
    ReminderError,
    ReminderOptions,
    Session,
    Tool,
    ToolCall,
    Usage,
    agent_loop,
)
from agent_reminders.providers import ProviderRegistry
from agent_reminders.providers import token_pressure as tp
from agent_reminders.testing import ScriptedModel


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# ---------------------------------------------------------------- async evaluate is refused


async def _async_evaluate(ctx: ProviderContext) -> None:
    return None


class _AsyncCallable:
    async def __call__(self, ctx: ProviderContext) -> None:
        return None


async def _async_gen(ctx: ProviderContext) -> Any:
    yield None


@pytest.mark.parametrize(
    "evaluate",
    [_async_evaluate, functools.partial(_async_evaluate), _AsyncCallable(), _async_gen],
    ids=["async-def", "partial", "async-call", "async-gen"],
)
def test_registering_a_coroutine_function_is_a_config_error(evaluate: Any) -> None:
    for registry in (ProviderRegistry(), Session().providers):
        with pytest.raises(ConfigError) as info:
            registry.register("remote", subscribes_to="post_step", evaluate=evaluate)
        assert "'remote'" in info.value.message
        assert "evaluate must be a plain function" in info.value.message
        assert registry.user_providers() == []


def test_plain_callables_are_still_accepted() -> None:
    class Plain:
        def __call__(self, ctx: ProviderContext) -> None:
            return None

    registry = ProviderRegistry()
    registry.register("a", subscribes_to="post_step", evaluate=lambda ctx: None)
    registry.register("b", subscribes_to="post_step", evaluate=Plain())
    registry.register(
        "c", subscribes_to="post_step", evaluate=functools.partial(lambda x, c: None, 1)
    )
    assert [p.id for p in registry.user_providers()] == ["a", "b", "c"]


# ---------------------------------------------------------------- token_pressure reads Usage


def _ctx(payload: dict[str, Any]) -> ProviderContext:
    return ProviderContext(
        event="on_budget_threshold",
        session_id="s",
        payload=payload,
        options=ReminderOptions(),
        config=None,
    )


def test_token_pressure_reads_a_usage_record_like_a_dict() -> None:
    record = Usage(input_tokens=900, output_tokens=60)
    assert tp.live_tokens({"usage": record}) == 960
    from_record = tp.evaluate(_ctx({"usage": record, "context_window": 1000}))
    from_dict = tp.evaluate(_ctx({"usage": record.to_dict(), "context_window": 1000}))
    assert from_record is not None
    assert from_record == from_dict
    assert "CRITICAL" in from_record["body"]


def test_a_session_fire_with_a_usage_record_warns() -> None:
    s = Session()
    result = s.fire(
        "on_budget_threshold",
        {"usage": Usage(input_tokens=750, output_tokens=0), "context_window": 1000},
    )
    assert [r["provider"] for r in result.reports] == ["token_pressure"]


# ---------------------------------------------------------------- modify needs a mapping


def _shell_tool(seen: list[Any]) -> Tool:
    def shell(**arguments: Any) -> str:
        seen.append(arguments)
        return "ok"

    return Tool(name="shell", description="run", parameters={}, fn=shell)


@pytest.mark.parametrize("bad", [["rm", "-rf", "/"], "ls", None, 3])
@pytest.mark.anyio
async def test_a_modify_action_without_a_mapping_is_rmd_001_naming_the_hook(bad: Any) -> None:
    hooks = Hooks()
    action: dict[str, Any] = {"action": "modify", "arguments": bad}
    if bad is None:
        del action["arguments"]
    hooks.tool("sh*", pre=lambda call: action)
    seen: list[Any] = []
    model = ScriptedModel(
        [{"tool_calls": [{"id": "c1", "name": "shell", "arguments": {"command": "ls"}}]}]
    )
    with pytest.raises(ReminderError) as info:
        await agent_loop(model, "go", tools=[_shell_tool(seen)], hooks=hooks)
    assert info.value.code == "RMD-001"
    assert "'sh*'" in info.value.message  # the hook
    assert repr(bad) in info.value.message  # the bad value
    assert "modify" in info.value.message
    assert seen == []  # the tool never ran with arguments the hook meant to replace


def test_the_bad_modify_is_refused_when_the_effect_is_collected() -> None:
    hooks = Hooks()
    hooks.tool("shell", pre=lambda call: {"action": "modify", "arguments": ("x",)})
    with pytest.raises(ReminderError, match="arguments"):
        hooks.run_pre(ToolCall(id="c", name="shell", arguments={}), Session())


@pytest.mark.anyio
async def test_a_good_modify_still_replaces_the_arguments() -> None:
    hooks = Hooks()
    hooks.tool("shell", pre=lambda call: {"action": "modify", "arguments": {"command": "pwd"}})
    seen: list[Any] = []
    model = ScriptedModel(
        [
            {"tool_calls": [{"id": "c1", "name": "shell", "arguments": {"command": "ls"}}]},
            {"content": "done"},
        ]
    )
    await agent_loop(model, "go", tools=[_shell_tool(seen)], hooks=hooks)
    assert seen == [{"command": "pwd"}]


# ---------------------------------------------------------------- session= with its own settings


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("system", "Other system."),
        ("system", " "),
        ("reminders", False),
        ("reminders", {"providers": ["-token_pressure"]}),
        ("event_log", EventLog()),
    ],
)
@pytest.mark.anyio
async def test_agent_loop_refuses_arguments_a_given_session_would_ignore(
    name: str, value: Any
) -> None:
    session = Session(system="Mine.")
    model = ScriptedModel([{"content": "done"}])
    with pytest.raises(ConfigError) as info:
        await agent_loop(model, "task", session=session, **{name: value})
    assert isinstance(info.value, ValueError)
    assert name in info.value.message
    assert model.requests == []
    assert session.transcript.messages == ()


@pytest.mark.anyio
async def test_agent_loop_accepts_the_defaults_next_to_a_session() -> None:
    session = Session(system="Mine.")
    model = ScriptedModel([{"content": "done"}])
    result = await agent_loop(
        model, "task", session=session, system="", reminders=True, event_log=None
    )
    assert result.requests[0].system == "Mine."
