"""Errors, diagnostics and the table of RMD codes."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

__all__ = [
    "AgentRemindersError",
    "AlreadyDeliveredError",
    "AuditError",
    "AuthorityError",
    "BridgeConnectionError",
    "CODES",
    "ConfigError",
    "Diagnostic",
    "FactError",
    "MessageError",
    "MissingExtraError",
    "MissingReminderIdError",
    "ModelError",
    "ObservationalHookError",
    "PropagateError",
    "ProviderResultError",
    "ProviderSkippedError",
    "QueueError",
    "QueueErrorReason",
    "QueueFullError",
    "ReminderError",
    "ReminderOptionError",
    "ScriptError",
    "ScriptExhaustedError",
    "Severity",
    "StateError",
    "StoreError",
    "UnknownReminderIdError",
    "did_you_mean",
    "explain",
    "family_for_code",
    "missing_extra",
    "payload_error",
    "queue_error_class",
]

Severity = Literal["error", "warning", "info"]

# code -> (one-line title, cause-and-fix paragraph). The numbers are stable forever.
CODES: dict[str, tuple[str, str]] = {
    "RMD-001": (
        "invalid reminder option",
        "A strict producer API (inject_reminder, a hook effect, a provider result, "
        "Reminder.from_dict) received an unknown option key or an option value of the wrong "
        "type or range. The message names the key. Allowed option keys are body, tags, "
        "dedupe_key, ttl_turns, preserve_on_compact, propagate, role_hint and authority; "
        "ttl_turns must be a positive int, tags a list of non-blank strings and body a "
        "non-blank string. Fix the spelling or the value and try again.",
    ),
    "RMD-002": (
        "invalid bridge reminder payload",
        "A reminder pushed through the bridge (session/remind) or the injection queue has the "
        "wrong shape: params or the reminder are not objects, _meta is not an object, ttl_turns "
        "or fired_at_turn are out of range, source is not 'bridge', the body is missing, blank "
        "or too large, tags are malformed, or the delivery mode is unknown. Reminders take "
        "'body', not a user message's 'content'. Send the payload in the documented shape.",
    ),
    "RMD-003": (
        "retired",
        "This code is retired and no longer raised; the number is kept so it is never reused "
        "for a different meaning. If a tool reports it, upgrade that tool.",
    ),
    "RMD-004": (
        "discardable reminder without a finite TTL",
        "The reminder sets preserve_on_compact=False explicitly but gives no ttl_turns, so it "
        "is re-sent with every request during normal turns and then vanishes silently at the "
        "next compaction. Give it a ttl_turns if it is meant to be temporary, or "
        "preserve_on_compact=True if it must outlive compaction.",
    ),
    "RMD-005": (
        "unknown propagate value",
        "The propagate option decides whether sub-agents inherit the reminder. Allowed values "
        "are 'all' (every descendant), 'session' (direct children, not re-inherited) and 'none'. "
        "Use one of them.",
    ),
    "RMD-006": (
        "malformed provider reminder spec",
        "A reminder provider's evaluate() returned something that is not a reminder: not a "
        "mapping, no body, or values of the wrong type. A provider returns None, a reminder "
        "mapping, {'reminder': {...}}, or a list of those. The message names the provider; fix "
        "its return value.",
    ),
    "RMD-007": (
        "many reminder providers enabled",
        "More than eight distinct reminder providers are enabled for one session. Each provider "
        "may add text to every request; review the list and disable the ones this agent does "
        "not need (reminders={'providers': ['-id']}).",
    ),
    "RMD-008": (
        "reminder effect from an observational hook",
        "A worker lifecycle hook (worker_spawned, worker_completed, ...) returned a reminder "
        "effect, but worker events only observe and cannot add context. Move the reminder to a "
        "session, tool, step or persona hook.",
    ),
    "RMD-009": (
        "authority above the source's grant",
        "A reminder asked for an authority (contract > corrective > advisory) higher than its "
        "source is granted, e.g. a bridge token limited to 'advisory' sent a 'contract' "
        "reminder. Lower the reminder's authority, omit it to get the grant, or use a token "
        "with a higher max_authority.",
    ),
    "RMD-101": (
        "invalid message",
        "A chat message does not have the provider-neutral shape: role must be system, user, "
        "assistant or tool; content a string or a list of blocks that each have a string "
        "'type'; tool calls {id, name, arguments} with a mapping of arguments; text without "
        "lone surrogates. The message names the path of the bad value (messages[3].role). "
        "Convert provider-shaped histories first (agent_reminders.integrations.from_openai_chat, "
        "from_anthropic) or fix the value.",
    ),
    "RMD-102": (
        "queue operation refused",
        "An injection-queue operation cannot be done: the reminder was already delivered into "
        "the transcript (it can no longer be revoked), the id was never queued in this session, "
        "the id is missing, or the queue is full. The error's reason names which; list the "
        "queue with pending() and retry with a queued id, or wait for the queue to drain.",
    ),
    "RMD-103": (
        "invalid fact or fact store",
        "A fact does not follow the fact.v1 schema (kind and claim non-blank strings, confidence "
        "a number in [0, 1], evidence a list of {kind, ref} strings, tags a list of strings), "
        "or the fact store path cannot be used (not a path, a directory, not a fact store, "
        "unreadable). The message names the field or the file; nothing was stored.",
    ),
    "RMD-104": (
        "invalid configuration",
        "A setting of a session, the agent loop or a reminder provider is unknown or has the "
        "wrong type: an unknown provider id in reminders.providers or reminders.config, an "
        "unknown config key of a canonical provider, a value of the wrong type, or an argument "
        "that conflicts with the session it is given with. The message names the setting and "
        "the known ones; fix the spelling or the value.",
    ),
    "RMD-105": (
        "invalid model script",
        "A ScriptedModel script or response is malformed: the file is not UTF-8 JSON or JSON "
        "Lines, an entry is not an object, has unknown keys, has no message, content or "
        "tool_calls, or its usage or delay_seconds are not numbers of the right kind. The "
        "message names the file, the entry and the key.",
    ),
    "RMD-106": (
        "unreadable saved state",
        "A saved transcript or session state document cannot be read: it is not JSON, its "
        "format or version is not one this library writes, or a stored value is invalid. The "
        "message names the field. Saved state is read strictly so a lifecycle is never changed "
        "silently; restore the document from the library's own to_json output.",
    ),
    "RMD-107": (
        "provider skipped",
        "A reminder provider could not use a resource it needs (for project_facts: a fact "
        "store that is missing, unreadable or not a fact store) and was skipped for this "
        "event. The provider_evaluated event carries the error; the agent goes on without that "
        "provider's reminder. Fix the path or the file named in the message.",
    ),
    "RMD-108": (
        "model backend error",
        "A model backend (OpenAI, Anthropic, an OpenAI-compatible server) failed after the "
        "SDK's own retries and timeout: the message names the provider, the HTTP status and "
        "what the server said (or that no response arrived). Check the model name, the base "
        "URL, the API key in the environment and the server's logs; raise max_retries or "
        "timeout on the client for a flaky network.",
    ),
    "RMD-109": (
        "store cannot be used",
        "A session store (SQLite file, Redis server) cannot be opened or used: the file is not "
        "a database, belongs to another program, was written by a newer version of this "
        "library, or the server cannot be reached. The message names the file or the URL. The "
        "store is never changed or reset by this error; point the command at the right file or "
        "move the foreign one away.",
    ),
    "RMD-110": (
        "bridge connection failed",
        "A BridgeClient (or the remind, pending and revoke commands with --url) could not "
        "talk to an agent-reminders bridge: the server cannot be reached, refused the "
        "WebSocket upgrade (HTTP 401: no or a wrong bearer token, set AGENT_REMINDERS_TOKEN; "
        "HTTP 403: an Origin outside allowed_origins), or the connection or the server process "
        "ended before the reply came. The message names the server and what happened. A "
        "request that got no reply may or may not have been applied: list the queue "
        "(session/pending_injections) before sending it again.",
    ),
    "RMD-111": (
        "unreadable request log",
        "agent-reminders audit (or audit_file / audit_requests) was given input it cannot read "
        "as successive model requests: a line that is not JSON or not a JSON object, an object "
        "that is neither an OpenAI Chat Completions body (messages), an OpenAI Responses body "
        "(input, instructions), an Anthropic Messages body (system, messages, tools) nor a line "
        "of this library's request log (session_id, system, messages), a line of another format "
        "than the rest of the file, no request at all, or a file that does not exist or cannot "
        "be read (the message gives the system's reason). The message names the line. Nothing "
        "is reported from a partly read file: fix or drop that line, or pick the format with "
        "--format.",
    ),
    "RMD-112": (
        "model script ran out",
        "A ScriptedModel (agent_reminders.testing) was asked for more responses than its script "
        "holds: the agent loop made more model requests than the script foresaw (a tool call "
        "answered by another tool call, a reminder that made the model go on). The message "
        "names how many responses the script had and the request that found it empty. Add "
        "responses to the script, or pass loop=True to start it over.",
    ),
}


def _restore(
    cls: type[AgentRemindersError], code: str, message: str, state: dict[str, Any]
) -> AgentRemindersError:
    err = cls.__new__(cls)
    Exception.__init__(err, f"{code}: {message}")
    err.__dict__.update(state)
    return err


class AgentRemindersError(Exception):
    """The root of every error this library raises for bad input or a refused operation.

    Attributes:
        code: The stable diagnostic code, e.g. ``"RMD-001"`` (see :func:`explain`). A family
            whose errors all share one code has it as a class attribute
            (``QueueError.code == "RMD-102"``), so a raise site names the class, never the code.
        message: What was wrong (naming the bad key or value) and how to fix it.

    ``str(err)`` is ``"<code>: <message>"``. Subclasses also subclass the builtin exception a
    caller would expect (``ValueError``, ``RuntimeError`` …), so ``except ValueError`` keeps
    working. A refusal a bridge server sends back is an ``RpcError``
    (``agent_reminders.bridge``), also under this root; its ``code`` is the JSON-RPC code.

    Example:
        >>> err = ReminderError("RMD-001", "unknown option(s): colour")
        >>> isinstance(err, AgentRemindersError), isinstance(err, ValueError), err.code
        (True, True, 'RMD-001')
    """

    code: str
    message: str

    def __init__(self, code: str, message: str) -> None:
        if code not in CODES:
            raise KeyError(f"unknown diagnostic code {code!r}")
        self.code = code
        self.message = message
        super().__init__(f"{code}: {message}")

    def explain(self) -> str:
        """The cause-and-fix paragraph of this error's code."""
        return explain(self.code)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore, (type(self), self.code, self.message, dict(self.__dict__)))


