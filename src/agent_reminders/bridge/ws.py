"""The WebSocket transport (spec 04 §1): one JSON-RPC message per text frame.

Authentication happens before the upgrade: no valid ``Authorization: Bearer <token>`` → HTTP
401 and no socket (a token in the query string does not count); an ``Origin`` outside
``allowed_origins`` → 403 (no ``Origin`` — a non-browser client — is allowed). Needs the
``bridge`` extra (``websockets``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import Any

import anyio

from .acp import Bridge, Connection
from .auth import find_token
from .dispatcher import Dispatcher, encode
from .limits import TokenBucket

__all__ = ["serve_ws"]

log = logging.getLogger("agent_reminders.bridge")
POLICY_VIOLATION = 1008  # the close code for a client that does not read its replies


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
        raise ImportError(
            'the WebSocket transport needs websockets: pip install "agent-reminders[bridge]"'
        ) from None
    return server


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
    scopes: dict[int, Any] = {}

    def check(connection: Any, request: Any) -> Any:
        origin = request.headers.get("Origin")
        if origin is not None and origin not in settings.allowed_origins:
            return connection.respond(HTTPStatus.FORBIDDEN, "Origin not allowed\n")
        scope = find_token(settings.tokens, request.headers.get("Authorization"))
        if scope is None:
            return connection.respond(HTTPStatus.UNAUTHORIZED, "Missing or invalid token\n")
        scopes[id(connection)] = scope
        return None

    async def handler(ws: Any) -> None:
        scope = scopes.pop(id(ws))
        # a bounded send queue, in messages and in bytes: a reader too slow to keep up is
        # disconnected, never buffered without bound (04 §5)
        outbox, pending = anyio.create_memory_object_stream[str](settings.max_send_queue)
        queued = 0  # bytes in the outbox or being written
        ending: list[tuple[int, str]] = []  # the close code and reason, once we end it

        def stop(code: int, reason: str, why: str) -> None:
            if not ending:
                log.warning("closing a WebSocket connection: %s", why)
                ending.append((code, reason))
            tg.cancel_scope.cancel()

        async def send(text: str) -> None:
            nonlocal queued
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

        async def notify(method: str, params: dict[str, Any]) -> None:
            await send(encode({"jsonrpc": "2.0", "method": method, "params": params}))

        connection = Connection(
            notify=notify,
            grant=scope.grant,
            scope=scope,
            limiter=TokenBucket(settings.rate_per_second),
        )

        async def handle(frame: str | bytes) -> None:
            if ending:  # started before the connection was given up: nothing to answer
                return
            reply = await dispatcher.handle_frame(frame, connection, limiter=connection.limiter)
            if reply is not None:
                await send(reply)

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(writer)
                while True:
                    with anyio.move_on_after(settings.idle_timeout_seconds):
                        frame = await ws.recv()
                        tg.start_soon(handle, frame)
                        continue
                    log.info("closing an idle WebSocket connection")
                    break
                tg.cancel_scope.cancel()
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
    ) as running:
        bound = next(iter(running.sockets)).getsockname()[1]
        if ready is not None:
            result = ready(bound)
            if result is not None:
                await result
        await running.serve_forever()
