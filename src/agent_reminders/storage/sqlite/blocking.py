"""``BlockingSQLite``: a session store on one SQLite file, with no event loop.

The store's operations as plain calls: what a short-lived process needs (a coding agent's
hook runs one before every prompt and after every tool call) without loading ``asyncio`` or
``anyio``. ``SQLiteStore`` is the same object run on a thread of its own behind the async
``Store`` protocol, so both read and write the file alike: the same transactions, results,
errors, read-only handling and damage latch. Importing this module loads no event loop.

The session records and the event log are here; the queue and the leases in ``queueing``,
the connection under them in ``connection``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from ..._core.errors import StateError, StoreError
from ..._core.events import EventRecord
from ..._core.records import Message, Reminder
from ...state import SessionState
from .. import _rows, _save_plan
from ..base import SessionExistsError, SessionInfo, UnknownSessionError
from . import sql
from .connection import Synchronous
from .queueing import SQLiteQueue

__all__ = ["BlockingSQLite", "Synchronous"]


class BlockingSQLite(SQLiteQueue):
    """The ``Store`` protocol's operations on one SQLite file, as blocking calls.

    Made like ``SQLiteStore`` (the same arguments but ``poll_interval``; the file is opened,
    recognised, checked and migrated here), and each method does what the ``Store`` method
    of the same name does, in one transaction, with the same results and errors —
    ``SQLiteStore`` calls these on its thread. ``wait_for_items`` has no blocking twin:
    :meth:`has_pending` is the look it repeats. Use from one thread at a time; ``with``
    closes it.

    Example:
        >>> import tempfile, os
        >>> from agent_reminders import InjectionQueue, Session
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     path = os.path.join(tmp, "state.db")
        ...     with BlockingSQLite(path) as store:
        ...         store.create_session(Session(session_id="s1").state())
        ...         queue = InjectionQueue()
        ...         reminder_id = queue.remind({"body": "CI is red"}, mode="interrupt")
        ...         assert store.enqueue("s1", queue.state().items[0]) == reminder_id
        ...         items = store.drain("s1", ["interrupt_immediate"])
        ...     with BlockingSQLite(path) as store:  # the next process
        ...         [i.payload["body"] for i in items], store.latest_session()
        (['CI is red'], 's1')
    """

    # -- session records --------------------------------------------------------------------

    def create_session(self, state: SessionState) -> None:
        """Store a new session (see ``Store``)."""
        now = self.clock()

        def write(db: sqlite3.Connection, plan: _save_plan.SavePlan) -> _save_plan.Writes:
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

        plan = _save_plan.plan_save(state, None)
        writes = self.run(lambda db: write(db, plan))
        self._memo.wrote(plan, writes, 0)

    def load_session(self, session_id: str) -> SessionState | None:
        """The stored session, or ``None`` (see ``Store``)."""
        sid = _rows.check_session_id(session_id)

        def read(db: sqlite3.Connection) -> sql.Read | None:
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

        stored = self.run(read)
        if stored is None:
            return None
        try:
            state = _rows.join_state(
                stored.head, stored.messages, stored.audit, stored.pending, stored.settled
            )
        except (StateError, ValueError, KeyError, TypeError) as exc:
            raise StoreError(f"{self.path}: stored session {sid!r} cannot be read: {exc}") from None
        self._memo.read(state, stored.revision, stored.digest, len(stored.audit))
        return state

    def save_session(self, state: SessionState) -> None:
        """Write one turn in one transaction (see ``Store``).

        Costs what the turn changed: only the JSON of the new messages and audit entries,
        the head and the queue rows this object does not know to be stored is made, and only
        those rows are written (``_save_plan.plan_save``).
        """

        def write(
            db: sqlite3.Connection, plan: _save_plan.SavePlan
        ) -> tuple[_save_plan.Writes, int]:
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

        plan = _save_plan.plan_save(state, self._memo)
        writes, revision = self.run(lambda db: write(db, plan))
        self._memo.wrote(plan, writes, revision)

    def append_messages(self, session_id: str, messages: Sequence[Message]) -> None:
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

        self.run(run)

    def save_reminders(self, session_id: str, reminders: Sequence[Reminder]) -> None:
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

        self.run(run)

    def list_sessions(self) -> list[SessionInfo]:
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

        return self.run(run)

    def latest_session(self) -> str | None:
        """The id of the most recently active session, or ``None``."""

        def run(db: sqlite3.Connection) -> str | None:
            row = db.execute(f"{sql.BY_ACTIVITY} LIMIT 1").fetchone()
            return None if row is None else str(row[0])

        return self.run(run)

    def session_ids(self, *, limit: int, among: Iterable[str] | None = None) -> list[str]:
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

        return self.run(run)

    # -- the event log ----------------------------------------------------------------------

    def append_events(self, session_id: str, records: Iterable[EventRecord]) -> list[EventRecord]:
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

        start = self.run(run)
        return [_rows.decode_event(start + i + 1, *e) for i, e in enumerate(encoded)]

    def read_events(
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

        return self.run(run)