# code -> the subclass ReminderError(code, message) makes (filled as the subclasses are made)
_REMINDER_BY_CODE: dict[str, type[ReminderError]] = {}
# reason -> the subclass of QueueError raised for it
_QUEUE_BY_REASON: dict[str, type[QueueError]] = {}


class ReminderError(AgentRemindersError, ValueError):
    """A reminder (options, a bridge payload, a provider result, a stored reminder) was invalid.

    ``ReminderError(code, message)`` makes the subclass of that code where there is one
    (``RMD-001`` :class:`ReminderOptionError`, ``RMD-005`` :class:`PropagateError`,
    ``RMD-006`` :class:`ProviderResultError`, ``RMD-008`` :class:`ObservationalHookError`,
    ``RMD-009`` :class:`AuthorityError`), so ``except AuthorityError`` catches every
    ``RMD-009`` whichever way it was made. The other codes (``RMD-002`` …) stay a plain
    ``ReminderError``.

    Example:
        >>> str(ReminderError("RMD-001", "unknown option(s): colour"))
        'RMD-001: unknown option(s): colour'
        >>> type(ReminderError("RMD-009", "authority 'contract' is above the grant")).__name__
        'AuthorityError'
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> ReminderError:
        if cls is ReminderError:
            code = args[0] if args else kwargs.get("code")
            if isinstance(code, str):
                cls = _REMINDER_BY_CODE.get(code, cls)
        return super().__new__(cls)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("code")
        if isinstance(own, str):
            _REMINDER_BY_CODE.setdefault(own, cls)

    def __init__(self, code: str, message: str) -> None:
        super().__init__(code, message)


class _CodedReminderError(ReminderError):
    """A ``ReminderError`` whose code is its class's: raised as ``Subclass(message)`` (also
    made by ``ReminderError(code, message)``, which passes the code along)."""

    def __init__(self, message: str, *made_as: str) -> None:
        if made_as:  # ReminderError(code, message): the code picked this class
            message = made_as[0]
        super().__init__(type(self).code, message)


class ReminderOptionError(_CodedReminderError):
    """An unknown option key or an invalid option value in a strict producer API, or an
    invalid argument of one (``RMD-001``)."""

    code = "RMD-001"


class PropagateError(_CodedReminderError):
    """An unknown ``propagate`` value (``RMD-005``)."""

    code = "RMD-005"


class ProviderResultError(_CodedReminderError):
    """A reminder provider returned a malformed reminder spec (``RMD-006``)."""

    code = "RMD-006"


class ObservationalHookError(_CodedReminderError):
    """An observational hook (worker lifecycle) returned a reminder effect (``RMD-008``)."""

    code = "RMD-008"


class AuthorityError(_CodedReminderError):
    """A reminder asked for an authority above its source's grant (``RMD-009``)."""

    code = "RMD-009"


