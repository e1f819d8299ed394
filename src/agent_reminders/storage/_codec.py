"""How every backend splits a ``SessionState`` into rows and joins them again.

A session is stored as three parts, so that a turn writes only what changed:

- the *head*: the ``SessionState`` JSON document without the transcript's message events and
  without the queue (small: ids, turn, pending reminders, audit entries, clocks);
- the *message events*, one JSON text per message, append-only;
- the *queue*: one row per item id, ``pending``, ``delivered`` or ``revoked``.

:func:`join_state` reassembles the document and reads it with ``SessionState.from_json``, so
stored data is held to exactly the strict rules of a saved state — there is no second reader.
A chained digest over the message texts tells an append (the stored messages are a prefix of
the new ones) from a rewrite (compaction replaced the history).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .._core.errors import ConfigError, QueueError, ReminderError
from .._core.events import EventRecord
from .._core.messages import validate_message
from .._core.records import DeliveryMode, Message, Reminder
from .._core.transcript import Transcript, message_event
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


def dumps(value: Any) -> str:
    """Compact, deterministic JSON (the form ``SessionState.to_json`` writes)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def chain(digest: str, rows: Iterable[str]) -> str:
    """Extend the chained digest of a message log by ``rows`` (in order)."""
    for row in rows:
        digest = hashlib.sha256(f"{digest}\n{row}".encode()).hexdigest()
    return digest


@dataclass(frozen=True, slots=True)
class Parts:
    """A state split for storage: ``head`` and ``messages`` are JSON texts."""

    session_id: str
    turn: int
    head: str
    messages: tuple[str, ...]
    queue: QueueState


def split_state(state: SessionState) -> Parts:
    """Split ``state`` into its head, its message events and its queue."""
    if not isinstance(state, SessionState):
        raise TypeError(f"state must be a SessionState, not {type(state).__name__}")
    doc = json.loads(state.to_json())
    count = len(state.transcript)
    events = doc["transcript"]["events"]
    doc["transcript"]["events"] = events[count:]
    del doc["queue"]
    return Parts(
        session_id=state.session_id,
        turn=state.turn,
        head=dumps(doc),
        messages=tuple(dumps(e) for e in events[:count]),
        queue=state.queue,
    )


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


def state_rows(queue: QueueState) -> list[QueueRow]:
    """The rows a new session's queue starts with: pending items first (FIFO), then the
    remembered ids (sorted, so two backends store the same thing)."""
    rows = [item_row(i) for i in queue.items]
    rows += [QueueRow(id=i, status="delivered") for i in sorted(queue.delivered_ids)]
    rows += [QueueRow(id=i, status="revoked") for i in sorted(queue.revoked_ids)]
    return rows


def join_state(head: str, messages: Sequence[str], rows: Iterable[QueueRow]) -> SessionState:
    """Reassemble a stored session and read it strictly.

    Raises:
        StateError: ``RMD-106`` naming the bad field (the backend turns it into a
            ``StoreError`` naming its file).
    """
    doc = json.loads(head)
    doc["transcript"]["events"][0:0] = [json.loads(m) for m in messages]
    items, delivered, revoked = [], [], []
    for row in rows:
        if row.status == "pending":
            assert row.payload is not None
            items.append(
                {
                    "id": row.id,
                    "kind": row.kind,
                    "mode": row.mode,
                    "payload": json.loads(row.payload),
                }
            )
        elif row.status == "delivered":
            delivered.append(row.id)
        else:
            revoked.append(row.id)
    doc["queue"] = {
        "delivered_ids": sorted(delivered),
        "items": items,
        "revoked_ids": sorted(revoked),
    }
    return SessionState.from_json(dumps(doc))


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
        raise QueueError("missing_reminder_id", "reminderId is missing or blank")
    return reminder_id


def duplicate_id(item_id: str) -> ReminderError:
    """The error ``InjectionQueue`` raises for an id already used in the session."""
    return ReminderError("RMD-002", f"id {item_id!r} was already used in this session")


def queue_full(limit: int) -> QueueError:
    """The error ``InjectionQueue`` raises when ``max_pending`` items are queued."""
    return QueueError("queue_full", f"the queue holds {limit} items already")


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
        raise QueueError("already_delivered", f"reminder {reminder_id!r} was already delivered")
    if row is not None and row.kind == "reminder":
        return "revoked"
    raise QueueError("unknown_reminder_id", f"no reminder {reminder_id!r} in this session")


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
