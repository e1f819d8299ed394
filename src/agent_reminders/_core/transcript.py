"""The Transcript value and its serialized event view.

How the pending queue is stored. A transcript keeps its pending reminders as
:class:`~.envelope.Pending` entries — each the reminder as stamped when it entered the queue,
its projection keys (computed once) and its TTL as a *deadline* on the transcript's aging
clock, ``aging_passes`` (how many post-turn passes aged something). The current TTL of an
entry is ``deadline - aging_passes``; so a post-turn pass that merely ages reminders advances
the clock and allocates nothing per reminder (only a reminder a pass skips — created for a
later turn — gets a new entry, one pass later). :attr:`Transcript.reminders` materialises
``Reminder`` values with their current ``ttl_turns`` when read (once per transcript,
cached), and ``commit_directives`` materialises only the directives it renders.

The transcript also knows which pending ids no message's ``directive_ids`` holds yet
(:attr:`Transcript.uncommitted_ids`, computed once and carried through the transforms that
keep it exact): when it is empty nothing can be new, and ``commit_directives`` skips the
projection altogether.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, cast, overload

from .envelope import CommitIndex, Pending, message_text
from .errors import ReminderError, ReminderOptionError, StateError
from .events import EventLog, Kind
from .fields import lenient_dict, lenient_values
from .ids import new_id
from .messages import FrozenDict, FrozenList, _copy_checked, copy_json, validate_message
from .records import Message, Reminder, evolve_unchecked

__all__ = [
    "HistoryMark",
    "MessageView",
    "Transcript",
    "check_document",
    "check_transcript",
    "message_event",
    "read_document",
    "reminder_event",
]

FORMAT = "agent-reminders.transcript.v1"
_UNREPORTED = "unreported_invalid_events"


class _Log:
    """An append-only message list shared by transcripts that extend one another.

    A transcript is a view ``messages[:length]``. Appending to the longest view extends the list
    in place (O(1)); appending to a shorter view forks a copy first. Entries below a view's
    length never change, so views handed out stay valid forever. ``wire`` holds the same
    messages as sent to a model (envelope messages without ``directive_ids``); ``index`` is
    the commit index of :mod:`envelope`. Messages are read-only (``FrozenDict``).
    """

    __slots__ = ("__weakref__", "index", "lock", "messages", "wire")

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        self.lock = threading.Lock()
        self.messages: list[Message] = []
        self.wire: list[Message] = []
        self.index = CommitIndex()
        for message in messages:
            self.add(message)

    def add(self, message: Message, wire: Message | None = None) -> None:
        """Store ``message``; ``wire`` is its form without ``directive_ids`` when the caller
        has it already."""
        self.index.add(len(self.messages), message)
        self.messages.append(message)
        self.wire.append(_without_directive_ids(message) if wire is None else wire)


def _without_directive_ids(message: Message) -> Message:
    if "directive_ids" not in message:
        return message
    return cast(Message, FrozenDict({k: v for k, v in message.items() if k != "directive_ids"}))


class MessageView(Sequence[Message]):
    """A read-only, fixed-length view of the first ``length`` messages of a message log.

    What ``ModelRequest.messages`` holds: O(1) to make and to keep whatever the history's
    length, and it never changes once handed out (the log below ``length`` is append-only and
    its messages are read-only). ``list(view)`` gives a list.
    """

    __slots__ = ("_items", "_length")

    def __init__(self, items: list[Message], length: int) -> None:
        self._items = items
        self._length = length

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return self._items[: self._length][index]
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("message index out of range")
        return self._items[index]

    def __iter__(self) -> Iterator[Message]:
        items = self._items
        for i in range(self._length):
            yield items[i]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MessageView | list | tuple):
            return len(other) == self._length and all(
                a == b for a, b in zip(self, other, strict=True)
            )
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"MessageView({list(self)!r})"


class HistoryMark:
    """Where a transcript's history stood: its message count, its audit entry count, and
    enough to tell in O(1) whether a later transcript only appended to it
    (:meth:`Transcript.extends`). A store keeps one per session to write only what a turn
    added. It holds no messages: the message log is weakly referenced, and only the last
    audit entry is kept.
    """

    __slots__ = ("_last_audit", "_log", "audit_count", "message_count")

    def __init__(self, log: _Log, message_count: int, audit: tuple[dict[str, Any], ...]) -> None:
        self._log = weakref.ref(log)
        self.message_count = message_count
        self.audit_count = len(audit)
        self._last_audit = audit[-1] if audit else None

    def __repr__(self) -> str:
        return f"HistoryMark(messages={self.message_count}, audit={self.audit_count})"


class Transcript:
    """A frozen conversation: durable ``messages`` plus the pending ``reminders`` queue.

    ``audit`` holds audit-only entries (events with ``"visibility": "audit"``, e.g. reminders
    delivered at ``loop_exit``): part of the record and of the event view, never of a request.

    Transforms (``inject_reminder``, ``post_turn``, ``commit_directives`` …) return new
    transcripts; no method changes an existing one, and every message handed out is
    read-only, so nothing can edit history a provider has already cached.

    Example:
        >>> t = Transcript().append({"role": "user", "content": "hi"})
        >>> len(t.messages), t.reminders
        (1, ())
    """

    __slots__ = (
        "_clock",
        "_invalid",
        "_len",
        "_log",
        "_messages",
        "_pending",
        "_reminders",
        "_uncommitted",
        "audit",
        "id",
    )

    id: str
    audit: tuple[dict[str, Any], ...]
    _pending: tuple[Pending, ...]
    _clock: int
    _reminders: tuple[Reminder, ...] | None
    _uncommitted: frozenset[str] | None
    _log: _Log
    _len: int
    _invalid: tuple[tuple[str, dict[str, Any]], ...]
    _messages: tuple[Message, ...] | None

    def __init__(
        self,
        messages: Iterable[Message] = (),
        reminders: Iterable[Reminder] = (),
        *,
        id: str | None = None,
    ) -> None:
        if id is not None and (not isinstance(id, str) or not id.strip()):
            raise ReminderOptionError(f"transcript id must be a non-blank string; got {id!r}")
        checked = [validate_message(m, f"messages[{i}]") for i, m in enumerate(messages)]
        pending = _entries(reminders, 0)
        log = _Log(checked)
        self._init(id or new_id(), log, len(log.messages), pending, 0, None, ())

    def _init(
        self,
        id: str,
        log: _Log,
        length: int,
        pending: tuple[Pending, ...],
        clock: int,
        uncommitted: frozenset[str] | None,
        invalid: tuple[tuple[str, dict[str, Any]], ...],
        audit: tuple[dict[str, Any], ...] = (),
    ) -> None:
        # The slots' own setters: they bypass the refusing __setattr__ at less cost than
        # object.__setattr__, and every transform makes a transcript.
        put = _PUT
        put["audit"](self, audit)
        put["id"](self, id)
        put["_log"](self, log)
        put["_len"](self, length)
        put["_pending"](self, pending)
        put["_clock"](self, clock)
        put["_reminders"](self, None)
        put["_uncommitted"](self, uncommitted)
        put["_invalid"](self, invalid)
        put["_messages"](self, None)

    def _derive(
        self,
        *,
        log: _Log | None = None,
        length: int | None = None,
        pending: tuple[Pending, ...] | None = None,
        clock: int | None = None,
        uncommitted: frozenset[str] | None = None,
        invalid: tuple[tuple[str, dict[str, Any]], ...] | None = None,
        audit: tuple[dict[str, Any], ...] | None = None,
    ) -> Transcript:
        """A transcript with the given parts replaced; ``uncommitted`` must be exact for the
        new parts, or ``None`` (computed when first asked)."""
        new = Transcript.__new__(Transcript)
        new._init(
            self.id,
            self._log if log is None else log,
            self._len if length is None else length,
            self._pending if pending is None else pending,
            self._clock if clock is None else clock,
            uncommitted,
            self._invalid if invalid is None else invalid,
            self.audit if audit is None else audit,
        )
        return new

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Transcript is immutable; cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Transcript is immutable; cannot delete {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Transcript):
            return NotImplemented
        return (
            self.id == other.id
            and self.reminders == other.reminders
            and self._invalid == other._invalid
            and self.audit == other.audit
            and self.messages == other.messages
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Transcript(id={self.id!r}, messages={self._len}, reminders={len(self._pending)})"

    # -- pending reminders ------------------------------------------------------------------

    @property
    def reminders(self) -> tuple[Reminder, ...]:
        """The pending reminders in queue order, each with its current ``ttl_turns``."""
        cached = self._reminders
        if cached is None:
            current = self.current
            cached = tuple(current(e) for e in self._pending)
            object.__setattr__(self, "_reminders", cached)
        return cached

    @property
    def pending(self) -> tuple[Pending, ...]:
        """The pending queue as stored (see the module docstring), in queue order."""
        return self._pending

    @property
    def aging_passes(self) -> int:
        """The aging clock the pending entries' TTL deadlines are counted on."""
        return self._clock

    def current(self, entry: Pending) -> Reminder:
        """The reminder of a pending ``entry`` of this transcript, with its current TTL."""
        reminder = entry.reminder
        deadline = entry.deadline
        if deadline is None or deadline - self._clock == reminder.ttl_turns:
            return reminder
        return evolve_unchecked(reminder, ttl_turns=deadline - self._clock)

    @property
    def uncommitted_ids(self) -> frozenset[str]:
        """Ids of pending reminders that no message's ``directive_ids`` holds."""
        cached = self._uncommitted
        if cached is None:
            cached = self._uncommitted_of(self._pending)
            object.__setattr__(self, "_uncommitted", cached)
        return cached

    def _uncommitted_of(self, entries: Iterable[Pending]) -> frozenset[str]:
        at, length = self._log.index.directive_at, self._len
        return frozenset(e.id for e in entries if at.get(e.id, length) >= length)

    def with_pending(
        self,
        entries: Iterable[Pending],
        *,
        aging_passes: int | None = None,
        kept_only: bool = False,
    ) -> Transcript:
        """A transcript with the same history and ``entries`` (made for this transcript's
        clock, or for ``aging_passes`` when given) as its pending queue.

        ``kept_only=True`` says the entries are some of this transcript's own (a removal, a
        re-stamp of the deadline), so which of them are uncommitted is known already.
        """
        pending = entries if isinstance(entries, tuple) else tuple(entries)
        known = self._uncommitted
        uncommitted: frozenset[str] | None = None
        if kept_only and known is not None:
            uncommitted = frozenset(e.id for e in pending if e.id in known) if known else known
        return self._derive(pending=pending, clock=aging_passes, uncommitted=uncommitted)

    def with_entry(self, entry: Pending, kept: Iterable[Pending]) -> Transcript:
        """A transcript whose queue is ``kept`` (some of this one's entries, in order) and
        then ``entry``, a new one made for this transcript's clock: an insertion."""
        pending = (*kept, entry)
        known = self._uncommitted
        if known is not None:
            if known and len(pending) - 1 < len(self._pending):  # some were dropped
                known = known.intersection([e.id for e in pending[:-1]])
            at = self._log.index.directive_at.get(entry.id)
            if at is None or at >= self._len:  # the new entry is in no message yet
                known = known.union((entry.id,))
        return self._derive(pending=pending, uncommitted=known)

    # -- messages ---------------------------------------------------------------------------

    @property
    def messages(self) -> tuple[Message, ...]:
        """The durable conversation, oldest first; each message is read-only."""
        cached = self._messages
        if cached is None:
            cached = tuple(self._log.messages[: self._len])
            object.__setattr__(self, "_messages", cached)
        return cached

    def __len__(self) -> int:
        return self._len

    def message_view(self) -> MessageView:
        """The messages as a read-only view (O(1), unlike :attr:`messages`)."""
        return MessageView(self._log.messages, self._len)

    def last_message(self) -> Message:
        """The newest message (read-only), in O(1).

        Raises:
            IndexError: the transcript has no messages.
        """
        if not self._len:
            raise IndexError("the transcript has no messages")
        return self._log.messages[self._len - 1]

    def request_messages(self) -> MessageView:
        """The messages as sent to a model: a read-only view without ``directive_ids``.

        O(1) whatever the history's length; it never changes once handed out.
        """
        return MessageView(self._log.wire, self._len)

    def append(self, message: Message) -> Transcript:
        """Return a transcript with ``message`` (validated, copied read-only) appended.

        Raises:
            TypeError: ``message`` is not a mapping.
            MessageError: ``RMD-101`` naming the path of the bad value.
        """
        return self._append_owned(validate_message(message))

    def append_envelope(
        self, text: str | list[dict[str, Any]], directive_ids: Sequence[str], role: str = "user"
    ) -> Transcript:
        """Append the envelope message ``commit_directives`` builds:
        ``{"role": role, "content": text, "directive_ids": [...]}`` (``role`` its channel,
        ``"user"`` or ``"system"``).

        Its text is rendered from validated reminders (their bodies were checked when they
        were made), so it is stored without validating it again.
        """
        if role != "user" and role != "system":
            raise ValueError(f"an envelope's role is 'user' or 'system'; got {role!r}")
        content = text if isinstance(text, str) else _copy_checked(text)
        owned = FrozenDict(role=role, content=content, directive_ids=FrozenList(directive_ids))
        wire = FrozenDict(role=role, content=content)
        return self._append_owned(cast(Message, owned), cast(Message, wire))

    def _append_owned(self, owned: Message, wire: Message | None = None) -> Transcript:
        # One more message can only commit the ids it lists.
        known = self._uncommitted
        if known:
            known = known.difference(owned.get("directive_ids") or ())
        log = self._log
        with log.lock:
            if len(log.messages) == self._len:
                log.add(owned, wire)
                return self._derive(length=self._len + 1, uncommitted=known)
        forked = _Log(log.messages[: self._len])
        forked.add(owned, wire)
        return self._derive(log=forked, length=self._len + 1, uncommitted=known)

    def with_messages(self, messages: Iterable[Message]) -> Transcript:
        """A transcript whose history is replaced by ``messages`` (validated): compaction."""
        checked = [validate_message(m, f"messages[{i}]") for i, m in enumerate(messages)]
        log = _Log(checked)
        return self._derive(log=log, length=len(log.messages))

    def with_reminders(self, reminders: Iterable[Reminder]) -> Transcript:
        """A transcript with the same history and ``reminders`` as its pending queue."""
        return self._derive(pending=_entries(reminders, self._clock))

    def with_audit(self, event: Mapping[str, Any]) -> Transcript:
        """Record an audit-only entry: kept in the event view, never sent to the model."""
        return self._derive(audit=(*self.audit, copy_json(event)), uncommitted=self._uncommitted)

    def is_committed(self, reminder: Reminder) -> bool:
        """Whether ``reminder`` is already in history: its id in some message's
        ``directive_ids``, or its rendered text in history that has no such key."""
        return self._log.index.is_committed(reminder, self._len)

    def has_instructions(self) -> bool:
        """Whether some message already holds ``ENVELOPE_INSTRUCTIONS``."""
        return self._log.index.has_instructions(self._len)

    @property
    def invalid_reminder_ids(self) -> tuple[str, ...]:
        """Ids of invalid reminder events read by :meth:`from_events`, not yet reported."""
        return tuple(reported for reported, _ in self._invalid)

    def report_invalid(self, event_log: EventLog | None) -> Transcript:
        """Report invalid reminder events once (``dropped``) and return the pruned transcript."""
        if not self._invalid:
            return self
        if event_log is not None:
            for reported, _ in self._invalid:
                event_log.lifecycle(
                    Kind.DROPPED, self.id, {"reminder_id": reported, "reason": "invalid"}
                )
        return self._derive(invalid=(), uncommitted=self._uncommitted)

    # -- history marks ----------------------------------------------------------------------

    def history_mark(self) -> HistoryMark:
        """Where this transcript's history (messages and audit entries) stands now."""
        return HistoryMark(self._log, self._len, self.audit)

    def extends(self, other: HistoryMark) -> bool:
        """Whether this transcript's history begins with all of ``other``'s — its first
        ``other.message_count`` messages and ``other.audit_count`` audit entries are those of
        the transcript the mark was taken of — known in O(1) because this one was made from
        that one by transforms that append (the messages live in one append-only log, and an
        audit entry is only ever appended). ``False`` means *not known*: after compaction,
        a history rebuilt from events or JSON, or a mark whose log is gone, the histories
        may still be equal.
        """
        count = other.message_count
        if other._log() is not self._log or count > self._len:
            return False
        mine, theirs = self.audit, other.audit_count
        if theirs == 0:
            return True
        return len(mine) >= theirs and mine[theirs - 1] is other._last_audit

    # -- event view and JSON ----------------------------------------------------------------

    @property
    def events(self) -> list[dict[str, Any]]:
        """The serialized event view: message events, then one ``system_reminder`` per
        pending reminder, then the audit entries, then invalid reminder events not yet
        reported."""
        return self._events(history=True)

    def _events(self, *, history: bool) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = (
            [message_event(m, f"msg-{i}") for i, m in enumerate(self.messages)] if history else []
        )
        out.extend(_event_for(r.to_dict(), f"evt-{r.id}") for r in self.reminders)
        if history:
            out.extend(copy_json(event) for event in self.audit)
        out.extend(copy_json(event) for _, event in self._invalid)
        return out

    @classmethod
    def from_events(
        cls, events: Iterable[Mapping[str, Any]], *, id: str | None = None
    ) -> Transcript:
        """Rebuild a transcript from an event view.

        ``system_reminder`` events are read leniently (see :func:`reminder_event`); one whose
        reminder payload is malformed or has a blank body is kept out of ``reminders`` and
        reported once as ``transcript.reminder.dropped`` at the next ``commit_directives``.
        """
        messages: list[Message] = []
        reminders: list[Reminder] = []
        invalid: list[tuple[str, dict[str, Any]]] = []
        audit: list[dict[str, Any]] = []
        for index, event in enumerate(events):
            if not isinstance(event, Mapping):
                raise TypeError(f"events[{index}] must be a mapping, not {type(event).__name__}")
            kind = event.get("kind")
            if event.get("visibility") == "audit":
                audit.append(copy_json(event))
            elif kind == "message":
                messages.append(_message_of(event, index))
            elif kind == "system_reminder":
                # "metadata" carries the same payload; use it when "reminder" is missing
                payload = event.get("reminder", event.get("metadata"))
                reminder = _lenient_reminder(payload)
                if reminder is None:
                    own = payload.get("id") if isinstance(payload, Mapping) else None
                    event_id = event.get("id")
                    reported = own if isinstance(own, str) and own.strip() else event_id
                    invalid.append((str(reported), json.loads(json.dumps(dict(event)))))
                else:
                    reminders.append(reminder)
            else:
                raise ReminderOptionError(
                    f"events[{index}].kind must be 'message' or 'system_reminder'; got {kind!r}",
                )
        log = _Log(messages)  # each message was validated by _message_of
        new = cls.__new__(cls)
        new._init(
            id or new_id(),
            log,
            len(log.messages),
            _entries(reminders, 0),
            0,
            None,
            tuple(invalid),
            tuple(audit),
        )
        return new

    def to_document(self, *, history: bool = True) -> dict[str, Any]:
        """The document :meth:`to_json` writes, as a new dict.

        ``history=False`` leaves out the message and audit events — what grows with the
        conversation — and keeps the pending reminders and unreported events: a store
        writes those two parts as rows of their own, appends a turn's new ones, and puts
        them back ahead of this document's events when it reads the session
        (:meth:`from_events` tells events apart by kind and visibility, not by place).
        """
        document: dict[str, Any] = {
            "format": FORMAT,
            "id": self.id,
            "events": self._events(history=history),
        }
        if self._invalid:
            # The last events are foreign ones read leniently and not yet reported as
            # dropped; from_json keeps them as such instead of refusing them.
            document[_UNREPORTED] = len(self._invalid)
        return document

    def to_json(self) -> str:
        """Serialize to JSON; ``Transcript.from_json(t.to_json()) == t``."""
        return json.dumps(self.to_document(), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> Transcript:
        """Parse the output of :meth:`to_json`, strictly: a stored reminder is read like
        :meth:`Reminder.from_dict`, so an invalid field is an error, never a silent change.

        Raises:
            StateError: ``RMD-106`` when the text is not a transcript document.
            ReminderError: ``RMD-001`` (``RMD-005`` for ``propagate``) naming the path and
                the field of an invalid stored reminder.
            MessageError: ``RMD-101`` naming the path of an invalid stored message.
        """
        return cls.from_document(read_document(text, FORMAT, "transcript"))

    @classmethod
    def from_document(cls, data: object) -> Transcript:
        """Read a document as :meth:`to_document` writes it (``to_json`` parsed), with the
        rules of :meth:`from_json` — for a transcript inside a larger parsed document, which
        is then not serialised and parsed again.

        Raises:
            StateError: ``RMD-106`` when ``data`` is not a transcript document.
            ReminderError: ``RMD-001`` (``RMD-005`` for ``propagate``) naming the path and
                the field of an invalid stored reminder.
            MessageError: ``RMD-101`` naming the path of an invalid stored message.
        """
        data = check_document(data, FORMAT, "transcript")
        events = data.get("events")
        if not isinstance(events, list):
            raise StateError("transcript document: events must be a list")
        tid = data.get("id")
        if not isinstance(tid, str):
            raise StateError("transcript document: id must be a string")
        unreported = data.get(_UNREPORTED, 0)
        if type(unreported) is not int or not 0 <= unreported <= len(events):
            raise StateError(
                f"transcript document: {_UNREPORTED} must be an int from 0 to the number "
                f"of events; got {unreported!r}"
            )
        for index, event in enumerate(events[: len(events) - unreported]):
            if (
                isinstance(event, Mapping)
                and event.get("kind") == "system_reminder"
                and event.get("visibility") != "audit"
            ):
                try:
                    Reminder.from_dict(event.get("reminder"))  # type: ignore[arg-type]
                except ReminderError as exc:
                    raise ReminderError(
                        exc.code, f"events[{index}].reminder: {exc.message}"
                    ) from None
        return cls.from_events(events, id=tid)


def read_document(text: str | bytes, format: str, what: str) -> dict[str, Any]:
    """Parse a saved JSON document of the library's own ``format`` (a transcript, a session
    state): a JSON object whose ``format`` key is ``format``.

    Raises:
        TypeError: ``text`` is neither ``str`` nor ``bytes``.
        StateError: ``RMD-106`` naming ``what`` when it does not parse or is another document.
    """
    if not isinstance(text, str | bytes):
        raise TypeError(f"text must be str or bytes, not {type(text).__name__}")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise StateError(f"{what} JSON does not parse: {exc}") from None
    return check_document(data, format, what)


def check_document(data: object, format: str, what: str) -> dict[str, Any]:
    """``data`` (a parsed document) when it is a JSON object of the library's own ``format``.

    Raises:
        StateError: ``RMD-106`` naming ``what`` when it is another document.
    """
    if not isinstance(data, dict):
        raise StateError(
            f"a {what} document is a JSON object with format {format!r}; got {type(data).__name__}"
        )
    if data.get("format") != format:
        raise StateError(
            f"not a {what} document: format must be {format!r}; got {data.get('format')!r}"
        )
    return data


_PUT: dict[str, Callable[[Transcript, Any], None]] = {
    name: getattr(Transcript, name).__set__ for name in Transcript.__slots__
}


def check_transcript(value: object) -> Transcript:
    """Validate a ``transcript`` argument."""
    if not isinstance(value, Transcript):
        raise TypeError(f"transcript must be a Transcript, not {type(value).__name__}")
    return value


def _entries(reminders: Iterable[Reminder], clock: int) -> tuple[Pending, ...]:
    pending = tuple(reminders)
    for r in pending:
        if not isinstance(r, Reminder):
            raise TypeError(f"reminders must be Reminder values, not {type(r).__name__}")
    return tuple(Pending(r, clock) for r in pending)


def message_event(message: Message, event_id: str) -> dict[str, Any]:
    """The ``message`` event of the event view (a copy of the message, plus its text)."""
    return {
        "id": event_id,
        "kind": "message",
        "role": message["role"],
        "visibility": "public",
        "text": message_text(message),
        "message": copy_json(message),
    }


def _message_of(event: Mapping[str, Any], index: int) -> Message:
    """The message a ``message`` event carries: its ``message`` field, or (for events written
    by other tools) one built from ``role`` and ``blocks`` or ``text``."""
    if "message" in event:
        return validate_message(event["message"], f"events[{index}].message")
    blocks = event.get("blocks")
    content = (
        [
            {k: v for k, v in b.items() if k != "visibility"}
            for b in blocks
            if isinstance(b, Mapping)
        ]
        if isinstance(blocks, list) and blocks
        else event.get("text")
    )
    return validate_message({"role": event.get("role"), "content": content}, f"events[{index}]")


def _lenient_reminder(payload: object) -> Reminder | None:
    """The reminder a ``system_reminder`` event carries, or ``None`` when it is unusable."""
    if not isinstance(payload, Mapping):
        return None
    try:
        return Reminder(**lenient_values(payload))
    except ReminderError:  # a blank body, or text that is not valid Unicode
        return None


def _event_for(payload: dict[str, Any], event_id: str) -> dict[str, Any]:
    body = payload["body"]
    return {
        "id": event_id,
        "kind": "system_reminder",
        "role": payload["role_hint"],
        "visibility": "public",
        "text": body,
        "blocks": [{"type": "text", "text": body, "visibility": "public"}],
        "reminder": payload,
        "metadata": dict(payload),
    }


def reminder_event(payload: Mapping[str, Any]) -> dict[str, Any]:
    """Build a ``system_reminder`` transcript event from a reminder-like mapping, leniently.

    Never raises for bad values: unknown enum values fall back to their defaults, a non-int
    ``ttl_turns`` becomes ``None``, ``tags`` that are not a list become empty, and a missing
    ``id`` gets a new one. A blank body is kept; ``Transcript.from_events`` drops such events.

    Example:
        >>> ev = reminder_event({"body": "hi", "propagate": "bogus", "ttl_turns": "2"})
        >>> ev["reminder"]["propagate"], "ttl_turns" in ev["reminder"]
        ('session', False)
    """
    if not isinstance(payload, Mapping):
        raise TypeError(f"payload must be a mapping, not {type(payload).__name__}")
    data = lenient_dict(payload)
    return _event_for(data, f"evt-{data['id']}")