_PAYLOAD_CODE = "RMD-002"


def payload_error(message: str) -> ReminderError:
    """The ``RMD-002`` error (an invalid bridge or queue reminder payload).

    It stays a plain :class:`ReminderError` (no subclass of its own), as it always was.

    Example:
        >>> str(payload_error("body is blank"))
        'RMD-002: body is blank'
    """
    return ReminderError(_PAYLOAD_CODE, message)


class MessageError(AgentRemindersError, ValueError):
    """A chat message or a message history does not have the neutral shape (``RMD-101``)."""

    code = "RMD-101"

    def __init__(self, message: str) -> None:
        super().__init__(type(self).code, message)


class QueueErrorReason(StrEnum):
    """Why a queue operation was refused: the words :attr:`QueueError.reason` holds (a
    ``StrEnum``: ``QueueErrorReason.QUEUE_FULL == "queue_full"``)."""

    ALREADY_DELIVERED = "already_delivered"
    UNKNOWN_REMINDER_ID = "unknown_reminder_id"
    MISSING_REMINDER_ID = "missing_reminder_id"
    QUEUE_FULL = "queue_full"
    UNKNOWN_SESSION = "unknown_session"
    SESSION_EXISTS = "session_exists"


class QueueError(AgentRemindersError, ValueError):
    """A queue operation that cannot be done (``RMD-102``).

    ``reason`` is a stable machine-readable word (a ``str``; compare it with the members of
    :class:`QueueErrorReason`): ``already_delivered``, ``unknown_reminder_id``,
    ``missing_reminder_id`` or ``queue_full`` (the stores add ``unknown_session`` and
    ``session_exists``). Each reason has its subclass (:class:`QueueFullError` …) to catch or
    raise it by type.
    """

    code = "RMD-102"
    reason: str

    def __init__(self, reason: str, message: str) -> None:
        self.reason = str(reason)  # the word itself, as it always was
        super().__init__(type(self).code, message)


