"""The SQL of ``SQLiteStore``: the statements it runs on its tables, and the helpers that run
them on a connection (inside a transaction the store opened).

Nothing here holds state of its own except :class:`PendingCounts`, which the store keeps per
connection.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from .._rows import QueueRow
from .._save_plan import Writes

T = TypeVar("T")

# a session's pending items, FIFO
PENDING = "SELECT item_id, kind, mode, payload FROM pending WHERE session_id = ?"
# the activity counter, and the file's data_version (see PendingCounts), in one statement
ACTIVITY_AND_VERSION = "SELECT last, (SELECT data_version FROM pragma_data_version) FROM activity"
TOUCH = "UPDATE sessions SET updated_at = ?, touched = ? WHERE session_id = ?"
# ids per IN (...) query: well under SQLite's bound on parameters
ID_CHUNK = 500
# every session with its activity: the larger of its touched and its newest pending seq
BY_ACTIVITY = (
    "SELECT s.session_id, s.created_at, "
    "max(s.updated_at, coalesce((SELECT queued_at FROM pending WHERE seq = q.newest), 0)), "
    "s.turn, s.message_count FROM sessions AS s LEFT JOIN "
    "(SELECT session_id, max(seq) AS newest FROM pending GROUP BY session_id) AS q "
    "USING (session_id) ORDER BY max(s.touched, coalesce(q.newest, 0)) DESC"
)


def pending_row(row: tuple[Any, ...]) -> QueueRow:
    """A row of ``pending`` (``item_id, kind, mode, payload``)."""
    return QueueRow(id=row[0], status="pending", kind=row[1], mode=row[2], payload=row[3])


def pending_rows(db: sqlite3.Connection, sid: str) -> list[QueueRow]:
    """The session's pending items, FIFO."""
    return [pending_row(r) for r in db.execute(f"{PENDING} ORDER BY seq", (sid,))]


def settled_row(db: sqlite3.Connection, sid: str, item_id: str) -> QueueRow | None:
    """The session's settled id ``item_id`` (delivered or revoked), else ``None``."""
    found = db.execute(
        "SELECT status FROM settled WHERE session_id = ? AND item_id = ?", (sid, item_id)
    ).fetchone()
    if found is None:
        return None
    return QueueRow(id=item_id, status="revoked" if found[0] == "revoked" else "delivered")


def take_activity(db: sqlite3.Connection, n: int) -> int:
    """Take the next ``n`` values of the store's activity counter (inside a write
    transaction); returns the first."""
    (last,) = db.execute("SELECT last FROM activity").fetchone()
    db.execute("UPDATE activity SET last = ?", (last + n,))
    return int(last) + 1


def live_lease(db: sqlite3.Connection, sid: str, now: float) -> tuple[str, float] | None:
    """The session's lease ``(owner, expires at)`` unless it has expired."""
    found = db.execute(
        "SELECT owner, expires_at FROM leases WHERE session_id = ? AND expires_at > ?", (sid, now)
    ).fetchone()
    return None if found is None else (str(found[0]), float(found[1]))


@contextmanager
def transaction(db: sqlite3.Connection, *, write: bool = True) -> Iterator[None]:
    """One transaction; a writer takes the write lock first (``BEGIN IMMEDIATE``)."""
    db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


@dataclass(frozen=True, slots=True)
class Enqueue:
    """What one ``enqueue`` call writes in its group's transaction."""

    session_id: str
    row: QueueRow
    limit: int | None


@dataclass(slots=True)
class PendingCounts:
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
class Read:
    """One session as read from the file, in one snapshot."""

    head: str
    revision: int
    digest: str
    messages: list[str]
    audit: list[str]
    pending: list[QueueRow]  # FIFO
    settled: list[tuple[str, str]]  # (id, "delivered" | "revoked")


# the two append-only tables of a session's history, (session_id, position, event) each
History = Literal["messages", "audit"]


def texts(db: sqlite3.Connection, table: History, sid: str) -> list[str]:
    found = db.execute(f"SELECT event FROM {table} WHERE session_id = ? ORDER BY position", (sid,))
    return [r[0] for r in found]


def insert_rows(
    db: sqlite3.Connection, table: History, sid: str, start: int, rows: Sequence[str]
) -> None:
    db.executemany(
        f"INSERT INTO {table} VALUES (?, ?, ?)",
        [(sid, start + i, row) for i, row in enumerate(rows)],
    )


