"""The append-only commit: one envelope of the pending reminders appended to a transcript as a
new trailing message.

Builds on :mod:`.envelope` (rendering, projection) and :mod:`.transcript` (the value it
commits into); neither of those imports this module.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .channels import Channel, ChannelSetting, check_channel
from .envelope import (
    ENVELOPE_INSTRUCTIONS,
    EnvelopeStyle,
    InstructionsMode,
    check_instructions,
    check_nonce,
    check_style,
    envelope_text,
    lasts_one_turn,
    message_text,
    project_wanted,
    spoken_by_person,
)
from .errors import ReminderOptionError
from .events import EventLog, Kind, check_log
from .fields import FIRED_EVENT_FIELDS, event_fields
from .frozen import fast_init
from .messages import copy_json
from .records import Message, Reminder, check_turn
from .transcript import Transcript, check_transcript

__all__ = ["Committed", "commit_directives", "fresh_directives"]


@fast_init
@dataclass(frozen=True, slots=True)
class Committed:
    """Result of :func:`commit_directives`; ``message`` is ``None`` when nothing was new."""

    transcript: Transcript
    message: Message | None
    fired: tuple[str, ...]


def commit_directives(
    transcript: Transcript,
    *,
    turn: int,
    style: EnvelopeStyle = "context_directives",
    instructions: InstructionsMode = "auto",
    event_log: EventLog | None = None,
    channel: ChannelSetting = "user",
    nonce: str | None = None,
    extra_blocks: Sequence[Mapping[str, Any]] = (),
    clear_at: bool = False,
) -> Committed:
    """Commit the envelope for one model request as a new trailing message.

    Projects the pending reminders, drops every directive already committed (its id is in some
    message's ``directive_ids`` or, for history without that key, its rendered text occurs in
    a message), and appends one envelope with the rest. Nothing new → the transcript is
    returned as is with ``message=None``. Events: one ``fired`` per directive, then one
    ``iteration_summary``. ``instructions="auto"`` includes :data:`ENVELOPE_INSTRUCTIONS` only
    when no message holds it yet.

    ``channel`` is the role of the new message: ``"user"``, or ``"system"`` (a mid-conversation
    system instruction); ``"auto"`` means ``"user"`` here, where no model is known (a
    ``Session`` resolves it through the capability table first). An envelope spoken by the
    person (every directive ``role_hint="user_block"``) is always a ``user`` message. With a
    ``nonce`` the envelope's opening tag carries it (see :func:`render_envelope`).
    ``extra_blocks`` (tool-change blocks, system channel only) follow the envelope's text in
    the message's content; with no new directive they make a message of their own.
    ``clear_at=True`` says the model drops a system entry whose directives all last one turn
    once that turn is over (the ``clear_at`` beta): under ``"auto"``, instructions held only
    by such entries no longer count, so the next envelope carries them again.
    """
    transcript = check_transcript(transcript)
    turn = check_turn(turn)
    checked_style = check_style(style)
    check_instructions(instructions)
    role: Channel = "system" if check_channel(channel) == "system" else "user"
    nonce = check_nonce(nonce)
    log = check_log(event_log)
    transcript = transcript.report_invalid(log)

    blocks = [copy_json(b) for b in extra_blocks]
    if blocks and role != "system":
        raise ReminderOptionError("extra_blocks go on the system channel only")
    fresh = fresh_directives(transcript)
    if not fresh:
        if not blocks:
            return Committed(transcript=transcript, message=None, fired=())
        result = transcript.append_envelope(blocks, [], "system")
        return Committed(
            transcript=result,
            message={"role": "system", "content": blocks, "directive_ids": []},
            fired=(),
        )
    with_instructions = instructions == "always" or (
        instructions == "auto" and not _instructions_in_view(transcript, clear_at)
    )
    text = envelope_text(fresh, checked_style, with_instructions, nonce)
    if role == "system" and spoken_by_person(fresh):
        role = "user"  # the person's own words are never sent as the runtime's
    ids = [r.id for r in fresh]
    content: str | list[dict[str, Any]] = (
        [{"type": "text", "text": text}, *blocks] if blocks and role == "system" else text
    )
    result = transcript.append_envelope(content, ids, role)
    if blocks and role == "user":  # the person's envelope; the tool change still goes as system
        result = result.append_envelope(blocks, [], "system")
    if log is not None:
        _log_commit(log, result.id, fresh, turn, role, text)
    return Committed(
        transcript=result,
        message={"role": role, "content": content, "directive_ids": list(ids)},
        fired=tuple(ids),
    )


def fresh_directives(transcript: Transcript) -> list[Reminder]:
    """The directives the next envelope would carry: the projection of the pending reminders,
    less those a message already holds (in envelope order)."""
    # Only an entry whose id is in no message can be new; none such: skip the projection.
    uncommitted = transcript.uncommitted_ids
    if not uncommitted:
        return []
    return [
        current
        for e in project_wanted(transcript.pending, uncommitted)
        if not transcript.is_committed(current := transcript.current(e))
    ]


def _instructions_in_view(transcript: Transcript, clear_at: bool) -> bool:
    """Whether a message the model still sees holds :data:`ENVELOPE_INSTRUCTIONS`; with
    ``clear_at``, a system entry that lasts one turn has left the model's view."""
    if not transcript.has_instructions():
        return False
    if not clear_at:
        return True
    for message in transcript.message_view():  # oldest first: the carrier is near the start
        text = message_text(message)
        if ENVELOPE_INSTRUCTIONS in text and not (
            message["role"] == "system" and lasts_one_turn(text)
        ):
            return True
    return False


def _log_commit(
    log: EventLog, session_id: str, fresh: list[Reminder], turn: int, role: str, text: str
) -> None:
    """One ``fired`` event per committed directive, then the turn's ``iteration_summary``."""
    for r in fresh:
        log.lifecycle(
            Kind.FIRED,
            session_id,
            {
                **event_fields(r, FIRED_EVENT_FIELDS),
                "turn_number": turn,
                "rendered_role": role,
            },
        )
    by_source: dict[str, int] = {}
    for r in fresh:
        source = str.__str__(r.source)
        by_source[source] = by_source.get(source, 0) + 1
    log.lifecycle(
        Kind.ITERATION_SUMMARY,
        session_id,
        {
            "turn_number": turn,
            "count": len(fresh),
            "body_bytes": sum(len(r.body.encode()) for r in fresh),
            "rendered_bytes": len(text.encode()),
            "by_source": by_source,
        },
    )
