"""The connection under a SQLite store: its arguments, the file opened with them, and every
call run in one transaction with SQLite's failures turned into one ``StoreError`` (damage
turning the store read-only for good).

Blocking, and free of any event loop: ``BlockingSQLite`` is this connection with the store's
operations on it, and ``SQLiteStore`` runs those on a thread of its own.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Literal, Self, TypeVar

from ..._core.errors import AgentRemindersError, ConfigError, StoreError
from ...queue import QueueItem
from .. import _rows, _save_plan
from ..base import UnknownSessionError
from . import file as file_
from . import sql
from .file import Check
from .opening import connect

T = TypeVar("T")

Synchronous = Literal["NORMAL", "FULL"]


def _check_path(path: object) -> str:
    if isinstance(path, bytes) or not isinstance(path, str | os.PathLike):
        raise TypeError(f"path must be a str or os.PathLike, not {type(path).__name__}")
    text = os.fspath(path)
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(f"a store path must be a non-blank string; got {path!r}")
    if text == ":memory:" or text.startswith("file:"):
        raise ConfigError(
            f"SQLiteStore needs a file path, not {text!r}; use MemoryStore for a store in memory"
        )
    return text


def _check_synchronous(value: object) -> Synchronous:
    text = value.upper() if isinstance(value, str) else value
    if text == "NORMAL":
        return "NORMAL"
    if text == "FULL":
        return "FULL"
    raise ConfigError(f"synchronous must be 'NORMAL' or 'FULL'; got {value!r}")


class SQLiteConnection:
    """One connection to a store file, opened (checked, migrated) when the object is made;
    the arguments are ``SQLiteStore``'s, except ``poll_interval`` (waiting is the async
    store's). Not safe to share between threads: one caller at a time."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: Synchronous | str = "NORMAL",
        busy_timeout_ms: int = 10_000,
        clock: Callable[[], float] = time.time,
        create: bool = True,
        create_folders: bool = True,
        read_only: bool = False,
        check: Check | str = "auto",
    ) -> None:
        self.path: str = _check_path(path)
        self.create = create
        self.create_folders = create_folders
        self.check: Check = file_.check_check(check)
        self.synchronous: Synchronous = _check_synchronous(synchronous)
        if type(busy_timeout_ms) is not int or busy_timeout_ms < 0:
            raise ConfigError(f"busy_timeout_ms must be an int >= 0; got {busy_timeout_ms!r}")
        self.busy_timeout_ms = busy_timeout_ms
        self.clock = clock
        self._memo = _save_plan.Memo()
        self._pending = sql.PendingCounts()
        self._corrupt: str | None = None  # set once damage is found: every write is refused
        self._closed = False
        self._db: sqlite3.Connection | None
        self._db, self.read_only = connect(
            self.path,
            read_only=read_only,
            create=create,
            create_folders=create_folders,
            busy_timeout_ms=busy_timeout_ms,
            synchronous=self.synchronous,
            check=self.check,
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.path!r}, synchronous={self.synchronous!r})"

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def close(self) -> None:
        """Close the connection (idempotent); later calls raise ``StoreError``."""
        db, self._db = self._db, None
        self._closed = True
        if db is not None:
            db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn(connection)``, SQLite's errors raised as ``StoreError`` (damage turning the
        store read-only for good); every operation of the store goes through here."""
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
        """The ``StoreError`` for a failed call. Damage turns the store read-only for good;
        damage and a full disk are logged, so ``serve`` says them on stderr whatever the
        client does with its reply."""
        kind = file_.code(exc)
        if kind in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB) and self._corrupt is None:
            self._corrupt = file_.corrupt(self.path, str(exc), at_open=False)
            file_.log().error("%s", self._corrupt)
            # a connection that only reads: nothing this object does can change the file
            self._db = file_.close_untouched(db, Path(self.path))
            self.read_only = True
        if self._corrupt is not None:
            return StoreError(self._corrupt)
        said = file_.describe(self.path, exc, at_open=False)
        if kind == sqlite3.SQLITE_FULL:
            file_.log().error("%s", said)
        return StoreError(said or f"{self.path}: {exc}")

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
