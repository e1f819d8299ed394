"""The WebSocket transport (spec 04 §1): one JSON-RPC message per text frame.

Authentication happens before the upgrade: no valid ``Authorization: Bearer <token>`` → HTTP
401 and no socket (a token in the query string does not count); an ``Origin`` outside
``allowed_origins`` → 403 (no ``Origin`` — a non-browser client — is allowed). A request with
two ``Authorization`` headers gets 401, one with two ``Origin`` headers 403. Needs the
``bridge`` extra (``websockets``).

Each connection reads its frames in one loop and answers them there, in order; only
``session/prompt`` and ``session/load``, which stream notifications and may run for minutes,
get a task of their own, so the loop goes on reading (a ``session/cancel`` reaches the prompt).
A reply or notification is written straight to the socket when nothing is waiting ahead of it
and it fits under the write buffer's low-water mark (``ws.send`` then returns without waiting);
anything else goes through the connection's bounded send queue, whose writer gives up on a
client that does not read within ``send_timeout_seconds``.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from http import HTTPStatus
from typing import Any

import anyio

from .acp import LONG_RUNNING_METHODS, Bridge
from .auth import find_token
from .connection import Connection
from .dispatcher import Dispatcher, encode
from .limits import TokenBucket

__all__ = ["serve_ws", "serving_ws"]

log = logging.getLogger("agent_reminders.bridge")
POLICY_VIOLATION = 1008  # the close code for a client that does not read its replies
# websockets' write buffer marks, high and low (its defaults: 32 KiB and a quarter of that; the
# low one raised): a frame that keeps the buffer under the low one is written without waiting
# (room left for its header)
WRITE_LIMIT = (32 * 1024, 16 * 1024)
_DIRECT_BYTES = WRITE_LIMIT[1] - 16


def _runs_long(message: Any) -> bool:
    """Whether a request (or any request of a batch) is one that streams and runs long."""
    if type(message) is dict:
        method = message.get("method")
        return type(method) is str and method in LONG_RUNNING_METHODS
    return isinstance(message, list) and any(_runs_long(m) for m in message if type(m) is dict)


async def _close(ws: Any, code: int, reason: str, timeout: float) -> None:
    """The closing handshake, within ``timeout`` even when the server is shutting down;
    then the TCP connection is dropped. (websockets starts its own close timeout only once
    the close frame is written, which never happens when the client reads nothing.)"""
    with anyio.move_on_after(timeout, shield=True):
        await ws.close(code, reason)
        return
    log.warning("dropping a WebSocket connection: the closing handshake timed out")
    ws.transport.abort()


def _websockets() -> Any:
    try:
        from websockets.asyncio import server
    except ImportError:  # pragma: no cover - depends on the environment
        from .._core.errors import missing_extra

        raise missing_extra("websockets", "bridge", "the WebSocket transport") from None
    return server


@asynccontextmanager
async def serving_ws(bridge: Bridge, host: str = "127.0.0.1", port: int = 0) -> AsyncIterator[str]:
    """:func:`serve_ws` for the duration of an ``async with`` block, which gets the server's
    URL (``ws://host:port/``; with ``port=0``, the free port it picked). Leaving the block
    stops the server; a server that cannot listen raises here.

    Example:
        >>> import anyio
        >>> from agent_reminders.bridge import Bridge, BridgeClient, BridgeSettings
        >>> from agent_reminders.bridge.auth import Scope
        >>> from agent_reminders.storage import MemoryStore
        >>> settings = BridgeSettings(tokens=(Scope(token="t" * 20, prompt=True),))
        >>> async def main():
        ...     async with serving_ws(Bridge(MemoryStore(), settings=settings)) as url:
        ...         async with BridgeClient.connect_ws(url, "t" * 20) as client:
        ...             return (await client.initialize())["protocolVersion"]
        >>> anyio.run(main)
        1
    """
    listening = anyio.Event()
    ports: list[int] = []

    def ready(bound: int) -> None:
        ports.append(bound)
        listening.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(functools.partial(serve_ws, bridge, host, port, ready=ready))
        await listening.wait()
        yield f"ws://{host}:{ports[0]}/"
        tg.cancel_scope.cancel()


async def serve_ws(
    bridge: Bridge,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    ready: Callable[[int], Awaitable[None] | None] | None = None,
) -> None:
    """Serve ``bridge`` on ``ws://host:port/`` until cancelled; ``ready(port)`` is called once
    listening (``port=0`` picks a free one)."""
    server = _websockets()
    from websockets.exceptions import ConnectionClosed

    settings = bridge.settings
    dispatcher = Dispatcher(bridge.methods, max_frame_bytes=settings.max_frame_bytes)
    scopes: dict[int, Any] = {}

    def check(connection: Any, request: Any) -> Any:
        # get_all, never get: get raises on a repeated header (a 500 and a traceback), and a
        # repeated one is refused anyway, since a proxy in front may have acted on either
        origins = request.headers.get_all("Origin")
        if origins and (len(origins) > 1 or origins[0] not in settings.allowed_origins):
            return connection.respond(HTTPStatus.FORBIDDEN, "Origin not allowed\n")
        given = request.headers.get_all("Authorization")
        scope = find_token(settings.tokens, given[0]) if len(given) == 1 else None
        if scope is None:
            return connection.respond(HTTPStatus.UNAUTHORIZED, "Missing or invalid token\n")
        scopes[id(connection)] = scope
        return None

    async def handler(ws: Any) -> None:
        scope = scopes.pop(id(ws))
        # a bounded send queue, in messages and in bytes, for what cannot be written at once:
        # a reader too slow to keep up is disconnected, never buffered without bound (04 §5)
        outbox, pending = anyio.create_memory_object_stream[str](settings.max_send_queue)
        queued = 0  # bytes in the outbox or being written by the writer
        ending: list[tuple[int, str]] = []  # the close code and reason, once we end it
        last_frame = time.monotonic()

        def stop(code: int, reason: str, why: str) -> None:
            if not ending:
                log.warning("closing a WebSocket connection: %s", why)
                ending.append((code, reason))
            tg.cancel_scope.cancel()

        async def send(text: str) -> None:
            nonlocal queued
            if queued == 0 and ws.transport.get_write_buffer_size() + len(text) <= _DIRECT_BYTES:
                # nothing is ahead of it and the write stays under websockets' low-water mark:
                # ws.send writes it and returns without waiting, so no timeout is needed
                try:
                    await ws.send(text)
                except ConnectionClosed:  # the client went away: nothing left to serve
                    log.debug("websocket connection ended while sending", exc_info=True)
                    tg.cancel_scope.cancel()
                return
            if queued >= settings.max_send_queue_bytes:
                stop(POLICY_VIOLATION, "send queue full", "its send queue is full (bytes)")
                return
            try:
                outbox.send_nowait(text)
            except anyio.WouldBlock:
                stop(POLICY_VIOLATION, "send queue full", "its send queue is full")
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass
            else:
                queued += len(text)  # frames are ASCII: characters are bytes

        async def writer() -> None:
            nonlocal queued
            async with pending:
                async for text in pending:
                    # websockets waits for the TCP buffer to drain, without a limit: a client
                    # that stops reading would hold this connection (and its queue) forever
                    with anyio.move_on_after(settings.send_timeout_seconds) as sending:
                        await ws.send(text)
                    queued -= len(text)
                    if sending.cancelled_caught:
                        stop(POLICY_VIOLATION, "send timed out", "the client stopped reading")
                        return

        async def idle() -> None:
            # one timer per connection, moved on by every frame that arrives
            while (left := last_frame + settings.idle_timeout_seconds - time.monotonic()) > 0:
                await anyio.sleep(left)
            log.info("closing an idle WebSocket connection")
            tg.cancel_scope.cancel()

        async def notify(method: str, params: dict[str, Any]) -> None:
            await send(encode({"jsonrpc": "2.0", "method": method, "params": params}))

        connection = Connection(
            notify=notify,
            grant=scope.grant,
            scope=scope,
            limiter=TokenBucket(settings.rate_per_second),
        )

        async def answer(message: Any) -> None:
            if ending:  # started before the connection was given up: nothing to answer
                return
            reply = await dispatcher.answer(message, connection, limiter=connection.limiter)
            if reply is not None:
                await send(reply)

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(writer)
                tg.start_soon(idle)
                while True:
                    frame = await ws.recv()
                    last_frame = time.monotonic()
                    message, refusal = dispatcher.decode(frame)
                    if refusal is not None:
                        await send(refusal)
                    elif _runs_long(message):
                        tg.start_soon(answer, message)  # the next frame may be its cancel
                    else:
                        await answer(message)  # replies in order, no task per frame
        except Exception:  # a client going away mid-reply ends only its own connection
            log.debug("websocket connection ended", exc_info=True)
        finally:
            outbox.close()
            code, reason = ending[0] if ending else (1000, "")
            await _close(ws, code, reason, settings.send_timeout_seconds)

    async with server.serve(
        handler,
        host,
        port,
        process_request=check,
        max_size=settings.max_frame_bytes,
        # frames are small JSON-RPC messages: deflating each costs more than it saves
        compression=None,
        write_limit=WRITE_LIMIT,
    ) as running:
        bound = next(iter(running.sockets)).getsockname()[1]
        if ready is not None:
            result = ready(bound)
            if result is not None:
                await result
        await running.serve_forever()
