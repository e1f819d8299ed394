"""Errors, diagnostics and the table of RMD codes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["CODES", "Diagnostic", "ReminderError", "Severity", "explain"]

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
}


class ReminderError(ValueError):
    """A reminder-related input was invalid.

    Attributes:
        code: The stable diagnostic code, e.g. ``"RMD-001"``.
        message: What was wrong and how to fix it.

    Example:
        >>> str(ReminderError("RMD-001", "unknown option(s): colour"))
        'RMD-001: unknown option(s): colour'
    """

    def __init__(self, code: str, message: str) -> None:
        if code not in CODES:
            raise KeyError(f"unknown diagnostic code {code!r}")
        self.code = code
        self.message = message
        super().__init__(f"{code}: {message}")

    def __reduce__(self) -> tuple[type[ReminderError], tuple[str, str]]:
        return (type(self), (self.code, self.message))


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
        KeyError: the code is not one of ``RMD-001`` … ``RMD-009``.

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
