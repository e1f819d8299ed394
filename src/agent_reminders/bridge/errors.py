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

from .._core.errors import (
    _PAYLOAD_CODE,
    CODES,
    AgentRemindersError,
    ModelError,
    QueueError,
    QueueErrorReason,
    ScriptExhaustedError,
    StoreError,
    explain,
    family_for_code,
    queue_error_class,
)
from ..storage.base import SessionExistsError, UnknownSessionError

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "QUEUE_FULL",
    "RpcError",
    "SCOPE_DENIED",
    "SESSION_BUSY",
    "SESSION_NOT_FOUND",
    "SessionBusyError",
    "error_object",
    "invalid_params",
    "refusal",
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


def _restore_rpc(cls: type[RpcError], text: str, state: dict[str, Any]) -> RpcError:
    err = cls.__new__(cls)
    Exception.__init__(err, text)
    err.__dict__.update(state)
    return err


class RpcError(AgentRemindersError):
    """A protocol-level refusal that already is a JSON-RPC error: ``code``, ``message``,
    ``data``. Raised by the dispatcher and handlers for what has no library error (a frame
    that is not JSON, an unknown method, a scope refusal), and by ``BridgeClient`` for every
    error reply the server sends (an RMD code is then ``data["code"]``, also ``rmd_code``).

    Under :class:`~agent_reminders.AgentRemindersError` like every error of the library, but
    its ``code`` is the JSON-RPC code (an ``int``, ``-32602`` …), as it always was; the RMD
    code, when the server sent one, is ``rmd_code``. ``BridgeClient`` raises a refusal that
    carries an RMD code as a subclass that is also that code's error class (see
    :func:`refusal`), so ``except QueueError`` catches a refused revoke as ``except RpcError``
    does.

    Example:
        >>> str(RpcError(-32602, "Invalid params", {"code": "RMD-002", "message": "body is blank"}))
        '-32602: Invalid params (RMD-002: body is blank)'
        >>> RpcError(-32602, "Invalid params", {"code": "RMD-002", "message": "x"}).rmd_code
        'RMD-002'
    """

    code: int  # type: ignore[assignment]  # the JSON-RPC code; the RMD code is rmd_code
    data: dict[str, Any] | None
    rmd_code: str | None

    def __init__(self, code: int, message: str, data: dict[str, Any] | None = None) -> None:
        self.code = code
        self.message = message
        self.data = data
        # a library error travels as "Invalid params" with the real text in data: say both
        said = data.get("message") if data else None
        told = data.get("code") if data else None
        self.rmd_code = told if isinstance(told, str) and told in CODES else None
        detail = ""
        if isinstance(said, str) and said != message:
            detail = f" ({told}: {said})" if isinstance(told, str) else f" ({said})"
        Exception.__init__(self, f"{code}: {message}{detail}")

    def explain(self) -> str:
        """The cause-and-fix paragraph of the RMD code the server sent, else what the
        JSON-RPC code means."""
        if self.rmd_code is not None:
            return explain(self.rmd_code)
        return f"JSON-RPC error {self.code} ({self.message}): see the bridge's error table."

    def __reduce__(self) -> tuple[Any, ...]:
        if type(self) in _REFUSALS.values():  # made at run time: made again from the reply
            return (refusal, (self.code, self.message, self.data))
        return (_restore_rpc, (type(self), str(self), dict(self.__dict__)))


class SessionBusyError(RpcError):
    """A prompt is already running on the session; ``owner`` names the worker holding it
    (``why`` says otherwise when the holder is known to have stopped renewing its lease)."""

    def __init__(
        self, session_id: str, owner: str, why: str = "a prompt is already running on it"
    ) -> None:
        self.session_id = session_id
        self.owner = owner
        super().__init__(SESSION_BUSY, f"session {session_id!r} is busy: {why}", {"owner": owner})


# the family of a refusal -> the RpcError subclass that is also that family (made once)
_REFUSALS: dict[type[AgentRemindersError], type[RpcError]] = {}


