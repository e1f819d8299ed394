"""Per-iteration overhead of ``agent_loop``, beside pydantic-ai's per step, in one run.

Both run the same 200-step tool session on a model that answers at once (its own time is
excluded as far as possible: the model returns a prebuilt response): each step calls one tool,
the last step answers in text. ``agent_loop`` runs with every canonical provider enabled and
given what it reads (a fact store with facts, a workspace anchor — so ``workspace_anchor``
restates it after every model call, a short repeat each time —, a context window for token
pressure). We report two per-iteration figures over repeated runs: the run's total time over
its steps (it includes the session start: opening the fact store, the first recall) and the
steady-state iteration (the median time between two model calls); the first-50 vs last-50
ratio (flat in history means ~1.0); the steady-state iteration of the default session
(``Session(system=...)``: every canonical provider enabled, no workspace and no fact store, so
no reminder fires); and pydantic-ai's per-step time with its ``FunctionModel`` on the same
session.

Run: make bench  (or: python bench/loop_overhead.py [--steps N] [--repeats R])
``--json`` measures ``agent_loop`` alone and prints ``{"total_us", "iteration_us",
"default_iteration_us"}`` (the median and the minimum over the runs of each), for side-by-side
runs of two trees (``bench/beside.py``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import anyio

from _results import machine, write_section
from agent_reminders import ModelRequest, ModelResponse, Session, Tool, Usage, agent_loop
from agent_reminders.facts import FactStore

STEPS = 200


def _responses(steps: int) -> list[ModelResponse]:
    out = []
    for i in range(steps - 1):
        out.append(
            ModelResponse(
                message={
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {"id": f"c{i}", "name": "run", "arguments": {"command": f"echo {i}"}}
                    ],
                },
                usage=Usage(input_tokens=1000 + 10 * i, output_tokens=20),
            )
        )
    out.append(ModelResponse(message={"role": "assistant", "content": "done"}))
    return out


class _TimedModel:
    """Answers from a prebuilt list and records when each call starts (the loop's clock)."""

    name = "bench"

    def __init__(self, responses: list[ModelResponse]) -> None:
        self.responses = responses
        self.calls: list[float] = []
        self.next = 0

    async def __call__(self, request: ModelRequest) -> ModelResponse:
        self.calls.append(time.perf_counter())
        response = self.responses[self.next]
        self.next += 1
        return response


def _run_tool(command: str) -> str:
    return f"ran {command}: ok"


async def _ours(steps: int, facts: Path | None) -> tuple[float, list[float]]:
    """One run; ``facts=None`` is the default session (no workspace, no fact store)."""
    model = _TimedModel(_responses(steps))
    if facts is None:
        session = Session(system="You are a coding agent.")
    else:
        session = Session(
            system="You are a coding agent.",
            workspace={"primary": "/work/project", "roots": []},
            reminders={"config": {"project_facts": {"path": str(facts)}}},
        )
    tool = Tool("run", "Run a shell command.", {"type": "object"}, _run_tool)
    start = time.perf_counter()
    result = await agent_loop(
        model,
        "Fix the build.",
        session=session,
        tools=[tool],
        max_iterations=steps + 1,
        context_window=200_000,
    )
    total = time.perf_counter() - start
    assert result.status == "completed"
    assert result.iterations == steps
    gaps = [b - a for a, b in zip(model.calls, model.calls[1:], strict=False)]
    return total / steps, gaps


def _pydantic_ai(steps: int) -> float | None:
    try:
        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelResponse as PResponse
        from pydantic_ai.messages import TextPart, ToolCallPart
        from pydantic_ai.models.function import FunctionModel
        from pydantic_ai.usage import UsageLimits
    except ImportError:
        return None
    count = {"n": 0}

    def respond(messages: list[Any], info: Any) -> PResponse:
        count["n"] += 1
        if count["n"] < steps:
            return PResponse(parts=[ToolCallPart("run", {"command": f"echo {count['n']}"})])
        return PResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(respond), instructions="You are a coding agent.")

    @agent.tool_plain
    def run(command: str) -> str:
        return _run_tool(command)

    start = time.perf_counter()
    agent.run_sync("Fix the build.", usage_limits=UsageLimits(request_limit=steps + 1))
    return (time.perf_counter() - start) / steps


