"""The one table from the library's errors to JSON-RPC error objects (docs/protocol.md,
"Errors").

Every transport (stdio, WebSocket) answers through :func:`error_object`; nothing else in the
bridge picks an error code. An exception outside the table becomes ``-32603`` with a fixed
message: a traceback or an exception text never reaches the client.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._core.errors import AgentRemindersError, ModelError, QueueError, StoreError
from ..storage.base import UnknownSessionError

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "QUEUE_FULL",
    "SCOPE_DENIED",
    "SESSION_BUSY",
    "SESSION_NOT_FOUND",
    "RpcError",
    "SessionBusyError",
    "error_object",
    "invalid_params",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SCOPE_DENIED = -32003
SESSION_NOT_FOUND = -32004
QUEUE_FULL = -32005
SESSION_BUSY = -32006

# While a queue is full, a client retries after this long (data.retryAfterMs).
QUEUE_FULL_RETRY_MS = 1000


class RpcError(Exception):
    """A protocol-level refusal that already is a JSON-RPC error: ``code``, ``message``,
    ``data``. Raised by the dispatcher and handlers for what has no library error (a frame
    that is not JSON, an unknown method, a scope refusal), and by ``BridgeClient`` for every
    error reply the server sends (an RMD code is then ``data["code"]``).

    Example:
        >>> str(RpcError(-32602, "Invalid params", {"code": "RMD-002", "message": "body is blank"}))
        '-32602: Invalid params (RMD-002: body is blank)'
    """

    def __init__(self, code: int, message: str, data: dict[str, Any] | None = None) -> None:
        self.code = code
        self.message = message
        self.data = data
        # a library error travels as "Invalid params" with the real text in data: say both
        said = data.get("message") if data else None
        told = data.get("code") if data else None
        detail = ""
        if isinstance(said, str) and said != message:
            detail = f" ({told}: {said})" if isinstance(told, str) else f" ({said})"
        super().__init__(f"{code}: {message}{detail}")


class SessionBusyError(RpcError):
    """A prompt is already running on the session; ``owner`` names the worker holding it
    (``why`` says otherwise when the holder is known to have stopped renewing its lease)."""

    def __init__(
        self, session_id: str, owner: str, why: str = "a prompt is already running on it"
    ) -> None:
        self.session_id = session_id
        self.owner = owner
        super().__init__(SESSION_BUSY, f"session {session_id!r} is busy: {why}", {"owner": owner})


def invalid_params(message: str, code: str = "RMD-002", **extra: Any) -> RpcError:
    """A ``-32602`` with ``data: {code, message, ...extra}`` (every bad-params reply has the
    RMD code of the rule it breaks)."""
    return RpcError(INVALID_PARAMS, message, {"code": code, "message": message, **extra})


def _library_data(exc: AgentRemindersError) -> dict[str, Any]:
    data: dict[str, Any] = {"code": exc.code, "message": exc.message}
    if isinstance(exc, QueueError):
        data["reason"] = exc.reason
    return data


_Row = tuple[type[BaseException], Callable[[Any], tuple[int, str, dict[str, Any] | None]]]

# THE table, first match wins: exception type → (code, message, data).
TABLE: tuple[_Row, ...] = (
    (RpcError, lambda e: (e.code, e.message, e.data)),
    (UnknownSessionError, lambda e: (SESSION_NOT_FOUND, "Session not found", None)),
    # stores and models failing is the server's trouble, not the caller's params
    # a store's one line (the file, and what failed: damaged, disk full, read-only) is what
    # the client's operator needs to act on; it is never a traceback
    (
        StoreError,
        lambda e: (INTERNAL_ERROR, "Internal error", {"code": e.code, "message": e.message}),
    ),
    (ModelError, lambda e: (INTERNAL_ERROR, "Internal error", {"code": e.code})),
    (QueueError, lambda e: _queue_error(e)),
    (AgentRemindersError, lambda e: (INVALID_PARAMS, "Invalid params", _library_data(e))),
)


def _queue_error(exc: QueueError) -> tuple[int, str, dict[str, Any] | None]:
    if exc.reason == "queue_full":
        data = {**_library_data(exc), "retryAfterMs": QUEUE_FULL_RETRY_MS}
        return QUEUE_FULL, "Queue full", data
    return INVALID_PARAMS, "Invalid params", _library_data(exc)


@dataclass(frozen=True, slots=True)
class _Mapped:
    code: int
    message: str
    data: dict[str, Any] | None


def error_object(exc: BaseException) -> dict[str, Any]:
    """The JSON-RPC ``error`` member for ``exc`` (the table of docs/protocol.md, "Errors").

    Example:
        >>> from agent_reminders._core.errors import ReminderError
        >>> error_object(ReminderError("RMD-001", "unknown key(s): colour"))["data"]["code"]
        'RMD-001'
        >>> error_object(KeyError("secret"))
        {'code': -32603, 'message': 'Internal error'}
    """
    for kind, build in TABLE:
        if isinstance(exc, kind):
            mapped = _Mapped(*build(exc))
            break
    else:
        mapped = _Mapped(INTERNAL_ERROR, "Internal error", None)
    out: dict[str, Any] = {"code": mapped.code, "message": mapped.message}
    if mapped.data is not None:
        out["data"] = mapped.data
    return out