def write_history(db: sqlite3.Connection, sid: str, writes: Writes) -> None:
    """Append (or replace) the message and audit rows of one save."""
    parts: tuple[tuple[History, int | None, Sequence[str]], ...] = (
        ("messages", writes.messages_at, writes.messages),
        ("audit", writes.audit_at, writes.audit),
    )
    for table, start, rows in parts:
        if start is None:
            db.execute(f"DELETE FROM {table} WHERE session_id = ?", (sid,))
        insert_rows(db, table, sid, start or 0, rows)


# rows per statement: at most 7 parameters a row, 448 in all, under SQLite's oldest limit of 999
CHUNK = 64


def chunks(rows: Sequence[T]) -> Iterator[Sequence[T]]:
    for start in range(0, len(rows), CHUNK):
        yield rows[start : start + CHUNK]


@functools.lru_cache(maxsize=CHUNK)
def refused_sql(n: int) -> str:
    pairs = ", ".join(["(?, ?)"] * n)
    return (
        f"WITH b (s, i) AS (VALUES {pairs}) "
        "SELECT s, i, NOT EXISTS (SELECT 1 FROM sessions WHERE session_id = s) AS unknown "
        "FROM b WHERE unknown "
        "OR EXISTS (SELECT 1 FROM pending WHERE session_id = s AND item_id = i) "
        "OR EXISTS (SELECT 1 FROM settled WHERE session_id = s AND item_id = i)"
    )


def refused(db: sqlite3.Connection, jobs: Sequence[Enqueue]) -> dict[tuple[str, str], bool]:
    """The ``(session, id)`` pairs of ``jobs`` that cannot be queued: ``True`` for an
    unknown session, ``False`` for an id the session already used (pending or settled)."""
    found: dict[tuple[str, str], bool] = {}
    for chunk in chunks(jobs):
        params = [v for j in chunk for v in (j.session_id, j.row.id)]
        for sid, rid, unknown in db.execute(refused_sql(len(chunk)), params):
            found[sid, rid] = bool(unknown)
    return found


@functools.lru_cache(maxsize=CHUNK)
def count_sql(n: int) -> str:
    marks = ", ".join(["?"] * n)
    return (
        f"SELECT session_id, count(*) FROM pending WHERE session_id IN ({marks}) "
        "GROUP BY session_id"
    )


def pending_counts(db: sqlite3.Connection, sessions: Sequence[str]) -> dict[str, int]:
    """Pending rows per session (0 for one with none)."""
    counts = dict.fromkeys(sessions, 0)
    for chunk in chunks(sessions):
        counts.update(db.execute(count_sql(len(chunk)), chunk))
    return counts


@functools.lru_cache(maxsize=2 * CHUNK)
def insert_pending_sql(n: int, skip: bool) -> str:
    rows = ", ".join(["(?, ?, ?, ?, ?, ?, ?)"] * n)
    return (
        "INSERT INTO pending (seq, session_id, item_id, queued_at, kind, mode, payload) "
        f"VALUES {rows}" + (" ON CONFLICT (session_id, item_id) DO NOTHING" if skip else "")
    )


def queue_pending(
    db: sqlite3.Connection,
    entries: Sequence[tuple[str, QueueRow]],
    first: int,
    now: float,
    *,
    skip: bool,
) -> None:
    """Insert ``(session, row)`` entries into ``pending`` with the seqs ``first``, ``first``
    + 1, …, one statement per ``CHUNK`` rows (``skip``: an id its session has pending
    already is left as it is)."""
    seq = first
    for chunk in chunks(entries):
        values: list[Any] = []
        for sid, row in chunk:
            values += (seq, sid, row.id, now, row.kind, row.mode, row.payload)
            seq += 1
        db.execute(insert_pending_sql(len(chunk), skip), values)


def settle(db: sqlite3.Connection, sid: str, item_ids: Sequence[str], status: str) -> None:
    """Move pending items of the session to the settled ids with ``status``."""
    db.executemany(
        "DELETE FROM pending WHERE session_id = ? AND item_id = ?", [(sid, i) for i in item_ids]
    )
    db.executemany("INSERT INTO settled VALUES (?, ?, ?)", [(sid, i, status) for i in item_ids])
