"""``SQLiteStore``: the embedded durable ``Store`` (spec 06 §1 and §2).

One file in WAL mode, one connection per store object, owned by the store's own thread
(``storage.thread.StoreThread``): every call runs there, in call order, so the event loop never
blocks on disk. Each public
method is one transaction; the writes of a turn (``save_session``) and an acknowledged
``enqueue`` are committed before the call returns. Several store objects — in several
threads or processes — may share one file: writers take SQLite's write lock up front
(``BEGIN IMMEDIATE``), so a drain is atomic across all of them.

A file that is not this store — random bytes, another program's database, a directory, a
schema from a newer version, a file damaged inside (``PRAGMA quick_check``) — is refused with
one ``StoreError`` naming it, before anything is written: the file keeps its bytes (WAL is
switched on only once the file is recognised and checked). Damage found later stops every
write for good; a full disk fails the write that met it. A file (or folder) that cannot be
written is opened read-only: it can be read, and a write says why it cannot be done.
"""

from __future__ import annotations

import functools
import logging
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
from . import _sqlite_file as file_
from ._sqlite_file import CHECK_LIMIT_BYTES, Check
from ._wake import Waiters
from .base import (
    ClosingStore,
    Lease,
    RevokeStatus,
    SessionExistsError,
    SessionInfo,
    UnknownSessionError,
)
from .thread import Call, StoreThread

__all__ = [
    "CHECK_LIMIT_BYTES",
    "MIGRATIONS",
    "SCHEMA_NAME",
    "SCHEMA_VERSION",
    "Check",
    "SQLiteStore",
    "Synchronous",
]

log = logging.getLogger("agent_reminders.storage")

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
# ids per IN (...) query: well under SQLite's bound on parameters
_ID_CHUNK = 500

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


