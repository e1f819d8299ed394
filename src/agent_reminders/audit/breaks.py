"""Prefix breaks: where a request stops extending the previous one of its session, and why
(docs/audit.md, "What is measured")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from .._core.channels import is_downgrade
from .._core.envelope import check_append_only
from .readers import PromptSequence

__all__ = ["AuditBreak", "BreakReason", "Breaks", "explain_break", "first_difference"]

BreakReason = Literal[
    "message_changed", "messages_removed", "system_changed", "tools_changed", "channel_downgraded"
]


@dataclass(frozen=True, slots=True)
class AuditBreak:
    """A request that does not extend the one before it (of its session, in a request log).

    Attributes:
        request: The request's index in the input, from 0.
        message: The first message that differs, numbered from 0 after the system prompt;
            ``-1`` when the tools or the system prompt changed.
        reason: ``message_changed``, ``messages_removed`` (the message list is a strict
            prefix of the previous one), ``system_changed``, ``tools_changed`` or
            ``channel_downgraded`` (a mid-conversation system entry sent as a user message
            from this request on: the API's placement rules no longer allow it there).
        session_id: The request log's session (other formats: ``None``).
        line: The line of the file it was read from (``audit_requests``: ``None``).
    """

    request: int
    message: int
    reason: BreakReason
    session_id: str | None = None
    line: int | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"request", "message", "reason"}``, as in the ``--json`` object."""
        return {"request": self.request, "message": self.message, "reason": self.reason}


def explain_break(brk: AuditBreak, *, compaction: bool = False, only: bool = False) -> str:
    """What a break means, in plain words, for a person reading the report.

    ``compaction``: ``brk`` is at the first request after a compaction the caller knows of
    (the demo does); ``only``: it is the one such break of the report.

    Example:
        >>> explain_break(AuditBreak(request=3, message=-1, reason="system_changed"))
        'the system prompt changed: the whole prompt after it is prefilled again'
        >>> explain_break(AuditBreak(14, 0, "message_changed"), compaction=True, only=True)
        'the one intended break: compaction at request 14'
    """
    k = brk.message
    if compaction:
        return f"{'the one' if only else 'an'} intended break: compaction at request {brk.request}"
    if brk.reason == "message_changed" and k == 0:
        return (
            "message 0 changed: the history was rewritten (a compaction does this on purpose; "
            "anything else breaks the provider's cache)"
        )
    return {
        "message_changed": f"message {k} changed: an earlier message was edited after it was "
        "sent, so the provider's cache holds only what came before it",
        "messages_removed": f"messages removed from message {k} on: this request repeats only "
        "the start of the one before it (a retry or a rewind does this)",
        "system_changed": "the system prompt changed: the whole prompt after it is prefilled again",
        "tools_changed": "the tool list changed: it comes before the messages, so the whole "
        "prompt is prefilled again",
        "channel_downgraded": f"message {k} went out in another role: a system note in the "
        "middle of the conversation became a user message (the API no longer allowed it "
        "there), so the cache holds only what came before it",
    }[brk.reason]


def first_difference(old: PromptSequence, new: PromptSequence) -> tuple[int, BreakReason] | None:
    """Where ``new`` stops extending ``old``: ``(message, reason)``, ``message`` ``-1`` for the
    tools or the system prompt; ``None`` when ``new`` begins with all of ``old``.

    Example:
        >>> from agent_reminders.audit.readers import RequestReader
        >>> read = RequestReader().read
        >>> a = read({"messages": [{"role": "user", "content": "hi"}]}, "a")
        >>> b = read({"messages": [{"role": "user", "content": "yo"}]}, "b")
        >>> first_difference(a, b), first_difference(a, a)
        ((0, 'message_changed'), None)
    """
    if (None if old.tools is None else old.tools.digest) != (
        None if new.tools is None else new.tools.digest
    ):
        return -1, "tools_changed"
    old_system = "".join(p.digest.hex() for p in old.system)
    system = "".join(p.digest.hex() for p in new.system)
    old_messages = [p.digest for p in old.messages]
    messages = [p.digest for p in new.messages]
    if old_system == system and messages[: len(old_messages)] == old_messages:
        return None
    # The rule (and its reasons) lives in check_append_only; it compares the hashes.
    found = check_append_only(
        [
            {"system": old_system, "messages": [{"h": h.hex()} for h in old_messages]},
            {"system": system, "messages": [{"h": h.hex()} for h in messages]},
        ]
    )[0]
    message = -1 if found.message_index is None else found.message_index
    reason: BreakReason = found.reason
    if reason == "message_changed" and is_downgrade(
        old.messages[message].value, new.messages[message].value
    ):
        reason = "channel_downgraded"
    return message, reason


class Breaks:
    """Compares each request with the previous one of its session (``None``: every request
    of a file that is not a request log) and names the first difference."""

    def __init__(self) -> None:
        self._last: dict[str | None, PromptSequence] = {}

    def check(self, index: int, line: int | None, seq: PromptSequence) -> AuditBreak | None:
        previous = self._last.get(seq.session_id)
        self._last[seq.session_id] = seq
        found = None if previous is None else first_difference(previous, seq)
        if found is None:
            return None
        message, reason = found
        return AuditBreak(
            request=index, message=message, reason=reason, session_id=seq.session_id, line=line
        )
