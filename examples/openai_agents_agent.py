"""An OpenAI Agents SDK agent with the library's reminders, offline.

The agent runs on the SDK's own ``OpenAIChatCompletionsModel`` with a real ``AsyncOpenAI``
client, pointed at the library's recording server (a local fake of the Chat Completions API
that answers from a script). Two runs share an SDK ``SQLiteSession``:

1. "Fix the failing test": the model runs ``pytest -q`` (it fails: ``grounded_review``
   reminds the agent of the failure in the next request), edits the file, runs the tests
   again and answers. The host queued a note before the run; it rides in the first request.
2. "Now update the changelog": the SDK reloads the history from its session, which never saw
   the reminders; the filter puts every one of them back where it was first sent.

Every request the server recorded begins with the previous one: the prompt cache stays warm.

Run: python examples/openai_agents_agent.py
"""

from __future__ import annotations

import asyncio
import itertools
import json

from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    RunConfig,
    Runner,
    SQLiteSession,
    function_tool,
)
from openai import AsyncOpenAI

from agent_reminders.integrations.openai_agents import ReminderInputFilter, ReminderRunHooks
from agent_reminders.testing import RecordingModelServer

TEST_RUNS = iter(
    [
        "F.\nFAILED tests/test_parser.py::test_empty - AssertionError: assert 1 == 0\n"
        "1 failed, 1 passed in 0.12s",
        "..\n2 passed in 0.10s",
    ]
)


@function_tool
def bash(command: str) -> str:
    """Run a shell command in the project."""
    return next(TEST_RUNS) if command == "pytest -q" else "ok"


@function_tool
def edit_file(path: str, old: str, new: str) -> str:
    """Replace text in a file."""
    return f"edited {path}"


def script() -> list[dict[str, object]]:
    def tool(n: int, name: str, **arguments: object) -> dict[str, object]:
        return {"tool_calls": [{"id": f"call_{n}", "name": name, "arguments": arguments}]}

    return [
        tool(1, "bash", command="pytest -q"),
        tool(2, "edit_file", path="parser.py", old="return 1", new="return 0"),
        tool(3, "bash", command="pytest -q"),
        {"content": "The empty-input test passes now."},
        tool(5, "edit_file", path="CHANGELOG.md", old="## Unreleased", new="## Unreleased\n- fix"),
        {"content": "Changelog updated."},
    ]


async def main() -> None:
    reminders = ReminderInputFilter(context_window=128_000)
    hooks = ReminderRunHooks(reminders)
    reminders.session.queue.remind({"body": "The user is watching the build: keep it short."})
    config = RunConfig(call_model_input_filter=reminders, tracing_disabled=True)
    history = SQLiteSession("conversation-1")  # the SDK's own session store (in memory)
    with RecordingModelServer(script()) as server:
        async with AsyncOpenAI(base_url=server.base_url, api_key="offline") as client:
            agent = Agent(
                name="coder",
                instructions="You are a careful coding agent.",
                tools=[bash, edit_file],
                model=OpenAIChatCompletionsModel("gpt-4.1-mini", openai_client=client),
            )
            first = await Runner.run(
                agent, "Fix the failing test.", run_config=config, hooks=hooks, session=history
            )
            second = await Runner.run(
                agent, "Now update the changelog.", run_config=config, hooks=hooks, session=history
            )
    requests = [r.json["messages"] for r in server.requests]
    print(f"answers: {first.final_output!r}, {second.final_output!r}")
    print(f"model requests: {len(requests)}")
    envelopes = [m["content"] for m in requests[-1] if "<context-directives" in str(m["content"])]
    print(f"reminder messages in the last request: {len(envelopes)}")
    for text in envelopes:
        for line in text.splitlines():
            if line and not line.startswith(("<", "These context directives")):
                print("  " + line[:100])
    print(f"remembered positions: {[p for p, _ in reminders.remembered()]}")
    stored = await history.get_items()
    print(
        f"SDK session items: {len(stored)} (none of them a reminder: "
        f"{not any('<context-directives' in json.dumps(i) for i in stored)})"
    )
    for before, after in itertools.pairwise(requests):
        assert after[: len(before)] == before, "a request changed what an earlier one sent"
    print("append-only holds across both runs")


if __name__ == "__main__":
    asyncio.run(main())
