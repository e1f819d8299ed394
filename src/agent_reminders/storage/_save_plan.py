"""What one save of a session writes: only what the turn changed, not the session's length.

Each store object keeps a :class:`Memo` of what it last wrote or read of a session
(:func:`plan_save`). When the storage is still at that revision and the state's transcript
extends a remembered history (``Transcript.extends``, O(1)), only the new messages and audit
entries are serialised and appended, and only queue ids not known to be stored or settled are
merged. Otherwise — the first save of a state the store object never saw, another writer in
between, compaction — every row is serialised, and a chained digest over the message texts
tells an append (the stored messages are a prefix of the new ones) from a rewrite (compaction
replaced the history). The rows themselves are made in ``_rows``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .._core.transcript import HistoryMark
from ..state import SessionState
from ._rows import EMPTY_DIGEST, QueueRow, chain, dumps, history_rows, item_row, settled_rows

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
