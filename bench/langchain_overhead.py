"""Per-model-call cost ``ReminderMiddleware`` adds to a LangChain ``create_agent`` agent.

One tool-using run (``--calls`` model calls: a tool call each, then an answer) on LangChain's
own ``GenericFakeChatModel`` (taught to take tools; it answers at once, so what is timed is the
agent around it), in three forms measured side by side in the same process, in alternating
rounds (the order rotates each round):

- **plain**: ``create_agent(model, tools)``, no middleware;
- **no-op middleware**: an ``AgentMiddleware`` overriding the same hooks with nothing in them
  (what LangGraph itself charges for the extra graph nodes and the tool wrapper);
- **ReminderMiddleware**: every canonical provider enabled, a context window, usage on every
  answer, a failing ``pytest`` output every fifth tool call (grounded review) and a host note
  pushed into the queue every tenth — so envelopes are committed and added along the way.

Per form: the median over rounds of (run time / model calls), as CPU time of the whole process
(steady on a shared machine; the tools run in LangGraph's thread pool, which it counts) and as
wall time. Reported: the per-call time of each, what the middleware adds per call (against
plain, and against the no-op middleware: the library's own work), and the ratio to plain.

Run: make bench  (or: python bench/langchain_overhead.py [--calls N] [--rounds R])
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import BaseTool, tool

from _results import RESULTS, machine, write_section
from agent_reminders.integrations.langchain import ReminderMiddleware

TITLE = "LangChain middleware overhead per model call (`bench/langchain_overhead.py`)"


class FastToolModel(GenericFakeChatModel):
    """``GenericFakeChatModel`` that accepts tools (the agent binds them on every call)."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> FastToolModel:
        return self


class NoOpMiddleware(AgentMiddleware):
    """The hooks ReminderMiddleware uses, doing nothing: LangGraph's own share of the cost."""

    def before_agent(self, state: Any, runtime: Any) -> None:
        return None

    def before_model(self, state: Any, runtime: Any) -> None:
        return None

    def after_model(self, state: Any, runtime: Any) -> None:
        return None

    def after_agent(self, state: Any, runtime: Any) -> None:
        return None

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        return handler(request)


def _answers(calls: int) -> Iterator[AIMessage]:
    for n in range(calls - 1):
        command = "pytest -q" if n % 5 == 0 else f"echo {n}"
        yield AIMessage(
            content="",
            tool_calls=[{"id": f"c{n}", "name": "run", "args": {"command": command}}],
            usage_metadata={
                "input_tokens": 1_000 + 50 * n,
                "output_tokens": 20,
                "total_tokens": 1_020 + 50 * n,
            },
        )
    usage = {"input_tokens": 9_000, "output_tokens": 5, "total_tokens": 9_005}
    yield AIMessage(content="done", usage_metadata=usage)


def _tools(on_run: Callable[[int], None]) -> list[BaseTool]:
    count = {"n": 0}

    @tool
    def run(command: str) -> str:
        """Run a shell command."""
        count["n"] += 1
        on_run(count["n"])
        if command.startswith("pytest"):
            return "FAILED tests/test_a.py::test_x - AssertionError\n1 failed, 9 passed"
        return f"ran {command}: ok"

    return [run]


def _nothing(n: int) -> None:
    return None


def _setup(form: str) -> tuple[list[AgentMiddleware], Callable[[int], None]]:
    """The middleware of ``form`` and what its tool does besides answering."""
    if form == "plain":
        return [], _nothing
    if form == "noop":
        return [NoOpMiddleware()], _nothing
    reminders = ReminderMiddleware(context_window=200_000)
    queue = reminders.session.queue

    def push(n: int) -> None:
        if n % 10 == 0:  # a host note now and then, drained before the next model call
            queue.remind({"body": f"Host note {n}: the user is watching.", "ttl_turns": 2})

    return [reminders], push


def _once(form: str, calls: int) -> tuple[float, float]:
    """One run in ``form``: (wall, CPU) seconds per model call."""
    model = FastToolModel(messages=_answers(calls))
    middleware, on_run = _setup(form)
    agent = create_agent(
        model, tools=_tools(on_run), system_prompt="You are a coding agent.", middleware=middleware
    )
    wall, cpu = time.perf_counter(), time.process_time()
    state = agent.invoke(
        {"messages": [HumanMessage("Fix the build.")]}, {"recursion_limit": 10 * calls}
    )
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert state["messages"][-1].content == "done"
    return wall / calls, cpu / calls


FORMS = ("plain", "noop", "reminders")
LABELS = {
    "plain": "`create_agent`, no middleware",
    "noop": "+ a no-op middleware with the same hooks",
    "reminders": "+ `ReminderMiddleware` (all canonical providers)",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=60, help="model calls per run")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--output", type=Path, default=RESULTS, help="where to write results")
    args = parser.parse_args()
    load = os.getloadavg()[0]  # other work on the machine shows in wall time, less in CPU
    for form in FORMS:  # warm-up: imports, first graph compile
        _once(form, min(args.calls, 6))
    wall: dict[str, list[float]] = {form: [] for form in FORMS}
    cpu: dict[str, list[float]] = {form: [] for form in FORMS}
    for r in range(args.rounds):
        for form in FORMS[r % 3 :] + FORMS[: r % 3]:
            w, c = _once(form, args.calls)
            wall[form].append(w)
            cpu[form].append(c)
    med = {form: statistics.median(values) * 1e6 for form, values in cpu.items()}
    med_wall = {form: statistics.median(values) * 1e6 for form, values in wall.items()}
    added = med["reminders"] - med["plain"]
    lines = [
        f"Machine: {machine()}. One {args.calls}-call tool run per form and round, "
        f"{args.rounds} alternating rounds in one process; medians of time / model calls, "
        "CPU time of the process (all threads: the tools run in LangGraph's pool) and wall "
        f"time (load average {load:.1f} at the start). The model is LangChain's "
        "`GenericFakeChatModel`, answering at once.",
        "",
        "| agent | per model call, CPU µs | wall µs |",
        "|---|---:|---:|",
        *(f"| {LABELS[form]} | {med[form]:.0f} | {med_wall[form]:.0f} |" for form in FORMS),
        "",
        f"`ReminderMiddleware` adds **{added:.0f} µs of CPU per model call** "
        f"({med['reminders'] / med['plain']:.2f}x the plain agent): "
        f"{med['noop'] - med['plain']:.0f} µs for LangGraph running the extra hook nodes and "
        f"the tool wrapper (the no-op middleware), {med['reminders'] - med['noop']:.0f} µs for "
        "the library's own work.",
    ]
    body = "\n".join(lines)
    print(body)
    write_section(TITLE, body, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
