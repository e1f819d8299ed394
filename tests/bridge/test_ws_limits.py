"""The WebSocket limits (docs/protocol.md, "Limits") on real connections: the frame limit, a client
that never reads (bounded send queue, bounded memory, bounded close), and many clients at once."""

from __future__ import annotations

import json
import logging
import socket
import tracemalloc
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from agent_reminders import Session
from agent_reminders.bridge import Bridge, BridgeSettings
from agent_reminders.bridge.auth import Scope
from agent_reminders.bridge.ws import serving_ws
from agent_reminders.queue import InjectionQueue
from agent_reminders.storage import MemoryStore, SQLiteStore, Store

websockets = pytest.importorskip("websockets")
from websockets.asyncio.client import connect  # noqa: E402
from websockets.client import ClientProtocol  # noqa: E402
from websockets.exceptions import ConnectionClosed  # noqa: E402
from websockets.protocol import State  # noqa: E402
from websockets.uri import parse_uri  # noqa: E402

pytestmark = pytest.mark.anyio
TOKEN = "limits-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
MiB = 1024 * 1024


def _settings(**values: Any) -> BridgeSettings:
    return BridgeSettings(tokens=(Scope(token=TOKEN, admin=True),), **values)


def _request(i: int, method: str, params: Any) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params})


async def _call(ws: Any, i: int, method: str, params: Any) -> Any:
    await ws.send(_request(i, method, params))
    reply = json.loads(await ws.recv())
    assert reply["id"] == i
    return reply


# -- (a) the frame limit -------------------------------------------------------------------


async def test_a_frame_over_max_frame_bytes_closes_the_socket_with_1009() -> None:
    limit = 64 * 1024
    bridge = Bridge(MemoryStore(), settings=_settings(max_frame_bytes=limit))
    await bridge.store.create_session(Session("s").state())
    async with serving_ws(bridge) as url, connect(url, additional_headers=AUTH) as ws:
        # a frame of exactly the limit is a frame like any other
        frame = _request(1, "session/pending_injections", {"sessionId": "s"})
        await ws.send(frame + " " * (limit - len(frame)))
        assert json.loads(await ws.recv())["result"]["pendingCount"] == 0
        await ws.send("x" * (limit + 1))
        with pytest.raises(ConnectionClosed) as closed:
            await ws.recv()
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1009


# -- (b) a client that never reads ---------------------------------------------------------


class NeverReader:
    """A WebSocket client on a plain socket (websockets' sans-I/O protocol) that completes
    the handshake, sends requests and then reads nothing, with a tiny receive buffer."""

    def __init__(self, url: str) -> None:
        self.protocol = ClientProtocol(parse_uri(url))
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.settimeout(30)
        port = parse_uri(url).port
        self.sock.connect(("127.0.0.1", port))
        request = self.protocol.connect()
        request.headers["Authorization"] = AUTH["Authorization"]
        self.protocol.send_request(request)
        self._flush()
        while self.protocol.state is not State.OPEN:
            self.protocol.receive_data(self.sock.recv(4096))
            self.protocol.events_received()

    def _flush(self) -> None:
        self.sock.sendall(b"".join(self.protocol.data_to_send()))

    def send(self, frames: list[str]) -> None:
        for frame in frames:
            self.protocol.send_text(frame.encode())
        self._flush()

    def read_to_end(self) -> int:
        """Read until the server ends the TCP connection; returns the bytes read."""
        total = 0
        try:
            while chunk := self.sock.recv(1 << 16):
                total += len(chunk)
        except ConnectionResetError:
            pass
        self.sock.close()
        return total


class Seen(logging.Handler):
    """Sets an event when the bridge logs a message containing ``text``."""

    def __init__(self, text: str) -> None:
        super().__init__(logging.INFO)
        self.text = text
        self.event = anyio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.event.set()


@asynccontextmanager
async def watching(text: str) -> AsyncIterator[Seen]:
    seen = Seen(text)
    logger = logging.getLogger("agent_reminders.bridge")
    logger.addHandler(seen)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        yield seen
    finally:
        logger.removeHandler(seen)
        logger.setLevel(level)


async def _big_session(store: Store, items: int = 50, size: int = 16_000) -> None:
    """A session whose ``pending_injections`` reply is about ``items * size`` bytes."""
    await store.create_session(Session("big").state())
    scratch = InjectionQueue()
    for i in range(items):
        scratch.remind({"body": f"{i} " + "x" * size})
    for item in scratch.state().items:
        await store.enqueue("big", item)
    await store.create_session(Session("small").state())