def _refusal_class(family: type[AgentRemindersError]) -> type[RpcError]:
    made = _REFUSALS.get(family)
    if made is None:
        made = type(
            f"Refused{family.__name__}",
            (RpcError, family),
            {
                "__module__": "agent_reminders.bridge",
                "__doc__": f"A bridge refusal that is also a {family.__name__} (an RpcError "
                "whose code is the JSON-RPC code and rmd_code the library's).",
            },
        )
        _REFUSALS[family] = made
    return made


def _refusal_family(code: int, data: dict[str, Any] | None) -> type[AgentRemindersError] | None:
    if code == SESSION_NOT_FOUND:
        return UnknownSessionError
    told = data.get("code") if data else None
    family = family_for_code(told) if isinstance(told, str) else None
    if family is QueueError and data is not None:
        reason = data.get("reason")
        if reason == QueueErrorReason.SESSION_EXISTS:
            return SessionExistsError
        return queue_error_class(reason) if isinstance(reason, str) else family
    return family


def refusal(code: int, message: str, data: dict[str, Any] | None = None) -> RpcError:
    """The error ``BridgeClient`` raises for an error reply ``{code, message, data}``.

    Always an :class:`RpcError` (``code`` the JSON-RPC code, ``message``, ``data``). When the
    reply names what was refused, it is also the library's error class for it: ``data.code``
    (the RMD code) picks the class (``RMD-102`` → ``QueueError``, and by ``data.reason``
    ``QueueFullError`` …; ``RMD-009`` → ``AuthorityError``); ``-32004`` is an
    ``UnknownSessionError``; ``-32006`` a :class:`SessionBusyError`. Its ``message`` stays
    the JSON-RPC message, as on every ``RpcError``; the library's message is ``data["message"]``.

    Example:
        >>> from agent_reminders import QueueError
        >>> err = refusal(-32602, "Invalid params",
        ...               {"code": "RMD-102", "message": "no reminder 'r9'",
        ...                "reason": "unknown_reminder_id"})
        >>> isinstance(err, RpcError), isinstance(err, QueueError), err.code, err.reason
        (True, True, -32602, 'unknown_reminder_id')
    """
    if code == SESSION_BUSY:
        busy = SessionBusyError.__new__(SessionBusyError)
        RpcError.__init__(busy, code, message, data)
        owner = data.get("owner") if data else None
        busy.owner = owner if isinstance(owner, str) else ""
        busy.session_id = ""
        return busy
    family = _refusal_family(code, data)
    if family is None:
        return RpcError(code, message, data)
    cls = _refusal_class(family)
    err = cls.__new__(cls)
    RpcError.__init__(err, code, message, data)
    # what the family's own constructor would have set, from the reply
    if isinstance(err, QueueError):
        reason = data.get("reason") if data else None
        default = "unknown_session" if isinstance(err, UnknownSessionError) else ""
        err.reason = (
            reason if isinstance(reason, str) and reason in set(QueueErrorReason) else default
        )
        if isinstance(err, UnknownSessionError | SessionExistsError):
            err.session_id = ""
    if isinstance(err, ModelError):
        err.provider, err.status, err.server_message = "", None, None
    return err


def invalid_params(message: str, code: str = _PAYLOAD_CODE, **extra: Any) -> RpcError:
    """A ``-32602`` with ``data: {code, message, ...extra}`` (every bad-params reply has the
    RMD code of the rule it breaks)."""
    return RpcError(INVALID_PARAMS, message, {"code": code, "message": message, **extra})


def _library_data(exc: AgentRemindersError) -> dict[str, Any]:
    data: dict[str, Any] = {"code": exc.code, "message": exc.message}
    if isinstance(exc, QueueError):
        data["reason"] = str(exc.reason)
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
    # a test's scripted model running out is the server's trouble too (and no caller's params)
    (ScriptExhaustedError, lambda e: (INTERNAL_ERROR, "Internal error", None)),
    (QueueError, lambda e: _queue_error(e)),
    (AgentRemindersError, lambda e: (INVALID_PARAMS, "Invalid params", _library_data(e))),
)


def _queue_error(exc: QueueError) -> tuple[int, str, dict[str, Any] | None]:
    if exc.reason == QueueErrorReason.QUEUE_FULL:
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
