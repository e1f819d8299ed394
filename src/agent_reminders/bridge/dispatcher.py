"""JSON-RPC 2.0 dispatch shared by every transport (spec 04 §1).

A transport hands each frame (one stdio line, one WebSocket text frame) to
:meth:`Dispatcher.handle_frame` and writes back what it returns, if anything. Requests get
exactly one reply, notifications never get one, a batch gets an array of the replies of its
requests (nothing when it held only notifications). A malformed frame gets its error and the
connection goes on: nothing a client sends can stop the dispatcher.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from .._core.errors import AgentRemindersError
from .errors import (
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RpcError,
    error_object,
)
from .limits import TokenBucket

__all__ = ["DEFAULT_MAX_FRAME_BYTES", "Dispatcher", "Handler", "encode"]

DEFAULT_MAX_FRAME_BYTES = 1024 * 1024
log = logging.getLogger("agent_reminders.bridge")

# handler(params, connection) -> result; ``params`` is the request's params (``None`` when
# absent, else an object or an array — each handler checks its own shape).
Handler = Callable[[Any, Any], Awaitable[Any]]
_NO_ID = object()


_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False)


def encode(message: Any) -> str:
    """One frame of JSON text: ASCII only (a lone surrogate a client sent can still be
    echoed), no newline inside, so it is a valid stdio line."""
    return _ENCODER.encode(message)


def _error_reply(request_id: Any, exc: BaseException) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": error_object(exc)}


def _valid_id(value: object) -> bool:
    return value is None or (isinstance(value, str | int | float) and not isinstance(value, bool))


class Dispatcher:
    """Route JSON-RPC messages to async handlers by method name.

    Example:
        >>> import anyio
        >>> async def echo(params, connection):
        ...     return params
        >>> d = Dispatcher({"echo": echo})
        >>> anyio.run(d.handle_frame, '{"jsonrpc":"2.0","id":1,"method":"echo","params":[2]}', None)
        '{"jsonrpc":"2.0","id":1,"result":[2]}'
        >>> json.loads(anyio.run(d.handle_frame, "[]", None))["error"]["code"]
        -32600
    """

    def __init__(
        self,
        methods: Mapping[str, Handler],
        *,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    ) -> None:
        self.methods = dict(methods)
        self.max_frame_bytes = max_frame_bytes

    async def handle_frame(
        self, frame: str | bytes, connection: Any, *, limiter: TokenBucket | None = None
    ) -> str | None:
        """Handle one frame; returns the reply text, or ``None`` when nothing is to be sent.

        With a ``limiter``, every request and notification (each element of a batch) takes a
        token; one over the rate is refused with ``-32005`` and ``data.retryAfterMs``.
        """
        message, refusal = self.decode(frame)
        if refusal is not None:
            return refusal
        return await self.answer(message, connection, limiter=limiter)

    def decode(self, frame: str | bytes) -> tuple[Any, str | None]:
        """The first half of :meth:`handle_frame`: ``(message, None)``, or ``(None, reply)``
        for a frame that is over the size limit or not JSON (a transport that looks at the
        message before it is answered calls this, then :meth:`answer`)."""
        if isinstance(frame, bytes):
            size = len(frame)
        else:  # a str of n characters is n to 4n bytes: count them only when it matters
            size = len(frame)
            if 4 * size > self.max_frame_bytes:
                size = len(frame.encode("utf-8", "replace"))
        if size > self.max_frame_bytes:
            return None, self.oversized(size)
        try:
            text = frame.decode("utf-8") if isinstance(frame, bytes) else frame
            return json.loads(text), None
        except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
            return None, encode(_error_reply(None, RpcError(PARSE_ERROR, "Parse error")))

    async def answer(
        self, message: Any, connection: Any, *, limiter: TokenBucket | None = None
    ) -> str | None:
        """The second half of :meth:`handle_frame`: the reply text to a decoded message."""
        reply = await self.handle_message(message, connection, limiter=limiter)
        if reply is None:
            return None
        try:
            return encode(reply)
        except (ValueError, TypeError):  # a handler returned something that is not JSON
            log.exception("reply is not JSON")
            request_id = reply.get("id") if isinstance(reply, dict) else None
            return encode(_error_reply(request_id, RuntimeError()))

    def oversized(self, size: int | None = None) -> str:
        """The reply to a frame over ``max_frame_bytes`` (a transport that stops reading a
        long line early sends this without the frame)."""
        told = "" if size is None else f" of {size} bytes"
        exc = RpcError(
            INVALID_REQUEST,
            f"Invalid Request: frame{told} is over the limit of {self.max_frame_bytes} bytes",
        )
        return encode(_error_reply(None, exc))

    async def handle_message(
        self, message: Any, connection: Any, *, limiter: TokenBucket | None = None
    ) -> Any:
        """Handle a decoded message (a request, a notification or a batch)."""
        if isinstance(message, list):
            if not message:
                exc = RpcError(INVALID_REQUEST, "Invalid Request: empty batch")
                return _error_reply(None, exc)
            replies = [await self._one(item, connection, limiter) for item in message]
            found = [r for r in replies if r is not None]
            return found or None
        return await self._one(message, connection, limiter)

    async def _one(
        self, message: Any, connection: Any, limiter: TokenBucket | None
    ) -> dict[str, Any] | None:
        if not isinstance(message, dict):
            exc = RpcError(INVALID_REQUEST, "Invalid Request: not a JSON-RPC request object")
            return _error_reply(None, exc)
        request_id = message.get("id", _NO_ID)
        id_ok = request_id is _NO_ID or _valid_id(request_id)
        reply_id = request_id if id_ok and request_id is not _NO_ID else None
        method = message.get("method")
        params = message.get("params")
        problem = None
        if message.get("jsonrpc") != "2.0":
            problem = 'jsonrpc must be "2.0"'
        elif not isinstance(method, str):
            problem = "method must be a string"
        elif not id_ok:
            problem = "id must be a string, a number or null"
        elif "params" in message and not isinstance(params, (dict, list)):
            problem = "params must be an object or an array"
        if problem is not None:
            return _error_reply(reply_id, RpcError(INVALID_REQUEST, f"Invalid Request: {problem}"))
        assert isinstance(method, str)
        is_notification = request_id is _NO_ID
        handler = self.methods.get(method)
        try:
            if limiter is not None:
                limiter.admit()  # every element of a batch counts
            if handler is None:
                raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")
            result = await handler(params, connection)
        except Exception as exc:
            if not isinstance(exc, RpcError | AgentRemindersError):
                log.exception("internal error in %s", method)  # on stderr, never to the client
            return None if is_notification else _error_reply(reply_id, exc)
        return None if is_notification else {"jsonrpc": "2.0", "id": reply_id, "result": result}