class _ReasonedQueueError(QueueError):
    """A ``QueueError`` whose reason is its class's: raised as ``Subclass(message)``."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _QUEUE_BY_REASON.setdefault(cls.reason, cls)

    def __init__(self, message: str) -> None:
        super().__init__(type(self).reason, message)


class QueueFullError(_ReasonedQueueError):
    """The session's queue holds ``max_pending`` items already (``reason`` ``queue_full``)."""

    reason = QueueErrorReason.QUEUE_FULL


class AlreadyDeliveredError(_ReasonedQueueError):
    """The reminder was drained into the transcript and can no longer be revoked
    (``reason`` ``already_delivered``)."""

    reason = QueueErrorReason.ALREADY_DELIVERED


class UnknownReminderIdError(_ReasonedQueueError):
    """The id was never queued in this session (``reason`` ``unknown_reminder_id``)."""

    reason = QueueErrorReason.UNKNOWN_REMINDER_ID


class MissingReminderIdError(_ReasonedQueueError):
    """The reminder id is missing or blank (``reason`` ``missing_reminder_id``)."""

    reason = QueueErrorReason.MISSING_REMINDER_ID


class FactError(AgentRemindersError, ValueError):
    """A fact does not follow ``fact.v1``, or a fact store cannot be used (``RMD-103``)."""

    code = "RMD-103"

    def __init__(self, message: str) -> None:
        super().__init__(type(self).code, message)


