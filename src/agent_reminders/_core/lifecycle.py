"""Pure lifecycle transforms over a Transcript: inject, clear, post_turn, compact, handoff."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .envelope import Pending, best_by_key
from .errors import ReminderOptionError
from .events import EventLog, Kind, check_log
from .fields import (
    INHERITED_EVENT_FIELDS,
    INJECTED_EVENT_FIELDS,
    ParsedOptions,
    check_field,
    coerce_enum,
    event_fields,
    parse_reminder_options,
    parse_selector,
)
from .frozen import fast_init
from .ids import IdFactory, new_id
from .messages import validate_message
from .records import (
    Message,
    Propagate,
    Reminder,
    Source,
    check_turn,
    evolve_unchecked,
    reminder_unchecked,
)
from .transcript import Transcript, check_transcript
from .wording import lint_body

__all__ = [
    "Cleared",
    "Compacted",
    "Compactor",
    "Injected",
    "PostTurn",
    "clear_reminders",
    "compact",
    "handoff_reminders",
    "inject_reminder",
    "insert_checked",
    "insert_reminder",
    "post_turn",
    "reminder_from_options",
    "resolve_reminders",
    "seed_inherited",
]

Compactor = Callable[[tuple[Message, ...], tuple[Reminder, ...]], "str | Sequence[Message]"]


@fast_init
@dataclass(frozen=True, slots=True)
class Injected:
    """Result of :func:`inject_reminder`.

    Attributes:
        transcript: The transcript after the insert.
        reminder_id: The reminder's id.
        deduped_count: How many pending reminders with its ``dedupe_key`` it replaced.
        dropped: Why a session's cadence refused it (``first_after``, ``cooldown``,
            ``max_fires``): then nothing was queued. ``None``: it was queued.
    """

    transcript: Transcript
    reminder_id: str
    deduped_count: int
    dropped: str | None = None


@fast_init
@dataclass(frozen=True, slots=True)
class Cleared:
    """Result of :func:`clear_reminders`."""

    transcript: Transcript
    removed_count: int


@fast_init
@dataclass(frozen=True, slots=True)
class PostTurn:
    """Result of :func:`post_turn`."""

    transcript: Transcript
    expired_count: int
    decremented_count: int
    remaining_count: int


@dataclass(frozen=True, slots=True)
class Compacted:
    """Result of :func:`compact`; ``archived_messages`` counts the messages compacted away."""

    transcript: Transcript
    summary: str | None
    archived_messages: int
    expired_count: int
    deduped_count: int
    preserved_count: int


def _expired(
    log: EventLog,
    transcript: Transcript,
    reminder: Reminder,
    reason: str,
    *,
    turn: int | None,
    boundary: str | None,
) -> None:
    log.lifecycle(
        Kind.EXPIRED,
        transcript.id,
        {
            "reminder_id": reminder.id,
            "reason": reason,
            "ttl_turns_before": reminder.ttl_turns,
            "expired_at_turn": turn,
            "expired_at_boundary": boundary,
        },
    )


def _deduped(
    log: EventLog,
    transcript: Transcript,
    replaced: list[Reminder],
    replacing: Reminder,
    boundary: str | None = None,
) -> None:
    payload: dict[str, Any] = {
        "replaced_id": replaced[-1].id,
        "replacing_id": replacing.id,
        "replaced_ids": [r.id for r in replaced],
        "dedupe_key": replacing.dedupe_key,
        "dropped_count": len(replaced),
    }
    if boundary is not None:
        payload["boundary"] = boundary
    log.lifecycle(Kind.DEDUPED, transcript.id, payload)


def injected_payload(reminder: Reminder) -> dict[str, Any]:
    """The reminder fields of an ``injected`` record (docs/core.md, "Lifecycle events")."""
    return event_fields(reminder, INJECTED_EVENT_FIELDS)


def insert_reminder(
    transcript: Transcript, reminder: Reminder, *, event_log: EventLog | None = None
) -> Injected:
    """Queue an already-built reminder, replacing every pending one with its dedupe key.

    The building block of :func:`inject_reminder` for producers that construct the
    :class:`Reminder` themselves (a bridge payload with its own id, an inherited copy).
    Events: ``deduped`` (when any were replaced), then ``injected``.
    """
    transcript = check_transcript(transcript)
    if not isinstance(reminder, Reminder):
        raise TypeError(f"reminder must be a Reminder, not {type(reminder).__name__}")
    return insert_checked(transcript, reminder, check_log(event_log))


# The reminder fields of a linted record: which reminder it is and who wrote it.
_LINTED_FIELDS = INJECTED_EVENT_FIELDS[:4]  # id, tags, dedupe_key, source


def _linted(log: EventLog, transcript: Transcript, reminder: Reminder) -> None:
    findings = lint_body(reminder.body)
    if findings:
        payload = event_fields(reminder, _LINTED_FIELDS)
        # Events carry no body text (body_bytes, never the body): the offsets point into the
        # body its producer holds, so the excerpt stays out.
        payload["findings"] = [
            {"code": f.code, "message": f.message, "start": f.start, "end": f.end} for f in findings
        ]
        log.lifecycle(Kind.LINTED, transcript.id, payload)


def insert_checked(
    transcript: Transcript, reminder: Reminder, log: EventLog | None, *, lint: bool = False
) -> Injected:
    """:func:`insert_reminder` for arguments of the right types already (a session's own).

    With ``lint`` (a reminder a producer wrote from strict options) and a log, a body that
    :func:`~agent_reminders.lint_body` flags adds a ``linted`` record after ``injected``: the
    reminder's id, tags, dedupe key and source, and the ``findings`` (``code``, ``message``,
    ``start``, ``end``). Advisory only: the reminder is queued all the same.
    """
    key = reminder.dedupe_key
    kept: list[Pending] = []
    replaced: list[Reminder] = []
    for pending in transcript.pending:
        if key is not None and pending.dedupe_key == key:
            replaced.append(pending.reminder)  # only ids are reported: no current TTL needed
        else:
            kept.append(pending)
    result = transcript.with_entry(Pending(reminder, transcript.aging_passes), kept)
    if log is not None:
        if replaced:
            _deduped(log, result, replaced, reminder)
        log.lifecycle(Kind.INJECTED, result.id, injected_payload(reminder))
        if lint:
            _linted(log, result, reminder)
    return Injected(transcript=result, reminder_id=reminder.id, deduped_count=len(replaced))


def inject_reminder(
    transcript: Transcript,
    options: Mapping[str, Any],
    *,
    source: Source | str = Source.IN_PIPELINE,
    fired_at_turn: int = 0,
    event_log: EventLog | None = None,
    id_factory: IdFactory | None = None,
) -> Injected:
    """Validate strict reminder options and append the reminder to the pending queue.

    Every pending reminder with the same ``dedupe_key`` is removed first; ``messages`` are
    untouched. With an ``event_log``, a body that :func:`~agent_reminders.lint_body` flags
    (shouting, threats, injection-like phrasing) adds a ``linted`` record after ``injected``;
    the reminder is queued all the same.

    Raises:
        ReminderError: ``RMD-001`` / ``RMD-005`` from option validation, in the order of
            docs/core.md, "Reminder options".

    Example:
        >>> done = inject_reminder(Transcript(), {"body": "Tests fail", "ttl_turns": 1})
        >>> [r.body for r in done.transcript.reminders]
        ['Tests fail']
    """
    transcript = check_transcript(transcript)
    parsed = parse_reminder_options(options)
    src = coerce_enum(Source, source, "source")
    turn = check_turn(fired_at_turn, "fired_at_turn")
    reminder = reminder_from_options(
        parsed, source=src, fired_at_turn=turn, id=(id_factory or new_id)()
    )
    return insert_checked(transcript, reminder, check_log(event_log), lint=True)


def reminder_from_options(
    parsed: ParsedOptions,
    *,
    source: Source,
    fired_at_turn: int,
    id: str | None = None,
    body: str | None = None,
) -> Reminder:
    """Build the reminder that validated options describe, with the defaults of ``Reminder``'s
    fields filled in (``body`` replaces the options' body, e.g. for a short repeat)."""
    values = parsed.given()  # valid by construction; options not given take the defaults
    if body is not None:
        values["body"] = check_field("body", body)
    values["id"] = check_field("id", id) if id else new_id()
    values["source"] = check_field("source", source)
    values["fired_at_turn"] = check_field("fired_at_turn", fired_at_turn)
    return reminder_unchecked(values)


def clear_reminders(
    transcript: Transcript, selector: Mapping[str, Any], *, event_log: EventLog | None = None
) -> Cleared:
    """Remove the pending reminders matching every given selector key (``id``, ``tag``,
    ``dedupe_key``); one ``expired`` event (``reason: "cleared"``) per removed reminder."""
    transcript = check_transcript(transcript)
    sel = parse_selector(selector)
    log = check_log(event_log)

    def matches(r: Reminder) -> bool:
        return (
            (sel.id is None or r.id == sel.id)
            and (sel.tag is None or sel.tag in r.tags)
            and (sel.dedupe_key is None or r.dedupe_key == sel.dedupe_key)
        )

    result, removed = _remove(transcript, matches, "cleared", log)
    return Cleared(transcript=result, removed_count=len(removed))


def _remove(
    transcript: Transcript,
    matches: Callable[[Reminder], bool],
    reason: str,
    log: EventLog | None,
    boundary: str = "clear",
) -> tuple[Transcript, list[Reminder]]:
    """``transcript`` without the pending reminders ``matches`` picks, and those; one
    ``expired`` event (with ``reason``) per removed reminder."""
    removed = [transcript.current(e) for e in transcript.pending if matches(e.reminder)]
    if not removed:
        return transcript, []
    result = transcript.with_pending(
        (e for e in transcript.pending if not matches(e.reminder)), kept_only=True
    )
    if log is not None:
        for r in removed:
            _expired(log, result, r, reason, turn=None, boundary=boundary)
    return result, removed


def resolve_reminders(
    transcript: Transcript, key: str, *, event_log: EventLog | None = None
) -> tuple[Transcript, Reminder | None]:
    """Withdraw the pending reminders with dedupe key ``key``, whose matter is over (one
    ``expired`` event each, ``reason: "resolved"``); also return the one the model was told
    of — sent in a request and still live — if any, which a one-line note may then close."""
    result, removed = _remove(
        transcript, lambda r: r.dedupe_key == key, "resolved", check_log(event_log), "resolve"
    )
    told = [r for r in removed if transcript.is_committed(r)]
    return result, told[-1] if told else None


def post_turn(transcript: Transcript, turn: int, *, event_log: EventLog | None = None) -> PostTurn:
    """Age the pending reminders after the assistant turn ``turn``.

    A reminder created for a later turn (``fired_at_turn > turn``) or without a TTL is left
    alone; ``ttl_turns <= 1`` expires (``reason: "ttl"``); otherwise the TTL drops by one.
    """
    transcript = check_transcript(transcript)
    turn = check_turn(turn)
    log = check_log(event_log)
    clock = transcript.aging_passes
    entries = transcript.pending
    # First pass: does anything expire or wait for a later turn? Usually not, and then every
    # finite-TTL entry ages by the clock alone and the queue stays as it is.
    decremented = 0
    settled = True
    for e in entries:
        deadline = e.deadline
        if deadline is not None:
            if e.fired_at_turn > turn or deadline - clock <= 1:
                settled = False
                break
            decremented += 1
    expired: list[Reminder] = []
    if settled:
        kept: Sequence[Pending] = entries
    else:
        rest: list[Pending] = []
        decremented = 0
        for e in entries:
            deadline = e.deadline
            if deadline is None:
                rest.append(e)
            elif e.fired_at_turn > turn:  # created for a later turn: keep its TTL
                rest.append(e.deferred())
            elif deadline - clock <= 1:
                expired.append(transcript.current(e))
            else:
                rest.append(e)  # ages by the clock alone
                decremented += 1
        kept = rest
    if not expired and not decremented:
        result = transcript  # nothing ages: the clock stays
    else:
        result = transcript.with_pending(kept, aging_passes=clock + 1, kept_only=True)
    if log is not None:
        for r in expired:
            _expired(log, result, r, "ttl", turn=turn, boundary="post_turn")
    return PostTurn(
        transcript=result,
        expired_count=len(expired),
        decremented_count=decremented,
        remaining_count=len(kept),
    )


def _default_layout(
    messages: tuple[Message, ...], keep_last: int, summary: str | None
) -> tuple[list[Message], int, str]:
    # a leading system message of the history stays; an envelope on the system channel is a
    # directive, whose lifetime compaction decides like any other
    first = messages[0] if messages else None
    head = [first] if first and first["role"] == "system" and "directive_ids" not in first else []
    rest = messages[len(head) :]
    cut = max(0, len(rest) - keep_last)
    # Never start the kept tail with a tool result whose assistant tool call was archived.
    while 0 < cut < len(rest) and rest[cut]["role"] == "tool":
        cut -= 1
    archived, tail = rest[:cut], list(rest[cut:])
    text = (
        summary
        if summary is not None
        else (f"[Compaction archived {len(archived)} earlier message(s) of this conversation.]")
    )
    if not archived and summary is None:
        return head + tail, 0, text
    recap: Message = {"role": "user", "content": text}
    return [*head, recap, *tail], len(archived), text


def _count_archived(old: Sequence[Message], new: Sequence[Message]) -> int:
    def key(m: Message) -> str:
        return json.dumps(m, sort_keys=True)

    remaining = Counter(key(m) for m in new)
    archived = 0
    for m in old:
        k = key(m)
        if remaining[k] > 0:
            remaining[k] -= 1
        else:
            archived += 1
    return archived


def compact(
    transcript: Transcript,
    *,
    keep_last: int = 4,
    summary: str | None = None,
    custom_compactor: Compactor | None = None,
    event_log: EventLog | None = None,
) -> Compacted:
    """Compact the transcript: reminder lifecycle first, then messages.

    1. finite TTLs tick once (``expired``, ``reason: "ttl"``, boundary ``pre_compact``);
    2. reminders sharing a dedupe key collapse (highest authority, ties to the most recent);
    3. ``custom_compactor(messages, reminders)`` returns a summary or new messages; otherwise
       the first system message and the last ``keep_last`` messages stay, with one user
       message holding the summary between them (the kept tail never starts with an orphaned
       tool result);
    4. only ``preserve_on_compact=True`` reminders stay (others: ``reason: "compaction"``).

    This is the one sanctioned break of the append-only invariant.
    """
    transcript = check_transcript(transcript)
    if type(keep_last) is not int or keep_last < 0:
        raise ReminderOptionError(f"keep_last must be an int >= 0; got {keep_last!r}")
    if summary is not None and not isinstance(summary, str):
        raise TypeError(f"summary must be a str or None, not {type(summary).__name__}")
    if custom_compactor is not None and not callable(custom_compactor):
        raise TypeError("custom_compactor must be callable")
    log = check_log(event_log)
    transcript = transcript.report_invalid(log)

    # 1. TTL tick.
    ticked: list[Reminder] = []
    ttl_expired: list[Reminder] = []
    for r in transcript.reminders:
        if r.ttl_turns is None:
            ticked.append(r)
        elif r.ttl_turns <= 1:
            ttl_expired.append(r)
        else:
            ticked.append(evolve_unchecked(r, ttl_turns=r.ttl_turns - 1))
    # 2. Dedupe-key collapse.
    winners = best_by_key(ticked, lambda r: r.dedupe_key)
    survivors = [r for r in ticked if r.dedupe_key is None or winners[r.dedupe_key] is r]
    losers: dict[str, list[Reminder]] = {}
    for r in ticked:
        if r.dedupe_key is not None and winners[r.dedupe_key] is not r:
            losers.setdefault(r.dedupe_key, []).append(r)
    # 3. Messages.
    old = transcript.messages
    text: str | None
    if custom_compactor is None:
        new_messages, archived, text = _default_layout(old, keep_last, summary)
    else:
        produced = custom_compactor(old, tuple(survivors))
        if isinstance(produced, str):
            new_messages, archived, text = _default_layout(old, keep_last, produced)
        elif isinstance(produced, Sequence):
            new_messages = [validate_message(m, f"compacted[{i}]") for i, m in enumerate(produced)]
            archived, text = _count_archived(old, new_messages), summary
        else:
            raise TypeError(
                "custom_compactor must return a summary str or a sequence of messages, "
                f"not {type(produced).__name__}"
            )
    # 4. Only preserved reminders stay.
    preserved = tuple(r for r in survivors if r.preserve_on_compact)
    dropped = [r for r in survivors if not r.preserve_on_compact]
    result = transcript.with_messages(new_messages).with_reminders(preserved)
    if log is not None:
        for r in ttl_expired:
            _expired(log, result, r, "ttl", turn=None, boundary="pre_compact")
        for key, group in losers.items():
            _deduped(log, result, group, winners[key], boundary="pre_compact")
        for r in dropped:
            _expired(log, result, r, "compaction", turn=None, boundary="compaction")
    return Compacted(
        transcript=result,
        summary=text,
        archived_messages=archived,
        expired_count=len(ttl_expired) + len(dropped),
        deduped_count=sum(len(g) for g in losers.values()),
        preserved_count=len(preserved),
    )


def handoff_reminders(transcript: Transcript, *, parent_agent_id: str) -> tuple[Reminder, ...]:
    """The reminders a sub-agent inherits from ``transcript``.

    ``propagate="all"`` always passes on; ``"session"`` only when the reminder was not itself
    inherited; ``"none"`` never. Copies keep their id and ``propagate``, get
    ``source=inherited`` and name the first parent in ``originating_agent_id``.
    """
    transcript = check_transcript(transcript)
    if not isinstance(parent_agent_id, str) or not parent_agent_id.strip():
        raise ReminderOptionError(
            f"parent_agent_id must be a non-blank string; got {parent_agent_id!r}"
        )
    out: list[Reminder] = []
    for r in transcript.reminders:
        if r.propagate is Propagate.NONE:
            continue
        if r.propagate is Propagate.SESSION and r.source is Source.INHERITED:
            continue
        out.append(
            replace(
                r,
                source=Source.INHERITED,
                originating_agent_id=r.originating_agent_id or parent_agent_id,
            )
        )
    return tuple(out)


def seed_inherited(
    transcript: Transcript,
    reminders: Iterable[Reminder],
    *,
    sub_agent_id: str,
    event_log: EventLog | None = None,
    fired_at_turn: int | None = None,
) -> Transcript:
    """Add inherited reminders to a child transcript before its first turn.

    ``fired_at_turn`` re-stamps the copies with the child's own turn (the parent's turn
    numbers mean nothing to the child's TTL clock); ``None`` keeps them as given.
    Events per reminder: ``injected``, then ``inherited``.
    """
    transcript = check_transcript(transcript)
    if not isinstance(sub_agent_id, str) or not sub_agent_id.strip():
        raise ReminderOptionError(f"sub_agent_id must be a non-blank string; got {sub_agent_id!r}")
    log = check_log(event_log)
    turn = None if fired_at_turn is None else check_turn(fired_at_turn, "fired_at_turn")
    for reminder in reminders:
        if turn is not None and isinstance(reminder, Reminder):
            reminder = evolve_unchecked(reminder, fired_at_turn=turn)
        done = insert_reminder(transcript, reminder, event_log=log)
        transcript = done.transcript
        if log is not None:
            log.lifecycle(
                Kind.INHERITED,
                transcript.id,
                {**event_fields(reminder, INHERITED_EVENT_FIELDS), "sub_agent_id": sub_agent_id},
            )
    return transcript
