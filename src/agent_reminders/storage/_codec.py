"""How every backend splits a ``SessionState`` into rows and joins them again.

A session is stored as four parts, so that a turn writes only what changed:

- the *head*: the ``SessionState`` JSON document without the transcript's message and audit
  events and without the queue (small: ids, turn, pending reminders, clocks), and a
  *revision* that every write of the session bumps;
- the *message events*, one JSON text per message, append-only;
- the *audit entries*, one JSON text each, append-only (a head written before they had rows
  of their own still holds its audit entries; the next save moves them out);
- the *queue*: one row per item id, ``pending``, ``delivered`` or ``revoked``.

:func:`join_state` reassembles the document and reads it with ``SessionState.from_json``, so
stored data is held to exactly the strict rules of a saved state — there is no second reader.

A save costs what the turn changed, not the session's length (:func:`plan_save`): each store
object keeps a :class:`Memo` of what it last wrote or read of a session. When the storage is
still at that revision and the state's transcript extends a remembered history
(``Transcript.extends``, O(1)), only the new messages and audit entries are serialised and
appended, and only queue ids not known to be stored or settled are merged. Otherwise — the
first save of a state the store object never saw, another writer in between, compaction —
every row is serialised, and a chained digest over the message texts tells an append (the
stored messages are a prefix of the new ones) from a rewrite (compaction replaced the
history).
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .._core.errors import (
    AlreadyDeliveredError,
    ConfigError,
    MissingReminderIdError,
    QueueError,
    QueueFullError,
    ReminderError,
    UnknownReminderIdError,
)
from .._core.events import EventRecord
from .._core.messages import validate_message
from .._core.records import DeliveryMode, Message, Reminder
from .._core.transcript import HistoryMark, Transcript, message_event
from ..queue import (
    InjectionQueue,
    QueueItem,
    QueueState,
    check_queue_item,
    normalize_mode,
    unchanged_since_made,
)
from ..state import SessionState

Status = Literal["pending", "delivered", "revoked"]
EMPTY_DIGEST = ""


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def dumps(value: Any) -> str:
    """Compact, deterministic JSON (the form ``SessionState.to_json`` writes)."""
    return _ENCODER.encode(value)


def chain(digest: str, rows: Iterable[str]) -> str:
    """Extend the chained digest of a message log by ``rows`` (in order)."""
    for row in rows:
        digest = hashlib.sha256(f"{digest}\n{row}".encode()).hexdigest()
    return digest


@dataclass(frozen=True, slots=True)
class QueueRow:
    """One stored queue row; ``kind``/``mode``/``payload`` are ``None`` for ids only
    remembered (delivered or revoked ids handed over in a ``SessionState``)."""

    id: str
    status: Status
    kind: str | None = None
    mode: str | None = None
    payload: str | None = None

    def item(self) -> QueueItem:
        """The stored item, read strictly (``check_queue_item``)."""
        assert self.payload is not None
        return check_queue_item(self.kind, self.id, self.mode, json.loads(self.payload))


def item_row(item: QueueItem, status: Status = "pending") -> QueueRow:
    """A queue row for ``item``, checked to be in the queue's own form first.

    Raises:
        TypeError: ``item`` is not a ``QueueItem``.
        ReminderError: the item is not what ``InjectionQueue`` makes (``RMD-001``/``RMD-002``).
    """
    if not isinstance(item, QueueItem):
        raise TypeError(f"item must be a QueueItem, not {type(item).__name__}")
    try:
        payload = dumps(item.payload)
    except (TypeError, ValueError) as exc:
        raise ReminderError(
            "RMD-002", f"queue item {item.id!r}: payload is not JSON: {exc}"
        ) from None
    if unchanged_since_made(item):  # the queue has just checked it (the bridge's case)
        checked = item
    else:
        checked = check_queue_item(item.kind, item.id, item.mode, json.loads(payload))
    return QueueRow(
        id=checked.id,
        status=status,
        kind=checked.kind,
        mode=checked.mode.value,
        payload=payload,
    )


def settled_rows(delivered: Iterable[str], revoked: Iterable[str]) -> list[QueueRow]:
    """Rows for remembered ids: the delivered ones, then the revoked ones, each sorted (so
    two backends store the same thing)."""
    rows = [QueueRow(id=i, status="delivered") for i in sorted(delivered)]
    rows += [QueueRow(id=i, status="revoked") for i in sorted(revoked)]
    return rows


def join_state(
    head: str,
    messages: Sequence[str],
    audit: Sequence[str],
    pending: Iterable[QueueRow],
    settled: Iterable[tuple[str, str]],
) -> SessionState:
    """Reassemble a stored session and read it strictly: ``pending`` are the pending queue
    rows in FIFO order, ``settled`` the ``(id, "delivered" | "revoked")`` pairs of the rest.

    The stored texts are spliced into the document as they are (no parse and re-dump per
    message): the message rows, then the audit rows, then the head's own events (pending
    reminders, unreported events — and the audit entries of a head written before audit
    rows existed). ``Transcript.from_events`` tells them apart by kind and visibility.

    Raises:
        StateError: ``RMD-106`` naming the bad field (the backend turns it into a
            ``StoreError`` naming its file).
    """
    doc = json.loads(head)
    transcript = doc["transcript"]
    own = [dumps(e) for e in transcript["events"]]
    items = []
    for row in pending:
        assert row.payload is not None
        items.append(
            {"id": row.id, "kind": row.kind, "mode": row.mode, "payload": json.loads(row.payload)}
        )
    delivered: list[str] = []
    revoked: list[str] = []
    for item_id, status in settled:
        (delivered if status == "delivered" else revoked).append(item_id)
    doc["queue"] = {
        "delivered_ids": sorted(delivered),
        "items": items,
        "revoked_ids": sorted(revoked),
    }
    splice = f"\u0000events-{uuid.uuid4().hex}"
    transcript["events"] = splice
    text = dumps(doc)
    at = text.index(dumps(splice))
    events = ",".join([*messages, *audit, *own])
    return SessionState.from_json(f"{text[:at]}[{events}]{text[at + len(dumps(splice)) :]}")


# -- saving a turn: only what changed ---------------------------------------------------------

MEMO_SESSIONS = 256  # sessions a store object remembers what it wrote of (least recent go)
_MARKS = 4  # marks kept per session: transcripts known to hold the stored history


@dataclass(frozen=True, slots=True)
class Stored:
    """What a store object knows the storage holds of one session's history, as of
    ``revision`` (a counter every session write bumps): ``message_count`` message rows with
    the chained ``digest``, ``audit_count`` audit rows, and ``marks`` of transcripts whose
    first messages and audit entries are exactly those rows."""

    revision: int
    message_count: int
    digest: str
    audit_count: int
    marks: tuple[HistoryMark, ...]


@dataclass(slots=True)
class _Known:
    """Queue ids the storage is known to hold (any status), and those it holds settled
    (delivered or revoked). Both only grow: a stored id never leaves, a settled one never
    goes back to pending."""

    ids: set[str] = field(default_factory=set)
    settled: set[str] = field(default_factory=set)


class Memo:
    """What one store object wrote or read of its sessions, so the next save of a session
    writes only what changed since (the last :data:`MEMO_SESSIONS` sessions; thread-safe).

    Nothing here is trusted blindly: a save that appends checks that the storage is still at
    the remembered revision (another writer bumps it) and that the state's transcript
    extends a remembered mark; otherwise it writes every row, as a first save would.
    """

    def __init__(self, size: int = MEMO_SESSIONS) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._stored: OrderedDict[str, Stored] = OrderedDict()
        self._known: OrderedDict[str, _Known] = OrderedDict()

    def stored(self, session_id: str) -> Stored | None:
        """The remembered history of ``session_id``, if any."""
        with self._lock:
            return self._stored.get(session_id)

    def new_rows(self, state: SessionState) -> tuple[list[QueueRow], list[QueueRow]]:
        """The queue rows of ``state`` the storage may not hold yet: pending items not known
        to be stored, then the delivered and revoked ids not known to be settled (sorted)."""
        queue = state.queue
        with self._lock:
            known = self._known.get(state.session_id) or _Known()
            items = [i for i in queue.items if i.id not in known.ids]
            delivered = queue.delivered_ids - known.settled
            revoked = queue.revoked_ids - known.settled
        return [item_row(i) for i in items], settled_rows(delivered, revoked)

    def wrote(self, plan: SavePlan, writes: Writes, revision: int) -> None:
        """``writes`` of ``plan`` are committed; the storage is now at ``revision``."""
        stored = Stored(
            revision=revision,
            message_count=plan.message_count,
            digest=writes.digest,
            audit_count=plan.audit_count,
            marks=(plan.mark,),
        )
        with self._lock:
            self._put(self._stored, plan.session_id, stored)
            known = self._known.get(plan.session_id) or _Known()
            known.ids.update(r.id for r in plan.items)
            known.ids.update(r.id for r in plan.settled)
            known.settled.update(r.id for r in plan.settled)
            self._put(self._known, plan.session_id, known)

    def read(self, state: SessionState, revision: int, digest: str, audit_count: int) -> None:
        """``state`` was read from the storage at ``revision`` (its message rows chain to
        ``digest``; ``audit_count`` audit rows)."""
        sid, transcript, queue = state.session_id, state.transcript, state.queue
        mark = transcript.history_mark()
        settled = set(queue.delivered_ids) | queue.revoked_ids
        with self._lock:
            known = self._known.get(sid) or _Known()
            known.ids.update(i.id for i in queue.items)
            known.ids.update(settled)  # facts that only grow: the union is still true
            known.settled.update(settled)
            self._put(self._known, sid, known)
            old = self._stored.get(sid)
            if old is not None and old.revision > revision:
                return  # read before a save of this store object committed: keep the newer
            marks: tuple[HistoryMark, ...] = (mark,)
            if old is not None and (
                old.revision,
                old.message_count,
                old.digest,
                old.audit_count,
            ) == (revision, len(transcript), digest, audit_count):
                marks = (mark, *old.marks[: _MARKS - 1])  # both hold the stored history
            stored = Stored(
                revision=revision,
                message_count=len(transcript),
                digest=digest,
                audit_count=audit_count,
                marks=marks,
            )
            self._put(self._stored, sid, stored)

    def _put(self, table: OrderedDict[str, Any], key: str, value: object) -> None:
        table[key] = value
        table.move_to_end(key)
        while len(table) > self.size:
            table.popitem(last=False)


@dataclass(frozen=True, slots=True)
class Writes:
    """The rows one save writes: for messages and audit entries each, ``None`` as the start
    position means the stored rows are replaced by these, a number that these are appended
    at that position; ``digest`` chains every stored message row after the write."""

    messages_at: int | None
    messages: Sequence[str]
    audit_at: int | None
    audit: Sequence[str]
    digest: str


@dataclass(frozen=True, slots=True)
class SavePlan:
    """One ``save_session``, serialised: the head, the message and audit rows a turn added
    (or all of them), the queue rows the storage may lack — made off the event loop, from
    the state alone and what the store object remembers (:class:`Memo`).

    ``base`` is the stored history the new rows append to (``None``: the rows are all of
    them) and ``digest`` the chain of every message row after that append; :meth:`against`
    decides, given what the storage holds now, what to write.
    """

    state: SessionState
    head: str
    base: Stored | None
    messages: tuple[str, ...]
    audit: tuple[str, ...]
    digest: str
    items: list[QueueRow]
    settled: list[QueueRow]
    mark: HistoryMark

    @property
    def session_id(self) -> str:
        """The session saved."""
        return self.state.session_id

    @property
    def turn(self) -> int:
        """The state's ``turn``."""
        return self.state.turn

    @property
    def message_count(self) -> int:
        """How many messages are stored after the save."""
        return len(self.state.transcript)

    @property
    def audit_count(self) -> int:
        """How many audit rows are stored after the save."""
        return len(self.state.transcript.audit)

    def appends_to(self, revision: int, count: int, digest: str) -> bool:
        """Whether the storage, at ``revision`` with ``count`` message rows chaining to
        ``digest``, still holds the remembered ``base``: the new rows are all to write."""
        base = self.base
        return base is not None and (base.revision, base.message_count, base.digest) == (
            revision,
            count,
            digest,
        )

    def against(self, revision: int, count: int, digest: str) -> Writes:
        """What to write when the storage is at ``revision`` with ``count`` message rows
        chaining to ``digest``: only the new rows when that is the remembered ``base``;
        otherwise every row — the messages appended when the stored ones are a prefix of the
        state's, replaced when they are not (compaction rewrote the history), the audit rows
        replaced."""
        base = self.base
        if base is not None and self.appends_to(revision, count, digest):
            return Writes(
                base.message_count, self.messages, base.audit_count, self.audit, self.digest
            )
        if base is None:
            rows, audit = self.messages, self.audit
        else:
            rows, audit = history_rows(self.state.transcript, 0, 0)
        if count <= len(rows) and chain(EMPTY_DIGEST, rows[:count]) == digest:
            return Writes(count, rows[count:], None, audit, chain(digest, rows[count:]))
        return Writes(None, rows, None, audit, chain(EMPTY_DIGEST, rows))


