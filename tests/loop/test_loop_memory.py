"""``LoopResult.requests`` keeps every request without copying the history into each.

The rules: ``requests`` are kept for audits (docs/session-loop.md, "The loop, step by step")
and ARCHITECTURE convention 4 (a value
handed out is a read-only view; measure what it costs): ``request.messages`` is an O(1) view,
so a long run's requests cost O(1) memory each, not O(history).
"""

from __future__ import annotations

import gc
import tracemalloc

import anyio

from agent_reminders import Session, Tool, agent_loop
from agent_reminders.testing import ScriptedModel

ITERATIONS = 800
PER_REQUEST_LIMIT = 2048  # bytes; one copied history of this run would be ~10 KiB on average


def _script(n: int) -> list[dict[str, object]]:
    calls: list[dict[str, object]] = [
        {"tool_calls": [{"id": f"c{i}", "name": "echo", "arguments": {"text": f"step {i}"}}]}
        for i in range(n - 1)
    ]
    return [*calls, {"content": "done"}]


def test_kept_requests_cost_constant_memory_each() -> None:
    model = ScriptedModel(_script(ITERATIONS))
    tools = [Tool(name="echo", description="Echo.", parameters={}, fn=lambda text: text)]
    session = Session(system="You are a test agent.")
    gc.collect()
    tracemalloc.start()
    try:

        async def run() -> object:
            return await agent_loop(
                model, "go", session=session, tools=tools, max_iterations=ITERATIONS
            )

        result = anyio.run(run)
        gc.collect()
        with_requests = tracemalloc.get_traced_memory()[0]
        requests = result.requests  # type: ignore[attr-defined]
        count = len(requests)
        # the history itself stays (the session holds it); drop only the requests
        requests.clear()
        model.requests.clear()
        gc.collect()
        without_requests = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert count == ITERATIONS
    per_request = (with_requests - without_requests) / count
    assert per_request < PER_REQUEST_LIMIT, f"{per_request:.0f} bytes per kept request"
    assert len(session.transcript) >= 2 * ITERATIONS  # the history really grew
    # a summary, not every request's history (asyncio.Runner reprs a main task's result)
    assert len(repr(result)) < 300
