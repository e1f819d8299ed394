"""``RedisStore``: its arguments, the session records and the event log (the queue and the
leases are in ``queueing``, the client, keys and scripts under them in ``connection``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from urllib.parse import urlsplit

import anyio

from ..._core.errors import ConfigError, StateError, StoreError, missing_extra
from ..._core.events import EventRecord
from ..._core.records import Message, Reminder
from ...state import SessionState
from .. import _queue_rules, _rows, _save_plan
from ..base import SessionExistsError, SessionInfo, UnknownSessionError
from .connection import (
    ATTEMPTS,
    DEFAULT_PREFIX,
    SESSION_SCRIPTS,
    Arg,
    as_text,
    item_text,
    lua,
    pending_row,
    redact,
    seq,
    session_script,
)
from .queueing import RedisQueue

_SCHEMES = ("redis", "rediss", "unix")


class RedisStore(RedisQueue):
    """The ``Store`` protocol on Redis, shared by every worker that opens the same server.

    The client connects on first use (``open_store("redis://…")`` also checks that the server
    answers, with :meth:`ping`). Each method is one Lua script or one ``MULTI``/``EXEC`` on
    the session's keys (module docstring), so a drain is atomic across every worker: an item
    is delivered exactly once, in FIFO order. ``wait_for_items`` is woken by pub/sub when an
    item is queued for its session, by any worker.

    Args:
        url: ``redis://[[user]:password@]HOST[:PORT][/DB]``, ``rediss://…`` (TLS) or
            ``unix:///path/to/socket?db=N``.
        prefix: The first part of every key, so several stores can share one database.
        clock: Seconds since the epoch, for ``created_at``/``updated_at`` (lease expiry is
            Redis's own clock).
        poll_interval: The safety net of ``wait_for_items``: how often it looks even without
            a pub/sub message (a message is lost only if the connection drops).

    Raises:
        ImportError: redis-py is not installed (``pip install 'agent-reminders[redis]'``).
        ConfigError: ``RMD-104`` for a URL that is not a Redis URL or a bad prefix.

    Example:
        >>> store = RedisStore("redis://127.0.0.1:6390/0", prefix="demo")
        >>> store.session_keys("s1")["queue"]
        'demo:s:{s1}:queue'
    """

    def __init__(
        self,
        url: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        clock: Callable[[], float] = time.time,
        poll_interval: float = 10.0,
    ) -> None:
        try:
            import redis.asyncio
            import redis.exceptions
        except ImportError as exc:
            raise missing_extra("redis", "redis", "RedisStore") from exc
        if not isinstance(url, str) or not url.strip():
            raise ConfigError(f"a Redis URL must be a non-blank string; got {url!r}")
        self.url = redact(url)
        scheme = url.partition(":")[0].lower()
        if scheme not in _SCHEMES:
            raise ConfigError(
                f"{self.url} is not a Redis URL; use redis://HOST:PORT/DB, rediss://… or unix://…"
            )
        try:
            database = urlsplit(url).path.strip("/")
        except ValueError as exc:
            raise ConfigError(f"{self.url} is not a usable Redis URL: {exc}") from None
        if scheme != "unix" and database and not database.isdigit():
            raise ConfigError(
                f"{self.url}: the database after the host is a number (redis://HOST:PORT/0), "
                f"not {database!r}"
            )
        if not isinstance(prefix, str) or not prefix.strip() or {"{", "}"} & set(prefix):
            raise ConfigError(
                f"prefix must be a non-blank string without braces (they mark hash tags); "
                f"got {prefix!r}"
            )
        if isinstance(poll_interval, bool) or not isinstance(poll_interval, int | float):
            raise TypeError(f"poll_interval must be a number of seconds; got {poll_interval!r}")
        if not poll_interval > 0:
            raise ConfigError(f"poll_interval must be > 0 seconds; got {poll_interval!r}")
        self.prefix = prefix
        self.clock = clock
        self.poll_interval = float(poll_interval)
        self._errors: type[Exception] = redis.exceptions.RedisError
        try:
            client = redis.asyncio.Redis.from_url(url, decode_responses=True)
        except ValueError as exc:
            raise ConfigError(f"{self.url} is not a usable Redis URL: {exc}") from None
        self._client = client
        self._scripts = {
            name: client.register_script(session_script(name)) for name in SESSION_SCRIPTS
        }
        self._touch_script = client.register_script(lua("touch"))
        self._memo = _save_plan.Memo()
        self._index = f"{prefix}:i:{{index}}:sessions"
        self._index_clock = f"{prefix}:i:{{index}}:clock"

    # -- session records --------------------------------------------------------------------

    async def create_session(self, state: SessionState) -> None:
        """Store a new session (see ``Store``)."""
        plan = await anyio.to_thread.run_sync(_save_plan.plan_save, state, None)
        writes = plan.against(0, 0, _rows.EMPTY_DIGEST)
        args: list[Arg] = [
            plan.head,
            plan.turn,
            writes.digest,
            self.clock(),
            len(writes.messages),
            *writes.messages,
            len(writes.audit),
            *writes.audit,
            len(plan.items) + len(plan.settled),
        ]
        for row in (*plan.items, *plan.settled):
            item = item_text(row) if row.status == "pending" else ""
            args += [row.id, "none", row.status, row.mode or "", item]
        if await self._script("create", plan.session_id, args) == "exists":
            raise SessionExistsError(plan.session_id)
        self._memo.wrote(plan, writes, 0)
        await self._touch(plan.session_id)

    async def load_session(self, session_id: str) -> SessionState | None:
        """The stored session, or ``None`` (see ``Store``); read in one ``MULTI``/``EXEC``,
        parsed off the event loop."""
        try:
            found, messages, audit, queue, items, ids = await self._read(
                session_id,
                ("HMGET", "session", "head", "revision", "digest"),
                ("LRANGE", "messages", 0, -1),
                ("LRANGE", "audit", 0, -1),
                ("LRANGE", "queue", 0, -1),
                ("HGETALL", "items"),
                ("HGETALL", "ids"),
            )
        except UnknownSessionError:
            return None
        head, revision, digest = found

        def join() -> SessionState:
            try:
                pending = [pending_row(i, items[i]) for i in queue]
                settled = [(i, s) for i, s in ids.items() if s in ("delivered", "revoked")]
                state = _rows.join_state(as_text(head), messages, audit, pending, settled)
            except (StateError, ValueError, KeyError, TypeError) as exc:
                raise StoreError(
                    f"{self.url}: stored session {session_id!r} cannot be read: {exc}"
                ) from None
            self._memo.read(state, int(revision or 0), as_text(digest), len(audit))
            return state

        return await anyio.to_thread.run_sync(join)

    async def save_session(self, state: SessionState) -> None:
        """Write one turn in one script (see ``Store``): the new messages and audit entries
        appended (all of them, replaced, after a compaction or another writer), the head
        replaced, the queue merged. The JSON is made off the event loop and covers only what
        the turn added (``_save_plan.plan_save``)."""
        plan = await anyio.to_thread.run_sync(_save_plan.plan_save, state, self._memo)
        sid = plan.session_id
        merging = (*plan.items, *plan.settled)
        reads: list[tuple[Arg, ...]] = [("HMGET", "session", "revision", "message_count", "digest")]
        if merging:
            reads.append(("HMGET", "ids", *(row.id for row in merging)))
        for _ in range(ATTEMPTS):
            (revision, count, digest), *found = await self._read(sid, *reads)
            statuses = found[0] if found else []
            at = (int(revision or 0), int(count), as_text(digest))
            if plan.appends_to(*at):
                writes = plan.against(*at)
            else:  # every row: serialised off the event loop too
                writes = await anyio.to_thread.run_sync(plan.against, *at)
            rows: list[Arg] = []
            for row, current in zip(merging, statuses, strict=True):
                now = None if current is None else _rows.QueueRow(id=row.id, status=current)
                merged = _queue_rules.merge_row(now, row)
                if merged is None:
                    continue
                item = item_text(merged) if merged.status == "pending" else ""
                rows += [row.id, current or "none", merged.status, merged.mode or "", item]
            args: list[Arg] = [
                at[0],
                int(writes.messages_at is not None),
                int(writes.audit_at is not None),
                plan.head,
                plan.turn,
                plan.message_count,
                writes.digest,
                self.clock(),
                len(writes.messages),
                *writes.messages,
                len(writes.audit),
                *writes.audit,
                len(rows) // 5,
                *rows,
            ]
            result = await self._script("save", sid, args)
            if result[0] == "unknown":
                raise UnknownSessionError(sid)
            if result[0] == "ok":
                self._memo.wrote(plan, writes, int(result[1]))
                await self._touch(sid)
                return
        raise self._gave_up(sid)

    async def append_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        """Append transcript messages (see ``Store``)."""
        sid = _rows.check_session_id(session_id)
        _rows.message_rows(messages, 0)  # validate before talking to the server
        for _ in range(ATTEMPTS):
            stored, count = await self._read(
                sid,
                ("HGET", "session", "digest"),
                ("HGET", "session", "message_count"),
            )
            rows = _rows.message_rows(messages, int(count))
            args = [stored, _rows.chain(stored, rows), self.clock(), *rows]
            if await self._applied(sid, await self._script("append", sid, args)):
                return
        raise self._gave_up(sid)

    async def save_reminders(self, session_id: str, reminders: Sequence[Reminder]) -> None:
        """Replace the pending reminders (see ``Store``)."""
        sid = _rows.check_session_id(session_id)
        for _ in range(ATTEMPTS):
            (head,) = await self._read(sid, ("HGET", "session", "head"))
            new = _rows.head_with_reminders(head, reminders)
            if await self._applied(sid, await self._script("head", sid, [head, new, self.clock()])):
                return
        raise self._gave_up(sid)

    async def list_sessions(self) -> list[SessionInfo]:
        """Every session, most recent activity first."""
        with self._talk() as client:
            ids = [as_text(i) for i in await client.zrevrange(self._index, 0, -1)]
            async with client.pipeline(transaction=False) as pipe:
                for sid in ids:
                    pipe.hmget(
                        self.session_keys(sid)["session"],
                        ["created_at", "updated_at", "turn", "message_count"],
                    )
                found = await pipe.execute() if ids else []
        return [
            SessionInfo(
                session_id=sid,
                created_at=float(row[0]),
                updated_at=float(row[1]),
                turn=int(row[2]),
                message_count=int(row[3]),
            )
            for sid, row in zip(ids, found, strict=True)
            if row[0] is not None
        ]

    async def latest_session(self) -> str | None:
        """The id of the most recently active session, or ``None``."""
        with self._talk() as client:
            top = await client.zrevrange(self._index, 0, 0)
        return as_text(top[0]) if top else None

    # -- the injection queue ----------------------------------------------------------------

    async def session_ids(self, *, limit: int, among: Iterable[str] | None = None) -> list[str]:
        """Up to ``limit`` stored session ids (those in ``among`` when given): a range of the
        session index, or its scores of ``among`` in pipelined chunks until enough are found."""
        if limit <= 0:
            return []
        with self._talk() as client:
            if among is None:
                return [as_text(i) for i in await client.zrange(self._index, 0, limit - 1)]
            wanted = list(among)
            found: list[str] = []
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                async with client.pipeline(transaction=False) as pipe:
                    for sid in chunk:
                        pipe.zscore(self._index, sid)
                    scores = await pipe.execute()
                found.extend(
                    sid for sid, score in zip(chunk, scores, strict=True) if score is not None
                )
                if len(found) >= limit:
                    break
            return found[:limit]

    # -- the event log ----------------------------------------------------------------------

    async def append_events(
        self, session_id: str, records: Iterable[EventRecord]
    ) -> list[EventRecord]:
        """Append records to the session's stream under the store's own ``seq`` (the entry
        id is ``<seq>-0``); returns them so numbered."""
        sid = _rows.check_session_id(session_id)
        encoded = [_rows.encode_event(r) for r in records]
        args: list[Arg] = [self.clock()]
        for event in encoded:
            args += event
        start = int(await self._script("events", sid, args))
        if start < 0:
            raise UnknownSessionError(sid)
        if encoded:
            await self._touch(sid)
        return [_rows.decode_event(start + i + 1, *e) for i, e in enumerate(encoded)]

    async def read_events(
        self, session_id: str, *, after_seq: int = 0, kind_prefix: str = ""
    ) -> list[EventRecord]:
        """The records after ``after_seq`` whose kind starts with ``kind_prefix``, in order."""
        sid = _rows.check_session_id(session_id)
        after, prefix = _rows.check_read_args(after_seq, kind_prefix)
        (entries,) = await self._read(sid, ("XRANGE", "events", f"{after + 1}-0", "+"))
        return [
            _rows.decode_event(seq(entry_id), f["topic"], f["kind"], f["payload"])
            for entry_id, f in entries
            if f["kind"].startswith(prefix)
        ]