class ConfigError(AgentRemindersError, ValueError):
    """A session, loop or provider setting is unknown or has a wrong value (``RMD-104``)."""

    code = "RMD-104"

    def __init__(self, message: str) -> None:
        super().__init__(type(self).code, message)


class ScriptError(AgentRemindersError, ValueError):
    """A model script (``ScriptedModel``) or a scripted response is malformed (``RMD-105``)."""

    code = "RMD-105"

    def __init__(self, message: str) -> None:
        super().__init__(type(self).code, message)


class StateError(AgentRemindersError, ValueError):
    """A saved transcript or session state document cannot be read (``RMD-106``)."""

    code = "RMD-106"

    def __init__(self, message: str) -> None:
        super().__init__(type(self).code, message)


class ProviderSkippedError(AgentRemindersError, RuntimeError):
    """Raised by a provider's ``evaluate`` when a resource it needs cannot be used (``RMD-107``).

    The session reports it in the provider's ``provider_evaluated`` event (``fired: false``,
    ``error``) and goes on: a missing or unreadable fact store never stops an agent loop.
    """

    code = "RMD-107"

    def __init__(self, message: str) -> None:
        super().__init__(type(self).code, message)


class ModelError(AgentRemindersError, RuntimeError):
    """A model backend failed after the SDK's own retries (``RMD-108``).

    Attributes:
        provider: ``"openai"``, ``"anthropic"`` …
        status: The HTTP status code, or ``None`` when no response arrived (connection,
            timeout).
        server_message: What the server said, when it said something.
    """

    code = "RMD-108"
    provider: str
    status: int | None
    server_message: str | None

    def __init__(
        self,
        provider: str,
        message: str,
        *,
        status: int | None = None,
        server_message: str | None = None,
    ) -> None:
        self.provider = provider
        self.status = status
        self.server_message = server_message
        super().__init__(type(self).code, message)


class StoreError(AgentRemindersError, RuntimeError):
    """A store cannot be opened or used: a corrupt or foreign file, a schema from a newer
    version, an unreachable server (``RMD-109``). The message names the file or URL; the
    store is left unchanged."""

    code = "RMD-109"

    def __init__(self, message: str) -> None:
        super().__init__(type(self).code, message)


class BridgeConnectionError(AgentRemindersError, ConnectionError):
    """A bridge client lost or could not make its connection (``RMD-110``): the server is
    unreachable, refused the upgrade, or closed before a reply. Every request still waiting
    fails with it; none is left hanging.

    Attributes:
        status: The HTTP status of a refused WebSocket upgrade (401: no or a wrong token;
            403: an Origin not allowed), else ``None``.
    """

    code = "RMD-110"
    status: int | None

    def __init__(self, message: str, *, status: int | None = None) -> None:
        self.status = status
        super().__init__(type(self).code, message)


class AuditError(AgentRemindersError, ValueError):
    """Input that ``audit`` cannot read as successive model requests (``RMD-111``).

    Attributes:
        line: The 1-based line of the file (or the 1-based position in the iterable of
            requests) that is wrong, or ``None`` when the input as a whole is (no request).
    """

    code = "RMD-111"
    line: int | None

    def __init__(self, message: str, *, line: int | None = None) -> None:
        self.line = line
        super().__init__(type(self).code, message)


class ScriptExhaustedError(AgentRemindersError, RuntimeError):
    """The scripted model was called more often than it has responses (``RMD-112``).

    Importable from ``agent_reminders.testing``; a ``RuntimeError`` as well.
    """

    code = "RMD-112"

    def __init__(self, message: str) -> None:
        super().__init__(type(self).code, message)


def queue_error_class(reason: str) -> type[QueueError]:
    """The subclass of :class:`QueueError` for ``reason`` (``"queue_full"`` →
    :class:`QueueFullError`), else ``QueueError`` itself.

    Example:
        >>> queue_error_class("already_delivered").__name__
        'AlreadyDeliveredError'
    """
    return _QUEUE_BY_REASON.get(reason, QueueError)


