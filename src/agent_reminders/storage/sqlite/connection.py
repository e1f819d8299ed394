"""The connection under a ``SQLiteStore``: every call runs on the store's own thread, in one
transaction, with SQLite's failures turned into one ``StoreError`` (damage turning the store
read-only for good)."""

from __future__ import annotations

import functools
import logging
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from ..._core.errors import AgentRemindersError, StoreError
from ...queue import QueueItem
from .. import _rows
from .._wake import Waiters
from ..base import ClosingStore, UnknownSessionError
from ..thread import StoreThread
from . import file as file_
from . import sql

log = logging.getLogger("agent_reminders.storage")

T = TypeVar("T")


class SQLiteConnection(ClosingStore):
    """What every operation of ``SQLiteStore`` runs on: its connection, its thread, its
    transactions (the attributes are set by ``SQLiteStore.__init__``)."""

    path: str
    read_only: bool
    clock: Callable[[], float]
    _db: sqlite3.Connection | None
    _thread: StoreThread
    _waiters: Waiters
    _corrupt: str | None
    _closed: bool

    async def _call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await self._thread.run(functools.partial(self._on_db, fn))

    def _on_db(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn(connection)`` on the store's thread, SQLite's errors as ``StoreError``."""
        db = self._db
        if self._closed:
            raise StoreError(f"{self.path}: this store is closed")
        if db is None:  # damaged, and not even a reader could be had
            raise StoreError(self._corrupt or f"{self.path}: this store is closed")
        try:
            return fn(db)
        except sqlite3.Error as exc:
            raise self._failure(db, exc) from None

    def _failure(self, db: sqlite3.Connection, exc: sqlite3.Error) -> StoreError:
        """The ``StoreError`` for a failed call (on the store's thread). Damage turns the
        store read-only for good; damage and a full disk are logged, so ``serve`` says them
        on stderr whatever the client does with its reply."""
        kind = file_.code(exc)
        if kind in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB) and self._corrupt is None:
            self._corrupt = file_.corrupt(self.path, str(exc), at_open=False)
            log.error("%s", self._corrupt)
            # a connection that only reads: nothing this object does can change the file
            self._db = file_.close_untouched(db, Path(self.path))
            self.read_only = True
        if self._corrupt is not None:
            return StoreError(self._corrupt)
        said = file_.describe(self.path, exc, at_open=False)
        if kind == sqlite3.SQLITE_FULL:
            log.error("%s", said)
        return StoreError(said or f"{self.path}: {exc}")

    def _close(self) -> None:
        db, self._db = self._db, None
        self._closed = True
        if db is not None:
            db.close()

    async def close(self) -> None:
        """Close the connection (idempotent); later calls raise ``StoreError``."""
        await self._thread.run(self._close)

    @contextmanager
    def _transaction(self, db: sqlite3.Connection, *, write: bool = True) -> Iterator[None]:
        """One transaction; a writer takes the write lock first (``BEGIN IMMEDIATE``), so two
        drainers never both read an item as pending. A store that only reads refuses every
        write here, before SQLite is asked (a write that would change nothing included)."""
        if write and self.read_only:
            why = "opened so, or the file or its folder cannot be written"
            raise StoreError(self._corrupt or file_.read_only(self.path, why))
        with sql.transaction(db, write=write):
            yield

    def _exists(self, db: sqlite3.Connection, session_id: str) -> None:
        if db.execute("SELECT 1 FROM sessions WHERE session_id = ?", (session_id,)).fetchone():
            return
        raise UnknownSessionError(session_id)

    def _touch(self, db: sqlite3.Connection, session_id: str) -> None:
        """Make a write to the session its latest activity (``list_sessions`` order)."""
        db.execute(sql.TOUCH, (self.clock(), sql.take_activity(db, 1), session_id))

    def _insert_pending(
        self, db: sqlite3.Connection, sid: str, rows: Sequence[_rows.QueueRow], *, skip: bool
    ) -> None:
        """Queue ``rows`` for ``sid``, each taking the next activity value as its seq
        (``skip``: an id the session has pending already is left as it is)."""
        if rows:
            first = sql.take_activity(db, len(rows))
            sql.queue_pending(db, [(sid, r) for r in rows], first, self.clock(), skip=skip)

    def _item(self, row: _rows.QueueRow) -> QueueItem:
        try:
            return row.item()
        except AgentRemindersError as exc:
            raise StoreError(
                f"{self.path}: stored queue item {row.id!r} is invalid: {exc}"
            ) from None
