"""The WebSocket transport (docs/protocol.md, "WebSocket"): one JSON-RPC message per text frame.

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
from anyio.abc import TaskGroup

from .acp import LONG_RUNNING_METHODS, Bridge
from .auth import Scope, find_token
from .config import BridgeSettings
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
    settings = bridge.settings
    dispatcher = Dispatcher(bridge.methods, max_frame_bytes=settings.max_frame_bytes)
    scopes: dict[int, Scope] = {}

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
        await _WsConnection(ws, scopes.pop(id(ws)), settings, dispatcher).serve()

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


class _WsConnection:
    """One client's WebSocket connection, after its upgrade was allowed: the read loop, the
    writer of its send queue, its idle timer, and what they share.

    A bounded send queue, in messages and in bytes, holds what cannot be written at once: a
    reader too slow to keep up is disconnected, never buffered without bound.
    """

    def __init__(
        self, ws: Any, scope: Scope, settings: BridgeSettings, dispatcher: Dispatcher
    ) -> None:
        from websockets.exceptions import ConnectionClosed

        self.ws = ws
        self.settings = settings
        self.dispatcher = dispatcher
        self._closed_error: type[Exception] = ConnectionClosed
        self.outbox, self.pending = anyio.create_memory_object_stream[str](settings.max_send_queue)
        self.queued = 0  # bytes in the outbox or being written by the writer
        self.ending: list[tuple[int, str]] = []  # the close code and reason, once we end it
        self.last_frame = time.monotonic()
        self.tasks: TaskGroup | None = None
        self.connection = Connection(
            notify=self.notify,
            grant=scope.grant,
            scope=scope,
            limiter=TokenBucket(settings.rate_per_second),
        )

    def _cancel(self) -> None:
        """End the connection: its read loop, writer and timer stop."""
        assert self.tasks is not None
        self.tasks.cancel_scope.cancel()

    async def serve(self) -> None:
        """Read frames and answer them until the client goes or the connection is ended;
        then the closing handshake."""
        try:
            async with anyio.create_task_group() as tg:
                self.tasks = tg
                tg.start_soon(self.writer)
                tg.start_soon(self.idle)
                while True:
                    frame = await self.ws.recv()
                    self.last_frame = time.monotonic()
                    message, refusal = self.dispatcher.decode(frame)
                    if refusal is not None:
                        await self.send(refusal)
                    elif _runs_long(message):
                        tg.start_soon(self.answer, message)  # the next frame may be its cancel
                    else:
                        await self.answer(message)  # replies in order, no task per frame
        except Exception:  # a client going away mid-reply ends only its own connection
            log.debug("websocket connection ended", exc_info=True)
        finally:
            self.outbox.close()
            code, reason = self.ending[0] if self.ending else (1000, "")
            await _close(self.ws, code, reason, self.settings.send_timeout_seconds)

    def stop(self, code: int, reason: str, why: str) -> None:
        """Give the connection up, closing it with ``code`` and ``reason``."""
        if not self.ending:
            log.warning("closing a WebSocket connection: %s", why)
            self.ending.append((code, reason))
        self._cancel()

    async def send(self, text: str) -> None:
        """Write ``text`` now when nothing waits ahead of it and it fits, else queue it."""
        ws = self.ws
        if self.queued == 0 and ws.transport.get_write_buffer_size() + len(text) <= _DIRECT_BYTES:
            # nothing is ahead of it and the write stays under websockets' low-water mark:
            # ws.send writes it and returns without waiting, so no timeout is needed
            try:
                await ws.send(text)
            except self._closed_error:  # the client went away: nothing left to serve
                log.debug("websocket connection ended while sending", exc_info=True)
                self._cancel()
            return
        if self.queued >= self.settings.max_send_queue_bytes:
            self.stop(POLICY_VIOLATION, "send queue full", "its send queue is full (bytes)")
            return
        try:
            self.outbox.send_nowait(text)
        except anyio.WouldBlock:
            self.stop(POLICY_VIOLATION, "send queue full", "its send queue is full")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        else:
            self.queued += len(text)  # frames are ASCII: characters are bytes

    async def writer(self) -> None:
        """Write the queued frames in order, giving up on a client that stops reading."""
        async with self.pending:
            async for text in self.pending:
                # websockets waits for the TCP buffer to drain, without a limit: a client
                # that stops reading would hold this connection (and its queue) forever
                with anyio.move_on_after(self.settings.send_timeout_seconds) as sending:
                    await self.ws.send(text)
                self.queued -= len(text)
                if sending.cancelled_caught:
                    self.stop(POLICY_VIOLATION, "send timed out", "the client stopped reading")
                    return

    async def idle(self) -> None:
        """One timer per connection, moved on by every frame that arrives."""
        timeout = self.settings.idle_timeout_seconds
        while (left := self.last_frame + timeout - time.monotonic()) > 0:
            await anyio.sleep(left)
        log.info("closing an idle WebSocket connection")
        self._cancel()

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        """Send a JSON-RPC notification."""
        await self.send(encode({"jsonrpc": "2.0", "method": method, "params": params}))

    async def answer(self, message: Any) -> None:
        """Answer one decoded message (a request, a notification or a batch)."""
        if self.ending:  # started before the connection was given up: nothing to answer
            return
        connection = self.connection
        reply = await self.dispatcher.answer(message, connection, limiter=connection.limiter)
        if reply is not None:
            await self.send(reply)
