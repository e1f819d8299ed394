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
What a save writes of these rows is planned in ``_save_plan``; the rules of the queue and of
leases every backend shares are in ``_queue_rules`` and ``_lease_rules``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .._core.errors import ReminderError
from .._core.events import EventRecord
from .._core.messages import validate_message
from .._core.records import Message, Reminder
from .._core.transcript import Transcript, message_event
from ..queue import QueueItem, check_queue_item, unchanged_since_made
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
    splice = f"\u0000events-{os.urandom(16).hex()}"  # a marker no stored text holds
    transcript["events"] = splice
    text = dumps(doc)
    at = text.index(dumps(splice))
    events = ",".join([*messages, *audit, *own])
    return SessionState.from_json(f"{text[:at]}[{events}]{text[at + len(dumps(splice)) :]}")


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


def check_session_id(session_id: object) -> str:
    """A session id argument: a non-blank string."""
    if not isinstance(session_id, str) or not session_id.strip():
        raise TypeError(f"session_id must be a non-blank string; got {session_id!r}")
    return session_id


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
