"""``SQLiteStore``: the async ``Store`` on one SQLite file, each call the matching call of a
``BlockingSQLite`` (``blocking``) run on the store's own thread."""

from __future__ import annotations

import functools
import os
import sqlite3
import time
from collections.abc import Callable, Container, Iterable, Sequence
from typing import Any, TypeVar

from ..._core.events import EventRecord
from ..._core.records import DeliveryMode, Message, Reminder
from ...queue import QueueItem
from ...state import SessionState
from .. import _queue_rules, _rows
from .._wake import Waiters
from ..base import ClosingStore, Lease, RevokeStatus, SessionInfo
from ..thread import Call, StoreThread
from . import sql
from .blocking import BlockingSQLite
from .connection import Synchronous
from .file import Check

__all__ = ["SQLiteStore", "Synchronous"]

T = TypeVar("T")


class SQLiteStore(ClosingStore):
    """The ``Store`` protocol on one SQLite file (WAL).

    The file is opened, recognised, checked and migrated when the object is made (use
    ``await open_store("sqlite:PATH")`` to do that off the event loop); a missing file and
    its folders are created (unless ``create=False`` or ``create_folders=False``).

    A file that cannot be written (a read-only volume, an immutable file, a folder where the
    write-ahead log cannot be made) is opened read-only, as with ``read_only=True``: reads
    work, a write raises ``StoreError`` saying the file is read-only. Damage found while the
    store is open (SQLite's "database disk image is malformed") is logged once and turns the
    store read-only for good, so a damaged file is never written to again; a full disk fails
    only the write that met it (logged too).

    Args:
        path: The database file (``.agent-reminders/state.db`` for ``serve``).
        synchronous: ``"NORMAL"`` (default) — a committed write survives a crash of the
            process; ``"FULL"`` — it also survives power loss, at the cost of an fsync per
            commit.
        busy_timeout_ms: How long a writer waits for another process's write lock.
        clock: Seconds since the epoch, for ``created_at``/``updated_at``.
        poll_interval: How often ``wait_for_items`` looks for items queued by another
            store object or process.
        create: Whether a missing file (and its folders) is created; ``False`` refuses it
            with ``StoreError`` and creates nothing (for tools that only read or add to an
            existing store, like ``agent-reminders remind --store``).
        create_folders: Whether the missing folders of a new file are made; ``False``
            refuses a folder that does not exist, naming it (a typo in a path should not
            start an empty store nobody writes to).
        read_only: Open the file only to read it; it must exist and hold the current schema.
        check: ``PRAGMA quick_check`` at open, which reads every page: ``"auto"`` (default)
            for files up to ``CHECK_LIMIT_BYTES`` (64 MiB), ``"full"`` whatever the size,
            ``"off"`` never (damage is then found when a query meets it).

    Attributes:
        read_only: Whether the store only reads: asked for, found so at open, or turned so by
            damage found in the file.

    Raises:
        StoreError: ``RMD-109`` naming the file: a directory, unreadable, not a SQLite
            database, damaged, another program's database, or a schema from a newer version;
            a missing folder or file that is not to be created.
        ConfigError: ``RMD-104`` for a bad argument.

    The blocking work is :class:`~agent_reminders.storage.sqlite.blocking.BlockingSQLite`'s
    (the same file, as plain calls, for a process with no event loop): each method here runs
    the call of the same name on the store's own thread (``StoreThread``) and wakes the
    ``wait_for_items`` waiters its writes concern.

    Example:
        >>> import anyio, tempfile, os
        >>> from agent_reminders import Session
        >>> async def main(path):
        ...     async with SQLiteStore(path) as store:
        ...         await store.create_session(Session(session_id="s1").state())
        ...     async with SQLiteStore(path) as store:  # a restart
        ...         return (await store.load_session("s1")).session_id
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     anyio.run(main, os.path.join(tmp, "state.db"))
        's1'
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: Synchronous | str = "NORMAL",
        busy_timeout_ms: int = 10_000,
        clock: Callable[[], float] = time.time,
        poll_interval: float = 0.05,
        create: bool = True,
        create_folders: bool = True,
        read_only: bool = False,
        check: Check | str = "auto",
    ) -> None:
        self._sqlite = BlockingSQLite(
            path,
            synchronous=synchronous,
            busy_timeout_ms=busy_timeout_ms,
            clock=clock,
            create=create,
            create_folders=create_folders,
            read_only=read_only,
            check=check,
        )
        self.path: str = self._sqlite.path
        self.create = create
        self.create_folders = create_folders
        self.check: Check = self._sqlite.check
        self.synchronous: Synchronous = self._sqlite.synchronous
        self.busy_timeout_ms = busy_timeout_ms
        self.clock = clock
        self.poll_interval = poll_interval
        self._waiters = Waiters()
        self._thread = StoreThread(f"agent-reminders store {self.path}")

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r}, synchronous={self.synchronous!r})"

    @property
    def read_only(self) -> bool:
        """Whether the store only reads: asked for, found so at open, or turned so by damage
        found in the file."""
        return self._sqlite.read_only

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._sqlite.closed

    async def close(self) -> None:
        """Close the connection (idempotent); later calls raise ``StoreError``."""
        await self._thread.run(self._sqlite.close)

    async def _call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn(connection)`` on the store's thread (``BlockingSQLite.run``)."""
        return await self._thread.run(functools.partial(self._sqlite.run, fn))

    # -- session records --------------------------------------------------------------------

    async def create_session(self, state: SessionState) -> None:
        """Store a new session (see ``Store``)."""
        await self._thread.run(functools.partial(self._sqlite.create_session, state))
        self._waiters.notify(state.session_id)

    async def load_session(self, session_id: str) -> SessionState | None:
        """The stored session, or ``None`` (see ``Store``); read and parsed off the event
        loop."""
        return await self._thread.run(functools.partial(self._sqlite.load_session, session_id))

    async def save_session(self, state: SessionState) -> None:
        """Write one turn in one transaction (see ``Store``).

        Costs what the turn changed, and that work (the JSON of what is new) is done on the
        store's thread, off the event loop (``BlockingSQLite.save_session``).
        """
        await self._thread.run(functools.partial(self._sqlite.save_session, state))
        self._waiters.notify(state.session_id)

    async def append_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        """Append transcript messages (see ``Store``)."""
        sqlite = self._sqlite
        await self._thread.run(functools.partial(sqlite.append_messages, session_id, messages))

    async def save_reminders(self, session_id: str, reminders: Sequence[Reminder]) -> None:
        """Replace the pending reminders (see ``Store``)."""
        sqlite = self._sqlite
        await self._thread.run(functools.partial(sqlite.save_reminders, session_id, reminders))

    async def list_sessions(self) -> list[SessionInfo]:
        """Every session, most recent activity first."""
        return await self._thread.run(self._sqlite.list_sessions)

    async def latest_session(self) -> str | None:
        """The id of the most recently active session, or ``None``."""
        return await self._thread.run(self._sqlite.latest_session)

    async def session_ids(self, *, limit: int, among: Iterable[str] | None = None) -> list[str]:
        """Up to ``limit`` stored session ids (those in ``among`` when given): a ``LIMIT`` on
        the primary key, in chunks of ``among`` until enough are found."""
        ids = functools.partial(self._sqlite.session_ids, limit=limit, among=among)
        return await self._thread.run(ids)

    # -- the event log ----------------------------------------------------------------------

    async def append_events(
        self, session_id: str, records: Iterable[EventRecord]
    ) -> list[EventRecord]:
        """Append records under the store's own per-session ``seq``; returns them."""
        sqlite = self._sqlite
        return await self._thread.run(functools.partial(sqlite.append_events, session_id, records))

    async def read_events(
        self, session_id: str, *, after_seq: int = 0, kind_prefix: str = ""
    ) -> list[EventRecord]:
        """The records after ``after_seq`` whose kind starts with ``kind_prefix``, in order."""
        read = functools.partial(
            self._sqlite.read_events, session_id, after_seq=after_seq, kind_prefix=kind_prefix
        )
        return await self._thread.run(read)

    # -- the queue --------------------------------------------------------------------------

    async def enqueue(
        self, session_id: str, item: QueueItem, *, max_pending: int | None = None
    ) -> str:
        """Queue a validated item; committed to the file before this returns.

        Concurrent calls from one event loop share a transaction (group commit): each waits
        for the commit that holds its own row, and a refused item (unknown session, id
        already used, queue full) fails only its own call.
        """
        job = self._sqlite.enqueue_job(session_id, item, max_pending=max_pending)
        await self._thread.run_grouped(self._enqueue_group, job)
        self._waiters.notify(job.session_id)
        return job.row.id

    def _enqueue_group(self, calls: Sequence[Call[Any]]) -> None:
        """The calls' ``sql.Enqueue`` jobs in one transaction; a refused one fails its call."""
        jobs: list[sql.Enqueue] = [call.arg for call in calls]
        for call, error in zip(calls, self._sqlite.enqueue_many(jobs), strict=True):
            if error is not None:
                call.error = error

    async def pending(self, session_id: str) -> list[dict[str, Any]]:
        """The pending rows ``session/pending_injections`` reports, FIFO."""
        return await self._thread.run(functools.partial(self._sqlite.pending, session_id))

    async def drain(self, session_id: str, modes: Iterable[DeliveryMode | str]) -> list[QueueItem]:
        """Take the pending items of ``modes`` and mark them delivered, in one transaction."""
        return await self._thread.run(functools.partial(self._sqlite.drain, session_id, modes))

    async def revoke(self, session_id: str, reminder_id: str) -> RevokeStatus:
        """Revoke a queued reminder (see ``Store``)."""
        sqlite = self._sqlite
        return await self._thread.run(functools.partial(sqlite.revoke, session_id, reminder_id))

    async def wait_for_items(
        self,
        session_id: str,
        timeout: float,
        *,
        modes: Iterable[DeliveryMode | str] | None = None,
        ignore: Container[str] = (),
    ) -> bool:
        """Wait until something (of ``modes``, not in ``ignore``) is pending, at most
        ``timeout`` seconds.

        Woken at once by an ``enqueue`` through this store object; items queued by other
        objects or processes are seen within ``poll_interval``.
        """
        sid = _rows.check_session_id(session_id)
        wanted = None if modes is None else _queue_rules.check_modes(modes)  # checked now, once
        look = functools.partial(self._sqlite.has_pending, sid, modes=wanted, ignore=ignore)

        async def check() -> bool:
            return await self._thread.run(look)

        return await self._waiters.wait(sid, timeout, check, poll=self.poll_interval)

    # -- leases -----------------------------------------------------------------------------

    async def claim(
        self, session_id: str, owner: str, ttl_seconds: float, *, replace: str | None = None
    ) -> str | None:
        """Claim the session for ``owner`` for ``ttl_seconds`` (taking it from ``replace``
        if that owner holds it, under the write lock): ``None`` when claimed, else the owner
        holding it (see ``Store``). Expiry is read on this store's ``clock``."""
        claim = functools.partial(
            self._sqlite.claim, session_id, owner, ttl_seconds, replace=replace
        )
        return await self._thread.run(claim)

    async def renew(self, session_id: str, owner: str, ttl_seconds: float) -> bool:
        """Extend ``owner``'s live lease to ``ttl_seconds`` from now; ``False`` when it is not
        the holder (any more)."""
        renew = functools.partial(self._sqlite.renew, session_id, owner, ttl_seconds)
        return await self._thread.run(renew)

    async def release(self, session_id: str, owner: str) -> bool:
        """Release ``owner``'s live lease; ``False`` when it is not the holder (any more)."""
        return await self._thread.run(functools.partial(self._sqlite.release, session_id, owner))

    async def lease(self, session_id: str) -> Lease | None:
        """The live lease on the session (its owner and seconds left on this store's
        ``clock``), else ``None``."""
        return await self._thread.run(functools.partial(self._sqlite.lease, session_id))
