"""The WebSocket transport: auth before the upgrade, scopes, one frame per message (04 §1, §5)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from agent_reminders import Session
from agent_reminders.bridge import Bridge, BridgeSettings
from agent_reminders.bridge.auth import Scope
from agent_reminders.bridge.ws import serve_ws
from agent_reminders.storage import MemoryStore

websockets = pytest.importorskip("websockets")
from websockets.asyncio.client import connect  # noqa: E402
from websockets.exceptions import InvalidStatus  # noqa: E402

pytestmark = pytest.mark.anyio
ADMIN = "admin-token-0123456789"
LIMITED = "limited-token-0123456789"
READER = "reader-token-0123456789"


@pytest.fixture
async def server() -> AsyncIterator[tuple[str, Bridge]]:
    tokens = (
        Scope(token=ADMIN, admin=True),
        Scope(token=LIMITED, sessions={"mine"}, prompt=True),
        Scope(token=READER),
    )
    settings = BridgeSettings(tokens=tokens, allowed_origins=("http://localhost:5173",))
    bridge = Bridge(MemoryStore(), settings=settings)
    for sid in ("mine", "other"):
        await bridge.store.create_session(Session(sid).state())
    ports: list[int] = []
    async with anyio.create_task_group() as tg:
        started = anyio.Event()

        def ready(port: int) -> None:
            ports.append(port)
            started.set()

        tg.start_soon(lambda: serve_ws(bridge, "127.0.0.1", 0, ready=ready))
        await started.wait()
        yield f"ws://127.0.0.1:{ports[0]}/", bridge
        tg.cancel_scope.cancel()


async def _call(ws: Any, method: str, params: Any, i: int = 1) -> Any:
    await ws.send(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}))
    while True:
        reply = json.loads(await ws.recv())
        if reply.get("id") == i:
            return reply


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_no_valid_token_no_socket(server: tuple[str, Bridge]) -> None:
    url, _ = server
    for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"}):
        with pytest.raises(InvalidStatus) as info:
            async with connect(url, additional_headers=headers):
                pass
        assert info.value.response.status_code == 401
    with pytest.raises(InvalidStatus) as info:
        async with connect(url + f"?token={ADMIN}"):
            pass
    assert info.value.response.status_code == 401
    with pytest.raises(InvalidStatus) as info:
        async with connect(url, additional_headers=_auth(ADMIN), origin="http://evil.example"):
            pass
    assert info.value.response.status_code == 403
    async with connect(
        url,
        additional_headers=_auth(ADMIN),
        origin="http://localhost:5173",
    ) as ws:
        assert "result" in await _call(ws, "initialize", {})


async def test_scopes(server: tuple[str, Bridge]) -> None:
    url, bridge = server
    async with connect(url, additional_headers=_auth(LIMITED)) as ws:
        await ws.send("{broken")
        assert json.loads(await ws.recv())["error"]["code"] == -32700
        # exactly one session is visible to this token: sessionId may be left out
        ok = await _call(ws, "session/remind", {"body": "x"})
        assert "reminderId" in ok["result"]
        hidden = await _call(ws, "session/remind", {"sessionId": "other", "body": "x"})
        assert hidden["error"]["code"] == -32004
        too_high = await _call(
            ws, "session/remind", {"sessionId": "mine", "body": "x", "authority": "contract"}
        )
        assert too_high["error"]["data"]["code"] == "RMD-009"
        new = await _call(ws, "session/new", {"cwd": "/", "mcpServers": []})
        sid = new["result"]["sessionId"]
        assert (await _call(ws, "session/pending_injections", {"sessionId": sid}))["result"]
    async with connect(url, additional_headers=_auth(READER)) as ws:
        denied = await _call(ws, "session/new", {})
        assert denied["error"]["code"] == -32003
        several = await _call(ws, "session/remind", {"body": "x"})
        assert several["error"]["code"] == -32602
    async with connect(url, additional_headers=_auth(ADMIN)) as ws:
        anywhere = await _call(
            ws, "session/remind", {"sessionId": "other", "body": "x", "authority": "contract"}
        )
        assert "result" in anywhere
    # scope refusals and authority caps are recorded as bridge.denied
    hidden_events = await bridge.store.read_events("other", kind_prefix="bridge.denied")
    assert [e.payload["reason"] for e in hidden_events] == ["out_of_scope"]
    capped = await bridge.store.read_events("mine", kind_prefix="bridge.denied")
    assert [e.payload["reason"] for e in capped] == ["authority_above_grant"]


async def test_an_idle_connection_is_closed() -> None:
    settings = BridgeSettings(tokens=(Scope(token=ADMIN, admin=True),), idle_timeout_seconds=0.3)
    bridge = Bridge(MemoryStore(), settings=settings)
    ports: list[int] = []
    started = anyio.Event()

    def ready(port: int) -> None:
        ports.append(port)
        started.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: serve_ws(bridge, "127.0.0.1", 0, ready=ready))
        await started.wait()
        async with connect(f"ws://127.0.0.1:{ports[0]}/", additional_headers=_auth(ADMIN)) as ws:
            assert "result" in await _call(ws, "initialize", {})
            with anyio.fail_after(5):
                await ws.wait_closed()
        tg.cancel_scope.cancel()