def history_rows(
    transcript: Transcript, messages_from: int, audit_from: int
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The stored texts of ``transcript``'s messages from ``messages_from`` on (message
    events ``msg-N``) and of its audit entries from ``audit_from`` on."""
    view = transcript.message_view()
    messages = tuple(
        dumps(message_event(view[i], f"msg-{i}")) for i in range(messages_from, len(view))
    )
    return messages, tuple(dumps(e) for e in transcript.audit[audit_from:])


def plan_save(state: SessionState, memo: Memo | None) -> SavePlan:
    """Serialise what saving ``state`` writes: everything when ``memo`` holds nothing for the
    session that its transcript extends, else only what was added since.

    Raises:
        TypeError: ``state`` is not a ``SessionState``, or a value is not JSON-serializable.
        ReminderError: a queued item is not in the queue's own form.
    """
    if not isinstance(state, SessionState):
        raise TypeError(f"state must be a SessionState, not {type(state).__name__}")
    transcript = state.transcript
    base = None if memo is None else memo.stored(state.session_id)
    if base is not None and not any(transcript.extends(m) for m in base.marks):
        base = None
    if base is None:
        messages, audit = history_rows(transcript, 0, 0)
    else:
        messages, audit = history_rows(transcript, base.message_count, base.audit_count)
    if memo is None:
        queue = state.queue
        items = [item_row(i) for i in queue.items]
        settled = settled_rows(queue.delivered_ids, queue.revoked_ids)
    else:
        items, settled = memo.new_rows(state)
    return SavePlan(
        state=state,
        head=dumps(state.to_document(history=False, queue=False)),
        base=base,
        messages=messages,
        audit=audit,
        digest="" if base is None else chain(base.digest, messages),
        items=items,
        settled=settled,
        mark=transcript.history_mark(),
    )


def message_rows(messages: Sequence[Message], start: int) -> list[str]:
    """Message events for ``messages`` appended after ``start`` stored ones (validated)."""
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
        raise TypeError("messages must be a sequence of message mappings")
    checked = [validate_message(m, f"messages[{i}]") for i, m in enumerate(messages)]
    return [dumps(message_event(m, f"msg-{start + i}")) for i, m in enumerate(checked)]


def head_with_reminders(head: str, reminders: Sequence[Reminder]) -> str:
    """The head document with ``reminders`` as the pending reminders (audit entries kept)."""
    if isinstance(reminders, str | bytes) or not isinstance(reminders, Sequence):
        raise TypeError("reminders must be a sequence of Reminder values")
    doc = json.loads(head)
    tail = Transcript.from_json(dumps(doc["transcript"])).with_reminders(reminders)
    doc["transcript"] = json.loads(tail.to_json())
    return dumps(doc)


def head_turn(head: str) -> int:
    """The ``turn`` a head document records."""
    turn = json.loads(head).get("turn", 0)
    return turn if type(turn) is int else 0


def check_session_id(session_id: object) -> str:
    """A session id argument: a non-blank string."""
    if not isinstance(session_id, str) or not session_id.strip():
        raise TypeError(f"session_id must be a non-blank string; got {session_id!r}")
    return session_id


def check_modes(modes: Iterable[DeliveryMode | str]) -> frozenset[DeliveryMode]:
    """Delivery modes (or their aliases) to drain; an empty set drains nothing."""
    if isinstance(modes, str | bytes):
        modes = (modes,)  # one mode given bare
    resolved: set[DeliveryMode] = set()
    for mode in modes:
        if mode is None:
            raise ReminderError("RMD-002", "a mode to drain must not be None")
        resolved.add(normalize_mode(mode))
    return frozenset(resolved)


def check_revoke_id(reminder_id: object) -> str:
    """The queue's rule for a missing or blank id (``missing_reminder_id``)."""
    if not isinstance(reminder_id, str) or not reminder_id.strip():
        raise MissingReminderIdError("reminderId is missing or blank")
    return reminder_id