async def _well_behaved(url: str, until: Callable[[], bool], at_least: int) -> int:
    """Remind and read back on session ``small`` until ``until()`` (at least ``at_least``
    rounds); every answer must be right. Returns how many rounds ran."""
    done = 0
    async with connect(url, additional_headers=AUTH) as ws:
        before = await _call(ws, 0, "session/pending_injections", {"sessionId": "small"})
        while done < at_least or not until():
            reply = await _call(ws, 1, "session/remind", {"sessionId": "small", "body": "b"})
            rid = reply["result"]["reminderId"]
            rows = await _call(ws, 2, "session/pending_injections", {"sessionId": "small"})
            assert rows["result"]["pendingCount"] == before["result"]["pendingCount"] + done + 1
            assert rows["result"]["injections"][-1]["reminderId"] == rid
            done += 1
    return done


@pytest.mark.parametrize(
    "bound",
    [{"max_send_queue_bytes": 2 * MiB}, {"max_send_queue": 4, "max_send_queue_bytes": 256 * MiB}],
    ids=["bytes", "messages"],
)
async def test_a_client_that_never_reads_overflows_its_send_queue_and_is_disconnected(
    bound: dict[str, int],
) -> None:
    settings = _settings(rate_per_second=100_000, send_timeout_seconds=1, **bound)
    bridge = Bridge(MemoryStore(), settings=settings)
    await _big_session(bridge.store)
    requests = 300  # ~800 KB each: ~240 MB of replies asked for
    async with serving_ws(bridge) as url, watching("send queue is full") as overflow:
        tracemalloc.start()
        try:
            reader = await anyio.to_thread.run_sync(NeverReader, url)
            frames = [
                _request(i, "session/pending_injections", {"sessionId": "big"})
                for i in range(requests)
            ]
            await anyio.to_thread.run_sync(reader.send, frames)
            # another client is served meanwhile, until the server gives up on the first
            with anyio.fail_after(60):
                rounds = await _well_behaved(url, overflow.event.is_set, at_least=5)
                await overflow.event.wait()
                read = await anyio.to_thread.run_sync(reader.read_to_end)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        # the server ended the connection long before it sent what was asked for
        assert read < requests * 800_000 // 4
        assert peak < 24 * MiB  # the send queue's bound, a reply or two, buffers; not ~240 MB
        assert rounds >= 5
        # and it still serves everyone else
        assert await _well_behaved(url, lambda: True, at_least=1) == 1


async def test_a_stuck_reader_is_disconnected_after_the_send_timeout() -> None:
    # the queue is large enough for everything asked: only the send timeout can end this
    settings = _settings(
        rate_per_second=100_000, max_send_queue_bytes=256 * MiB, send_timeout_seconds=0.5
    )
    bridge = Bridge(MemoryStore(), settings=settings)
    await _big_session(bridge.store)
    async with serving_ws(bridge) as url, watching("stopped reading") as stuck:
        reader = await anyio.to_thread.run_sync(NeverReader, url)
        big = {"sessionId": "big"}
        frames = [_request(i, "session/pending_injections", big) for i in range(40)]
        await anyio.to_thread.run_sync(reader.send, frames)
        with anyio.fail_after(60):
            await stuck.event.wait()
            read = await anyio.to_thread.run_sync(reader.read_to_end)
        assert read < 40 * 800_000
        assert await _well_behaved(url, lambda: True, at_least=2) == 2


# -- (c) many clients at once --------------------------------------------------------------


async def test_fifty_clients_times_two_hundred_reminds_all_stored_exactly_once(
    tmp_path: Path,
) -> None:
    clients, each, sessions = 50, 200, [f"s{i}" for i in range(5)]
    path = tmp_path / "state.db"
    async with SQLiteStore(path) as store:
        for sid in sessions:
            await store.create_session(Session(sid).state())
        settings = _settings(rate_per_second=10_000, max_pending=clients * each)
        bridge = Bridge(store, settings=settings)
        acked: dict[str, list[str]] = {sid: [] for sid in sessions}

        async def client(n: int, url: str) -> None:
            sid = sessions[n % len(sessions)]
            # no permessage-deflate: compressing 20,000 small frames would be most of the time
            async with connect(url, additional_headers=AUTH, compression=None) as ws:
                for i in range(each):  # pipelined: every request first, then the replies
                    params = {"sessionId": sid, "body": f"client {n} reminder {i}"}
                    await ws.send(_request(i, "session/remind", params))
                for _ in range(each):
                    reply = json.loads(await ws.recv())
                    assert "result" in reply, reply
                    acked[sid].append(reply["result"]["reminderId"])

        async with serving_ws(bridge) as url:
            with anyio.fail_after(240):
                async with anyio.create_task_group() as tg:
                    for n in range(clients):
                        tg.start_soon(client, n, url)
    assert sum(len(ids) for ids in acked.values()) == clients * each
    # a fresh store on the file: every acknowledged id there once, nothing else
    async with SQLiteStore(path) as reopened:
        for sid in sessions:
            stored = [row["id"] for row in await reopened.pending(sid)]
            assert len(stored) == len(set(stored))
            assert sorted(stored) == sorted(acked[sid])
            bodies = {row["body"] for row in await reopened.pending(sid)}
            assert len(bodies) == len(stored)
