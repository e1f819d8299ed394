"""The stdio transport (docs/protocol.md, "stdio"): newline-delimited JSON-RPC on stdin/stdout.

Each line is one frame; replies and notifications are written one per line, whole, under a
lock, so a prompt's notifications and the replies of other requests never interleave inside
a line. Frames are handled concurrently (a ``session/remind`` or ``session/cancel`` reaches a
running prompt). Logs go to stderr. The parent process is trusted: the grant is ``contract``.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from typing import Any, BinaryIO

import anyio
import anyio.to_thread

from .._core.fields import Authority
from .acp import Bridge
from .connection import Connection
from .dispatcher import Dispatcher, encode

__all__ = ["serve_stdio"]

_OVERSIZED = object()


async def _frames(stream: BinaryIO, limit: int) -> AsyncIterator[Any]:
    """Lines without their newline; ``_OVERSIZED`` for a line over ``limit`` (its rest is
    read and dropped, so the next line is a frame again)."""
    while True:
        line = await anyio.to_thread.run_sync(stream.readline, limit + 2)
        if not line:
            return
        if not line.endswith(b"\n") and len(line) > limit:
            while True:
                rest = await anyio.to_thread.run_sync(stream.readline, 1 << 16)
                if not rest or rest.endswith(b"\n"):
                    break
            yield _OVERSIZED
            continue
        frame = line.rstrip(b"\r\n")
        if len(frame) > limit:
            yield _OVERSIZED
        elif frame.strip():
            yield frame


def _write(stream: BinaryIO, text: str) -> None:
    stream.write(text.encode("ascii") + b"\n")
    stream.flush()


async def serve_stdio(
    bridge: Bridge,
    *,
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
) -> None:
    """Serve ``bridge`` on stdin/stdout until stdin ends (running requests finish first)."""
    reader = stdin or sys.stdin.buffer
    writer = stdout or sys.stdout.buffer
    dispatcher = Dispatcher(bridge.methods, max_frame_bytes=bridge.settings.max_frame_bytes)
    lock = anyio.Lock()

    async def send(text: str) -> None:
        async with lock:
            await anyio.to_thread.run_sync(_write, writer, text)

    async def notify(method: str, params: dict[str, Any]) -> None:
        await send(encode({"jsonrpc": "2.0", "method": method, "params": params}))

    connection = Connection(notify=notify, grant=Authority.CONTRACT)

    async def handle(frame: bytes) -> None:
        reply = await dispatcher.handle_frame(frame, connection)
        if reply is not None:
            await send(reply)

    async with anyio.create_task_group() as tg:
        async for frame in _frames(reader, dispatcher.max_frame_bytes):
            if frame is _OVERSIZED:
                await send(dispatcher.oversized())
            else:
                tg.start_soon(handle, frame)
