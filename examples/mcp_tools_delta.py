"""A tool pool that changes between turns, told to the model without rewriting the prompt.

An agent is connected to MCP-style tool servers that come and go: a `search` server joins after
the first prompt, and the `deploy` server goes away after the second. The session runs twice:

1. On a model that takes no tool changes mid-conversation (here a scripted model that names no
   model): the request's `tools` follow the pool, and an announced-delta generator tells the
   model what changed, in the append-only `<system-reminder>` envelope of the next request —
   the system prompt is never rewritten.
2. On a model that takes tool changes inside a mid-conversation system entry (Claude Opus 4.8,
   `channel="auto"`): the request's `tools` stay as first declared, byte for byte, and each
   change rides the next envelope as a `tool_addition` / `tool_removal` block, sent with the
   beta headers `anthropic_betas` names. Nothing before the change is prefilled again.

Run: .venv/bin/python examples/mcp_tools_delta.py
"""

from __future__ import annotations

import asyncio
import json

from agent_reminders import ModelInfo, Session, Tool, agent_loop, check_append_only
from agent_reminders.generators import GeneratorRegistry, create_announced_delta
from agent_reminders.integrations import anthropic_betas, to_anthropic
from agent_reminders.testing import ScriptedModel


def make_tool(name: str) -> Tool:
    return Tool(
        name=name,
        description=f"The {name} tool of an MCP server.",
        parameters={"type": "object", "properties": {"query": {"type": "string"}}},
        fn=lambda query="": f"{name}: ok ({query})",
    )


# The host's live tool pool; servers connect and disconnect between prompts.
pool: dict[str, Tool] = {}

tools_delta = create_announced_delta(
    id="mcp_tools",
    get_current=lambda: list(pool),
    get_baseline=lambda: list(pool),  # the tools the session started with need no news
    render_added=lambda names: "New tools are available: " + ", ".join(names) + ".",
    render_removed=lambda names: "These tools are no longer available: " + ", ".join(names) + ".",
)

SCRIPT = [
    {"tool_calls": [{"id": "a", "name": "read_file", "arguments": {"query": "notes"}}]},
    {"content": "Read the notes."},
    {"tool_calls": [{"id": "b", "name": "search", "arguments": {"query": "outage"}}]},
    {"content": "Found the outage report."},
    {"content": "Deploying is not possible any more; I will report instead."},
]
PROMPTS = ["Read my notes.", "Search for the outage report.", "Deploy the fix."]


def reset_pool() -> None:
    """The pool a session starts with."""
    pool.clear()
    pool.update({name: make_tool(name) for name in ("read_file", "deploy")})


async def run(model: ScriptedModel, session: Session) -> None:
    """The three prompts, the pool changing between them."""
    for index, prompt in enumerate(PROMPTS):
        if index == 1:
            pool["search"] = make_tool("search")  # a search server connected
        if index == 2:
            del pool["deploy"]  # the deploy server went away
        result = await agent_loop(model, prompt, session=session, tools=list(pool.values()))
        print(f"prompt {index + 1}: {prompt!r} -> {result.final_message['content']!r}")


async def announced_delta() -> None:
    """Part 1: the request's tools change; a generator tells the model."""
    reset_pool()
    registry = GeneratorRegistry()
    registry.register(tools_delta)
    session = Session(
        system="You are an agent with MCP tools.",
        generators=registry,
        envelope_style="system_reminder",
    )
    model = ScriptedModel(SCRIPT)
    await run(model, session)

    print("\nWhat the model was told, request by request:")
    for request in model.requests:
        last = request.messages[-1]
        text = str(last["content"])
        if text.startswith("<system-reminder>"):
            print(f"  request {request.turn}: {text!r}")
    breaks = check_append_only([list(r.messages) for r in model.requests])
    print(f"\nprefix breaks across {len(model.requests)} requests: {breaks}")
    assert breaks == []


async def tool_changes() -> None:
    """Part 2: a model that takes tool changes; the request's tools never change."""
    reset_pool()
    opus = ModelInfo(provider="anthropic", name="claude-opus-4-8")
    session = Session(system="You are an agent with MCP tools.", channel="auto")
    model = ScriptedModel(SCRIPT, model_info=opus)  # agent_loop tells the session the model
    print("\nThe same pool on claude-opus-4-8 (channel='auto': the system channel, tool changes):")
    await run(model, session)

    bodies = [to_anthropic(request, clear_at=True) for request in model.requests]
    print("\nWhat each request sends (Anthropic Messages API):")
    for request, body in zip(model.requests, bodies, strict=True):
        names = [tool["name"] for tool in body["tools"]]
        print(f"  request {request.turn}: tools {names}")
        last = body["messages"][-1]
        if last["role"] == "system":  # this request's envelope
            print(f"    envelope: {json.dumps(last)}")
            print(f"    anthropic-beta: {', '.join(anthropic_betas(body))}")
    unchanged = all(body["tools"] == bodies[0]["tools"] for body in bodies)
    print(f"\nthe request's tools unchanged across {len(bodies)} requests: {unchanged}")
    breaks = check_append_only([list(r.messages) for r in model.requests])
    print(f"prefix breaks across {len(model.requests)} requests: {breaks}")
    assert unchanged
    assert breaks == []


async def main() -> None:
    await announced_delta()
    await tool_changes()


if __name__ == "__main__":
    asyncio.run(main())
