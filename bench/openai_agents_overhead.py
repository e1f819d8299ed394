"""Per-model-call cost of the OpenAI Agents SDK integration, beside the same run without it.

The same tool session runs through the SDK's ``Runner.run`` twice per round, in one process:
once plain, once with ``RunConfig(call_model_input_filter=ReminderInputFilter(...))`` and
``hooks=ReminderRunHooks(...)``. The model is an SDK ``Model`` answering from prebuilt
responses (its own time is as small as it gets), every call but the last makes one tool call,
and reminders do fire: a failing ``pytest -q`` run every tenth call (``grounded_review``), a
host push every tenth call, token pressure near the end. Rounds alternate which run goes
first; we report medians over rounds of the per-call CPU time, of each round's difference
(what the integration adds per model call) and of its ratio, at two history lengths
(re-inserting the remembered envelopes and neutralizing tool outputs walk the whole input on
every call).

Run: make bench
(or: python bench/openai_agents_overhead.py [--calls 20 200] [--rounds R] [--output F])
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents import Agent, ModelResponse, RunConfig, RunHooks, Runner, Usage, function_tool
from agents.models.interface import Model
from agents.testing import assistant_message, function_call

from _results import RESULTS, machine, write_section
from agent_reminders.integrations.openai_agents import ReminderInputFilter, ReminderRunHooks

WINDOW = 200_000
# CPU time of this process: the machine is shared, and waiting for a core is nobody's cost.
_clock = time.process_time
FAILING = "FAILED tests/test_parser.py::test_empty - assert 1 == 0\n1 failed in 0.12s"


class _Prebuilt(Model):
    """Answers from a prebuilt list at once."""

    def __init__(self, responses: list[ModelResponse]) -> None:
        self.responses = responses
        self.next = 0

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        response = self.responses[self.next]
        self.next += 1
        return response

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


def _responses(calls: int) -> list[ModelResponse]:
    out = []
    for i in range(calls - 1):
        command = "pytest -q" if i % 10 == 0 else f"echo {i}"
        tokens = 1000 + (WINDOW * 9 // 10 if i == calls - 3 else 50 * i)
        out.append(
            ModelResponse(
                output=[function_call("bash", {"command": command}, call_id=f"c{i}")],
                usage=Usage(requests=1, input_tokens=tokens, output_tokens=20, total_tokens=tokens),
                response_id=None,
            )
        )
    out.append(ModelResponse(output=[assistant_message("done")], usage=Usage(), response_id=None))
    return out


class _TimedFilter(ReminderInputFilter):
    """The filter, keeping the time spent inside it and its hooks."""

    spent = 0.0

    async def __call__(self, data: Any) -> Any:
        start = _clock()
        try:
            return await super().__call__(data)
        finally:
            self.spent += _clock() - start


class _TimedHooks(ReminderRunHooks):
    filter: _TimedFilter

    async def on_llm_end(self, *args: Any) -> None:
        start = _clock()
        await super().on_llm_end(*args)
        self.filter.spent += _clock() - start

    async def on_tool_end(self, *args: Any) -> None:
        start = _clock()
        await super().on_tool_end(*args)
        self.filter.spent += _clock() - start


async def _run(calls: int, integrated: bool) -> tuple[float, float]:
    """(seconds per model call, of which inside the filter and hooks)."""
    reminders = _TimedFilter(context_window=WINDOW) if integrated else None
    count = {"n": 0}

    @function_tool
    def bash(command: str) -> str:
        """Run a shell command."""
        count["n"] += 1
        if reminders is not None and count["n"] % 10 == 5:
            reminders.session.queue.remind({"body": f"Host note {count['n']}.", "ttl_turns": 2})
        return FAILING if command == "pytest -q" else f"ran {command}: ok"

    model = _Prebuilt(_responses(calls))
    agent = Agent(name="coder", instructions="You are a coding agent.", tools=[bash], model=model)
    config = RunConfig(tracing_disabled=True)
    hooks: RunHooks[Any] = RunHooks()
    if reminders is not None:
        config = RunConfig(call_model_input_filter=reminders, tracing_disabled=True)
        hooks = _TimedHooks(reminders)
    start = _clock()
    result = await Runner.run(
        agent, "Fix the build.", run_config=config, hooks=hooks, max_turns=calls + 1
    )
    elapsed = _clock() - start
    assert result.final_output == "done"
    assert model.next == calls
    if reminders is None:
        return elapsed / calls, 0.0
    assert len(reminders.remembered()) >= calls // 10
    return elapsed / calls, reminders.spent / calls


@dataclass
class _Figures:
    """Medians over rounds, per model call, in seconds (``added`` and ``ratio`` are the
    medians of each round's pair, the two runs of one round being next to each other)."""

    plain: float
    ours: float
    added: float
    ratio: float
    inside: float


async def _measure(calls: int, rounds: int) -> _Figures:
    pairs: list[tuple[float, float]] = []
    inside: list[float] = []
    await _run(calls, True)  # warm up imports and caches
    await _run(calls, False)
    for r in range(rounds):
        got: dict[bool, float] = {}
        for integrated in (r % 2 == 0, r % 2 == 1):
            got[integrated], spent = await _run(calls, integrated)
            if integrated:
                inside.append(spent)
        pairs.append((got[False], got[True]))
    median = statistics.median
    return _Figures(
        plain=median(p for p, _ in pairs),
        ours=median(o for _, o in pairs),
        added=median(o - p for p, o in pairs),
        ratio=median(o / p for p, o in pairs),
        inside=median(inside),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, nargs="+", default=[20, 200])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    lines = [
        f"Machine: {machine()}. openai-agents `Runner.run` on a prebuilt-response `Model`, one "
        f"tool call per model call; CPU time, median of {args.rounds} alternating rounds (added "
        "and ratio: median of each round's pair), both runs in the same process.",
        "",
        "| model calls | SDK alone µs/call | with the integration µs/call | added µs/call "
        "| ratio | inside the filter and hooks µs/call |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for calls in args.calls:
        f = asyncio.run(_measure(calls, args.rounds))
        lines.append(
            f"| {calls} | {f.plain * 1e6:.0f} | {f.ours * 1e6:.0f} | {f.added * 1e6:.0f} | "
            f"{f.ratio:.2f}x | {f.inside * 1e6:.0f} |"
        )
    lines += [
        "",
        "Added minus inside is the SDK's own extra work on the longer input (the re-inserted "
        "envelopes are items it copies, deduplicates and converts on every call).",
    ]
    body = "\n".join(lines)
    print(body)
    write_section("OpenAI Agents SDK integration overhead per model call", body, args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