def duplicate_id(item_id: str) -> ReminderError:
    """The error ``InjectionQueue`` raises for an id already used in the session."""
    return ReminderError("RMD-002", f"id {item_id!r} was already used in this session")


def queue_full(limit: int) -> QueueError:
    """The error ``InjectionQueue`` raises when ``max_pending`` items are queued."""
    return QueueFullError(f"the queue holds {limit} items already")


def check_max_pending(limit: object) -> int | None:
    """An optional ``max_pending`` argument: ``None`` or an int > 0."""
    if limit is not None and (type(limit) is not int or limit <= 0):
        raise ReminderError("RMD-001", f"max_pending must be an int > 0; got {limit!r}")
    return limit


def pending_rows(items: Sequence[QueueItem]) -> list[dict[str, Any]]:
    """The rows of spec 04 §3 for pending items, exactly as ``InjectionQueue.pending`` makes
    them (the queue builds them; the store never has a second copy of the row format)."""
    return InjectionQueue.from_state(QueueState(items=tuple(items))).pending()


def encode_event(record: object) -> tuple[str, str, str]:
    """``(topic, kind, payload JSON)`` of an ``EventRecord`` to append.

    Raises:
        TypeError: not an ``EventRecord``, or its payload is not JSON-serializable.
    """
    if not isinstance(record, EventRecord):
        raise TypeError(f"records must be EventRecord values, not {type(record).__name__}")
    try:
        payload = dumps(record.payload)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"event {record.kind!r}: payload is not JSON-serializable: {exc}") from None
    return record.topic, record.kind, payload


