"""The stdio transport in process: line framing, limits, concurrency (docs/protocol.md, "stdio")."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from agent_reminders.bridge import Bridge, BridgeSettings
from agent_reminders.bridge.stdio import serve_stdio
from agent_reminders.storage import MemoryStore

pytestmark = pytest.mark.anyio


async def _serve(lines: list[bytes], **settings: Any) -> list[dict[str, Any]]:
    bridge = Bridge(MemoryStore(), settings=BridgeSettings(**settings))
    out = io.BytesIO()
    await serve_stdio(bridge, stdin=io.BytesIO(b"".join(lines)), stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def _request(i: int, method: str, params: Any = None) -> bytes:
    frame = {"jsonrpc": "2.0", "id": i, "method": method, "params": params or {}}
    return json.dumps(frame).encode() + b"\n"


async def test_an_oversized_line_is_refused_and_the_next_line_is_served() -> None:
    replies = await _serve(
        [b'{"x": "' + b"a" * 5000 + b'"}\n', b"\n", _request(1, "session/new")],
        max_frame_bytes=1024,
    )
    assert replies[0]["error"]["code"] == -32600
    assert replies[1]["id"] == 1
    assert len(replies[1]["result"]["sessionId"]) == 32
    assert len(replies) == 2


async def test_crlf_blank_lines_and_notifications() -> None:
    replies = await _serve(
        [
            b"\r\n",
            _request(1, "initialize").replace(b"\n", b"\r\n"),
            b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"x"}}\n',
            b"[]\n",
        ]
    )
    assert sorted(json.dumps(r["id"]) for r in replies) == ["1", "null"]
