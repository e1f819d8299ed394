"""The ACP and reminder methods on a store, in process (docs/protocol.md, "Methods")."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from agent_reminders import ModelError, ModelRequest, ModelResponse
from agent_reminders.bridge import Bridge, BridgeSettings, Connection, Dispatcher
from agent_reminders.storage import MemoryStore, SQLiteStore
from agent_reminders.testing import ScriptedModel


class Client:
    """A connection to a bridge that records what it is sent."""

    def __init__(self, bridge: Bridge, *, grant: str = "contract") -> None:
        self.dispatcher = Dispatcher(bridge.methods)
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.connection = Connection(notify=self._notify, grant=grant)  # type: ignore[arg-type]
        self._next = 0

    async def _notify(self, method: str, params: dict[str, Any]) -> None:
        self.sent.append((method, params))

    async def call(self, method: str, params: Any = None) -> Any:
        self._next += 1
        frame = {"jsonrpc": "2.0", "id": self._next, "method": method}
        if params is not None:
            frame["params"] = params
        reply = await self.dispatcher.handle_frame(json.dumps(frame), self.connection)
        assert reply is not None
        return json.loads(reply)

    async def ok(self, method: str, params: Any = None) -> Any:
        reply = await self.call(method, params)
        assert "result" in reply, reply
        return reply["result"]

    async def error(self, method: str, params: Any = None) -> dict[str, Any]:
        reply = await self.call(method, params)
        assert "error" in reply, reply
        return reply["error"]  # type: ignore[no-any-return]

    def updates(self) -> list[dict[str, Any]]:
        return [p["update"] for m, p in self.sent if m == "session/update"]


SCRIPT: list[dict[str, Any]] = [
    {"content": "", "tool_calls": [{"id": "c1", "name": "ls", "arguments": {"path": "."}}]},
    {"content": "All done."},
]


def _bridge(model: Any = None, store: Any = None, **settings: Any) -> Bridge:
    return Bridge(
        store or MemoryStore(),
        model=model or ScriptedModel(SCRIPT, loop=True),
        settings=BridgeSettings(**settings),
    )


@pytest.mark.anyio
async def test_initialize_advertises_the_extension(tmp_path: Path) -> None:
    result = await Client(_bridge()).ok(
        "initialize", {"protocolVersion": 1, "clientCapabilities": {}}
    )
    caps = result["agentCapabilities"]
    assert result["authMethods"] == []
    assert result["protocolVersion"] == 1
    assert caps["loadSession"] is False
    ours = caps["_meta"]["agent_reminders"]
    assert ours["modes"] == ["interrupt_immediate", "finish_step", "audit_only"]
    assert {"session/remind", "_session/remind", "_session/revoke_reminder"} <= set(ours["methods"])
    assert len(ours["methods"]) == 8
    async with SQLiteStore(tmp_path / "s.db") as store:
        durable = await Client(_bridge(store=store)).ok("initialize", {})
        assert durable["agentCapabilities"]["loadSession"] is True


@pytest.mark.anyio
async def test_remind_pending_revoke_round_trip() -> None:
    client = Client(_bridge())
    sid = (await client.ok("session/new", {"cwd": "/", "mcpServers": []}))["sessionId"]
    assert len(sid) == 32
    int(sid, 16)
    first = await client.ok("session/remind", {"body": "CI is red", "mode": "steer"})
    second = await client.ok(
        "_session/remind", {"sessionId": sid, "reminder": {"body": "b", "tags": ["ci"]}}
    )
    user = await client.ok("session/inject", {"sessionId": sid, "content": "hello"})
    listed = await client.ok("session/pending_injections", {"sessionId": sid})
    assert listed["pendingCount"] == 3
    rows = listed["injections"]
    assert [r["position"] for r in rows] == [0, 1, 2]
    assert rows[0]["reminderId"] == first["reminderId"]
    assert rows[0]["mode"] == "finish_step"
    assert rows[0]["authority"] == "contract"  # stdio's grant when omitted
    assert rows[1]["tags"] == ["ci"]
    assert rows[2] == {
        "kind": "user",
        "id": user["messageId"],
        "messageId": user["messageId"],
        "mode": "finish_step",
        "position": 2,
        "content": "hello",
    }
    rid = second["reminderId"]
    revoke = {"sessionId": sid, "reminderId": rid}
    assert await client.ok("session/revoke_reminder", revoke) == {
        "reminderId": rid,
        "status": "revoked",
    }
    again = await client.ok("session/revoke_reminder", revoke)
    assert again["status"] == "already_revoked"
    error = await client.error("session/revoke_reminder", {"sessionId": sid, "reminderId": "zz"})
    assert error["code"] == -32602
    assert error["data"]["reason"] == "unknown_reminder_id"
    error = await client.error("session/revoke_reminder", {"sessionId": sid, "reminderId": " "})
    assert error["code"] == -32602


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"content": "x"}, "RMD-002"),
        ({"body": "x", "colour": "red"}, "RMD-001"),
        ({"reminder": 3}, "RMD-002"),
        ({"body": "x", "_meta": 3}, "RMD-002"),
        ({"body": "x", "ttl_turns": 0}, "RMD-002"),
        ({"body": "x", "source": "user"}, "RMD-002"),
        ({"body": "x", "propagate": "everywhere"}, "RMD-005"),
        ({"body": "x", "authority": "contract"}, "RMD-009"),
        ({"body": "  "}, "RMD-002"),
        ({"body": "x" * 20000}, "RMD-002"),
        ({"body": "x", "mode": "whenever"}, "RMD-002"),
    ],
)
async def test_remind_checks(params: dict[str, Any], code: str) -> None:
    client = Client(_bridge(), grant="advisory")
    await client.ok("session/new", {})
    error = await client.error("session/remind", params)
    assert error["code"] == -32602
    assert error["data"]["code"] == code
    assert await client.ok("session/remind", {"body": "fine"})  # still usable


@pytest.mark.anyio
async def test_session_id_rules() -> None:
    client = Client(_bridge())
    assert (await client.error("session/remind", {"body": "x"}))["code"] == -32602
    await client.ok("session/new", {})
    await client.ok("session/new", {})
    assert (await client.error("session/remind", {"body": "x"}))["code"] == -32602
    error = await client.error("session/remind", {"sessionId": "nope", "body": "x"})
    assert error == {"code": -32004, "message": "Session not found"}
    assert (
        await client.error(
            "session/prompt", {"sessionId": "nope", "prompt": [{"type": "text", "text": "hi"}]}
        )
    )["code"] == -32004
    sid = (await client.ok("session/new", {}))["sessionId"]
    await client.ok("session/remind", {"sessionId": sid, "body": "x", "id": "mine"})
    error = await client.error("session/remind", {"sessionId": sid, "body": "y", "id": "mine"})
    assert error["data"]["code"] == "RMD-002"


def _prompt(sid: str, text: str = "go") -> dict[str, Any]:
    return {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}


# the request log's timestamp: ISO 8601 UTC with milliseconds
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
USAGE = {"input_tokens": 40, "output_tokens": 3, "cached_input_tokens": 32}


@pytest.mark.anyio
async def test_prompt_streams_updates_and_delivers_reminders(tmp_path: Path) -> None:
    model = ScriptedModel([SCRIPT[0], {**SCRIPT[1], "usage": USAGE}], loop=True)
    log = tmp_path / "requests.jsonl"
    began = datetime.now(UTC)
    client = Client(_bridge(model, request_log=log))
    await client.ok(
        "initialize",
        {"clientCapabilities": {"_meta": {"agent_reminders": {"reminder_emitted": True}}}},
    )
    sid = (await client.ok("session/new", {}))["sessionId"]
    rid = (await client.ok("session/remind", {"body": "CI is red on main"}))["reminderId"]
    assert await client.ok("session/prompt", _prompt(sid)) == {"stopReason": "end_turn"}
    kinds = [u["sessionUpdate"] for u in client.updates()]
    assert kinds == ["reminder_emitted", "tool_call", "tool_call_update", "agent_message_chunk"]
    emitted = client.updates()[0]["_meta"]["agent_reminders"]["reminder"]
    assert emitted["reminderId"] == rid
    assert emitted["source"] == "bridge"
    assert emitted["renderedRole"] == "user"
    assert client.updates()[2]["status"] == "failed"  # serve offers no tools
    assert "CI is red on main" in json.dumps(list(model.requests[0].messages))
    ended = datetime.now(UTC)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [line["turn"] for line in lines] == [0, 1]
    # written once the answer is in: the time the request was sent, the model, its usage
    # (the first answer carried none)
    assert list(lines[0]) == ["session_id", "turn", "timestamp", "model", "system", "messages"]
    assert list(lines[1]) == [
        "session_id", "turn", "timestamp", "model", "usage", "system", "messages",
    ]  # fmt: skip
    assert {line["model"] for line in lines} == {"scripted"}
    assert lines[1]["usage"] == {**USAGE, "cache_write_tokens": None, "cache_miss_reason": None}
    for line in lines:
        assert TIMESTAMP.match(line["timestamp"]), line["timestamp"]
        sent = datetime.fromisoformat(line["timestamp"].replace("Z", "+00:00"))
        assert began - timedelta(milliseconds=1) <= sent <= ended
    assert lines[0]["timestamp"] <= lines[1]["timestamp"]
    error = await client.error("session/revoke_reminder", {"sessionId": sid, "reminderId": rid})
    assert error["data"]["reason"] == "already_delivered"
    assert (await client.ok("session/pending_injections", {}))["pendingCount"] == 0


@pytest.mark.anyio
async def test_a_failed_model_call_is_logged_without_usage(tmp_path: Path) -> None:
    class Down:
        name = "anthropic:claude-test"

        async def __call__(self, request: ModelRequest) -> ModelResponse:
            raise ModelError("anthropic", "the provider is down")

    log = tmp_path / "requests.jsonl"
    client = Client(_bridge(Down(), request_log=log))
    sid = (await client.ok("session/new", {}))["sessionId"]
    error = await client.error("session/prompt", _prompt(sid, "hello"))
    assert error["data"]["code"] == "RMD-108"  # the model's error, after the line was written
    (line,) = [json.loads(text) for text in log.read_text().splitlines()]
    assert list(line) == ["session_id", "turn", "timestamp", "model", "system", "messages"]
    assert (line["session_id"], line["turn"], line["model"]) == (sid, 0, "anthropic:claude-test")
    assert line["messages"][-1] == {"role": "user", "content": "hello"}


@pytest.mark.anyio
async def test_emitted_as_an_extension_notification_by_default() -> None:
    client = Client(_bridge())
    sid = (await client.ok("session/new", {}))["sessionId"]
    await client.ok("session/remind", {"body": "note"})
    await client.ok("session/prompt", _prompt(sid))
    emitted = [p for m, p in client.sent if m == "_session/reminder_emitted"]
    assert emitted[0]["sessionId"] == sid
    assert emitted[0]["reminder"]["body"] == "note"
    assert "reminder_emitted" not in [u["sessionUpdate"] for u in client.updates()]


@pytest.mark.anyio
async def test_max_iterations_ends_with_max_turn_requests() -> None:
    looping = [{"tool_calls": [{"id": "c", "name": "ls", "arguments": {}}]}]
    client = Client(_bridge(ScriptedModel(looping, loop=True), max_iterations=3))
    sid = (await client.ok("session/new", {}))["sessionId"]
    assert await client.ok("session/prompt", _prompt(sid)) == {"stopReason": "max_turn_requests"}


SLOW: list[dict[str, Any]] = [
    {"tool_calls": [{"id": "c1", "name": "ls", "arguments": {}}], "delay_seconds": 0.3},
    {"content": "done"},
]


@pytest.mark.anyio
async def test_busy_cancel_and_a_remind_during_a_prompt() -> None:
    model = ScriptedModel(SLOW, loop=True)
    client = Client(_bridge(model))
    sid = (await client.ok("session/new", {}))["sessionId"]
    results: list[Any] = []

    async def run() -> None:
        results.append(await client.call("session/prompt", _prompt(sid)))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await anyio.sleep(0.1)
        busy = await client.error("session/prompt", _prompt(sid))
        assert busy["code"] == -32006
        assert busy["data"]["owner"]
        live = await client.ok("session/remind", {"body": "stop and read", "mode": "interrupt"})
        pending = await client.ok("session/pending_injections", {"sessionId": sid})
        assert pending["injections"][0]["reminderId"] == live["reminderId"]
    assert results[0]["result"] == {"stopReason": "end_turn"}
    # the interrupt reached the running prompt at its pre_tool_dispatch seam
    assert "stop and read" in json.dumps(list(model.requests[1].messages))
    assert "Tool call skipped" in json.dumps(list(model.requests[1].messages))
    error = await client.error(
        "session/revoke_reminder", {"sessionId": sid, "reminderId": live["reminderId"]}
    )
    assert error["data"]["reason"] == "already_delivered"

    async with anyio.create_task_group() as tg:
        results.clear()
        tg.start_soon(run)
        await anyio.sleep(0.1)
        none = await client.dispatcher.handle_frame(
            json.dumps(
                {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}}
            ),
            client.connection,
        )
        assert none is None
    assert results[0]["result"] == {"stopReason": "cancelled"}


@pytest.mark.anyio
async def test_load_replays_a_stored_conversation(tmp_path: Path) -> None:
    async with SQLiteStore(tmp_path / "s.db") as store:
        client = Client(_bridge(store=store))
        sid = (await client.ok("session/new", {}))["sessionId"]
        await client.ok("session/remind", {"body": "note"})
        await client.ok("session/prompt", _prompt(sid, "hello"))
    async with SQLiteStore(tmp_path / "s.db") as store:
        again = Client(_bridge(store=store))
        assert await again.ok("session/load", {"sessionId": sid, "cwd": "/"}) is None
        kinds = [u["sessionUpdate"] for u in again.updates()]
        assert kinds == [
            "user_message_chunk",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk",
        ]
        assert again.updates()[0]["content"]["text"] == "hello"
        # found without session/load too
        fresh = Client(_bridge(store=store))
        assert (await fresh.ok("session/pending_injections", {}))["pendingCount"] == 0


@pytest.mark.anyio
async def test_a_full_queue_answers_retry_after() -> None:
    client = Client(_bridge(max_pending=2))
    await client.ok("session/new", {})
    await client.ok("session/remind", {"body": "a"})
    await client.ok("session/inject", {"content": "b"})
    error = await client.error("session/remind", {"body": "c"})
    assert error["code"] == -32005
    assert error["data"]["retryAfterMs"] > 0


@pytest.mark.anyio
async def test_reminder_methods_keep_their_ids_and_modes_canonical() -> None:
    client = Client(_bridge())
    sid = (await client.ok("session/new", {}))["sessionId"]
    for alias, canonical in [
        ("interrupt", "interrupt_immediate"),
        ("after_current_operation", "finish_step"),
        ("wait_for_completion", "audit_only"),
        ("queue", "audit_only"),
    ]:
        await client.ok("session/remind", {"sessionId": sid, "body": alias, "mode": alias})
        rows = (await client.ok("session/pending_injections", {"sessionId": sid}))["injections"]
        assert rows[-1]["mode"] == canonical
    kept = await client.ok("session/remind", {"body": "x", "id": "caller-id"})
    assert kept == {"reminderId": "caller-id"}
