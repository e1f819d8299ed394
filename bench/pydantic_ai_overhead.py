"""Per-model-call cost of ``ReminderCapability`` in a pydantic-ai agent (docs/pydantic-ai.md).

The same agent runs the same tool session with and without the capability, in the same
process, in alternating rounds (fresh agents each round, built outside the timed region). The
model is pydantic-ai's ``FunctionModel`` answering from prebuilt responses that carry their
usage, so the model itself costs next to nothing and the figures are the framework's and the
integration's. Two sessions: *quiet* (nothing to remind: the capability only runs its seams)
and *busy* (a failing test run every 4th call fires ``grounded_review``, a host pushes into the
session's queue every 5th call, token pressure climbs past 70 / 85 / 95 % of the window).
Reported: the median over rounds of the time per model call — CPU time of the process (all
threads: pydantic-ai runs sync tools in worker threads), steadier than wall time on a shared
machine, and wall time as context — the difference (what the integration adds per call) and
the ratio.

Run: python bench/pydantic_ai_overhead.py [--calls N] [--rounds R] [--output PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage, UsageLimits

from _results import RESULTS, machine, write_section
from agent_reminders.integrations.pydantic_ai import ReminderCapability

CALLS = 30
ROUNDS = 25
WINDOW = 200_000
FAILING = "FAILED tests/test_parser.py::test_empty - assert None == []\n1 failed, 4 passed"


def responses(calls: int, busy: bool) -> list[ModelResponse]:
    """``calls - 1`` tool calls, then the answer; busy prompts climb towards the window."""
    out = []
    for i in range(calls - 1):
        prompt = int(WINDOW * 0.97 * (i + 1) / calls) if busy else 1_000 + 50 * i
        out.append(
            ModelResponse(
                parts=[ToolCallPart("bash", {"command": f"step {i}"}, tool_call_id=f"c{i}")],
                usage=RequestUsage(input_tokens=prompt, output_tokens=20),
            )
        )
    out.append(ModelResponse(parts=[TextPart("done")], usage=RequestUsage(input_tokens=1_000)))
    return out


def build(calls: int, *, busy: bool, reminders: bool) -> Agent[None, str]:
    script = responses(calls, busy)
    count = {"n": 0}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        response = script[count["n"]]
        count["n"] += 1
        return response

    capability = ReminderCapability(context_window=WINDOW) if reminders else None
    agent = Agent(
        FunctionModel(model),
        system_prompt="You are a careful coding agent.",
        capabilities=[capability] if capability is not None else [],
    )

    @agent.tool_plain
    def bash(command: str) -> str:
        """Run a shell command."""
        step = int(command.split()[1])
        if busy and capability is not None and step % 5 == 2:
            capability.session.queue.remind(
                {"body": f"Host note {step}: the user is watching.", "ttl_turns": 2}
            )
        return FAILING if busy and step % 4 == 0 else f"ran {command}: ok"

    return agent


async def per_call(agent: Agent[None, str], calls: int) -> tuple[float, float]:
    """(CPU seconds, wall seconds) per model call of one run."""
    cpu, wall = time.process_time(), time.perf_counter()
    result = await agent.run("Fix the build.", usage_limits=UsageLimits(request_limit=calls + 1))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    assert result.output == "done"
    return cpu / calls, wall / calls


Medians = dict[str, float]


async def measure(calls: int, rounds: int, busy: bool) -> tuple[Medians, Medians]:
    """Median seconds per call (``cpu``, ``wall``) without and with the capability."""
    without: list[tuple[float, float]] = []
    with_: list[tuple[float, float]] = []
    for n in range(rounds + 1):
        plain = build(calls, busy=busy, reminders=False)
        capable = build(calls, busy=busy, reminders=True)
        pair = [(plain, without), (capable, with_)]
        if n % 2:
            pair.reverse()  # neither variant always runs first
        for agent, times in pair:
            seconds = await per_call(agent, calls)
            if n:  # round 0 warms both up
                times.append(seconds)

    def medians(times: list[tuple[float, float]]) -> Medians:
        return {
            "cpu": statistics.median(t[0] for t in times),
            "wall": statistics.median(t[1] for t in times),
        }

    return medians(without), medians(with_)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=CALLS)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    lines = [
        f"Machine: {machine()}. A {args.calls}-call tool session on `FunctionModel`, the same "
        f"agent with and without `ReminderCapability` in the same process, {args.rounds} "
        "alternating rounds (after one warm-up), medians of the time per model call.",
        "",
        "| session | clock | without µs/call | with µs/call | added µs/call | ratio |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for label, busy in (("quiet", False), ("busy", True)):
        without, with_ = asyncio.run(measure(args.calls, args.rounds, busy))
        for clock in ("cpu", "wall"):
            a, b = without[clock] * 1e6, with_[clock] * 1e6
            lines.append(f"| {label} | {clock} | {a:.0f} | {b:.0f} | {b - a:.0f} | {b / a:.2f}x |")
    lines += [
        "",
        "*quiet*: nothing to remind (the capability runs its seams and commits nothing); "
        "*busy*: `grounded_review` every 4th call, a host push every 5th, token pressure at "
        "70 / 85 / 95 % of the window. *cpu* is the process's CPU time (steadier on a shared "
        "machine), *wall* the elapsed time. Absolute times are context; the ratio is the "
        "headline.",
    ]
    body = "\n".join(lines)
    print(body)
    write_section("Framework overhead: pydantic-ai", body, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
