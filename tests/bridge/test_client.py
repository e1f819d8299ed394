"""``BridgeClient`` (docs/bridge.md, "Client") against a real ``serve_ws`` in process and a real
``serve`` subprocess over stdio."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

import agent_reminders
from agent_reminders import BridgeConnectionError, ModelRequest, Session
from agent_reminders.bridge import (
    Bridge,
    BridgeClient,
    BridgeSettings,
    Notification,
    RpcError,
)
from agent_reminders.bridge.auth import Scope
from agent_reminders.bridge.ws import serve_ws
from agent_reminders.storage import MemoryStore
from agent_reminders.testing import FunctionModel

pytest.importorskip("websockets")

pytestmark = pytest.mark.anyio
ADMIN = "admin-token-0123456789"
ADVISORY = "advisory-token-0123456789"
ORIGIN = "http://localhost:5173"
SRC = str(Path(agent_reminders.__file__).resolve().parents[1])
MAIN = "from agent_reminders.cli import main; main()"


class Gate:
    """A model that answers only when the test opens it: a prompt that stays running for as
    long as the test needs, without sleeping."""

    def __init__(self) -> None:
        self.opened = anyio.Event()
        self.model = FunctionModel(self.answer)

    async def answer(self, request: ModelRequest) -> str:
        await self.opened.wait()
        return "Done."


@dataclass
class Server:
    url: str
    bridge: Bridge
    gate: Gate
    stop: anyio.CancelScope
    stopped: anyio.Event


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    gate = Gate()
    tokens = (
        Scope(token=ADMIN, admin=True),
        Scope(token=ADVISORY, prompt=True),
    )
    settings = BridgeSettings(tokens=tokens, allowed_origins=(ORIGIN,))
    bridge = Bridge(MemoryStore(), model=gate.model, settings=settings)
    ports: list[int] = []
    stop = anyio.CancelScope()  # the test may stop the server alone, before the fixture ends
    stopped = anyio.Event()

    async def run() -> None:
        with stop:
            await serve_ws(bridge, "127.0.0.1", 0, ready=ready)
        stopped.set()

    async with anyio.create_task_group() as tg:
        started = anyio.Event()

        def ready(port: int) -> None:
            ports.append(port)
            started.set()

        tg.start_soon(run)
        await started.wait()
        yield Server(f"ws://127.0.0.1:{ports[0]}/", bridge, gate, stop, stopped)
        tg.cancel_scope.cancel()


async def _first(client: BridgeClient, method: str) -> Notification:
    """The first notification of ``method`` (others before it are dropped)."""
    async for note in client.notifications():
        if note.method == method:
            return note
    raise AssertionError(f"the connection closed before a {method} notification")


async def test_the_reminder_methods_over_websocket(server: Server) -> None:
    async with BridgeClient.connect_ws(server.url, ADMIN) as client:
        init = await client.initialize()
        assert init["protocolVersion"] == 1
        assert "session/remind" in init["agentCapabilities"]["_meta"]["agent_reminders"]["methods"]
        sid = await client.new_session(cwd="/tmp")
        rid = await client.remind(
            "CI is red on main",
            session_id=sid,
            mode="steer",
            tags=["ci"],
            ttl_turns=3,
            dedupe_key="ci",
        )
        mid = await client.inject("look at the logs", session_id=sid, mode="queue")
        rows = await client.pending(sid)
        assert [(r["kind"], r["id"], r["mode"], r["position"]) for r in rows] == [
            ("reminder", rid, "finish_step", 0),
            ("user", mid, "audit_only", 1),
        ]
        assert rows[0]["tags"] == ["ci"]
        assert rows[0]["ttlTurns"] == 3
        assert rows[0]["dedupeKey"] == "ci"
        assert rows[0]["authority"] == "contract"  # the admin token's grant
        # the only session: sessionId may be left out
        assert await client.pending() == rows
        assert await client.revoke(rid, session_id=sid) == "revoked"
        assert await client.revoke(rid) == "already_revoked"
        assert [r["id"] for r in await client.pending(sid)] == [mid]


async def test_await_form_and_a_prompt_with_its_notifications(server: Server) -> None:
    client = await BridgeClient.connect_ws(server.url, ADMIN)
    try:
        caps = {"_meta": {"agent_reminders": {"reminder_emitted": True}}}
        await client.initialize(client_capabilities=caps)
        sid = await client.new_session()
        rid = await client.remind("Use the staging database", session_id=sid)
        server.gate.opened.set()
        assert await client.prompt(sid, "go") == "end_turn"
        # every notification of a prompt arrives before its reply
        notes = client.take_notifications()
        kinds = [n.params["update"]["sessionUpdate"] for n in notes]
        assert kinds == ["reminder_emitted", "agent_message_chunk"]
        emitted = notes[0].params["update"]["_meta"]["agent_reminders"]["reminder"]
        assert emitted["reminderId"] == rid
        assert emitted["body"] == "Use the staging database"
        assert client.take_notifications() == []
        with pytest.raises(RpcError) as info:
            await client.revoke(rid, session_id=sid)
        assert info.value.code == -32602
        assert info.value.data is not None
        assert info.value.data["reason"] == "already_delivered"
    finally:
        await client.aclose()
    assert client.closed


async def test_error_replies_are_rpc_errors_with_the_rmd_code(server: Server) -> None:
    async with BridgeClient.connect_ws(server.url, ADVISORY) as client:
        sid = await client.new_session()
        cases: list[tuple[dict[str, Any], str]] = [
            ({"authority": "contract"}, "RMD-009"),
            ({"propagate": "up"}, "RMD-005"),
            ({"ttl_turns": 0}, "RMD-002"),
            ({"colour": "red"}, "RMD-001"),
        ]
        for fields, code in cases:
            with pytest.raises(RpcError) as info:
                await client.remind("x", session_id=sid, **fields)
            assert info.value.code == -32602
            assert info.value.data is not None
            assert info.value.data["code"] == code
            assert code in str(info.value)
        with pytest.raises(RpcError) as info:
            await client.remind("x", session_id="nobody")
        assert (info.value.code, info.value.message) == (-32004, "Session not found")
        with pytest.raises(RpcError) as info:
            await client.request("session/frobnicate", {})
        assert info.value.code == -32601
        assert await client.pending(sid) == []  # nothing refused was queued
        await client.new_session()
        with pytest.raises(RpcError) as info:
            await client.pending()  # two sessions: which one?
        assert info.value.data is not None
        assert info.value.data["reason"] == "session_id_required"


async def test_concurrent_requests_are_matched_by_id(server: Server) -> None:
    async with BridgeClient.connect_ws(server.url, ADMIN) as client:
        sid = await client.new_session()
        await client.remind("first", session_id=sid)
        results: dict[str, Any] = {}

        async def run_prompt() -> None:
            results["prompt"] = await client.prompt(sid, "go")

        async def remind(i: int) -> None:
            results[f"r{i}"] = await client.remind(f"note {i}", session_id=sid, id=f"r{i}")

        async with anyio.create_task_group() as tg:
            tg.start_soon(run_prompt)
            # the prompt runs (its first directive is announced) and waits on the model
            await _first(client, "_session/reminder_emitted")
            async with anyio.create_task_group() as inner:
                for i in range(8):
                    inner.start_soon(remind, i)
            # replies came back while the prompt's request is still unanswered
            assert "prompt" not in results
            assert [r["id"] for r in await client.pending(sid)] == [f"r{i}" for i in range(8)]
            server.gate.opened.set()
        assert results == {"prompt": "end_turn", **{f"r{i}": f"r{i}" for i in range(8)}}


async def _interrupted_prompt(
    client: BridgeClient, interrupt: Callable[[], Awaitable[None]]
) -> tuple[str, list[BaseException]]:
    """A prompt on a fresh session of ``client``, and ``interrupt()`` once it is under way;
    returns the session and what the prompt raised."""
    sid = await client.new_session()
    await client.remind("keep going", session_id=sid)
    failures: list[BaseException] = []

    async def run_prompt() -> None:
        try:
            await client.prompt(sid, "go")
        except BridgeConnectionError as exc:
            failures.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run_prompt)
        await _first(client, "_session/reminder_emitted")  # the prompt is running
        await interrupt()
    return sid, failures


async def test_a_closed_connection_fails_waiting_requests(server: Server) -> None:
    client = await BridgeClient.connect_ws(server.url, ADMIN)

    async def server_goes_away() -> None:
        server.stop.cancel()  # mid-prompt

    sid, failures = await _interrupted_prompt(client, server_goes_away)
    assert len(failures) == 1
    assert "session/prompt" in str(failures[0])
    assert failures[0].code == "RMD-110"  # type: ignore[attr-defined]
    assert client.closed
    with pytest.raises(BridgeConnectionError):
        await client.pending(sid)
    # the iterator ends instead of waiting for ever
    assert [n async for n in client.notifications()] == []
    await client.aclose()


async def test_closing_the_client_fails_a_request_another_task_waits_for(server: Server) -> None:
    client = await BridgeClient.connect_ws(server.url, ADMIN)
    _, failures = await _interrupted_prompt(client, client.aclose)
    assert len(failures) == 1
    assert "closed" in str(failures[0])
    await client.aclose()  # twice is fine


async def test_refused_connections_are_one_clear_error(server: Server) -> None:
    for token in (None, "wrong-token-0123456789"):
        with pytest.raises(BridgeConnectionError) as info:
            await BridgeClient.connect_ws(server.url, token)
        assert info.value.status == 401
        assert "HTTP 401" in str(info.value)
    with pytest.raises(BridgeConnectionError) as info:
        await BridgeClient.connect_ws(server.url, ADMIN, origin="http://evil.example")
    assert info.value.status == 403
    async with BridgeClient.connect_ws(server.url, ADMIN, origin=ORIGIN) as client:
        assert (await client.initialize())["authMethods"] == []
    with pytest.raises(BridgeConnectionError) as info:
        await BridgeClient.connect_ws("http://127.0.0.1:1/", ADMIN)
    assert "not a WebSocket URL" in str(info.value)
    server.stop.cancel()
    await server.stopped.wait()  # the listener is closed
    with pytest.raises(BridgeConnectionError) as info:
        await BridgeClient.connect_ws(server.url, ADMIN)
    assert info.value.status is None


async def test_a_frame_over_the_limit_is_refused_before_sending(server: Server) -> None:
    async with BridgeClient.connect_ws(server.url, ADMIN, max_frame_bytes=4096) as client:
        sid = await client.new_session()
        with pytest.raises(RpcError) as info:
            await client.remind("x" * 5000, session_id=sid)
        assert info.value.code == -32600
        assert "not sent" in info.value.message
        # the connection is still usable
        assert await client.pending(sid) == []


async def test_in_process_client_runs_the_bridge_handlers() -> None:
    store = MemoryStore()
    await store.create_session(Session("s1").state())
    async with BridgeClient.in_process(Bridge(store), grant="advisory") as client:
        rid = await client.remind("from a script")
        assert [r["reminderId"] for r in await client.pending("s1")] == [rid]
        assert (await store.pending("s1"))[0]["authority"] == "advisory"
        with pytest.raises(RpcError) as info:
            await client.remind("too strong", authority="contract")
        assert info.value.data is not None
        assert info.value.data["code"] == "RMD-009"
    with pytest.raises(BridgeConnectionError):
        await client.pending("s1")


async def test_from_streams_against_serve_stdio_on_pipes() -> None:
    from anyio.streams.file import FileReadStream, FileWriteStream

    from agent_reminders.bridge.stdio import serve_stdio

    to_server_r, to_server_w = os.pipe()
    to_client_r, to_client_w = os.pipe()
    server_in = os.fdopen(to_server_r, "rb")
    server_out = os.fdopen(to_client_w, "wb")
    store = MemoryStore()
    await store.create_session(Session("s1").state())
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: serve_stdio(Bridge(store), stdin=server_in, stdout=server_out))
        receive = FileReadStream(os.fdopen(to_client_r, "rb", buffering=0))
        send = FileWriteStream(os.fdopen(to_server_w, "wb", buffering=0))
        async with BridgeClient.from_streams(receive, send) as client:
            rid = await client.remind("over a pipe", tags=["pipe"])
            assert [r["id"] for r in await client.pending()] == [rid]
        # closing the client closed the server's stdin: serve_stdio ends by itself
    server_in.close()
    server_out.close()
    assert [r["tags"] for r in await store.pending("s1")] == [["pipe"]]


class _FakeServer:
    """Byte streams of a server that asks the client something before it answers."""

    def __init__(self) -> None:
        self.inbox_in, self.inbox = anyio.create_memory_object_stream[bytes](100)
        self.sent: list[Any] = []

    async def send(self, data: bytes) -> None:
        self.sent.append(json.loads(data))
        request = self.sent[0]
        await self.inbox_in.send(b'{"jsonrpc":"2.0","id":"q1","method":"fs/read_text_file"}\n')
        await self.inbox_in.send(b'\n{"jsonrpc":"2.0","method":"note","params":[1]}\n')
        reply = {"jsonrpc": "2.0", "id": request["id"], "result": {"ok": True}}
        await self.inbox_in.send(json.dumps(reply).encode() + b"\n")

    async def receive(self, max_bytes: int = 65536) -> bytes:
        return await self.inbox.receive()

    async def aclose(self) -> None:
        self.inbox_in.close()
        self.inbox.close()


async def test_requests_from_the_server_get_method_not_found() -> None:
    fake = _FakeServer()
    async with BridgeClient.from_streams(fake, fake) as client:  # type: ignore[arg-type]
        assert await client.request("ping", {"x": 1}) == {"ok": True}
        assert client.take_notifications() == [Notification(method="note", params=[1])]
    assert fake.sent[0]["method"] == "ping"
    assert fake.sent[1] == {
        "jsonrpc": "2.0",
        "id": "q1",
        "error": {"code": -32601, "message": "Method not found: fs/read_text_file"},
    }


# -- a real ``serve`` subprocess over stdio ------------------------------------------------------


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}


async def test_a_serve_subprocess_over_stdio(tmp_path: Path) -> None:
    script = tmp_path / "script.jsonl"
    script.write_text(json.dumps({"content": "Checked."}) + "\n")
    log = tmp_path / "requests.jsonl"
    argv = [sys.executable, "-c", MAIN, "serve", "--store", f"sqlite:{tmp_path / 'state.db'}"]
    argv += ["--model", f"scripted:{script}", "--request-log", str(log)]
    async with BridgeClient.connect_stdio(argv, env=_env(), cwd=tmp_path) as client:
        assert client.process is not None
        init = await client.initialize()
        assert init["agentCapabilities"]["loadSession"] is True
        sid = await client.new_session(cwd=tmp_path)
        rid = await client.remind("CI is red on main", session_id=sid, tags=["ci"])
        kept = await client.remind("not this one", session_id=sid)
        assert await client.revoke(kept, session_id=sid) == "revoked"
        assert [r["id"] for r in await client.pending(sid)] == [rid]
        assert await client.prompt(sid, "go") == "end_turn"
        notes = client.take_notifications()
        assert [n.method for n in notes] == ["_session/reminder_emitted", "session/update"]
        assert notes[0].params["reminder"]["reminderId"] == rid
        with pytest.raises(RpcError) as info:
            await client.revoke(rid, session_id=sid)
        assert info.value.data is not None
        assert info.value.data["reason"] == "already_delivered"
        process = client.process
    assert process.returncode == 0
    requests = [json.loads(line) for line in log.read_text().splitlines()]
    assert "CI is red on main" in json.dumps(requests[0]["messages"])
    assert "not this one" not in json.dumps(requests[0]["messages"])


async def test_a_killed_serve_process_fails_the_waiting_prompt(tmp_path: Path) -> None:
    script = tmp_path / "script.jsonl"
    script.write_text(json.dumps({"content": "late", "delay_seconds": 60}) + "\n")
    argv = [sys.executable, "-c", MAIN, "serve", "--store", "memory:"]
    argv += ["--model", f"scripted:{script}"]
    client = await BridgeClient.connect_stdio(argv, env=_env(), cwd=tmp_path)

    async def kill() -> None:
        assert client.process is not None
        client.process.kill()

    sid, failures = await _interrupted_prompt(client, kill)
    assert len(failures) == 1
    assert "closed its output" in str(failures[0])
    with pytest.raises(BridgeConnectionError):
        await client.pending(sid)
    await client.aclose()


async def test_a_program_that_cannot_start(tmp_path: Path) -> None:
    with pytest.raises(BridgeConnectionError) as info:
        await BridgeClient.connect_stdio([str(tmp_path / "no-such-program")])
    assert "cannot start" in str(info.value)
    with pytest.raises(ValueError, match="command must name"):
        BridgeClient.connect_stdio([])