def _memory_per_request(iterations: int) -> float:
    async def go() -> Any:
        model = _TimedModel(_responses(iterations))
        tool = Tool("run", "Run a shell command.", {"type": "object"}, _run_tool)
        return await agent_loop(
            model, "Fix the build.", tools=[tool], max_iterations=iterations + 1
        )

    tracemalloc.start()
    result = anyio.run(go)
    assert len(result.requests) == iterations
    # What the request list alone keeps: the session (and its history) stays alive throughout.
    with_requests = tracemalloc.take_snapshot()
    result.requests.clear()
    without = tracemalloc.take_snapshot()
    tracemalloc.stop()
    freed = -sum(s.size_diff for s in without.compare_to(with_requests, "filename"))
    return freed / iterations


def _fact_store(path: Path) -> None:
    store = FactStore(path)
    for i in range(50):
        store.store_fact(
            {
                "kind": "decision",
                "claim": f"Module {i} uses the build cache.",
                "confidence": 0.9,
                "evidence": [{"kind": "file", "ref": f"m{i}.py"}],
            }
        )
    store.close()


def _runs(steps: int, repeats: int, facts: Path) -> dict[str, list[float]]:
    """``repeats`` runs of each setup, alternating; per run, in µs: total ÷ steps and the
    steady-state iteration with every provider given its inputs, the steady-state iteration of
    the default session; and the last-50 / first-50 ratio of the first setup."""
    out: dict[str, list[float]] = {
        "total": [],
        "iteration": [],
        "flat": [],
        "default_iteration": [],
    }
    for _ in range(repeats):
        per, gaps = anyio.run(_ours, steps, facts)
        out["total"].append(per * 1e6)
        out["iteration"].append(statistics.median(gaps) * 1e6)
        out["flat"].append(statistics.median(gaps[-50:]) / statistics.median(gaps[:50]))
        _, gaps = anyio.run(_ours, steps, None)
        out["default_iteration"].append(statistics.median(gaps) * 1e6)
    return out


def _json(steps: int, repeats: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        facts = Path(tmp) / "facts.db"
        _fact_store(facts)
        runs = _runs(steps, repeats, facts)
    figures = {
        f"{key}_us": [statistics.median(runs[key]), min(runs[key])]
        for key in ("total", "iteration", "default_iteration")
    }
    print(json.dumps(figures))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="agent_loop alone, as JSON")
    args = parser.parse_args()
    if args.json:
        return _json(args.steps, args.repeats)
    with tempfile.TemporaryDirectory() as tmp:
        facts = Path(tmp) / "facts.db"
        _fact_store(facts)
        runs = _runs(args.steps, args.repeats, facts)
        theirs: list[float] = []
        # pydantic-ai's runs come after ours: importing it (pydantic, its models, an HTTP
        # stack) grows the heap the collector walks, and a run after that pays for it
        for _ in range(args.repeats):
            other = _pydantic_ai(args.steps)
            if other is not None:
                theirs.append(other)
    memory = _memory_per_request(800)
    ours_us = statistics.median(runs["total"])
    steady_us = statistics.median(runs["iteration"])
    lines = [
        f"Machine: {machine()}. {args.steps}-step tool session, median of {args.repeats} runs, "
        "both measured in the same run (`agent_loop`'s runs first, then pydantic-ai's, whose "
        "import grows the heap every later run's collector walks). Total ÷ steps includes the "
        "session start (the fact store opened, the first recall); the steady-state iteration "
        "is the median time between two model calls.",
        "",
        "| loop | total ÷ steps µs | steady-state iteration µs | last-50 / first-50 |",
        "|---|---:|---:|---:|",
        f"| `agent_loop`, all canonical providers | {ours_us:.1f} | {steady_us:.1f} | "
        f"{statistics.median(runs['flat']):.2f} |",
        f"| `agent_loop`, the default session (no workspace, no fact store) | — | "
        f"{statistics.median(runs['default_iteration']):.1f} | — |",
    ]
    if theirs:
        theirs_us = statistics.median(theirs) * 1e6
        lines.append(f"| pydantic-ai `Agent` + `FunctionModel` | {theirs_us:.1f} | — | — |")
        lines += [
            "",
            f"pydantic-ai per step ÷ `agent_loop` per iteration: **{theirs_us / ours_us:.1f}x**.",
        ]
    lines += [
        "",
        f"Memory kept by `LoopResult.requests` for an 800-iteration run: "
        f"**{memory:.0f} bytes per request** (a read-only view over the append-only log).",
    ]
    body = "\n".join(lines)
    print(body)
    write_section("Agent loop overhead per iteration", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