def decode_event(seq: int, topic: str, kind: str, payload: str) -> EventRecord:
    """An ``EventRecord`` read back from storage."""
    return EventRecord(seq=seq, topic=topic, kind=kind, payload=json.loads(payload))


def check_read_args(after_seq: object, kind_prefix: object) -> tuple[int, str]:
    """The ``after_seq`` (int >= 0) and ``kind_prefix`` (str) of ``read_events``."""
    if type(after_seq) is not int or after_seq < 0:
        raise TypeError(f"after_seq must be an int >= 0; got {after_seq!r}")
    if not isinstance(kind_prefix, str):
        raise TypeError(f"kind_prefix must be a str; got {kind_prefix!r}")
    return after_seq, kind_prefix


def revoke_status(row: QueueRow | None, reminder_id: str) -> Literal["revoked", "already_revoked"]:
    """What revoking ``reminder_id`` does given its stored row — the rules of
    ``InjectionQueue.revoke``: ``"revoked"`` (the caller marks it), ``"already_revoked"``.

    Raises:
        QueueError: ``already_delivered``, or ``unknown_reminder_id`` (also for a queued user
            message: only reminders are revoked).
    """
    if row is not None and row.status == "revoked":
        return "already_revoked"
    if row is not None and row.status == "delivered":
        raise AlreadyDeliveredError(f"reminder {reminder_id!r} was already delivered")
    if row is not None and row.kind == "reminder":
        return "revoked"
    raise UnknownReminderIdError(f"no reminder {reminder_id!r} in this session")


