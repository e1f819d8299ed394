"""A tool pool that changes between turns, announced through an announced-delta generator.

An agent is connected to MCP-style tool servers that come and go: a `search` server joins after
the first prompt, and the `deploy` server goes away after the second. Instead of rewriting the
system prompt (which would invalidate the provider's prompt cache), a delta generator tells the
model what changed, in the append-only `<system-reminder>` envelope of the next request.

Run: .venv/bin/python examples/mcp_tools_delta.py
"""

from __future__ import annotations

import asyncio

from agent_reminders import Session, Tool, agent_loop, check_append_only
from agent_reminders.generators import GeneratorRegistry, create_announced_delta
from agent_reminders.testing import ScriptedModel


def make_tool(name: str) -> Tool:
    return Tool(
        name=name,
        description=f"The {name} tool of an MCP server.",
        parameters={"type": "object", "properties": {"query": {"type": "string"}}},
        fn=lambda query="": f"{name}: ok ({query})",
    )


# The host's live tool pool; servers connect and disconnect between prompts.
pool: dict[str, Tool] = {name: make_tool(name) for name in ("read_file", "deploy")}

tools_delta = create_announced_delta(
    id="mcp_tools",
    get_current=lambda: list(pool),
    get_baseline=lambda: list(pool),  # the tools the session started with need no news
    render_added=lambda names: "New tools are available: " + ", ".join(names) + ".",
    render_removed=lambda names: "These tools are no longer available: " + ", ".join(names) + ".",
)


async def main() -> None:
    registry = GeneratorRegistry()
    registry.register(tools_delta)
    session = Session(
        system="You are an agent with MCP tools.",
        generators=registry,
        envelope_style="system_reminder",
    )
    model = ScriptedModel(
        [
            {"tool_calls": [{"id": "a", "name": "read_file", "arguments": {"query": "notes"}}]},
            {"content": "Read the notes."},
            {"tool_calls": [{"id": "b", "name": "search", "arguments": {"query": "outage"}}]},
            {"content": "Found the outage report."},
            {"content": "Deploying is not possible any more; I will report instead."},
        ]
    )
    prompts = ["Read my notes.", "Search for the outage report.", "Deploy the fix."]
    for index, prompt in enumerate(prompts):
        if index == 1:
            pool["search"] = make_tool("search")  # a search server connected
        if index == 2:
            del pool["deploy"]  # the deploy server went away
        result = await agent_loop(model, prompt, session=session, tools=list(pool.values()))
        print(f"prompt {index + 1}: {prompt!r} -> {result.final_message['content']!r}")

    print("\nWhat the model was told, request by request:")
    for request in model.requests:
        last = request.messages[-1]
        text = str(last["content"])
        if text.startswith("<system-reminder>"):
            print(f"  request {request.turn}: {text!r}")
    breaks = check_append_only([list(r.messages) for r in model.requests])
    print(f"\nprefix breaks across {len(model.requests)} requests: {breaks}")
    assert breaks == []


if __name__ == "__main__":
    asyncio.run(main())
