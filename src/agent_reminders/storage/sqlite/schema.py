"""The schema of a ``SQLiteStore`` file: its name and version, the migrations that bring an
older file up to date, and how a file is recognised as a store (or refused)."""

from __future__ import annotations

import sqlite3

from ..._core.errors import StoreError
from . import file as file_
from .sql import transaction

SCHEMA_NAME = "agent-reminders.store"
# the first bytes of every SQLite database file
MAGIC = b"SQLite format 3\x00"

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
        # 1 -> 2: leases, one live claim per session
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


def readable(path: str, version: int) -> None:
    """A file opened read-only is read only when it holds the current schema: migrating
    it would be a write."""
    if version == SCHEMA_VERSION:
        return
    held = "no session store yet" if version == 0 else f"store schema version {version}"
    raise StoreError(
        f"{path} is read-only and holds {held}; this agent-reminders reads version "
        f"{SCHEMA_VERSION}, after opening it once where it can be written"
    )


def recognise(path: str, db: sqlite3.Connection) -> int:
    """The schema version of the file (0 when empty); refuses anything else."""
    try:
        tables = {
            row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
    except sqlite3.DatabaseError as exc:
        kind = file_.code(exc)
        if kind == sqlite3.SQLITE_CORRUPT:
            raise StoreError(file_.corrupt(path, str(exc), at_open=True)) from None
        if kind == sqlite3.SQLITE_CANTOPEN:
            raise StoreError(f"cannot open store {path}: {exc}") from None
        raise StoreError(
            f"{path} is not a usable SQLite database ({exc}), so not an agent-reminders "
            "session store; point at another file or move this one away"
        ) from None
    if not tables:
        return 0
    meta: dict[str, str] = {}
    if "store_meta" in tables:
        meta = {str(k): str(v) for k, v in db.execute("SELECT key, value FROM store_meta")}
    if meta.get("schema") != SCHEMA_NAME:
        raise StoreError(
            f"{path} is a SQLite database of something else (tables: "
            f"{', '.join(sorted(tables))}), not an agent-reminders session store; point at "
            "another file or move this one away"
        )
    version = meta.get("version", "")
    if not version.isdigit():
        raise StoreError(f"{path}: the store's schema version {version!r} is unreadable")
    if int(version) > SCHEMA_VERSION:
        raise StoreError(
            f"{path} was written by a newer agent-reminders (store schema version "
            f"{version}; this version reads up to {SCHEMA_VERSION}); upgrade agent-reminders "
            "to open it"
        )
    return int(version)


def migrate(db: sqlite3.Connection, path: str) -> None:
    """Bring the file up to :data:`SCHEMA_VERSION`, each step in one write transaction with
    its version bump."""
    if recognise(path, db) == SCHEMA_VERSION:
        return
    with transaction(db):
        # again inside the write lock: another process may have migrated meanwhile
        for version in range(recognise(path, db), SCHEMA_VERSION):
            for statement in MIGRATIONS[version]:
                db.execute(statement)
            db.execute("INSERT OR REPLACE INTO store_meta VALUES ('schema', ?)", (SCHEMA_NAME,))
            db.execute(
                "INSERT OR REPLACE INTO store_meta VALUES ('version', ?)", (str(version + 1),)
            )