def merge_row(current: QueueRow | None, incoming: QueueRow) -> QueueRow | None:
    """The row to store when a saved state's queue meets the stored one, or ``None`` to keep
    the stored row: what the store knows is never undone (a delivered or revoked id stays
    so), a state may only move a pending item on to delivered or revoked, and an item the
    store lacks is added."""
    if current is None:
        return incoming
    if current.status == "pending" and incoming.status != "pending":
        return QueueRow(id=current.id, status=incoming.status)
    return None


def check_lease(owner: object, ttl_seconds: object) -> tuple[str, float]:
    """The ``owner`` (a non-blank string naming the worker) and ``ttl_seconds`` (a finite
    number > 0) of ``claim`` / ``renew``.

    Raises:
        TypeError: ``owner`` is not a non-blank string, or ``ttl_seconds`` not a number.
        ConfigError: ``ttl_seconds`` is not > 0 (``lease_seconds`` in the bridge config).
    """
    check_owner(owner)
    if isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, int | float):
        raise TypeError(f"ttl_seconds must be a number of seconds; got {ttl_seconds!r}")
    if not math.isfinite(ttl_seconds) or ttl_seconds <= 0:
        raise ConfigError(f"a lease lasts a finite number of seconds > 0; got {ttl_seconds!r}")
    return str(owner), float(ttl_seconds)


def check_owner(owner: object) -> str:
    """A lease owner argument: a non-blank string (the worker's id)."""
    if not isinstance(owner, str) or not owner.strip():
        raise TypeError(f"a lease owner must be a non-blank string (a worker id); got {owner!r}")
    return owner


def check_replace(replace: object) -> str | None:
    """``claim``'s ``replace``: ``None``, or the owner (a non-blank string) whose lease may
    be taken over."""
    return None if replace is None else check_owner(replace)
