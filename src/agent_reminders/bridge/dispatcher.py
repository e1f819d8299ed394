"""JSON-RPC 2.0 dispatch shared by every transport (docs/protocol.md, "Transports").

A transport hands each frame (one stdio line, one WebSocket text frame) to
:meth:`Dispatcher.handle_frame` and writes back what it returns, if anything. Requests get
exactly one reply, notifications never get one, a batch gets an array of the replies of its
requests (nothing when it held only notifications). A malformed frame gets its error and the
connection goes on: nothing a client sends can stop the dispatcher.

Python's ``json`` reads more than JSON: ``NaN``, ``Infinity``, ``-Infinity``, and numbers past a
double's range (``1e400`` becomes ``inf``), none of which can be written back, by the reply
encoder or by a store; and it reads nesting hundreds of levels deep, which the code that copies
and stores a value cannot take. A request holding either is refused before any handler sees it:
in its ``id`` with ``-32600`` and ``id: null``, in its ``params`` with ``-32602`` (``RMD-002``
naming the path), anywhere else with ``-32600``. Only a frame that may hold one is walked:
decoder hooks note a non-finite number as it is read, and a frame with at most
:data:`MAX_DEPTH` brackets cannot nest too deep. An integer literal over Python's 4300-digit
limit is not read at all: ``-32700``.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .._core.errors import AgentRemindersError, ScriptExhaustedError
from .errors import (
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RpcError,
    error_object,
    invalid_params,
)
from .limits import TokenBucket

__all__ = ["DEFAULT_MAX_FRAME_BYTES", "Dispatcher", "Handler", "MAX_DEPTH", "encode"]

DEFAULT_MAX_FRAME_BYTES = 1024 * 1024
# The deepest nesting a request may hold: far more than any method's params need, and far less
# than what breaks the code that copies, stores or writes a value back (Python's recursion limit
# is reached a few hundred levels down).
MAX_DEPTH = 64
log = logging.getLogger("agent_reminders.bridge")

# handler(params, connection) -> result; ``params`` is the request's params (``None`` when
# absent, else an object or an array — each handler checks its own shape).
Handler = Callable[[Any, Any], Awaitable[Any]]
_NO_ID = object()


_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False)
# what is sent when even an error reply cannot be encoded: it depends on nothing the client sent
_LAST_RESORT = '{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}'
# the longest path named in a refusal (keys are the client's own and may be long)
_MAX_PATH = 200


def encode(message: Any) -> str:
    """One frame of JSON text: ASCII only (a lone surrogate a client sent can still be
    echoed), no newline inside, so it is a valid stdio line."""
    return _ENCODER.encode(message)


# Set by the decoder hooks when a frame holds a number JSON cannot carry; read (and reset) right
# after the decode, with no await in between, so one flag per thread is enough.
_seen = threading.local()


def _constant(text: str) -> float:
    _seen.non_finite = True
    return float(text)  # "NaN", "Infinity", "-Infinity"


def _float(text: str) -> float:
    value = float(text)
    if math.isinf(value):  # digits past a double's range
        _seen.non_finite = True
    return value


_DECODER = json.JSONDecoder(parse_constant=_constant, parse_float=_float)


def _error_reply(request_id: Any, exc: BaseException) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": error_object(exc)}


def _valid_id(value: object) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or (isinstance(value, str | int) and not isinstance(value, bool))


@dataclass(frozen=True, slots=True)
class _Refused:
    """A request refused before any handler runs: what it holds at ``path`` cannot be
    written back (``reason`` says why; never about its id: ``_valid_id`` refuses that one)."""

    request: dict[str, Any]
    path: str
    reason: str


# A step of a path: (the step before it or None, a key or an index). Steps link to their parent
# instead of each holding its whole path, so walking a deep frame stays linear in its size.
_Step = tuple[Any, str | int]
_MAX_KEY = 40  # a client's key is shown up to this many characters in a path


def _path_text(step: _Step) -> str:
    parts: list[str] = []
    at: _Step | None = step
    while at is not None:
        parent, key = at
        if isinstance(key, int):
            parts.append(f"[{key}]")
        else:
            shown = key if len(key) <= _MAX_KEY else key[:_MAX_KEY] + "..."
            parts.append(shown if parent is None else "." + shown)
        at = parent
    text = "".join(reversed(parts))
    return text if len(text) <= _MAX_PATH else text[:_MAX_PATH] + "..."


_NOT_FINITE = (
    "is not a number JSON can carry (NaN, Infinity, or beyond a double's range); send a finite "
    "number"
)
_TOO_DEEP = f"is nested more than {MAX_DEPTH} levels deep; send flatter data"


def _problem(value: Any, name: str) -> tuple[str, str] | None:
    """``(path, reason)`` of the first thing in member ``name``'s ``value`` that cannot be
    kept (a non-finite number, or a container past :data:`MAX_DEPTH`), depth first; ``None``
    when all is well. Iterative: a frame may nest as deep as the decoder allows."""
    stack: list[tuple[Any, _Step, int]] = [(value, (None, name), 1)]
    while stack:
        item, step, depth = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return _path_text(step), _NOT_FINITE
        elif isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                return _path_text(step), _TOO_DEEP
            if isinstance(item, dict):
                stack.extend((v, (step, k), depth + 1) for k, v in reversed(item.items()))
            else:
                stack.extend((item[i], (step, i), depth + 1) for i in range(len(item) - 1, -1, -1))
    return None


def _mark_refused(message: Any) -> Any:
    """``message`` with each request that holds what cannot be kept wrapped in
    :class:`_Refused` (a batch element by element)."""

    def mark(item: Any) -> Any:
        if not isinstance(item, dict):
            return item  # refused as not a request object, whatever it holds
        # params first: the refusal then names what the caller most likely got wrong
        found = _problem(item.get("params"), "params")
        for key, value in item.items():
            if found is not None:
                break
            if key not in ("id", "params"):
                found = _problem(value, key)
        return item if found is None else _Refused(item, *found)

    if isinstance(message, list):
        return [mark(item) for item in message]
    return mark(message)


def _refusal(found: _Refused) -> RpcError:
    said = f"{found.path} {found.reason}"
    if found.path == "params" or found.path.startswith(("params.", "params[")):
        return invalid_params(said)
    return RpcError(INVALID_REQUEST, f"Invalid Request: {said}")


def _encode_or_error(reply: Any) -> str:
    """``reply`` as JSON text; if it cannot be, an internal error under its id; if even that
    id cannot be written, the fixed internal error with ``id: null``."""
    try:
        return encode(reply)
    except Exception:  # logged once by the caller
        pass
    request_id = reply.get("id") if isinstance(reply, dict) else None
    try:
        return encode(_error_reply(request_id, RuntimeError()))
    except Exception:
        return _LAST_RESORT


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
            message = _DECODER.decode(text)
        except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
            _seen.non_finite = False
            return None, encode(_error_reply(None, RpcError(PARSE_ERROR, "Parse error")))
        # a frame with no more brackets than MAX_DEPTH cannot nest deeper: most are not walked
        if getattr(_seen, "non_finite", False) or (
            len(text) > MAX_DEPTH and text.count("[") + text.count("{") > MAX_DEPTH
        ):
            _seen.non_finite = False
            message = _mark_refused(message)
        return message, None

    async def answer(
        self, message: Any, connection: Any, *, limiter: TokenBucket | None = None
    ) -> str | None:
        """The second half of :meth:`handle_frame`: the reply text to a decoded message.

        Never raises (but for cancellation): a transport answers frame after frame, and one
        bad frame or one handler's bad result must not end its connection.
        """
        try:
            reply = await self.handle_message(message, connection, limiter=limiter)
        except Exception:
            log.exception("handling a message failed")  # on stderr, never to the client
            return _LAST_RESORT
        if reply is None:
            return None
        try:
            return encode(reply)
        except Exception:  # a handler returned something that is not JSON
            log.exception("reply is not JSON")
        if isinstance(reply, list):  # the other replies of the batch still go out
            return "[" + ",".join(_encode_or_error(item) for item in reply) + "]"
        return _encode_or_error(reply)

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
        refused = None
        if type(message) is _Refused:
            refused, message = message, message.request
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
            problem = "id must be a string, a finite number or null"
        elif "params" in message and not isinstance(params, (dict, list)):
            problem = "params must be an object or an array"
        if problem is not None:
            return _error_reply(reply_id, RpcError(INVALID_REQUEST, f"Invalid Request: {problem}"))
        assert isinstance(method, str)
        is_notification = request_id is _NO_ID
        if refused is not None:
            return None if is_notification else _error_reply(reply_id, _refusal(refused))
        handler = self.methods.get(method)
        try:
            if limiter is not None:
                limiter.admit()  # every element of a batch counts
            if handler is None:
                raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")
            result = await handler(params, connection)
        except Exception as exc:
            if not isinstance(exc, AgentRemindersError) or isinstance(exc, ScriptExhaustedError):
                log.exception("internal error in %s", method)  # on stderr, never to the client
            return None if is_notification else _error_reply(reply_id, exc)
        return None if is_notification else {"jsonrpc": "2.0", "id": reply_id, "result": result}
