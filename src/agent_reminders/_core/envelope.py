"""Projection, append-only commit of the envelope, and the append-only checker."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from .errors import ReminderError
from .events import EventLog, Kind
from .fields import FIRED_EVENT_FIELDS, event_fields
from .lifecycle import best_by_key, check_log, check_transcript, check_turn, report_invalid
from .records import AUTHORITY_RANK, Message, Reminder
from .render import EnvelopeStyle, check_style, render_envelope
from .transcript import Transcript

__all__ = [
    "Committed",
    "InstructionsMode",
    "PrefixBreak",
    "check_append_only",
    "commit_directives",
    "project",
]

InstructionsMode = Literal["auto", "always", "never"]


def check_instructions(value: object, name: str = "instructions") -> InstructionsMode:
    """Validate an instructions mode (``auto``, ``always``, ``never``)."""
    if value == "auto" or value == "always" or value == "never":
        return value
    raise ReminderError(
        "RMD-001", f"{name} must be one of 'auto', 'always', 'never'; got {value!r}"
    )


@dataclass(frozen=True, slots=True)
class Committed:
    """Result of :func:`commit_directives`; ``message`` is ``None`` when nothing was new."""

    transcript: Transcript
    message: Message | None
    fired: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PrefixBreak:
    """Where request ``request_index`` stops extending request ``request_index - 1``.

    ``message_index`` is the first differing message (``None`` when the system prompt changed);
    ``reason`` is ``"message_changed"``, ``"messages_removed"`` or ``"system_changed"``.
    """

    request_index: int
    message_index: int | None
    # Extra detail; equality is by position alone, so PrefixBreak(3, 0) matches any reason.
    reason: Literal["message_changed", "messages_removed", "system_changed"] = field(
        default="message_changed", compare=False
    )


def _keep_best(items: list[Reminder], key_of: Callable[[Reminder], str | None]) -> list[Reminder]:
    best = best_by_key(items, key_of)
    return [r for r in items if (k := key_of(r)) is None or best[k] is r]


def project(reminders: Iterable[Reminder]) -> list[Reminder]:
    """The envelope projection of pending reminders (queue order in, envelope order out).

    1. per explicit ``dedupe_key`` the highest authority wins, ties to the later one;
    2. survivors whose whitespace-normalized bodies are equal collapse by the same rule;
    3. order by authority (contract, corrective, advisory), then queue order.
    """
    items = list(reminders)
    for r in items:
        if not isinstance(r, Reminder):
            raise TypeError(f"project() takes Reminder values, not {type(r).__name__}")
    by_key = _keep_best(items, lambda r: r.dedupe_key)
    by_body = _keep_best(by_key, lambda r: " ".join(r.body.split()))
    return sorted(by_body, key=lambda r: AUTHORITY_RANK[r.authority])


def commit_directives(
    transcript: Transcript,
    *,
    turn: int,
    style: EnvelopeStyle = "context_directives",
    instructions: InstructionsMode = "auto",
    event_log: EventLog | None = None,
) -> Committed:
    """Commit the envelope for one model request as a new trailing user message.

    Projects the pending reminders, drops every directive already committed (its id is in some
    message's ``directive_ids`` or, for history without that key, its rendered text occurs in
    a message), and appends one envelope with the rest. Nothing new → the transcript is
    returned as is with ``message=None``. Events: one ``fired`` per directive, then one
    ``iteration_summary``. ``instructions="auto"`` includes :data:`ENVELOPE_INSTRUCTIONS` only
    when no message holds it yet.
    """
    transcript = check_transcript(transcript)
    turn = check_turn(turn)
    checked_style = check_style(style)
    check_instructions(instructions)
    log = check_log(event_log)
    transcript = report_invalid(transcript, log)

    fresh = [r for r in project(transcript.reminders) if not transcript._is_committed(r)]
    if not fresh:
        return Committed(transcript=transcript, message=None, fired=())
    with_instructions = instructions == "always" or (
        instructions == "auto" and not transcript._has_instructions()
    )
    text = render_envelope(fresh, style=checked_style, instructions=with_instructions)
    ids = [r.id for r in fresh]
    message: Message = {"role": "user", "content": text, "directive_ids": ids}
    result = transcript._append_owned(message)
    if log is not None:
        for r in fresh:
            log.lifecycle(
                Kind.FIRED,
                result.id,
                {
                    **event_fields(r, FIRED_EVENT_FIELDS),
                    "turn_number": turn,
                    "rendered_role": "user",
                },
            )
        log.lifecycle(
            Kind.ITERATION_SUMMARY,
            result.id,
            {
                "turn_number": turn,
                "count": len(fresh),
                "body_bytes": sum(len(r.body.encode()) for r in fresh),
                "rendered_bytes": len(text.encode()),
                "by_source": dict(Counter(r.source.value for r in fresh)),
            },
        )
    return Committed(
        transcript=result,
        message={"role": "user", "content": text, "directive_ids": list(ids)},
        fired=tuple(ids),
    )


def _serialize(message: object) -> str:
    return json.dumps(message, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _split(request: object, index: int) -> tuple[str | None, list[str]]:
    where = f"requests[{index}]"
    if isinstance(request, Mapping):
        messages = request.get("messages")
        system = request.get("system")
        system_text = None if system is None else _serialize(system)
        where += ".messages"
    else:
        messages, system_text = request, None
    if not isinstance(messages, Sequence) or isinstance(messages, str | bytes):
        raise TypeError(
            f"requests[{index}] must be a list of messages or a mapping with 'messages'"
        )
    for position, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise TypeError(
                f"{where}[{position}] must be a message mapping, not {type(message).__name__}"
            )
    return system_text, [_serialize(m) for m in messages]


def check_append_only(requests: Iterable[object]) -> list[PrefixBreak]:
    """Find every place where a request does not begin with the previous request.

    Each request is a list of messages, or a mapping with ``messages`` (and optionally
    ``system``, compared as well). Messages are compared by their canonical JSON.

    Example:
        >>> a = [{"role": "user", "content": "hi"}]
        >>> check_append_only([a, a + [{"role": "assistant", "content": "yo"}]])
        []
    """
    breaks: list[PrefixBreak] = []
    previous: tuple[str | None, list[str]] | None = None
    for index, request in enumerate(requests):
        current = _split(request, index)
        if previous is not None:
            (old_system, old), (new_system, new) = previous, current
            if old_system != new_system:
                breaks.append(
                    PrefixBreak(request_index=index, message_index=None, reason="system_changed")
                )
            else:
                for position, serialized in enumerate(old):
                    if position >= len(new):
                        breaks.append(
                            PrefixBreak(
                                request_index=index,
                                message_index=position,
                                reason="messages_removed",
                            )
                        )
                        break
                    if new[position] != serialized:
                        breaks.append(
                            PrefixBreak(
                                request_index=index,
                                message_index=position,
                                reason="message_changed",
                            )
                        )
                        break
        previous = current
    return breaks
