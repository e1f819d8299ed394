"""``SQLiteStore``: the embedded durable ``Store`` (spec 06 §1 and §2).

One file in WAL mode, one connection per store object, owned by the store's own thread
(``storage.thread.StoreThread``): every call runs there, in call order, so the event loop never
blocks on disk. Each public
method is one transaction; the writes of a turn (``save_session``) and an acknowledged
``enqueue`` are committed before the call returns. Several store objects — in several
threads or processes — may share one file: writers take SQLite's write lock up front
(``BEGIN IMMEDIATE``), so a drain is atomic across all of them.

A file that is not this store — random bytes, another program's database, a directory, a
schema from a newer version — is refused with one ``StoreError`` naming it, before anything
is written: the file keeps its bytes (WAL is switched on only once the file is recognised).
"""

from __future__ import annotations

import functools
import os
import sqlite3
import time
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from .._core.errors import AgentRemindersError, ConfigError, StateError, StoreError
from .._core.events import EventRecord
from .._core.records import DeliveryMode, Message, Reminder
from ..queue import QueueItem
from ..state import SessionState
from . import _codec as codec
from ._wake import Waiters
from .base import ClosingStore, RevokeStatus, SessionExistsError, SessionInfo, UnknownSessionError
from .thread import Call, StoreThread

__all__ = ["MIGRATIONS", "SCHEMA_NAME", "SCHEMA_VERSION", "SQLiteStore", "Synchronous"]

T = TypeVar("T")
Synchronous = Literal["NORMAL", "FULL"]

SCHEMA_NAME = "agent-reminders.store"
_MAGIC = b"SQLite format 3\x00"

# MIGRATIONS[n] takes a file from schema version n to n + 1 (0 = an empty file). Append new
# steps; never edit a released one. Each step runs in one transaction with the version bump.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        "CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        """CREATE TABLE sessions (
            session_id TEXT PRIMARY KEY,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            touched INTEGER NOT NULL,
            turn INTEGER NOT NULL,
            head TEXT NOT NULL,
            message_count INTEGER NOT NULL,
            digest TEXT NOT NULL
        )""",
        "CREATE INDEX sessions_by_activity ON sessions (touched)",
        """CREATE TABLE messages (
            session_id TEXT NOT NULL REFERENCES sessions (session_id),
            position INTEGER NOT NULL,
            event TEXT NOT NULL,
            PRIMARY KEY (session_id, position)
        ) WITHOUT ROWID""",
        """CREATE TABLE queue (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL REFERENCES sessions (session_id),
            item_id TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'revoked')),
            kind TEXT,
            mode TEXT,
            payload TEXT,
            UNIQUE (session_id, item_id)
        )""",
        "CREATE INDEX queue_by_status ON queue (session_id, status, seq)",
        """CREATE TABLE events (
            session_id TEXT NOT NULL REFERENCES sessions (session_id),
            seq INTEGER NOT NULL,
            topic TEXT NOT NULL,
            kind TEXT NOT NULL,
            payload TEXT NOT NULL,
            PRIMARY KEY (session_id, seq)
        ) WITHOUT ROWID""",
    ),
    (
        # 1 -> 2: leases (spec 06 §3), one live claim per session
        """CREATE TABLE leases (
            session_id TEXT PRIMARY KEY REFERENCES sessions (session_id),
            owner TEXT NOT NULL,
            expires_at REAL NOT NULL
        ) WITHOUT ROWID""",
    ),
    (
        # 2 -> 3: a save appends what a turn added. Audit entries get rows of their own (a
        # head written before keeps its entries until the session's next save moves them);
        # every write of a session bumps its revision, so a store object can tell that the
        # rows are still the ones it last wrote or read.
        """CREATE TABLE audit (
            session_id TEXT NOT NULL REFERENCES sessions (session_id),
            position INTEGER NOT NULL,
            event TEXT NOT NULL,
            PRIMARY KEY (session_id, position)
        ) WITHOUT ROWID""",
        "ALTER TABLE sessions ADD COLUMN revision INTEGER NOT NULL DEFAULT 0",
    ),
    (
        # 3 -> 4: an enqueue writes one row and one index entry. The queue splits into the
        # pending items (FIFO by seq) and the delivered and revoked ids; activity (the order
        # of list_sessions) is one counter: a session's is the larger of its touched and its
        # newest pending item's seq, so an enqueue no longer rewrites the session's row and
        # an index on it. Pending items carried over take seqs below every counter value
        # (their enqueue already touched their session), in their old order.
        """CREATE TABLE activity (
            id INTEGER PRIMARY KEY CHECK (id = 0),
            last INTEGER NOT NULL
        )""",
        "INSERT INTO activity VALUES (0, (SELECT coalesce(max(touched), 0) FROM sessions))",
        """CREATE TABLE pending (
            seq INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL REFERENCES sessions (session_id),
            item_id TEXT NOT NULL,
            queued_at REAL NOT NULL,
            kind TEXT NOT NULL,
            mode TEXT NOT NULL,
            payload TEXT NOT NULL,
            UNIQUE (session_id, item_id)
        )""",
        """CREATE TABLE settled (
            session_id TEXT NOT NULL REFERENCES sessions (session_id),
            item_id TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('delivered', 'revoked')),
            PRIMARY KEY (session_id, item_id)
        ) WITHOUT ROWID""",
        """INSERT INTO pending SELECT seq - (SELECT max(seq) + 1 FROM queue), session_id,
            item_id, 0, kind, mode, payload FROM queue WHERE status = 'pending' ORDER BY seq""",
        """INSERT INTO settled SELECT session_id, item_id, status FROM queue
            WHERE status != 'pending'""",
        "DROP TABLE queue",
        "DROP INDEX sessions_by_activity",
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)
MIN_SQLITE = (3, 24, 0)  # INSERT ... ON CONFLICT (upserts)

# a session's pending items, FIFO
_PENDING = "SELECT item_id, kind, mode, payload FROM pending WHERE session_id = ?"
# the activity counter, and the file's data_version (see _PendingCounts), in one statement
_ACTIVITY_AND_VERSION = "SELECT last, (SELECT data_version FROM pragma_data_version) FROM activity"
_TOUCH = "UPDATE sessions SET updated_at = ?, touched = ? WHERE session_id = ?"
# every session with its activity: the larger of its touched and its newest pending seq
_BY_ACTIVITY = (
    "SELECT s.session_id, s.created_at, "
    "max(s.updated_at, coalesce((SELECT queued_at FROM pending WHERE seq = q.newest), 0)), "
    "s.turn, s.message_count FROM sessions AS s LEFT JOIN "
    "(SELECT session_id, max(seq) AS newest FROM pending GROUP BY session_id) AS q "
    "USING (session_id) ORDER BY max(s.touched, coalesce(q.newest, 0)) DESC"
)


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


def _pending_row(row: tuple[Any, ...]) -> codec.QueueRow:
    """A row of ``pending`` (``item_id, kind, mode, payload``)."""
    return codec.QueueRow(id=row[0], status="pending", kind=row[1], mode=row[2], payload=row[3])


def _pending_rows(db: sqlite3.Connection, sid: str) -> list[codec.QueueRow]:
    """The session's pending items, FIFO."""
    return [_pending_row(r) for r in db.execute(f"{_PENDING} ORDER BY seq", (sid,))]


