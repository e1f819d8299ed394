"""Issue 9: each backend, through its real SDK client against the recording server, runs a
10-turn tool-using session with reminders; the requests stay append-only byte for byte, carry
the cache fields, and the usage figures come back into the loop."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from wire_checks import (
    actual_breakpoints,
    assert_raw_append_only,
    compact,
    expected_breakpoints,
    raw_value,
)

from agent_reminders import Hooks, LoopResult, Session, Tool, agent_loop
from agent_reminders.models import AnthropicModel, OpenAIChatModel, OpenAIResponsesModel
from agent_reminders.testing import RecordingModelServer, strip_cache_control

pytestmark = pytest.mark.anyio

QUEUE_BODY = "Host note: the user is watching the build."
HOOK_BODY = "You read a generated file; edit its source instead."
INJECT_BODY = "Reminder: run the tests before answering."
WIDE = 11  # parallel calls in one turn: pushes the previous end > 20 blocks back (rule 3)


def script() -> list[dict[str, Any]]:
    """Ten turns: nine with tool calls (one of them WIDE calls at once), then an answer."""
    turns: list[dict[str, Any]] = []
    for n in range(9):
        if n == 6:
            calls = [
                {"id": f"call_{n}_{k}", "name": "read_file", "arguments": {"path": f"f{k}.py"}}
                for k in range(WIDE)
            ]
            turns.append({"content": "Reading them all.", "tool_calls": calls})
        elif n % 2:
            call = {"id": f"call_{n}", "name": "run", "arguments": {"command": f"step {n}"}}
            turns.append({"tool_calls": [call]})
        else:
            call = {"id": f"call_{n}", "name": "read_file", "arguments": {"path": f"gen_{n}.py"}}
            turns.append({"content": f"Looking at file {n}.", "tool_calls": [call]})
    turns.append({"content": "All done: naïve ✓."})
    return turns


@dataclass
class Run:
    session: Session
    result: LoopResult
    usages: list[dict[str, Any] | None]


async def run_session(model: Any, *, context_window: int = 1_000_000) -> Run:
    session = Session(system="You are a careful coding agent. Café ☕ rules apply.")
    usages: list[dict[str, Any] | None] = []

    def probe(ctx: Any) -> None:
        usages.append(ctx.payload["usage"])

    session.providers.register("usage_probe", subscribes_to="on_budget_threshold", evaluate=probe)
    calls = {"n": 0}

    def read_file(path: str) -> str:
        return f"# {path}\nprint('héllo')\n"

    def run(command: str) -> str:
        calls["n"] += 1
        if calls["n"] == 1:
            session.queue.remind({"body": QUEUE_BODY, "ttl_turns": 2})
        if calls["n"] == 2:
            session.inject({"body": INJECT_BODY, "ttl_turns": 1})
        return f"$ {command}\nok"

    hooks = Hooks()
    hooks.tool(
        "read_file",
        post=lambda call, result: (
            {"body": HOOK_BODY, "dedupe_key": "generated", "ttl_turns": 1}
            if call.arguments.get("path") == "gen_2.py"
            else None
        ),
    )
    tools = [
        Tool("read_file", "Read a file.", {"type": "object", "properties": {}}, read_file),
        Tool("run", "Run a command.", {"type": "object", "properties": {}}, run),
    ]
    result = await agent_loop(
        model,
        "Fix the failing build.",
        session=session,
        tools=tools,
        hooks=hooks,
        context_window=context_window,
        max_iterations=20,
    )
    assert result.status == "completed"
    assert result.iterations == 10
    return Run(session, result, usages)


Factory = Callable[[RecordingModelServer], Any]

BACKENDS: dict[str, tuple[Factory, str]] = {
    "chat": (
        lambda s: OpenAIChatModel("gpt-test", base_url=s.base_url, api_key="k", max_retries=0),
        "chat",
    ),
    "responses": (
        lambda s: OpenAIResponsesModel("gpt-test", base_url=s.base_url, api_key="k", max_retries=0),
        "responses",
    ),
    "anthropic": (
        lambda s: AnthropicModel("claude-test", base_url=s.url, api_key="k", max_retries=0),
        "messages",
    ),
    "anthropic-nocache": (
        lambda s: AnthropicModel(
            "claude-test", base_url=s.url, api_key="k", max_retries=0, cache=False
        ),
        "messages",
    ),
}
LIST_KEY = {"chat": "messages", "responses": "input", "messages": "messages"}


def texts_in(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


@pytest.mark.parametrize("backend", sorted(BACKENDS))
async def test_ten_turn_session_is_append_only_with_cache_fields(backend: str) -> None:
    factory, api = BACKENDS[backend]
    with RecordingModelServer(script(), loop=True) as server:
        async with factory(server) as model:
            first = await run_session(model)
            second = await run_session(model)
    records = [r for r in server.requests if r.api == api]
    assert len(records) == len(server.requests) == 20
    assert all(status == 200 for status, _ in server.replies)
    for run, batch in ((first, records[:10]), (second, records[10:])):
        bodies = [r.json for r in batch]
        key = LIST_KEY[api]
        items = [b[key] for b in bodies]
        if backend == "anthropic":
            # markers move by design: judge the messages without them, item by item
            stripped = [[compact(m) for m in strip_cache_control(x)] for x in items]
            for before, after in itertools.pairwise(stripped):
                assert after[: len(before)] == before
            for body in bodies:
                assert actual_breakpoints(body) == expected_breakpoints(body)
                assert len(actual_breakpoints(body)) <= 4
            assert any(len(actual_breakpoints(b)) == 3 for b in bodies)  # rule 3 was reached
        else:
            assert_raw_append_only([raw_value(r.body, key) for r in batch])
            assert "cache_control" not in b"".join(r.body for r in batch).decode()
        # the byte-stable parts: system prompt and tools
        for part in ("system", "instructions", "tools"):
            if part in bodies[0]:
                assert len({raw_value(r.body, part) for r in batch}) == 1, part
        # every reminder reached the model, and stays in every later request
        joined = [texts_in(x) for x in items]
        for body_text in (QUEUE_BODY, HOOK_BODY, INJECT_BODY):
            seen = [body_text in j for j in joined]
            assert any(seen), body_text
            assert seen == sorted(seen), body_text  # once in, never out
        # the usage the loop saw is what the server reported
        assert len(run.usages) == 10
        assert all(u is not None for u in run.usages)
        opening = run.usages[0]["cached_input_tokens"]  # type: ignore[index]
        if backend == "anthropic" and run is second:
            assert opening > 0  # Anthropic has no key: the system and tools prefix is shared
        else:
            assert opening == 0
        if backend != "anthropic-nocache":
            later = [u["cached_input_tokens"] for u in run.usages[1:]]  # type: ignore[index]
            assert all(c > 0 for c in later), later
    replies = [body["usage"] for _, body in server.replies]
    seen_usage = first.usages + second.usages
    for wire, usage in zip(replies, seen_usage, strict=True):
        assert usage is not None
        if api == "chat":
            assert usage["input_tokens"] == wire["prompt_tokens"]
            assert usage["cached_input_tokens"] == wire["prompt_tokens_details"]["cached_tokens"]
        elif api == "responses":
            assert usage["input_tokens"] == wire["input_tokens"]
            assert usage["cached_input_tokens"] == wire["input_tokens_details"]["cached_tokens"]
        else:
            whole = (
                wire["input_tokens"]
                + wire["cache_read_input_tokens"]
                + wire["cache_creation_input_tokens"]
            )
            assert usage["input_tokens"] == whole
            assert usage["cached_input_tokens"] == wire["cache_read_input_tokens"]
        assert usage["output_tokens"] == wire.get("completion_tokens", wire.get("output_tokens"))
    # the cache key: one session one key, two sessions two keys (OpenAI only)
    keys = [r.json.get("prompt_cache_key") for r in records]
    if api == "messages":
        assert keys == [None] * 20
    else:
        assert keys[:10] == [first.session.id] * 10
        assert keys[10:] == [second.session.id] * 10
        assert first.session.id != second.session.id


async def test_chat_request_fields_and_tool_results() -> None:
    with RecordingModelServer(script()) as server:
        async with OpenAIChatModel(
            "gpt-test", base_url=server.base_url, api_key="sk-test", temperature=0
        ) as model:
            run = await run_session(model)
    bodies = server.bodies("chat")
    first = bodies[0]
    assert first["model"] == "gpt-test"
    assert first["temperature"] == 0
    assert first.get("stream") in (None, False)
    assert first["messages"][0] == {
        "role": "system",
        "content": "You are a careful coding agent. Café ☕ rules apply.",
    }
    assert {t["function"]["name"] for t in first["tools"]} == {"read_file", "run"}
    assert server.requests[0].headers["authorization"] == "Bearer sk-test"
    last = bodies[-1]["messages"]
    results = [m for m in last if m["role"] == "tool"]
    assert len(results) == 8 + WIDE
    assert results[0]["content"].startswith("# gen_0.py")
    assert run.result.final_message is not None
    assert run.result.final_message["content"] == "All done: naïve ✓."
    calls = [m for m in run.session.transcript.messages if m.get("tool_calls")]
    assert calls[0]["tool_calls"][0] == {
        "id": "call_0",
        "name": "read_file",
        "arguments": {"path": "gen_0.py"},
    }


async def test_responses_requests_are_stateless() -> None:
    with RecordingModelServer(script()) as server:
        async with OpenAIResponsesModel("gpt-test", base_url=server.base_url, api_key="k") as m:
            run = await run_session(m)
    for body in server.bodies("responses"):
        assert body["store"] is False
        assert "previous_response_id" not in body
        assert body["instructions"].startswith("You are a careful coding agent.")
    last = server.bodies("responses")[-1]["input"]
    assert sum(1 for item in last if item["type"] == "function_call") == 8 + WIDE
    assert last[0] == {"type": "message", "role": "user", "content": "Fix the failing build."}
    assert run.result.final_message is not None
    assert run.result.final_message["content"] == "All done: naïve ✓."


async def test_anthropic_request_fields() -> None:
    with RecordingModelServer(script()) as server:
        async with AnthropicModel(
            "claude-test", base_url=server.url, api_key="ak", max_tokens=512
        ) as model:
            await run_session(model)
    record = server.requests[0]
    assert record.path == "/v1/messages"
    # older SDKs send x-api-key, newer ones a bearer token
    assert "ak" in (record.headers.get("x-api-key"), record.headers.get("authorization", "")[7:])
    assert "anthropic-version" in record.headers
    assert record.json["max_tokens"] == 512
    assert record.json["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert {t["name"] for t in record.json["tools"]} == {"read_file", "run"}


async def test_token_pressure_fires_from_the_reported_usage() -> None:
    usage = {"input_tokens": 900, "output_tokens": 10, "cached_input_tokens": 800}
    replies = [{**turn, "usage": usage} for turn in script()]
    with RecordingModelServer(replies) as server:
        async with AnthropicModel("claude-test", base_url=server.url, api_key="k") as model:
            run = await run_session(model, context_window=1000)
    assert run.usages[0] == {
        "input_tokens": 900,
        "output_tokens": 10,
        "cached_input_tokens": 800,
        "cache_write_tokens": 0,  # the server wrote nothing for a scripted usage
        "cache_miss_reason": None,
    }
    later = texts_in(server.bodies("messages")[1]["messages"])
    assert "91%" in later or "WARNING" in later
