"""``SQLiteStore``: its arguments, the session records and the event log (the queue and the
leases are in ``queueing``, the connection under them in ``connection``)."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Literal

from ..._core.errors import ConfigError, StateError, StoreError
from ..._core.events import EventRecord
from ..._core.records import Message, Reminder
from ...state import SessionState
from .. import _rows, _save_plan
from .._wake import Waiters
from ..base import SessionExistsError, SessionInfo, UnknownSessionError
from ..thread import StoreThread
from . import file as file_
from . import sql
from .file import Check
from .opening import connect
from .queueing import SQLiteQueue

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


class SQLiteStore(SQLiteQueue):
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
        self.path: str = _check_path(path)
        self.create = create
        self.create_folders = create_folders
        self.read_only = read_only
        self.check: Check = file_.check_check(check)
        self.synchronous: Synchronous = _check_synchronous(synchronous)
        if type(busy_timeout_ms) is not int or busy_timeout_ms < 0:
            raise ConfigError(f"busy_timeout_ms must be an int >= 0; got {busy_timeout_ms!r}")
        self.busy_timeout_ms = busy_timeout_ms
        self.clock = clock
        self.poll_interval = poll_interval
        self._memo = _save_plan.Memo()
        self._waiters = Waiters()
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
        self._thread = StoreThread(f"agent-reminders store {self.path}")

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r}, synchronous={self.synchronous!r})"

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    # -- session records --------------------------------------------------------------------

    async def create_session(self, state: SessionState) -> None:
        """Store a new session (see ``Store``)."""
        now = self.clock()

        def run(db: sqlite3.Connection, plan: _save_plan.SavePlan) -> _save_plan.Writes:
            sid = plan.session_id
            writes = plan.against(0, 0, _rows.EMPTY_DIGEST)
            with self._transaction(db):
                if db.execute("SELECT 1 FROM sessions WHERE session_id = ?", (sid,)).fetchone():
                    raise SessionExistsError(sid)
                db.execute(
                    "INSERT INTO sessions (session_id, created_at, updated_at, touched, turn, "
                    "head, message_count, digest, revision) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0)",
                    (
                        sid,
                        now,
                        now,
                        sql.take_activity(db, 1),
                        plan.turn,
                        plan.head,
                        plan.message_count,
                        writes.digest,
                    ),
                )
                sql.write_history(db, sid, writes)
                self._insert_pending(db, sid, plan.items, skip=False)
                db.executemany(
                    "INSERT INTO settled VALUES (?, ?, ?)",
                    [(sid, r.id, r.status) for r in plan.settled],
                )
            return writes

        def job() -> str:
            plan = _save_plan.plan_save(state, None)  # the JSON work, off the event loop
            writes = self._on_db(lambda db: run(db, plan))
            self._memo.wrote(plan, writes, 0)
            return plan.session_id

        self._waiters.notify(await self._thread.run(job))

    async def load_session(self, session_id: str) -> SessionState | None:
        """The stored session, or ``None`` (see ``Store``); read and parsed off the event
        loop."""
        sid = _rows.check_session_id(session_id)

        def run(db: sqlite3.Connection) -> sql.Read | None:
            with self._transaction(db, write=False):  # one snapshot for every read
                found = db.execute(
                    "SELECT head, revision, digest FROM sessions WHERE session_id = ?", (sid,)
                ).fetchone()
                if found is None:
                    return None
                return sql.Read(
                    head=str(found[0]),
                    revision=int(found[1]),
                    digest=str(found[2]),
                    messages=sql.texts(db, "messages", sid),
                    audit=sql.texts(db, "audit", sid),
                    pending=sql.pending_rows(db, sid),
                    settled=db.execute(
                        "SELECT item_id, status FROM settled WHERE session_id = ?", (sid,)
                    ).fetchall(),
                )

        def job() -> SessionState | None:
            stored = self._on_db(run)
            if stored is None:
                return None
            try:
                state = _rows.join_state(
                    stored.head, stored.messages, stored.audit, stored.pending, stored.settled
                )
            except (StateError, ValueError, KeyError, TypeError) as exc:
                raise StoreError(
                    f"{self.path}: stored session {sid!r} cannot be read: {exc}"
                ) from None
            self._memo.read(state, stored.revision, stored.digest, len(stored.audit))
            return state

        return await self._thread.run(job)

    async def save_session(self, state: SessionState) -> None:
        """Write one turn in one transaction (see ``Store``).

        Costs what the turn changed: the JSON of the new messages and audit entries, the
        head and the queue rows this store object does not know to be stored is made in the
        worker thread, and only those rows are written (``_save_plan.plan_save``).
        """

        def run(db: sqlite3.Connection, plan: _save_plan.SavePlan) -> tuple[_save_plan.Writes, int]:
            sid = plan.session_id
            with self._transaction(db):
                found = db.execute(
                    "SELECT message_count, digest, revision FROM sessions WHERE session_id = ?",
                    (sid,),
                ).fetchone()
                if found is None:
                    raise UnknownSessionError(sid)
                revision = int(found[2])
                writes = plan.against(revision, int(found[0]), str(found[1]))
                sql.write_history(db, sid, writes)
                db.execute(
                    "UPDATE sessions SET turn = ?, head = ?, message_count = ?, digest = ?, "
                    "revision = ? WHERE session_id = ?",
                    (plan.turn, plan.head, plan.message_count, writes.digest, revision + 1, sid),
                )
                # the merge of _queue_rules.merge_row, a few indexed statements per row the
                # store may lack: an item it never saw is queued (unless it settled it
                # already); an id the state settled is settled unless the store settled it first
                unsettled = [r for r in plan.items if sql.settled_row(db, sid, r.id) is None]
                self._insert_pending(db, sid, unsettled, skip=True)
                db.executemany(
                    "DELETE FROM pending WHERE session_id = ? AND item_id = ?",
                    [(sid, r.id) for r in plan.settled],
                )
                db.executemany(
                    "INSERT INTO settled VALUES (?, ?, ?) "
                    "ON CONFLICT (session_id, item_id) DO NOTHING",
                    [(sid, r.id, r.status) for r in plan.settled],
                )
                self._touch(db, sid)
            return writes, revision + 1

        def job() -> str:
            plan = _save_plan.plan_save(state, self._memo)  # the JSON work, off the event loop
            writes, revision = self._on_db(lambda db: run(db, plan))
            self._memo.wrote(plan, writes, revision)
            return plan.session_id

        self._waiters.notify(await self._thread.run(job))

    async def append_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        """Append transcript messages (see ``Store``)."""
        sid = _rows.check_session_id(session_id)
        _rows.message_rows(messages, 0)  # validate before taking the write lock

        def run(db: sqlite3.Connection) -> None:
            with self._transaction(db):
                found = db.execute(
                    "SELECT message_count, digest FROM sessions WHERE session_id = ?", (sid,)
                ).fetchone()
                if found is None:
                    raise UnknownSessionError(sid)
                count = int(found[0])
                rows = _rows.message_rows(messages, count)
                sql.insert_rows(db, "messages", sid, count, rows)
                db.execute(
                    "UPDATE sessions SET message_count = ?, digest = ?, revision = revision + 1 "
                    "WHERE session_id = ?",
                    (count + len(rows), _rows.chain(str(found[1]), rows), sid),
                )
                self._touch(db, sid)

        await self._call(run)

    async def save_reminders(self, session_id: str, reminders: Sequence[Reminder]) -> None:
        """Replace the pending reminders (see ``Store``)."""
        sid = _rows.check_session_id(session_id)

        def run(db: sqlite3.Connection) -> None:
            with self._transaction(db):
                found = db.execute("SELECT head FROM sessions WHERE session_id = ?", (sid,))
                head = found.fetchone()
                if head is None:
                    raise UnknownSessionError(sid)
                db.execute(
                    "UPDATE sessions SET head = ?, revision = revision + 1 WHERE session_id = ?",
                    (_rows.head_with_reminders(str(head[0]), reminders), sid),
                )
                self._touch(db, sid)

        await self._call(run)

    async def list_sessions(self) -> list[SessionInfo]:
        """Every session, most recent activity first."""

        def run(db: sqlite3.Connection) -> list[SessionInfo]:
            return [
                SessionInfo(
                    session_id=r[0],
                    created_at=r[1],
                    updated_at=r[2],
                    turn=r[3],
                    message_count=r[4],
                )
                for r in db.execute(sql.BY_ACTIVITY)
            ]

        return await self._call(run)

    async def latest_session(self) -> str | None:
        """The id of the most recently active session, or ``None``."""

        def run(db: sqlite3.Connection) -> str | None:
            row = db.execute(f"{sql.BY_ACTIVITY} LIMIT 1").fetchone()
            return None if row is None else str(row[0])

        return await self._call(run)

    async def session_ids(self, *, limit: int, among: Iterable[str] | None = None) -> list[str]:
        """Up to ``limit`` stored session ids (those in ``among`` when given): a ``LIMIT`` on
        the primary key, in chunks of ``among`` until enough are found."""
        wanted = None if among is None else list(among)

        def run(db: sqlite3.Connection) -> list[str]:
            if wanted is None:
                rows = db.execute("SELECT session_id FROM sessions LIMIT ?", (max(0, limit),))
                return [str(r[0]) for r in rows]
            found: list[str] = []
            for start in range(0, len(wanted), sql.ID_CHUNK):
                chunk = wanted[start : start + sql.ID_CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = db.execute(
                    f"SELECT session_id FROM sessions WHERE session_id IN ({marks}) LIMIT ?",
                    (*chunk, limit - len(found)),
                )
                found.extend(str(r[0]) for r in rows)
                if len(found) >= limit:
                    break
            return found[: max(0, limit)]

        return await self._call(run)

    # -- the event log ----------------------------------------------------------------------

    async def append_events(
        self, session_id: str, records: Iterable[EventRecord]
    ) -> list[EventRecord]:
        """Append records under the store's own per-session ``seq``; returns them."""
        sid = _rows.check_session_id(session_id)
        encoded = [_rows.encode_event(r) for r in records]

        def run(db: sqlite3.Connection) -> int:
            with self._transaction(db):
                self._exists(db, sid)
                (last,) = db.execute(
                    "SELECT coalesce(max(seq), 0) FROM events WHERE session_id = ?", (sid,)
                ).fetchone()
                db.executemany(
                    "INSERT INTO events VALUES (?, ?, ?, ?, ?)",
                    [(sid, last + i + 1, *e) for i, e in enumerate(encoded)],
                )
                if encoded:
                    self._touch(db, sid)
                return int(last)

        start = await self._call(run)
        return [_rows.decode_event(start + i + 1, *e) for i, e in enumerate(encoded)]

    async def read_events(
        self, session_id: str, *, after_seq: int = 0, kind_prefix: str = ""
    ) -> list[EventRecord]:
        """The records after ``after_seq`` whose kind starts with ``kind_prefix``, in order."""
        sid = _rows.check_session_id(session_id)
        after, prefix = _rows.check_read_args(after_seq, kind_prefix)

        def run(db: sqlite3.Connection) -> list[EventRecord]:
            with self._transaction(db, write=False):
                self._exists(db, sid)
                found = db.execute(
                    "SELECT seq, topic, kind, payload FROM events WHERE session_id = ? "
                    "AND seq > ? AND substr(kind, 1, ?) = ? ORDER BY seq",
                    (sid, after, len(prefix), prefix),
                )
                return [_rows.decode_event(*r) for r in found]

        return await self._call(run)
