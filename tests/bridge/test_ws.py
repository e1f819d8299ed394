"""The WebSocket transport: auth before the upgrade, scopes, one frame per message
(docs/protocol.md, "WebSocket")."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from agent_reminders import InjectionQueue, Session
from agent_reminders.bridge import Bridge, BridgeSettings
from agent_reminders.bridge.auth import Scope
from agent_reminders.bridge.ws import serving_ws
from agent_reminders.storage import MemoryStore
from agent_reminders.testing import ScriptedModel

websockets = pytest.importorskip("websockets")
from websockets.asyncio.client import connect  # noqa: E402
from websockets.exceptions import InvalidStatus  # noqa: E402
from websockets.typing import Origin  # noqa: E402

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
    async with serving_ws(bridge) as url:
        yield url, bridge


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
        async with connect(
            url, additional_headers=_auth(ADMIN), origin=Origin("http://evil.example")
        ):
            pass
    assert info.value.response.status_code == 403
    async with connect(
        url,
        additional_headers=_auth(ADMIN),
        origin=Origin("http://localhost:5173"),
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
    async with serving_ws(bridge) as url, connect(url, additional_headers=_auth(ADMIN)) as ws:
        assert "result" in await _call(ws, "initialize", {})
        with anyio.fail_after(5):
            await ws.wait_closed()


def _frame(i: int | None, method: str, params: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if i is not None:
        message["id"] = i
    return message


def _emitted(message: Any) -> str | None:
    """The id a ``_session/reminder_emitted`` notification announces (else ``None``)."""
    if isinstance(message, dict) and message.get("method") == "_session/reminder_emitted":
        return str(message["params"]["reminder"]["reminderId"])
    return None


SLOW_TOOL = {"tool_calls": [{"id": "c1", "name": "ls", "arguments": {}}], "delay_seconds": 0.1}


@pytest.mark.parametrize("batched", [False, True], ids=["request", "batch"])
async def test_a_running_prompt_leaves_its_connection_reading(batched: bool) -> None:
    """A prompt (alone or in a batch) runs beside the connection's other frames: a remind
    sent meanwhile is answered at once and reaches the prompt, a cancel ends it."""
    settings = BridgeSettings(tokens=(Scope(token=ADMIN, admin=True),))
    bridge = Bridge(MemoryStore(), model=ScriptedModel([SLOW_TOOL], loop=True), settings=settings)
    async with serving_ws(bridge) as url, connect(url, additional_headers=_auth(ADMIN)) as ws:
        sid = (await _call(ws, "session/new", {"cwd": "/"}))["result"]["sessionId"]
        params = {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
        prompt = _frame(1, "session/prompt", params)
        await ws.send(json.dumps([prompt] if batched else prompt))
        with anyio.fail_after(30):
            seen: list[Any] = []
            while not any(m.get("method") == "session/update" for m in seen):
                seen.append(json.loads(await ws.recv()))  # the prompt is running
            remind = _frame(2, "session/remind", {"sessionId": sid, "body": "hi"})
            await ws.send(json.dumps(remind))
            rid = None
            # answered while the prompt runs, and delivered into it
            while rid is None or not any(_emitted(m) == rid for m in seen):
                seen.append(json.loads(await ws.recv()))
                if isinstance(seen[-1], dict) and seen[-1].get("id") == 2:
                    rid = seen[-1]["result"]["reminderId"]
            await ws.send(json.dumps(_frame(None, "session/cancel", {"sessionId": sid})))
            while True:
                message = json.loads(await ws.recv())
                seen.append(message)
                reply = message[0] if isinstance(message, list) else message
                if reply.get("id") == 1:
                    break
    assert isinstance(message, list) is batched
    assert reply["result"] == {"stopReason": "cancelled"}
    assert [_emitted(m) for m in seen if _emitted(m)] == [rid]


async def test_a_reply_too_big_to_write_at_once_keeps_its_place() -> None:
    """Small replies are written straight to the socket, big ones through the send queue:
    a small reply behind a big one still comes after it."""
    settings = BridgeSettings(tokens=(Scope(token=ADMIN, admin=True),))
    bridge = Bridge(MemoryStore(), settings=settings)
    await bridge.store.create_session(Session("big").state())
    scratch = InjectionQueue()
    for i in range(20):
        scratch.remind({"body": f"{i} " + "x" * 16_000})
    for item in scratch.state().items:
        await bridge.store.enqueue("big", item)
    frames = [
        _frame(1, "session/pending_injections", {"sessionId": "big"}),
        _frame(2, "session/remind", {"sessionId": "big", "body": "small"}),
        _frame(3, "session/pending_injections", {"sessionId": "big"}),
        _frame(4, "session/remind", {"sessionId": "big", "body": "smaller"}),
    ]
    async with serving_ws(bridge) as url, connect(url, additional_headers=_auth(ADMIN)) as ws:
        for frame in frames:  # all sent before any reply is read
            await ws.send(json.dumps(frame))
        with anyio.fail_after(30):
            replies = [json.loads(await ws.recv()) for _ in frames]
    assert [r["id"] for r in replies] == [1, 2, 3, 4]
    assert replies[0]["result"]["pendingCount"] == 20
    assert replies[2]["result"]["pendingCount"] == 21
    assert (
        replies[2]["result"]["injections"][-1]["reminderId"] == replies[1]["result"]["reminderId"]
    )


async def test_frames_keep_a_connection_from_going_idle() -> None:
    settings = BridgeSettings(tokens=(Scope(token=ADMIN, admin=True),), idle_timeout_seconds=0.4)
    bridge = Bridge(MemoryStore(), settings=settings)
    async with serving_ws(bridge) as url, connect(url, additional_headers=_auth(ADMIN)) as ws:
        for i in range(12):  # 1.2 s of traffic, three times the idle timeout
            assert "result" in await _call(ws, "initialize", {}, i=i)
            await anyio.sleep(0.1)
        with anyio.fail_after(5):  # silent now: closed
            await ws.wait_closed()


async def test_a_tokens_default_cadence_paces_what_it_pushes() -> None:
    """``[[tokens]] cadence = {...}``: a reminder pushed with the token takes the token's
    cadence for each field it leaves out; the session keeps it like any other."""
    paced = Scope(token="paced-token-0123456789", cadence={"cooldown_turns": 3, "max_fires": 2})
    bridge = Bridge(MemoryStore(), settings=BridgeSettings(tokens=(paced,)))
    await bridge.store.create_session(Session("s1").state())
    async with (
        serving_ws(bridge) as url,
        connect(url, additional_headers=_auth(paced.token)) as ws,
    ):
        await _call(ws, "session/remind", {"body": "CI is red.", "dedupe_key": "ci"}, 1)
        own = {"body": "Deploy frozen.", "dedupe_key": "deploy", "cooldown_turns": 1}
        await _call(ws, "session/remind", own, 2)
        pending = (await _call(ws, "session/pending_injections", {"sessionId": "s1"}, 3))["result"][
            "injections"
        ]
    assert [(r.get("cooldownTurns"), r.get("maxFires")) for r in pending] == [(3, 2), (1, 2)]
    # the session paces the key as the token said
    session = Session("s1")
    for _ in range(7):
        session.queue.remind({"body": "CI is red.", "dedupe_key": "ci", **paced.cadence})
        session.run_seam("iteration_start")
        session.turn += 1
    drops = [r.payload for r in session.event_log.records if r.kind.endswith(".dropped")]
    assert [d["turn_number"] for d in drops] == [1, 2, 4, 5, 6]
    assert [d["reason"] for d in drops] == ["cooldown"] * 2 + ["max_fires"] * 3