def family_for_code(code: str) -> type[AgentRemindersError] | None:
    """The error class whose errors carry ``code`` (``"RMD-102"`` → :class:`QueueError`),
    or ``None`` for a code no class raises (lint codes, retired ones, unknown ones).

    Example:
        >>> family_for_code("RMD-009").__name__, family_for_code("RMD-002").__name__
        ('AuthorityError', 'ReminderError')
        >>> family_for_code("RMD-004") is None
        True
    """
    return _FAMILIES.get(code)


# THE table from a code to its class; a code's value is written once, in its class.
_FAMILIES: dict[str, type[AgentRemindersError]] = {
    _PAYLOAD_CODE: ReminderError,
    **_REMINDER_BY_CODE,
    **{
        cls.code: cls
        for cls in (
            MessageError,
            QueueError,
            FactError,
            ConfigError,
            ScriptError,
            StateError,
            ProviderSkippedError,
            ModelError,
            StoreError,
            BridgeConnectionError,
            AuditError,
            ScriptExhaustedError,
        )
    },
}


class MissingExtraError(ImportError):
    """An optional package a feature needs is not installed (made by :func:`missing_extra`).

    Not an error of this library's input, so it has no RMD code: the message says what is
    missing and the ``pip install`` that brings it.

    Attributes:
        name: The missing package (as :class:`ImportError` has it).
        extra: The ``agent-reminders`` extra that installs it.
    """

    extra: str


def missing_extra(package: str, extra: str, feature: str) -> MissingExtraError:
    """The error ``feature`` raises when the optional ``package`` cannot be imported.

    Every such message is worded here, so each reads the same: what needs what, then the one
    command that fixes it.

    Args:
        package: The package that is missing, as a person would name it.
        extra: The ``agent-reminders`` extra that installs it.
        feature: What needs it (a module, a class, a command).

    Example:
        >>> print(missing_extra("redis", "redis", "RedisStore"))
        RedisStore needs redis, which is not installed: pip install "agent-reminders[redis]"
    """
    install = f'pip install "agent-reminders[{extra}]"'
    err = MissingExtraError(
        f"{feature} needs {package}, which is not installed: {install}", name=package
    )
    err.extra = extra
    return err


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``"did you mean 'x'?"`` for the choice ``word`` most likely stands for (a choice it
    begins, or a close spelling), else ``""``: a hint for an "unknown key" error.

    Example:
        >>> did_you_mean("ttl", ["body", "ttl_turns"])
        "did you mean 'ttl_turns'?"
        >>> did_you_mean("contxt_window", ["context_window", "hooks"])
        "did you mean 'context_window'?"
    """
    options = sorted(choices)
    lowered = word.lower()
    found = [c for c in options if len(lowered) >= 2 and c.lower().startswith(lowered)]
    found = found or difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return f"did you mean {found[0]!r}?" if found else ""


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """A lint finding: ``code``, ``severity`` (``error``/``warning``/``info``) and ``message``."""

    code: str
    severity: Severity
    message: str


def _normalize_code(code: str) -> str:
    if not isinstance(code, str):
        raise TypeError(f"code must be a str, not {type(code).__name__}")
    text = code.strip().upper()
    if text.startswith("HARN-"):
        text = text[len("HARN-") :]
    return text


def explain(code: str) -> str:
    """Return a paragraph on the cause and the fix for a diagnostic code.

    Accepts any letter case and an optional ``HARN-`` prefix (``"harn-rmd-004"``).

    Raises:
        KeyError: the code is not in the table: ``RMD-001`` … ``RMD-009`` for reminders and
            the library's own ``RMD-101`` … for everything else (docs/core.md, "Errors").

    Example:
        >>> explain("rmd-005").startswith("RMD-005")
        True
    """
    key = _normalize_code(code)
    if key not in CODES:
        known = ", ".join(CODES)
        raise KeyError(f"unknown diagnostic code {code!r}; known codes: {known}")
    title, text = CODES[key]
    return f"{key} ({title}): {text}"
