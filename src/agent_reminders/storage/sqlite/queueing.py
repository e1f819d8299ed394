"""The injection queue and the leases of a SQLite store, blocking (``SQLiteStore`` runs them
on its thread)."""

from __future__ import annotations

import sqlite3
from collections.abc import Container, Iterable, Sequence
from typing import Any

from ..._core.errors import AgentRemindersError
from ..._core.queue_rules import ItemStatus
from ..._core.records import DeliveryMode
from ...queue import QueueItem
from .. import _lease_rules, _queue_rules, _rows
from ..base import Lease, RevokeStatus, UnknownSessionError
from . import sql
from .connection import SQLiteConnection


class SQLiteQueue(SQLiteConnection):
    """``enqueue``, ``pending``, ``drain``, ``revoke``, ``has_pending`` and the leases
    (``claim``, ``renew``, ``release``, ``lease``), each one transaction, with the results
    and errors of the ``Store`` methods of the same names."""

    def enqueue(self, session_id: str, item: QueueItem, *, max_pending: int | None = None) -> str:
        """Queue a validated item; committed to the file before this returns."""
        job = self.enqueue_job(session_id, item, max_pending=max_pending)
        (error,) = self.enqueue_many([job])
        if error is not None:
            raise error
        return job.row.id

    @staticmethod
    def enqueue_job(
        session_id: str, item: QueueItem, *, max_pending: int | None = None
    ) -> sql.Enqueue:
        """The arguments of one ``enqueue``, checked, for :meth:`enqueue_many`."""
        sid = _rows.check_session_id(session_id)
        return sql.Enqueue(sid, _rows.item_row(item), _queue_rules.check_max_pending(max_pending))

    def enqueue_many(self, jobs: Sequence[sql.Enqueue]) -> list[AgentRemindersError | None]:
        """Insert the rows of ``jobs`` in one transaction (a group commit); for each job,
        ``None`` when it was queued or the error that refused it alone (unknown session, id
        already used, queue full). An error raised here fails them all.

        A group costs a handful of statements whatever its size — the counter and the file's
        version, the checks, the inserts (one statement per ``sql.CHUNK`` rows), the counter's
        new value — because each statement gives up the GIL and must win it back from the
        event loop; and one row and one index entry per item, the pages a commit writes."""
        return self.run(lambda db: self._enqueue_all(db, jobs))

    def _enqueue_all(
        self, db: sqlite3.Connection, jobs: Sequence[sql.Enqueue]
    ) -> list[AgentRemindersError | None]:
        errors: list[AgentRemindersError | None] = [None] * len(jobs)
        with self._transaction(db):
            last, version = db.execute(sql.ACTIVITY_AND_VERSION).fetchone()
            counts = self._pending.take(db, version)
            refused = sql.refused(db, jobs)
            limited = {j.session_id for j in jobs if j.limit is not None} - counts.keys()
            counts.update(sql.pending_counts(db, sorted(limited)))
            accepted: list[sql.Enqueue] = []
            seen: set[tuple[str, str]] = set()
            for at, job in enumerate(jobs):
                sid, key = job.session_id, (job.session_id, job.row.id)
                if refused.get(key):
                    errors[at] = UnknownSessionError(sid)
                    continue
                # a refused id is used (pending or settled: the push rule needs no more)
                used = key in refused or key in seen
                try:
                    status: ItemStatus = "pending" if used else "unknown"
                    _queue_rules.push_allowed(job.row.id, status, counts.get(sid, 0), job.limit)
                except AgentRemindersError as exc:
                    errors[at] = exc.with_traceback(None)  # raised to its caller later
                    continue
                seen.add(key)
                accepted.append(job)
                if sid in counts:
                    counts[sid] += 1
            if accepted:
                # the counter was read with the version above: taken here without reading
                entries = [(j.session_id, j.row) for j in accepted]
                sql.queue_pending(db, entries, last + 1, self.clock(), skip=False)
                db.execute("UPDATE activity SET last = ?", (last + len(accepted),))
        self._pending.keep(db, version)
        return errors

    def pending(self, session_id: str) -> list[dict[str, Any]]:
        """The pending rows ``session/pending_injections`` reports, FIFO."""
        sid = _rows.check_session_id(session_id)

        def run(db: sqlite3.Connection) -> list[QueueItem]:
            with self._transaction(db, write=False):
                self._exists(db, sid)
                return [self._item(r) for r in sql.pending_rows(db, sid)]

        return _queue_rules.pending_rows(self.run(run))

    def drain(self, session_id: str, modes: Iterable[DeliveryMode | str]) -> list[QueueItem]:
        """Take the pending items of ``modes`` and mark them delivered, in one transaction."""
        sid = _rows.check_session_id(session_id)
        wanted = sorted(m.value for m in _queue_rules.check_modes(modes))

        def run(db: sqlite3.Connection) -> list[QueueItem]:
            with self._transaction(db):
                self._exists(db, sid)
                if not wanted:
                    return []
                marks = ", ".join("?" for _ in wanted)
                found = [
                    sql.pending_row(r)
                    for r in db.execute(
                        f"{sql.PENDING} AND mode IN ({marks}) ORDER BY seq", (sid, *wanted)
                    )
                ]
                items = [self._item(r) for r in found]
                sql.settle(db, sid, [r.id for r in found], "delivered")
                if items:
                    self._touch(db, sid)
                return items

        return self.run(run)

    def revoke(self, session_id: str, reminder_id: str) -> RevokeStatus:
        """Revoke a queued reminder (see ``Store``)."""
        sid = _rows.check_session_id(session_id)

        def run(db: sqlite3.Connection) -> RevokeStatus:
            with self._transaction(db):
                self._exists(db, sid)
                rid = _queue_rules.check_revoke_id(reminder_id)
                found = db.execute(f"{sql.PENDING} AND item_id = ?", (sid, rid)).fetchone()
                row = sql.settled_row(db, sid, rid) if found is None else sql.pending_row(found)
                status = _queue_rules.revoke_status(row, rid)
                if status == "revoked":
                    sql.settle(db, sid, [rid], "revoked")
                    self._touch(db, sid)
                return status

        return self.run(run)

    def has_pending(
        self,
        session_id: str,
        *,
        modes: Iterable[DeliveryMode | str] | None = None,
        ignore: Container[str] = (),
    ) -> bool:
        """Whether something (of ``modes``, not in ``ignore``) is pending for the session:
        the look of ``wait_for_items``."""
        sid = _rows.check_session_id(session_id)
        wanted = None if modes is None else sorted(m.value for m in _queue_rules.check_modes(modes))

        def look(db: sqlite3.Connection) -> bool:
            self._exists(db, sid)
            sql = "SELECT item_id FROM pending WHERE session_id = ?"
            args: list[str] = [sid]
            if wanted is not None:
                sql += f" AND mode IN ({', '.join('?' for _ in wanted)})"
                args += wanted
            return any(row[0] not in ignore for row in db.execute(sql, args))

        return self.run(look)

    # -- leases -----------------------------------------------------------------------------

    def claim(
        self, session_id: str, owner: str, ttl_seconds: float, *, replace: str | None = None
    ) -> str | None:
        """Claim the session for ``owner`` for ``ttl_seconds`` (taking it from ``replace``
        if that owner holds it, under the write lock): ``None`` when claimed, else the owner
        holding it (see ``Store``). Expiry is read on this store's ``clock``."""
        sid = _rows.check_session_id(session_id)
        who, ttl = _lease_rules.check_lease(owner, ttl_seconds)
        gone = _lease_rules.check_replace(replace)

        def run(db: sqlite3.Connection) -> str | None:
            with self._transaction(db):
                self._exists(db, sid)
                now = self.clock()
                held = sql.live_lease(db, sid, now)
                if held is not None and held[0] != gone:
                    return held[0]
                db.execute("INSERT OR REPLACE INTO leases VALUES (?, ?, ?)", (sid, who, now + ttl))
                return None

        return self.run(run)

    def renew(self, session_id: str, owner: str, ttl_seconds: float) -> bool:
        """Extend ``owner``'s live lease to ``ttl_seconds`` from now; ``False`` when it is not
        the holder (any more)."""
        sid = _rows.check_session_id(session_id)
        who, ttl = _lease_rules.check_lease(owner, ttl_seconds)

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

        return self.run(run)

    def release(self, session_id: str, owner: str) -> bool:
        """Release ``owner``'s live lease; ``False`` when it is not the holder (any more)."""
        sid = _rows.check_session_id(session_id)
        who = _lease_rules.check_owner(owner)

        def run(db: sqlite3.Connection) -> bool:
            with self._transaction(db):
                self._exists(db, sid)
                done = db.execute(
                    "DELETE FROM leases WHERE session_id = ? AND owner = ? AND expires_at > ?",
                    (sid, who, self.clock()),
                )
                return done.rowcount > 0

        return self.run(run)

    def lease(self, session_id: str) -> Lease | None:
        """The live lease on the session (its owner and seconds left on this store's
        ``clock``), else ``None``."""
        sid = _rows.check_session_id(session_id)

        def run(db: sqlite3.Connection) -> Lease | None:
            with self._transaction(db, write=False):
                self._exists(db, sid)
                now = self.clock()
                held = sql.live_lease(db, sid, now)
            return None if held is None else Lease(owner=held[0], expires_in=held[1] - now)

        return self.run(run)
