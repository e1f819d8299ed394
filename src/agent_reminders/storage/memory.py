"""``MemoryStore``: the ``Store`` protocol in process memory, for tests and scripts.

It keeps the same JSON texts a durable backend writes and reads them back with the same
strict readers, so a test that passes on it says something about ``SQLiteStore`` too.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._core.errors import StateError, StoreError
from .._core.events import EventRecord
from .._core.records import DeliveryMode, Message, Reminder
from ..queue import QueueItem
from ..state import SessionState
from . import _lease_rules, _queue_rules, _rows, _save_plan
from ._wake import Waiters
from .base import (
    ClosingStore,
    Lease,
    RevokeStatus,
    SessionExistsError,
    SessionInfo,
    UnknownSessionError,
)

__all__ = ["MemoryData", "MemoryStore"]


@dataclass
class _Session:
    head: str
    messages: list[str]
    audit: list[str]
    digest: str
    turn: int
    created_at: float
    updated_at: float = 0.0
    touched: int = 0
    revision: int = 0  # bumped by every write of the session record (_save_plan.Memo)
    # the pending items (insertion order is FIFO order) and the settled ids, as SQLite keeps
    # them: a pending count, a drain, a wait look at the pending items only
    pending: dict[str, _rows.QueueRow] = field(default_factory=dict)
    settled: dict[str, _rows.Status] = field(default_factory=dict)

    def row(self, item_id: str) -> _rows.QueueRow | None:
        """The item's row, pending or settled; ``None`` when the session never had it."""
        found = self.pending.get(item_id)
        if found is None and item_id in self.settled:
            return _rows.QueueRow(id=item_id, status=self.settled[item_id])
        return found

    def settle(self, item_id: str, status: _rows.Status) -> None:
        """Mark a pending (or unknown) id delivered or revoked."""
        self.pending.pop(item_id, None)
        self.settled[item_id] = status

    events: list[tuple[str, str, str]] = field(default_factory=list)


