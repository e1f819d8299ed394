"""The WebSocket upgrade's header checks on a real server, with raw HTTP requests.

Two ``Authorization`` headers are ambiguous (a proxy may pass on either): 401, no socket. Two
``Origin`` headers: 403. Bytes that are not ASCII in either header: refused the same way. None
of these is a 500 or leaves a traceback in the server's log.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

import anyio
import pytest

from agent_reminders.bridge import Bridge, BridgeSettings
from agent_reminders.bridge.auth import Scope
from agent_reminders.bridge.ws import serving_ws
from agent_reminders.storage import MemoryStore

pytest.importorskip("websockets")

pytestmark = pytest.mark.anyio
TOKEN = "headers-token-0123456789"
ORIGIN = "http://localhost:5173"
AUTH = f"Authorization: Bearer {TOKEN}".encode()
GOOD_ORIGIN = f"Origin: {ORIGIN}".encode()


@pytest.fixture
async def address() -> AsyncIterator[tuple[str, int]]:
    settings = BridgeSettings(tokens=(Scope(token=TOKEN, admin=True),), allowed_origins=(ORIGIN,))
    async with serving_ws(Bridge(MemoryStore(), settings=settings)) as url:
        host, port = url.removeprefix("ws://").rstrip("/").rsplit(":", 1)
        yield host, int(port)


async def _upgrade(address: tuple[str, int], *headers: bytes) -> int:
    """Send one raw upgrade request with ``headers``; the HTTP status of the answer."""
    host, port = address
    request = (
        b"GET / HTTP/1.1\r\n"
        + f"Host: {host}:{port}\r\n".encode()
        + b"Upgrade: websocket\r\nConnection: Upgrade\r\n"
        + b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        + b"".join(h + b"\r\n" for h in headers)
        + b"\r\n"
    )
    with anyio.fail_after(10):
        async with await anyio.connect_tcp(host, port) as stream:
            await stream.send(request)
            answer = b""
            while b"\r\n" not in answer:
                answer += await stream.receive()
            status = int(answer.split(b"\r\n", 1)[0].split()[1])
            if status != 101:
                # a refused upgrade is logged before the server closes: wait for the close
                with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError):
                    while True:
                        await stream.receive()
    return status


CASES = [
    ("one good token", [AUTH], 101),
    ("the same good token twice", [AUTH, AUTH], 401),
    ("a good token and a bad one", [AUTH, b"Authorization: Bearer wrong-token-0123456789"], 401),
    ("a bad token and a good one", [b"Authorization: Bearer wrong-token-0123456789", AUTH], 401),
    ("a token that is not ASCII", [b"Authorization: Bearer \xff\xfe" + TOKEN.encode()], 401),
    ("an allowed origin", [AUTH, GOOD_ORIGIN], 101),
    ("an allowed origin twice", [AUTH, GOOD_ORIGIN, GOOD_ORIGIN], 403),
    ("two origins, no token", [GOOD_ORIGIN, b"Origin: http://evil.example"], 403),
    ("an origin that is not ASCII", [AUTH, b"Origin: http://\xe9vil.example"], 403),
]


@pytest.mark.parametrize(("headers", "status"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
async def test_duplicate_or_strange_headers_are_refused_without_a_traceback(
    address: tuple[str, int],
    headers: list[bytes],
    status: int,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.DEBUG):
        assert await _upgrade(address, *headers) == status
    bad = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert bad == [], [r.getMessage() for r in bad]