def _live_lease(db: sqlite3.Connection, sid: str, now: float) -> tuple[str, float] | None:
    """The session's lease ``(owner, expires at)`` unless it has expired."""
    found = db.execute(
        "SELECT owner, expires_at FROM leases WHERE session_id = ? AND expires_at > ?", (sid, now)
    ).fetchone()
    return None if found is None else (str(found[0]), float(found[1]))


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
        self._memo = codec.Memo()
        self._waiters = Waiters()
        self._pending = _PendingCounts()
        self._corrupt: str | None = None  # set once damage is found: every write is refused
        self._closed = False
        self._db: sqlite3.Connection | None = self._connect()
        self._thread = StoreThread(f"agent-reminders store {self.path}")

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r}, synchronous={self.synchronous!r})"

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

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
                raise StoreError(f"cannot read store {self.path}: {file_.os_reason(exc)}") from None
            if header and header != _MAGIC:
                raise StoreError(
                    f"{self.path} is not a SQLite database, so not an agent-reminders session "
                    "store; point at another file or move this one away"
                )
        else:
            self._new_file(file)
        if not self.read_only and not file_.writable(file):
            if not file.exists():
                raise StoreError(
                    f"cannot create store {self.path}: its folder {file.parent} cannot be written"
                )
            self.read_only = True
        try:
            db = file_.connect(file, read_only=self.read_only, timeout=self.busy_timeout_ms / 1000)
        except sqlite3.Error as exc:
            said = file_.describe(self.path, exc, at_open=True)
            raise StoreError(said or f"cannot open store {self.path}: {exc}") from None
        try:
            db.execute(f"PRAGMA busy_timeout = {self.busy_timeout_ms}")
            version = self._recognise(db)
            # before anything is written: a damaged file keeps its bytes
            file_.quick_check(db, file, self.check)
            if self.read_only:
                self._readable(version)
            else:
                # switching to WAL rewrites the header of the file: only once it is known
                mode = db.execute("PRAGMA journal_mode = WAL").fetchone()
                if mode is None or str(mode[0]).lower() != "wal":
                    raise StoreError(f"{self.path}: WAL journal mode is not available ({mode})")
                db.execute(f"PRAGMA synchronous = {self.synchronous}")
            # sorts and IN lists in memory, never in a temp file per statement
            db.execute("PRAGMA temp_store = MEMORY")
            if not self.read_only:
                self._migrate(db)
        except StoreError:
            self._close_refused(db, file)
            raise
        except sqlite3.Error as exc:
            self._close_refused(db, file)
            said = file_.describe(self.path, exc, at_open=True)
            raise StoreError(
                said or f"{self.path} cannot be used as a session store: {exc}"
            ) from None
        return db

    @staticmethod
    def _close_refused(db: sqlite3.Connection, file: Path) -> None:
        """Close a connection to a file the store refused, writing nothing to it (not even
        a write-ahead log left there by another process)."""
        reader = file_.close_untouched(db, file)
        if reader is not None:
            reader.close()

    def _new_file(self, file: Path) -> None:
        """Make the folder of a file that does not exist yet, or refuse it."""
        folder = file.parent
        missing = not folder.exists()
        if self.read_only or not self.create:
            where = f"its folder {folder} does not exist" if missing else "the file does not exist"
            raise StoreError(f"no session store at {self.path}: {where} (nothing was created)")
        if missing and not self.create_folders:
            raise StoreError(
                f"cannot create store {self.path}: the folder {folder} does not exist; create "
                "it first or fix the path (nothing was created)"
            )
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"cannot create the folder of store {self.path}: {file_.os_reason(exc)}"
            ) from None

    def _readable(self, version: int) -> None:
        """A file opened read-only is read only when it holds the current schema: migrating
        it would be a write."""
        if version == SCHEMA_VERSION:
            return
        held = "no session store yet" if version == 0 else f"store schema version {version}"
        raise StoreError(
            f"{self.path} is read-only and holds {held}; this agent-reminders reads version "
            f"{SCHEMA_VERSION}, after opening it once where it can be written"
        )

    def _recognise(self, db: sqlite3.Connection) -> int:
        """The schema version of the file (0 when empty); refuses anything else."""
        try:
            tables = {
                row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
        except sqlite3.DatabaseError as exc:
            kind = file_.code(exc)
            if kind == sqlite3.SQLITE_CORRUPT:
                raise StoreError(file_.corrupt(self.path, str(exc), at_open=True)) from None
            if kind == sqlite3.SQLITE_CANTOPEN:
                raise StoreError(f"cannot open store {self.path}: {exc}") from None
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
        with self._transaction(db):
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
        db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            yield
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

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
            with self._transaction(db, write=False):  # one snapshot for every read
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
            with self._transaction(db):
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
            with self._transaction(db):
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
            with self._transaction(db):
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

    async def session_ids(self, *, limit: int, among: Iterable[str] | None = None) -> list[str]:
        """Up to ``limit`` stored session ids (those in ``among`` when given): a ``LIMIT`` on
        the primary key, in chunks of ``among`` until enough are found."""
        wanted = None if among is None else list(among)

        def run(db: sqlite3.Connection) -> list[str]:
            if wanted is None:
                rows = db.execute("SELECT session_id FROM sessions LIMIT ?", (max(0, limit),))
                return [str(r[0]) for r in rows]
            found: list[str] = []
            for start in range(0, len(wanted), _ID_CHUNK):
                chunk = wanted[start : start + _ID_CHUNK]
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
        with self._transaction(db):
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
            with self._transaction(db, write=False):
                self._exists(db, sid)
                return [self._item(r) for r in _pending_rows(db, sid)]

        return codec.pending_rows(await self._call(run))

    async def drain(self, session_id: str, modes: Iterable[DeliveryMode | str]) -> list[QueueItem]:
        """Take the pending items of ``modes`` and mark them delivered, in one transaction."""
        sid = codec.check_session_id(session_id)
        wanted = sorted(m.value for m in codec.check_modes(modes))

        def run(db: sqlite3.Connection) -> list[QueueItem]:
            with self._transaction(db):
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
            with self._transaction(db):
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

    async def claim(
        self, session_id: str, owner: str, ttl_seconds: float, *, replace: str | None = None
    ) -> str | None:
        """Claim the session for ``owner`` for ``ttl_seconds`` (taking it from ``replace``
        if that owner holds it, under the write lock): ``None`` when claimed, else the owner
        holding it (see ``Store``). Expiry is read on this store's ``clock``."""
        sid = codec.check_session_id(session_id)
        who, ttl = codec.check_lease(owner, ttl_seconds)
        gone = codec.check_replace(replace)

        def run(db: sqlite3.Connection) -> str | None:
            with self._transaction(db):
                self._exists(db, sid)
                now = self.clock()
                held = _live_lease(db, sid, now)
                if held is not None and held[0] != gone:
                    return held[0]
                db.execute("INSERT OR REPLACE INTO leases VALUES (?, ?, ?)", (sid, who, now + ttl))
                return None

        return await self._call(run)

    async def renew(self, session_id: str, owner: str, ttl_seconds: float) -> bool:
        """Extend ``owner``'s live lease to ``ttl_seconds`` from now; ``False`` when it is not
        the holder (any more)."""
        sid = codec.check_session_id(session_id)
        who, ttl = codec.check_lease(owner, ttl_seconds)

        def run(db: sqlite3.Connection) -> bool:
            with self._transaction(db):
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
            with self._transaction(db):
                self._exists(db, sid)
                done = db.execute(
                    "DELETE FROM leases WHERE session_id = ? AND owner = ? AND expires_at > ?",
                    (sid, who, self.clock()),
                )
                return done.rowcount > 0

        return await self._call(run)

    async def lease(self, session_id: str) -> Lease | None:
        """The live lease on the session (its owner and seconds left on this store's
        ``clock``), else ``None``."""
        sid = codec.check_session_id(session_id)

        def run(db: sqlite3.Connection) -> Lease | None:
            with self._transaction(db, write=False):
                self._exists(db, sid)
                now = self.clock()
                held = _live_lease(db, sid, now)
            return None if held is None else Lease(owner=held[0], expires_in=held[1] - now)

        return await self._call(run)

    # -- the event log ----------------------------------------------------------------------

    async def append_events(
        self, session_id: str, records: Iterable[EventRecord]
    ) -> list[EventRecord]:
        """Append records under the store's own per-session ``seq``; returns them."""
        sid = codec.check_session_id(session_id)
        encoded = [codec.encode_event(r) for r in records]

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
        return [codec.decode_event(start + i + 1, *e) for i, e in enumerate(encoded)]

    async def read_events(
        self, session_id: str, *, after_seq: int = 0, kind_prefix: str = ""
    ) -> list[EventRecord]:
        """The records after ``after_seq`` whose kind starts with ``kind_prefix``, in order."""
        sid = codec.check_session_id(session_id)
        after, prefix = codec.check_read_args(after_seq, kind_prefix)

        def run(db: sqlite3.Connection) -> list[EventRecord]:
            with self._transaction(db, write=False):
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