class MemoryData:
    """The sessions of one in-memory "database", shared by every ``MemoryStore`` opened on
    it — two handles on one ``MemoryData`` behave like two processes on one SQLite file.

    Example:
        >>> data = MemoryData()
        >>> first, second = MemoryStore(data=data), MemoryStore(data=data)
        >>> first.data is second.data
        True
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sessions: dict[str, _Session] = {}
        self.activity = 0
        self.waiters = Waiters()
        # session id -> (owner, expires at, in the clock of the store that claimed it)
        self.leases: dict[str, tuple[str, float]] = {}


class MemoryStore(ClosingStore):
    """The ``Store`` protocol in memory (nothing survives the process).

    Args:
        data: The sessions to work on; a fresh ``MemoryData`` by default. Closing a store
            leaves its data to the other stores opened on it.
        clock: Seconds since the epoch, for ``created_at``/``updated_at``.
        poll_interval: How often ``wait_for_items`` looks when it cannot be woken (items
            queued from another thread).

    Example:
        >>> import anyio
        >>> from agent_reminders import Session
        >>> async def main():
        ...     async with MemoryStore() as store:
        ...         await store.create_session(Session(session_id="s1").state())
        ...         return await store.latest_session()
        >>> anyio.run(main)
        's1'
    """

    def __init__(
        self,
        *,
        data: MemoryData | None = None,
        clock: Callable[[], float] = time.time,
        poll_interval: float = 0.05,
    ) -> None:
        if data is not None and not isinstance(data, MemoryData):
            raise TypeError(f"data must be a MemoryData, not {type(data).__name__}")
        self.data = data if data is not None else MemoryData()
        self.clock = clock
        self.poll_interval = poll_interval
        self.closed = False
        self._memo = _save_plan.Memo()

    def __repr__(self) -> str:
        return f"MemoryStore(sessions={len(self.data.sessions)}, closed={self.closed})"

    async def close(self) -> None:
        """Close this handle (idempotent); the data stays for other handles."""
        self.closed = True

    # -- helpers ----------------------------------------------------------------------------

    def _open(self) -> MemoryData:
        if self.closed:
            raise StoreError("memory: this store is closed")
        return self.data

    def _session(self, session_id: str) -> _Session:
        record = self.data.sessions.get(_rows.check_session_id(session_id))
        if record is None:
            raise UnknownSessionError(session_id)
        return record

    def _touch(self, record: _Session) -> None:
        self.data.activity += 1
        record.touched = self.data.activity
        record.updated_at = self.clock()

    # -- session records --------------------------------------------------------------------

    async def create_session(self, state: SessionState) -> None:
        """Store a new session (see ``Store``)."""
        plan = _save_plan.plan_save(state, None)
        writes = plan.against(0, 0, _rows.EMPTY_DIGEST)
        data = self._open()
        with data.lock:
            if plan.session_id in data.sessions:
                raise SessionExistsError(plan.session_id)
            record = _Session(
                head=plan.head,
                messages=list(writes.messages),
                audit=list(writes.audit),
                digest=writes.digest,
                turn=plan.turn,
                created_at=self.clock(),
                pending={row.id: row for row in plan.items},
                settled={row.id: row.status for row in plan.settled},
            )
            self._touch(record)
            data.sessions[plan.session_id] = record
        self._memo.wrote(plan, writes, 0)
        data.waiters.notify(plan.session_id)

    async def load_session(self, session_id: str) -> SessionState | None:
        """The stored session, or ``None`` (see ``Store``)."""
        data = self._open()
        with data.lock:
            record = data.sessions.get(_rows.check_session_id(session_id))
            if record is None:
                return None
            head, messages, audit = record.head, list(record.messages), list(record.audit)
            pending, settled = list(record.pending.values()), list(record.settled.items())
            revision, digest = record.revision, record.digest
        try:
            state = _rows.join_state(head, messages, audit, pending, settled)
        except StateError as exc:
            raise StoreError(f"memory: session {session_id!r} cannot be read: {exc}") from None
        self._memo.read(state, revision, digest, len(audit))
        return state

    async def save_session(self, state: SessionState) -> None:
        """Write one turn atomically (see ``Store``); serialises only what the turn added
        (``_save_plan.plan_save``)."""
        plan = _save_plan.plan_save(state, self._memo)
        data = self._open()
        with data.lock:
            record = self._session(plan.session_id)
            writes = plan.against(record.revision, len(record.messages), record.digest)
            _extend(record.messages, writes.messages_at, writes.messages)
            _extend(record.audit, writes.audit_at, writes.audit)
            record.digest = writes.digest
            record.head, record.turn = plan.head, plan.turn
            record.revision += 1
            _merge_queue(record, [*plan.items, *plan.settled])
            self._touch(record)
            revision = record.revision
        self._memo.wrote(plan, writes, revision)

    async def append_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        """Append transcript messages (see ``Store``)."""
        data = self._open()
        with data.lock:
            record = self._session(session_id)
            rows = _rows.message_rows(messages, len(record.messages))
            record.messages.extend(rows)
            record.digest = _rows.chain(record.digest, rows)
            record.revision += 1
            self._touch(record)

    async def save_reminders(self, session_id: str, reminders: Sequence[Reminder]) -> None:
        """Replace the pending reminders (see ``Store``)."""
        data = self._open()
        with data.lock:
            record = self._session(session_id)
            record.head = _rows.head_with_reminders(record.head, reminders)
            record.revision += 1
            self._touch(record)

    async def list_sessions(self) -> list[SessionInfo]:
        """Every session, most recent activity first."""
        data = self._open()
        with data.lock:
            records = sorted(data.sessions.items(), key=lambda kv: -kv[1].touched)
            return [
                SessionInfo(
                    session_id=sid,
                    created_at=r.created_at,
                    updated_at=r.updated_at,
                    turn=r.turn,
                    message_count=len(r.messages),
                )
                for sid, r in records
            ]

    async def latest_session(self) -> str | None:
        """The id of the most recently active session, or ``None``."""
        sessions = await self.list_sessions()
        return sessions[0].session_id if sessions else None

    async def session_ids(self, *, limit: int, among: Iterable[str] | None = None) -> list[str]:
        """Up to ``limit`` stored session ids (those in ``among`` when given)."""
        data = self._open()
        with data.lock:
            ids = data.sessions if among is None else (s for s in among if s in data.sessions)
            return list(itertools.islice(ids, max(0, limit)))

    # -- the injection queue ----------------------------------------------------------------

    async def enqueue(
        self, session_id: str, item: QueueItem, *, max_pending: int | None = None
    ) -> str:
        """Queue a validated item (see ``Store``)."""
        row = _rows.item_row(item)
        limit = _queue_rules.check_max_pending(max_pending)
        data = self._open()
        with data.lock:
            record = self._session(session_id)
            status = _queue_rules.row_status(record.row(row.id))
            _queue_rules.push_allowed(row.id, status, len(record.pending), limit)
            record.pending[row.id] = row
            self._touch(record)
        data.waiters.notify(session_id)
        return row.id

    async def pending(self, session_id: str) -> list[dict[str, Any]]:
        """The queued items as ``session/pending_injections`` rows, FIFO."""
        data = self._open()
        with data.lock:
            rows = list(self._session(session_id).pending.values())
        return _queue_rules.pending_rows([r.item() for r in rows])

    async def drain(self, session_id: str, modes: Iterable[DeliveryMode | str]) -> list[QueueItem]:
        """Take the queued items of ``modes`` and mark them delivered, atomically."""
        wanted = _queue_rules.check_modes(modes)
        data = self._open()
        with data.lock:
            record = self._session(session_id)
            taken = [r for r in record.pending.values() if r.mode in wanted]
            for row in taken:
                record.settle(row.id, "delivered")
            if taken:
                self._touch(record)
        return [row.item() for row in taken]

    async def revoke(self, session_id: str, reminder_id: str) -> RevokeStatus:
        """Revoke a queued reminder (see ``Store``)."""
        data = self._open()
        with data.lock:
            record = self._session(session_id)
            rid = _queue_rules.check_revoke_id(reminder_id)
            status = _queue_rules.revoke_status(record.row(rid), rid)
            if status == "revoked":
                record.settle(rid, "revoked")
                self._touch(record)
            return status

    async def wait_for_items(
        self,
        session_id: str,
        timeout: float,
        *,
        modes: Iterable[DeliveryMode | str] | None = None,
        ignore: Container[str] = (),
    ) -> bool:
        """Wait until something (of ``modes``, not in ``ignore``) is queued, at most
        ``timeout`` seconds."""
        wanted = None if modes is None else _queue_rules.check_modes(modes)
        data = self._open()

        async def check() -> bool:
            with data.lock:
                record = self._session(session_id)
                return any(
                    (wanted is None or r.mode in wanted) and r.id not in ignore
                    for r in record.pending.values()
                )

        return await data.waiters.wait(session_id, timeout, check, poll=self.poll_interval)

    # -- leases -----------------------------------------------------------------------------

    async def claim(
        self, session_id: str, owner: str, ttl_seconds: float, *, replace: str | None = None
    ) -> str | None:
        """Claim the session for ``owner`` for ``ttl_seconds`` (taking it from ``replace``
        if that owner holds it): ``None`` when claimed, else the owner holding it (see
        ``Store``)."""
        who, ttl = _lease_rules.check_lease(owner, ttl_seconds)
        gone = _lease_rules.check_replace(replace)
        data = self._open()
        with data.lock:
            self._session(session_id)
            now = self.clock()
            held = self._live(data, session_id, now)
            if held is not None and held[0] != gone:
                return held[0]
            data.leases[session_id] = (who, now + ttl)
            return None

    async def renew(self, session_id: str, owner: str, ttl_seconds: float) -> bool:
        """Extend ``owner``'s live lease to ``ttl_seconds`` from now; ``False`` when it is not
        the holder (any more)."""
        who, ttl = _lease_rules.check_lease(owner, ttl_seconds)
        data = self._open()
        with data.lock:
            self._session(session_id)
            now = self.clock()
            held = data.leases.get(session_id)
            if held is None or held[0] != who or held[1] <= now:
                return False
            data.leases[session_id] = (who, now + ttl)
            return True

    async def release(self, session_id: str, owner: str) -> bool:
        """Release ``owner``'s live lease; ``False`` when it is not the holder (any more)."""
        who = _lease_rules.check_owner(owner)
        data = self._open()
        with data.lock:
            self._session(session_id)
            held = data.leases.get(session_id)
            if held is None or held[0] != who or held[1] <= self.clock():
                return False
            del data.leases[session_id]
            return True

    async def lease(self, session_id: str) -> Lease | None:
        """The live lease on the session (its owner and seconds left), else ``None``."""
        data = self._open()
        with data.lock:
            self._session(session_id)
            now = self.clock()
            held = self._live(data, session_id, now)
        return None if held is None else Lease(owner=held[0], expires_in=held[1] - now)

    @staticmethod
    def _live(data: MemoryData, session_id: str, now: float) -> tuple[str, float] | None:
        """The session's lease ``(owner, expires at)`` unless it has expired."""
        held = data.leases.get(session_id)
        return held if held is not None and held[1] > now else None

    # -- the event log ----------------------------------------------------------------------

    async def append_events(
        self, session_id: str, records: Iterable[EventRecord]
    ) -> list[EventRecord]:
        """Append records under the store's own ``seq`` (see ``Store``)."""
        encoded = [_rows.encode_event(r) for r in records]
        data = self._open()
        with data.lock:
            record = self._session(session_id)
            start = len(record.events)
            record.events.extend(encoded)
            if encoded:
                self._touch(record)
        return [_rows.decode_event(start + i + 1, *e) for i, e in enumerate(encoded)]

    async def read_events(
        self, session_id: str, *, after_seq: int = 0, kind_prefix: str = ""
    ) -> list[EventRecord]:
        """The records after ``after_seq`` whose kind starts with ``kind_prefix``."""
        after, prefix = _rows.check_read_args(after_seq, kind_prefix)
        data = self._open()
        with data.lock:
            events = self._session(session_id).events[after:]
        return [
            _rows.decode_event(after + i + 1, *e)
            for i, e in enumerate(events)
            if e[1].startswith(prefix)
        ]


def _extend(rows: list[str], start: int | None, new: Sequence[str]) -> None:
    """Append ``new`` at ``start`` (the length of ``rows``), or replace ``rows`` (``None``)."""
    if start is None:
        rows.clear()
    rows.extend(new)


def _merge_queue(record: _Session, incoming: list[_rows.QueueRow]) -> None:
    for row in incoming:
        merged = _queue_rules.merge_row(record.row(row.id), row)
        if merged is None:
            continue
        if merged.status == "pending":
            record.pending[row.id] = merged
        else:
            record.settle(row.id, merged.status)
