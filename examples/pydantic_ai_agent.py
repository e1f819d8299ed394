"""A pydantic-ai agent with reminders: ``ReminderCapability`` on an existing ``Agent``.

The agent fixes a failing test. Its model is pydantic-ai's own ``FunctionModel`` playing a
script (offline, deterministic), or — with ``--server`` — pydantic-ai's ``OpenAIChatModel``
with the real ``openai`` client, talking to the library's local recording server. On the way:

- call 1 runs ``pytest -q``, which fails: ``grounded_review`` reaches call 2;
- call 2 reports 92 % of the context window used: ``token_pressure`` reaches call 3;
- a tool pushes a host note into the session's queue: it reaches the next call;
- a second run continues the first with ``message_history=`` and sends every envelope again.

At the end the script checks what the model received: every request begins with the previous
one, and each reminder is in every later request exactly once.

Run: python examples/pydantic_ai_agent.py [--server]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelResponse,
    TextPart,
    ToolCallPart,
)
from pydantic_ai.models import Model
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from agent_reminders.integrations.pydantic_ai import ReminderCapability

WINDOW = 20_000
NOTE = "Host note: the user is watching the build."
# (tool calls, prompt tokens the model reports); an empty list of calls is the answer
SCRIPT: list[tuple[list[tuple[str, dict[str, Any]]], int]] = [
    ([("bash", {"command": "pytest -q"})], 1_200),
    ([("bash", {"command": "sed -i s/==/is/ parser.py"}), ("notify", {})], 18_390),
    ([("bash", {"command": "pytest -q tests/test_parser.py"})], 2_100),
    ([], 2_300),  # the first run's answer
    ([("bash", {"command": "ruff check ."})], 2_500),
    ([], 2_600),  # the second run's answer
]
ANSWERS = {3: "The parser test passes now.", 5: "The linter is clean."}


def bash(command: str) -> str:
    """Run a shell command (a stand-in: the first test run fails, the rest pass)."""
    if command == "pytest -q":
        return "FAILED tests/test_parser.py::test_empty - assert None == []\n1 failed, 4 passed"
    return "All checks passed!" if command.startswith("ruff") else "5 passed in 0.09s"


def script_model(sent: list[list[ModelMessage]]) -> FunctionModel:
    def play(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        sent.append(list(messages))
        calls, prompt = SCRIPT[len(sent) - 1]
        parts: list[Any] = [
            ToolCallPart(name, args, tool_call_id=f"call_{len(sent)}_{n}")
            for n, (name, args) in enumerate(calls)
        ] or [TextPart(ANSWERS[len(sent) - 1])]
        return ModelResponse(parts=parts, usage=RequestUsage(input_tokens=prompt, output_tokens=40))

    return FunctionModel(play, model_name="scripted")


async def run(model: Model) -> ReminderCapability:
    reminders = ReminderCapability(context_window=WINDOW)
    agent = Agent(model, system_prompt="You are a careful coding agent.", capabilities=[reminders])
    agent.tool_plain(bash)

    @agent.tool_plain
    def notify() -> str:
        """Tell the host that an edit was made."""
        reminders.session.queue.remind({"body": NOTE, "ttl_turns": 2}, mode="finish_step")
        return "noted"

    first = await agent.run("Fix the failing parser test.")
    print(f"run 1: {first.output!r} ({len(first.all_messages())} messages in its history)")
    second = await agent.run("Now run the linter.", message_history=first.all_messages())
    print(f"run 2: {second.output!r} ({len(second.all_messages())} messages in its history)")
    return reminders


def check(requests: list[str], labels: dict[str, str]) -> None:
    """Each request (a JSON array's text without its closing bracket) begins with the
    previous one, byte for byte; each reminder stays, once, from the call it first reached."""
    for n, (before, after) in enumerate(itertools.pairwise(requests), start=1):
        assert after.startswith(before), f"request {n + 1} does not begin with request {n}"
    for label, text in labels.items():
        counts = [r.count(text) for r in requests]
        first = next(i for i, c in enumerate(counts) if c)
        assert counts[first:] == [1] * (len(requests) - first), (label, counts)
        print(f"  {label:<16} first in call {first + 1}, then in every later call once")
    print(f"append-only holds over {len(requests)} model calls")


LABELS = {
    "grounded_review": "Grounded review",
    "token_pressure": "Context pressure WARNING",
    "host note": NOTE,
}


async def offline() -> None:
    sent: list[list[ModelMessage]] = []
    await run(script_model(sent))
    # each request as the model received it, without the send timestamps
    requests = [
        json.dumps(
            [
                {k: v for k, v in m.items() if k != "timestamp"}
                | {"parts": [{k: v for k, v in p.items() if k != "timestamp"} for p in m["parts"]]}
                for m in ModelMessagesTypeAdapter.dump_python(messages, mode="json")
            ],
            ensure_ascii=False,
        )
        for messages in sent
    ]
    check([r[: r.rindex("]")] for r in requests], LABELS)


def messages_text(body: str) -> str:
    """The exact text of a request body's "messages" array, without its closing bracket."""
    start = body.index("[", body.index('"messages":'))
    _, end = json.JSONDecoder().raw_decode(body, start)
    return body[start : end - 1]


async def through_server() -> None:
    import openai
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from agent_reminders.testing import RecordingModelServer

    replies = [
        {
            "tool_calls": [
                {"id": f"call_{i}_{n}", "name": name, "arguments": args}
                for n, (name, args) in enumerate(calls)
            ],
            "usage": {"input_tokens": prompt, "output_tokens": 40},
        }
        if calls
        else {
            "content": ANSWERS[i],
            "usage": {"input_tokens": prompt, "output_tokens": 40},
        }
        for i, (calls, prompt) in enumerate(SCRIPT)
    ]
    with RecordingModelServer(replies) as server:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k") as client:
            await run(OpenAIChatModel("gpt-test", provider=OpenAIProvider(openai_client=client)))
    bodies = [r.body.decode("utf-8") for r in server.requests]
    requests = [messages_text(b) for b in bodies]
    print(f"{len(bodies)} requests recorded by the server at {server.base_url}")
    check(requests, LABELS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", action="store_true", help="OpenAI client + recording server")
    asyncio.run(through_server() if parser.parse_args().server else offline())


if __name__ == "__main__":
    main()
