"""LangChain v1 with reminders: ``ReminderMiddleware`` in a ``create_agent`` agent, offline.

``ChatOpenAI`` (langchain-openai) talks to a local recording server
(``agent_reminders.testing.RecordingModelServer``) that answers like the OpenAI Chat
Completions API from a script: the agent runs ``pytest -q``, which fails (a grounded-review
reminder), an editor pushes a note into the session's queue from another thread of the host,
and a large reported prompt sets off the token-pressure warning. Then a second run on the same
thread continues from the checkpointer's history. At the end the example prints what each
request carried and checks, on the recorded request bodies, that every request begins with the
previous one, byte for byte — reminders included.

To run it against a real model, drop the server and ``base_url`` and set ``OPENAI_API_KEY``.

Run: python examples/langchain_agent.py   (needs agent-reminders[langchain] and langchain-openai)
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver

from agent_reminders.integrations.langchain import ReminderMiddleware
from agent_reminders.testing import RecordingModelServer

CONFIG = {"configurable": {"thread_id": "fix-parser"}}


def call(n: int, name: str, input_tokens: int = 2_000, **arguments: str) -> dict[str, object]:
    """One scripted answer: a tool call, with the prompt size the server reports."""
    return {
        "tool_calls": [{"id": f"call_{n}", "name": name, "arguments": arguments}],
        "usage": {"input_tokens": input_tokens, "output_tokens": 40},
    }


SCRIPT = [
    call(1, "bash", command="pytest -q"),
    call(2, "read_file", path="src/parser.py"),
    call(3, "bash", input_tokens=110_000, command="pytest -q tests/test_parser.py"),
    {"content": "Fixed: the parser now accepts empty input."},
    call(5, "read_file", path="docs/parser.md"),
    {"content": "The docs mention the empty-input case now."},
]

middleware = ReminderMiddleware(context_window=128_000)


@tool
def bash(command: str) -> str:
    """Run a shell command."""
    if command == "pytest -q":
        return "FAILED tests/test_parser.py::test_empty - IndexError\n1 failed, 11 passed"
    return "12 passed in 0.31s"


@tool
def read_file(path: str) -> str:
    """Read a file."""
    if path == "src/parser.py":
        # an editor pushes a note while the agent reads: delivered before the next model call
        middleware.session_for("fix-parser").queue.remind(
            {"body": "The user is watching this build; keep the change small.", "ttl_turns": 2}
        )
    return f"# {path}\ndef parse(text): return text.split()[0]\n"


def reminders_in(body: dict[str, Any]) -> list[str]:
    """The start of each directive in a request body's user messages."""
    texts = [m["content"] for m in body["messages"] if m["role"] == "user"]
    found = [re.findall(r"<directive[^>]*>\n(.*)", t) for t in texts if isinstance(t, str)]
    return [line[:40] for lines in found for line in lines]


def main() -> None:
    with RecordingModelServer(SCRIPT) as server:
        model = ChatOpenAI(model="gpt-4.1-mini", base_url=server.base_url, api_key="offline")
        agent = create_agent(
            model,
            tools=[bash, read_file],
            system_prompt="You are a careful coding agent.",
            middleware=[middleware],
            checkpointer=InMemorySaver(),
        )
        first = agent.invoke({"messages": [("user", "Fix the failing parser test.")]}, CONFIG)
        print("run 1:", first["messages"][-1].content)
        second = agent.invoke({"messages": [("user", "Now update the docs.")]}, CONFIG)
        print("run 2:", second["messages"][-1].content)

    bodies = [r.json for r in server.requests]
    seen: set[str] = set()
    for n, body in enumerate(bodies):
        fresh = [r for r in reminders_in(body) if r not in seen]
        seen.update(fresh)
        print(f"request {n}: {len(body['messages'])} messages; new reminders: {fresh or '-'}")
    prefixes = all(
        after["messages"][: len(before["messages"])] == before["messages"]
        for before, after in itertools.pairwise(bodies)
    )
    same = len({json.dumps([b["messages"][0], b["tools"]]) for b in bodies}) == 1
    print(f"append-only holds on the wire: {prefixes}; system prompt and tools unchanged: {same}")
    history = agent.get_state(CONFIG).values["messages"]
    kept = sum(m.additional_kwargs.get("lc_source") == "agent_reminders" for m in history)
    print(f"the checkpointer keeps {len(history)} messages, {kept} of them envelopes")


if __name__ == "__main__":
    main()