def _settled_row(db: sqlite3.Connection, sid: str, item_id: str) -> codec.QueueRow | None:
    """The session's settled id ``item_id`` (delivered or revoked), else ``None``."""
    found = db.execute(
        "SELECT status FROM settled WHERE session_id = ? AND item_id = ?", (sid, item_id)
    ).fetchone()
    if found is None:
        return None
    return codec.QueueRow(id=item_id, status="revoked" if found[0] == "revoked" else "delivered")


def _take_activity(db: sqlite3.Connection, n: int) -> int:
    """Take the next ``n`` values of the store's activity counter (inside a write
    transaction); returns the first."""
    (last,) = db.execute("SELECT last FROM activity").fetchone()
    db.execute("UPDATE activity SET last = ?", (last + n,))
    return int(last) + 1


class SQLiteStore(ClosingStore):
    """The ``Store`` protocol on one SQLite file (WAL).

    The file is opened, recognised and migrated when the object is made (use
    ``await open_store("sqlite:PATH")`` to do that off the event loop); a missing file and
    its folders are created (unless ``create=False``).

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

    Raises:
        StoreError: ``RMD-109`` naming the file: a directory, unreadable, not a SQLite
            database, another program's database, or a schema from a newer version.
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
    ) -> None:
        self.path: str = _check_path(path)
        self.create = create
        self.synchronous: Synchronous = _check_synchronous(synchronous)
        if type(busy_timeout_ms) is not int or busy_timeout_ms < 0:
            raise ConfigError(f"busy_timeout_ms must be an int >= 0; got {busy_timeout_ms!r}")
        self.busy_timeout_ms = busy_timeout_ms
        self.clock = clock
        self.poll_interval = poll_interval
        self._memo = codec.Memo()
        self._waiters = Waiters()
        self._pending = _PendingCounts()
        self._db: sqlite3.Connection | None = self._connect()
        self._thread = StoreThread(f"agent-reminders store {self.path}")

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r}, synchronous={self.synchronous!r})"

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._db is None

    # -- opening ----------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if sqlite3.sqlite_version_info < MIN_SQLITE:
            raise StoreError(
                f"cannot use {self.path}: this Python's SQLite is {sqlite3.sqlite_version}; the "
                f"session store needs {'.'.join(map(str, MIN_SQLITE))} or newer (upserts)"
            )
        file = Path(self.path)
        if file.is_dir():
            raise StoreError(f"{self.path} is a directory, not a session store file")
        if file.exists():
            try:
                with file.open("rb") as handle:
                    header = handle.read(len(_MAGIC))
            except OSError as exc:
                raise StoreError(f"cannot read store {self.path}: {exc.strerror or exc}") from None
            if header and header != _MAGIC:
                raise StoreError(
                    f"{self.path} is not a SQLite database, so not an agent-reminders session "
                    "store; point at another file or move this one away"
                )
        elif not self.create:
            raise StoreError(
                f"no session store at {self.path}: the file does not exist (nothing was created)"
            )
        else:
            try:
                file.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(
                    f"cannot create the folder of store {self.path}: {exc.strerror or exc}"
                ) from None
        try:
            db = sqlite3.connect(
                self.path,
                timeout=self.busy_timeout_ms / 1000,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open store {self.path}: {exc}") from None
        try:
            db.execute(f"PRAGMA busy_timeout = {self.busy_timeout_ms}")
            self._recognise(db)  # before WAL: switching rewrites the header of the file
            mode = db.execute("PRAGMA journal_mode = WAL").fetchone()
            if mode is None or str(mode[0]).lower() != "wal":
                raise StoreError(f"{self.path}: WAL journal mode is not available ({mode})")
            db.execute(f"PRAGMA synchronous = {self.synchronous}")
            # sorts and IN lists in memory, never in a temp file per statement
            db.execute("PRAGMA temp_store = MEMORY")
            self._migrate(db)
        except StoreError:
            db.close()
            raise
        except sqlite3.Error as exc:
            db.close()
            raise StoreError(f"{self.path} cannot be used as a session store: {exc}") from None
        return db

    def _recognise(self, db: sqlite3.Connection) -> int:
        """The schema version of the file (0 when empty); refuses anything else."""
        try:
            tables = {
                row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"{self.path} is not a usable SQLite database ({exc}), so not an agent-reminders "
                "session store; point at another file or move this one away"
            ) from None
        if not tables:
            return 0
        meta: dict[str, str] = {}
        if "store_meta" in tables:
            meta = {str(k): str(v) for k, v in db.execute("SELECT key, value FROM store_meta")}
        if meta.get("schema") != SCHEMA_NAME:
            raise StoreError(
                f"{self.path} is a SQLite database of something else (tables: "
                f"{', '.join(sorted(tables))}), not an agent-reminders session store; point at "
                "another file or move this one away"
            )
        version = meta.get("version", "")
        if not version.isdigit():
            raise StoreError(f"{self.path}: the store's schema version {version!r} is unreadable")
        if int(version) > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} was written by a newer agent-reminders (store schema version "
                f"{version}; this version reads up to {SCHEMA_VERSION}); upgrade agent-reminders "
                "to open it"
            )
        return int(version)

    def _migrate(self, db: sqlite3.Connection) -> None:
        if self._recognise(db) == SCHEMA_VERSION:
            return
        with _transaction(db):
            # again inside the write lock: another process may have migrated meanwhile
            for version in range(self._recognise(db), SCHEMA_VERSION):
                for statement in MIGRATIONS[version]:
                    db.execute(statement)
                db.execute("INSERT OR REPLACE INTO store_meta VALUES ('schema', ?)", (SCHEMA_NAME,))
                db.execute(
                    "INSERT OR REPLACE INTO store_meta VALUES ('version', ?)", (str(version + 1),)
                )

    # -- running calls off the event loop ---------------------------------------------------

    async def _call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await self._thread.run(functools.partial(self._on_db, fn))

    def _on_db(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn(connection)`` on the store's thread, SQLite's errors as ``StoreError``."""
        db = self._db
        if db is None:
            raise StoreError(f"{self.path}: this store is closed")
        try:
            return fn(db)
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: {exc}") from None

    def _close(self) -> None:
        db, self._db = self._db, None
        if db is not None:
            db.close()

    async def close(self) -> None:
        """Close the connection (idempotent); later calls raise ``StoreError``."""
        await self._thread.run(self._close)

    def _exists(self, db: sqlite3.Connection, session_id: str) -> None:
        if db.execute("SELECT 1 FROM sessions WHERE session_id = ?", (session_id,)).fetchone():
            return
        raise UnknownSessionError(session_id)

    def _touch(self, db: sqlite3.Connection, session_id: str) -> None:
        """Make a write to the session its latest activity (``list_sessions`` order)."""
        db.execute(_TOUCH, (self.clock(), _take_activity(db, 1), session_id))

    def _insert_pending(
        self, db: sqlite3.Connection, sid: str, rows: Sequence[codec.QueueRow], *, skip: bool
    ) -> None:
        """Queue ``rows`` for ``sid``, each taking the next activity value as its seq
        (``skip``: an id the session has pending already is left as it is)."""
        if rows:
            first = _take_activity(db, len(rows))
            _queue_pending(db, [(sid, r) for r in rows], first, self.clock(), skip=skip)

    def _item(self, row: codec.QueueRow) -> QueueItem:
        try:
            return row.item()
        except AgentRemindersError as exc:
            raise StoreError(
                f"{self.path}: stored queue item {row.id!r} is invalid: {exc}"
            ) from None

    # -- session records --------------------------------------------------------------------

    async def create_session(self, state: SessionState) -> None:
        """Store a new session (see ``Store``)."""
        now = self.clock()

        def run(db: sqlite3.Connection, plan: codec.SavePlan) -> codec.Writes:
            sid = plan.session_id
            writes = plan.against(0, 0, codec.EMPTY_DIGEST)
            with _transaction(db):
                if db.execute("SELECT 1 FROM sessions WHERE session_id = ?", (sid,)).fetchone():
                    raise SessionExistsError(sid)
                db.execute(
                    "INSERT INTO sessions (session_id, created_at, updated_at, touched, turn, "
                    "head, message_count, digest, revision) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0)",
                    (
                        sid,
                        now,
                        now,
                        _take_activity(db, 1),
                        plan.turn,
                        plan.head,
                        plan.message_count,
                        writes.digest,
                    ),
                )
                _write_history(db, sid, writes)
                self._insert_pending(db, sid, plan.items, skip=False)
                db.executemany(
                    "INSERT INTO settled VALUES (?, ?, ?)",
                    [(sid, r.id, r.status) for r in plan.settled],
                )
            return writes

        def job() -> str:
            plan = codec.plan_save(state, None)  # the JSON work, off the event loop
            writes = self._on_db(lambda db: run(db, plan))
            self._memo.wrote(plan, writes, 0)
            return plan.session_id

        self._waiters.notify(await self._thread.run(job))

    async def load_session(self, session_id: str) -> SessionState | None:
        """The stored session, or ``None`` (see ``Store``); read and parsed off the event
        loop."""
        sid = codec.check_session_id(session_id)

        def run(db: sqlite3.Connection) -> _Read | None:
            with _transaction(db, write=False):  # one snapshot for every read
                found = db.execute(
                    "SELECT head, revision, digest FROM sessions WHERE session_id = ?", (sid,)
                ).fetchone()
                if found is None:
                    return None
                return _Read(
                    head=str(found[0]),
                    revision=int(found[1]),
                    digest=str(found[2]),
                    messages=_texts(db, "messages", sid),
                    audit=_texts(db, "audit", sid),
                    pending=_pending_rows(db, sid),
                    settled=db.execute(
                        "SELECT item_id, status FROM settled WHERE session_id = ?", (sid,)
                    ).fetchall(),
                )

        def job() -> SessionState | None:
            stored = self._on_db(run)
            if stored is None:
                return None
            try:
                state = codec.join_state(
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
        worker thread, and only those rows are written (``_codec.plan_save``).
        """

        def run(db: sqlite3.Connection, plan: codec.SavePlan) -> tuple[codec.Writes, int]:
            sid = plan.session_id
            with _transaction(db):
                found = db.execute(
                    "SELECT message_count, digest, revision FROM sessions WHERE session_id = ?",
                    (sid,),
                ).fetchone()
                if found is None:
                    raise UnknownSessionError(sid)
                revision = int(found[2])
                writes = plan.against(revision, int(found[0]), str(found[1]))
                _write_history(db, sid, writes)
                db.execute(
                    "UPDATE sessions SET turn = ?, head = ?, message_count = ?, digest = ?, "
                    "revision = ? WHERE session_id = ?",
                    (plan.turn, plan.head, plan.message_count, writes.digest, revision + 1, sid),
                )
                # the merge of codec.merge_row, a few indexed statements per row the store may
                # lack: an item it never saw is queued (unless it settled it already); an id
                # the state settled is settled unless the store settled it first
                unsettled = [r for r in plan.items if _settled_row(db, sid, r.id) is None]
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
            plan = codec.plan_save(state, self._memo)  # the JSON work, off the event loop
            writes, revision = self._on_db(lambda db: run(db, plan))
            self._memo.wrote(plan, writes, revision)
            return plan.session_id

        self._waiters.notify(await self._thread.run(job))

    async def append_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        """Append transcript messages (see ``Store``)."""
        sid = codec.check_session_id(session_id)
        codec.message_rows(messages, 0)  # validate before taking the write lock

        def run(db: sqlite3.Connection) -> None:
            with _transaction(db):
                found = db.execute(
                    "SELECT message_count, digest FROM sessions WHERE session_id = ?", (sid,)
                ).fetchone()
                if found is None:
                    raise UnknownSessionError(sid)
                count = int(found[0])
                rows = codec.message_rows(messages, count)
                _insert_rows(db, "messages", sid, count, rows)
                db.execute(
                    "UPDATE sessions SET message_count = ?, digest = ?, revision = revision + 1 "
                    "WHERE session_id = ?",
                    (count + len(rows), codec.chain(str(found[1]), rows), sid),
                )
                self._touch(db, sid)

        await self._call(run)

    async def save_reminders(self, session_id: str, reminders: Sequence[Reminder]) -> None:
        """Replace the pending reminders (see ``Store``)."""
        sid = codec.check_session_id(session_id)

        def run(db: sqlite3.Connection) -> None:
            with _transaction(db):
                found = db.execute("SELECT head FROM sessions WHERE session_id = ?", (sid,))
                head = found.fetchone()
                if head is None:
                    raise UnknownSessionError(sid)
                db.execute(
                    "UPDATE sessions SET head = ?, revision = revision + 1 WHERE session_id = ?",
                    (codec.head_with_reminders(str(head[0]), reminders), sid),
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
                for r in db.execute(_BY_ACTIVITY)
            ]

        return await self._call(run)

    async def latest_session(self) -> str | None:
        """The id of the most recently active session, or ``None``."""

        def run(db: sqlite3.Connection) -> str | None:
            row = db.execute(f"{_BY_ACTIVITY} LIMIT 1").fetchone()
            return None if row is None else str(row[0])

        return await self._call(run)

    # -- the injection queue ----------------------------------------------------------------

    async def enqueue(
        self, session_id: str, item: QueueItem, *, max_pending: int | None = None
    ) -> str:
        """Queue a validated item; committed to the file before this returns.

        Concurrent calls from one event loop share a transaction (group commit): each waits
        for the commit that holds its own row, and a refused item (unknown session, id
        already used, queue full) fails only its own call.
        """
        sid = codec.check_session_id(session_id)
        row = codec.item_row(item)
        await self._thread.run_grouped(
            self._enqueue_group, _Enqueue(sid, row, codec.check_max_pending(max_pending))
        )
        self._waiters.notify(sid)
        return row.id

    def _enqueue_group(self, calls: Sequence[Call[Any]]) -> None:
        self._on_db(lambda db: self._enqueue_all(db, calls))

    def _enqueue_all(self, db: sqlite3.Connection, calls: Sequence[Call[Any]]) -> None:
        """Insert the rows of ``calls`` (each call's ``arg`` an ``_Enqueue``) in one
        transaction.

        A refused row (unknown session, id already used, queue full) is left out and fails
        only its own call. A group costs a handful of statements whatever its size — the
        counter and the file's version, the checks, the inserts (one statement per
        ``_CHUNK`` rows), the counter's new value — because each statement gives up the GIL
        and must win it back from the event loop; and one row and one index entry per item,
        the pages a commit writes."""
        jobs: list[_Enqueue] = [call.arg for call in calls]
        with _transaction(db):
            last, version = db.execute(_ACTIVITY_AND_VERSION).fetchone()
            counts = self._pending.take(db, version)
            refused = _refused(db, jobs)
            limited = {j.session_id for j in jobs if j.limit is not None} - counts.keys()
            counts.update(_pending_counts(db, sorted(limited)))
            accepted: list[_Enqueue] = []
            seen: set[tuple[str, str]] = set()
            for job, call in zip(jobs, calls, strict=True):
                sid, key = job.session_id, (job.session_id, job.row.id)
                if key in refused:
                    unknown = refused[key]
                    call.error = UnknownSessionError(sid) if unknown else codec.duplicate_id(key[1])
                elif key in seen:
                    call.error = codec.duplicate_id(job.row.id)
                elif job.limit is not None and counts[sid] >= job.limit:
                    call.error = codec.queue_full(job.limit)
                else:
                    seen.add(key)
                    accepted.append(job)
                    if sid in counts:
                        counts[sid] += 1
            if accepted:
                # the counter was read with the version above: taken here without reading
                entries = [(j.session_id, j.row) for j in accepted]
                _queue_pending(db, entries, last + 1, self.clock(), skip=False)
                db.execute("UPDATE activity SET last = ?", (last + len(accepted),))
        self._pending.keep(db, version)

    async def pending(self, session_id: str) -> list[dict[str, Any]]:
        """The pending rows of 04 §3, FIFO."""
        sid = codec.check_session_id(session_id)

        def run(db: sqlite3.Connection) -> list[QueueItem]:
            with _transaction(db, write=False):
                self._exists(db, sid)
                return [self._item(r) for r in _pending_rows(db, sid)]

        return codec.pending_rows(await self._call(run))

    async def drain(self, session_id: str, modes: Iterable[DeliveryMode | str]) -> list[QueueItem]:
        """Take the pending items of ``modes`` and mark them delivered, in one transaction."""
        sid = codec.check_session_id(session_id)
        wanted = sorted(m.value for m in codec.check_modes(modes))

        def run(db: sqlite3.Connection) -> list[QueueItem]:
            with _transaction(db):
                self._exists(db, sid)
                if not wanted:
                    return []
                marks = ", ".join("?" for _ in wanted)
                found = [
                    _pending_row(r)
                    for r in db.execute(
                        f"{_PENDING} AND mode IN ({marks}) ORDER BY seq", (sid, *wanted)
                    )
                ]
                items = [self._item(r) for r in found]
                _settle(db, sid, [r.id for r in found], "delivered")
                if items:
                    self._touch(db, sid)
                return items

        return await self._call(run)

    async def revoke(self, session_id: str, reminder_id: str) -> RevokeStatus:
        """Revoke a queued reminder (see ``Store``)."""
        sid = codec.check_session_id(session_id)

        def run(db: sqlite3.Connection) -> RevokeStatus:
            with _transaction(db):
                self._exists(db, sid)
                rid = codec.check_revoke_id(reminder_id)
                found = db.execute(f"{_PENDING} AND item_id = ?", (sid, rid)).fetchone()
                row = _settled_row(db, sid, rid) if found is None else _pending_row(found)
                status = codec.revoke_status(row, rid)
                if status == "revoked":
                    _settle(db, sid, [rid], "revoked")
                    self._touch(db, sid)
                return status

        return await self._call(run)

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
        sid = codec.check_session_id(session_id)
        wanted = None if modes is None else sorted(m.value for m in codec.check_modes(modes))

        def look(db: sqlite3.Connection) -> bool:
            self._exists(db, sid)
            sql = "SELECT item_id FROM pending WHERE session_id = ?"
            args: list[str] = [sid]
            if wanted is not None:
                sql += f" AND mode IN ({', '.join('?' for _ in wanted)})"
                args += wanted
            return any(row[0] not in ignore for row in db.execute(sql, args))

        async def check() -> bool:
            return await self._call(look)

        return await self._waiters.wait(sid, timeout, check, poll=self.poll_interval)

    # -- leases -----------------------------------------------------------------------------

    async def claim(self, session_id: str, owner: str, ttl_seconds: float) -> str | None:
        """Claim the session for ``owner`` for ``ttl_seconds``: ``None`` when claimed, else
        the owner holding it (see ``Store``). Expiry is read on this store's ``clock``."""
        sid = codec.check_session_id(session_id)
        who, ttl = codec.check_lease(owner, ttl_seconds)

        def run(db: sqlite3.Connection) -> str | None:
            with _transaction(db):
                self._exists(db, sid)
                now = self.clock()
                held = db.execute(
                    "SELECT owner FROM leases WHERE session_id = ? AND expires_at > ?", (sid, now)
                ).fetchone()
                if held is not None:
                    return str(held[0])
                db.execute("INSERT OR REPLACE INTO leases VALUES (?, ?, ?)", (sid, who, now + ttl))
                return None

        return await self._call(run)

    async def renew(self, session_id: str, owner: str, ttl_seconds: float) -> bool:
        """Extend ``owner``'s live lease to ``ttl_seconds`` from now; ``False`` when it is not
        the holder (any more)."""
        sid = codec.check_session_id(session_id)
        who, ttl = codec.check_lease(owner, ttl_seconds)

        def run(db: sqlite3.Connection) -> bool:
            with _transaction(db):
                self._exists(db, sid)
                now = self.clock()
                done = db.execute(
                    "UPDATE leases SET expires_at = ? "
                    "WHERE session_id = ? AND owner = ? AND expires_at > ?",
                    (now + ttl, sid, who, now),
                )
                return done.rowcount > 0

        return await self._call(run)

    async def release(self, session_id: str, owner: str) -> bool:
        """Release ``owner``'s live lease; ``False`` when it is not the holder (any more)."""
        sid = codec.check_session_id(session_id)
        who = codec.check_owner(owner)

        def run(db: sqlite3.Connection) -> bool:
            with _transaction(db):
                self._exists(db, sid)
                done = db.execute(
                    "DELETE FROM leases WHERE session_id = ? AND owner = ? AND expires_at > ?",
                    (sid, who, self.clock()),
                )
                return done.rowcount > 0

        return await self._call(run)

    # -- the event log ----------------------------------------------------------------------

    async def append_events(
        self, session_id: str, records: Iterable[EventRecord]
    ) -> list[EventRecord]:
        """Append records under the store's own per-session ``seq``; returns them."""
        sid = codec.check_session_id(session_id)
        encoded = [codec.encode_event(r) for r in records]

        def run(db: sqlite3.Connection) -> int:
            with _transaction(db):
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
        return [codec.decode_event(start + i + 1, *e) for i, e in enumerate(encoded)]

    async def read_events(
        self, session_id: str, *, after_seq: int = 0, kind_prefix: str = ""
    ) -> list[EventRecord]:
        """The records after ``after_seq`` whose kind starts with ``kind_prefix``, in order."""
        sid = codec.check_session_id(session_id)
        after, prefix = codec.check_read_args(after_seq, kind_prefix)

        def run(db: sqlite3.Connection) -> list[EventRecord]:
            with _transaction(db, write=False):
                self._exists(db, sid)
                found = db.execute(
                    "SELECT seq, topic, kind, payload FROM events WHERE session_id = ? "
                    "AND seq > ? AND substr(kind, 1, ?) = ? ORDER BY seq",
                    (sid, after, len(prefix), prefix),
                )
                return [codec.decode_event(*r) for r in found]

        return await self._call(run)


@dataclass(frozen=True, slots=True)
class _Enqueue:
    """What one ``enqueue`` call writes in its group's transaction."""

    session_id: str
    row: codec.QueueRow
    limit: int | None


@dataclass(slots=True)
class _PendingCounts:
    """Pending rows per session, as this connection left the file at its last ``enqueue``
    commit, so a full-queue check need not count them again (``count(*)`` reads every pending
    row of the session).

    They are used only while nothing else can have changed the queue: no other connection
    committed since (``PRAGMA data_version`` is the same) and this connection changed no row
    outside ``enqueue`` (``total_changes`` is the same: a drain, a revoke, a saved turn all
    change rows). Otherwise they are forgotten and counted again.
    """

    counts: dict[str, int] = field(default_factory=dict)
    version: int | None = None  # None: not trusted (no commit yet, or one failed)
    changes: int = 0
    limit: int = 10_000  # sessions remembered at most

    def take(self, db: sqlite3.Connection, version: int) -> dict[str, int]:
        """The counts to use (and update) in this write transaction, which found the file
        at ``version`` (its ``data_version``, handed to :meth:`keep` once it has committed)."""
        if (
            version != self.version
            or db.total_changes != self.changes
            or len(self.counts) > self.limit
        ):
            self.counts.clear()
        self.version = None  # not trusted until this transaction commits
        return self.counts

    def keep(self, db: sqlite3.Connection, version: int) -> None:
        """The transaction :meth:`take` served has committed: the counts are the file's."""
        self.version, self.changes = version, db.total_changes


@dataclass(frozen=True, slots=True)
class _Read:
    """One session as read from the file, in one snapshot."""

    head: str
    revision: int
    digest: str
    messages: list[str]
    audit: list[str]
    pending: list[codec.QueueRow]  # FIFO
    settled: list[tuple[str, str]]  # (id, "delivered" | "revoked")


# the two append-only tables of a session's history, (session_id, position, event) each
_History = Literal["messages", "audit"]


def _texts(db: sqlite3.Connection, table: _History, sid: str) -> list[str]:
    found = db.execute(f"SELECT event FROM {table} WHERE session_id = ? ORDER BY position", (sid,))
    return [r[0] for r in found]


def _insert_rows(
    db: sqlite3.Connection, table: _History, sid: str, start: int, rows: Sequence[str]
) -> None:
    db.executemany(
        f"INSERT INTO {table} VALUES (?, ?, ?)",
        [(sid, start + i, row) for i, row in enumerate(rows)],
    )


def _write_history(db: sqlite3.Connection, sid: str, writes: codec.Writes) -> None:
    """Append (or replace) the message and audit rows of one save."""
    parts: tuple[tuple[_History, int | None, Sequence[str]], ...] = (
        ("messages", writes.messages_at, writes.messages),
        ("audit", writes.audit_at, writes.audit),
    )
    for table, start, rows in parts:
        if start is None:
            db.execute(f"DELETE FROM {table} WHERE session_id = ?", (sid,))
        _insert_rows(db, table, sid, start or 0, rows)


# rows per statement: at most 7 parameters a row, 448 in all, under SQLite's oldest limit of 999
_CHUNK = 64


def _chunks(rows: Sequence[T]) -> Iterator[Sequence[T]]:
    for start in range(0, len(rows), _CHUNK):
        yield rows[start : start + _CHUNK]


@functools.lru_cache(maxsize=_CHUNK)
def _refused_sql(n: int) -> str:
    pairs = ", ".join(["(?, ?)"] * n)
    return (
        f"WITH b (s, i) AS (VALUES {pairs}) "
        "SELECT s, i, NOT EXISTS (SELECT 1 FROM sessions WHERE session_id = s) AS unknown "
        "FROM b WHERE unknown "
        "OR EXISTS (SELECT 1 FROM pending WHERE session_id = s AND item_id = i) "
        "OR EXISTS (SELECT 1 FROM settled WHERE session_id = s AND item_id = i)"
    )


def _refused(db: sqlite3.Connection, jobs: Sequence[_Enqueue]) -> dict[tuple[str, str], bool]:
    """The ``(session, id)`` pairs of ``jobs`` that cannot be queued: ``True`` for an
    unknown session, ``False`` for an id the session already used (pending or settled)."""
    found: dict[tuple[str, str], bool] = {}
    for chunk in _chunks(jobs):
        params = [v for j in chunk for v in (j.session_id, j.row.id)]
        for sid, rid, unknown in db.execute(_refused_sql(len(chunk)), params):
            found[sid, rid] = bool(unknown)
    return found


@functools.lru_cache(maxsize=_CHUNK)
def _count_sql(n: int) -> str:
    marks = ", ".join(["?"] * n)
    return (
        f"SELECT session_id, count(*) FROM pending WHERE session_id IN ({marks}) "
        "GROUP BY session_id"
    )


def _pending_counts(db: sqlite3.Connection, sessions: Sequence[str]) -> dict[str, int]:
    """Pending rows per session (0 for one with none)."""
    counts = dict.fromkeys(sessions, 0)
    for chunk in _chunks(sessions):
        counts.update(db.execute(_count_sql(len(chunk)), chunk))
    return counts


@functools.lru_cache(maxsize=2 * _CHUNK)
def _insert_pending_sql(n: int, skip: bool) -> str:
    rows = ", ".join(["(?, ?, ?, ?, ?, ?, ?)"] * n)
    return (
        "INSERT INTO pending (seq, session_id, item_id, queued_at, kind, mode, payload) "
        f"VALUES {rows}" + (" ON CONFLICT (session_id, item_id) DO NOTHING" if skip else "")
    )


def _queue_pending(
    db: sqlite3.Connection,
    entries: Sequence[tuple[str, codec.QueueRow]],
    first: int,
    now: float,
    *,
    skip: bool,
) -> None:
    """Insert ``(session, row)`` entries into ``pending`` with the seqs ``first``, ``first``
    + 1, …, one statement per ``_CHUNK`` rows (``skip``: an id its session has pending
    already is left as it is)."""
    seq = first
    for chunk in _chunks(entries):
        values: list[Any] = []
        for sid, row in chunk:
            values += (seq, sid, row.id, now, row.kind, row.mode, row.payload)
            seq += 1
        db.execute(_insert_pending_sql(len(chunk), skip), values)


def _settle(db: sqlite3.Connection, sid: str, item_ids: Sequence[str], status: str) -> None:
    """Move pending items of the session to the settled ids with ``status``."""
    db.executemany(
        "DELETE FROM pending WHERE session_id = ? AND item_id = ?", [(sid, i) for i in item_ids]
    )
    db.executemany("INSERT INTO settled VALUES (?, ?, ?)", [(sid, i, status) for i in item_ids])


@contextmanager
def _transaction(db: sqlite3.Connection, *, write: bool = True) -> Iterator[None]:
    """One transaction; a writer takes the write lock first (``BEGIN IMMEDIATE``), so two
    drainers never both read an item as pending."""
    db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
