"""``RedisStore``: the ``Store`` protocol on Redis, for many workers sharing sessions
(spec 06 §1 and §3), on redis-py's asyncio client (``pip install 'agent-reminders[redis]'``).

Every key of a session carries the session id as its hash tag, so all of them live in one
Redis Cluster slot and each operation can be one Lua script or one ``MULTI``/``EXEC``
(``P`` is the store's ``prefix``, ``agent-reminders`` by default)::

    P:s:{SID}:session    HASH    head (the SessionState document without messages, audit
                                 entries and queue), turn, message_count, digest, revision
                                 (bumped by every write of the record), created_at,
                                 updated_at, event_seq
    P:s:{SID}:messages   LIST    one transcript message event (JSON) per entry, append-only
    P:s:{SID}:audit      LIST    one transcript audit entry (JSON) per entry, append-only
    P:s:{SID}:queue      LIST    the ids of the pending items, FIFO
    P:s:{SID}:items      HASH    pending id -> {"kind", "mode", "payload"} (JSON)
    P:s:{SID}:modes      HASH    pending id -> its delivery mode (what a drain filters on)
    P:s:{SID}:ids        HASH    every id used in the session -> pending | delivered | revoked
    P:s:{SID}:events     STREAM  the event log: entry id "<seq>-0", fields topic, kind, payload
    P:s:{SID}:lease      STRING  the worker holding the session (SET NX PX, expires by itself)
    P:s:{SID}:wake       pub/sub channel, published in the same script as an enqueue

Two keys outside any session order ``list_sessions``: ``P:i:{index}:sessions`` (a sorted set,
session id -> activity counter) and ``P:i:{index}:clock`` (the counter). They are updated
right after each write, as a separate command, because a Cluster script cannot span slots.

Writes that read before they write (``save_session``, ``append_messages``,
``save_reminders``, ``revoke``) decide in Python with the same rules as every backend
(``_rows``, ``_queue_rules``) and apply the result with a script that first checks that what
they read is unchanged, retrying otherwise: atomic without a second copy of the rules in Lua.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import anyio

from .._core.errors import (
    AgentRemindersError,
    ConfigError,
    StateError,
    StoreError,
    missing_extra,
)
from .._core.events import EventRecord
from .._core.records import DeliveryMode, Message, Reminder
from ..queue import QueueItem
from ..state import SessionState
from . import _lease_rules, _queue_rules, _rows, _save_plan
from ._wake import check_timeout
from .base import (
    ClosingStore,
    Lease,
    RevokeStatus,
    SessionExistsError,
    SessionInfo,
    UnknownSessionError,
)

Arg = str | int | float  # what a script takes as ARGV

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.asyncio.client import PubSub
    from redis.commands.core import AsyncScript

__all__ = ["DEFAULT_PREFIX", "RedisStore"]

DEFAULT_PREFIX = "agent-reminders"
_PARTS = ("session", "messages", "queue", "items", "modes", "ids", "events", "lease", "audit")
_SCHEMES = ("redis", "rediss", "unix")
# a read-then-write that keeps losing to other writers gives up after this many tries
_ATTEMPTS = 100

# Every session script gets the keys of _PARTS, in that order.
_PRELUDE = """
local S, MESSAGES, QUEUE, ITEMS, MODES, IDS, EVENTS, LEASE, AUDIT =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local function push_item(id, mode, item)
  redis.call('HSET', IDS, id, 'pending')
  redis.call('RPUSH', QUEUE, id)
  redis.call('HSET', ITEMS, id, item)
  redis.call('HSET', MODES, id, mode)
end
local function settle(id, status)
  redis.call('HSET', IDS, id, status)
  redis.call('LREM', QUEUE, 1, id)
  redis.call('HDEL', ITEMS, id)
  redis.call('HDEL', MODES, id)
end
local function push_texts(key, at, n)
  for i = at, at + n - 1 do redis.call('RPUSH', key, ARGV[i]) end
end
-- queue rows: n groups of (id, status expected now or 'none', new status, mode, item)
local function rows_unchanged(at, n)
  for i = at, at + 5 * (n - 1), 5 do
    if (redis.call('HGET', IDS, ARGV[i]) or 'none') ~= ARGV[i + 1] then return false end
  end
  return true
end
local function apply_rows(at, n)
  for i = at, at + 5 * (n - 1), 5 do
    local id, status = ARGV[i], ARGV[i + 2]
    if ARGV[i + 1] == 'pending' then
      settle(id, status)
    elseif status == 'pending' then
      push_item(id, ARGV[i + 3], ARGV[i + 4])
    else
      redis.call('HSET', IDS, id, status)
    end
  end
end
"""

# ARGV: head, turn, digest, now, n, n messages, na, na audit entries, rows count, rows
_CREATE = """
if redis.call('EXISTS', S) == 1 then return 'exists' end
redis.call('DEL', MESSAGES, QUEUE, ITEMS, MODES, IDS, EVENTS, AUDIT)
local n = tonumber(ARGV[5])
push_texts(MESSAGES, 6, n)
local na = tonumber(ARGV[6 + n])
push_texts(AUDIT, 7 + n, na)
apply_rows(8 + n + na, tonumber(ARGV[7 + n + na]))
redis.call('HSET', S, 'head', ARGV[1], 'turn', ARGV[2], 'message_count', n, 'digest', ARGV[3],
  'created_at', ARGV[4], 'updated_at', ARGV[4], 'event_seq', 0, 'revision', 0)
return 'ok'
"""

# ARGV: revision read, append messages (1) or replace them (0), the same for the audit
# entries, head, turn, count, digest, now, n, n messages, na, na audit entries, rows count,
# rows -> {'ok', new revision} | {'conflict'} | {'unknown'}
_SAVE = """
if redis.call('EXISTS', S) == 0 then return {'unknown'} end
if (redis.call('HGET', S, 'revision') or '0') ~= ARGV[1] then return {'conflict'} end
local n = tonumber(ARGV[9])
local na = tonumber(ARGV[10 + n])
local at = 12 + n + na
local rows = tonumber(ARGV[11 + n + na])
if not rows_unchanged(at, rows) then return {'conflict'} end
if ARGV[2] == '0' then redis.call('DEL', MESSAGES) end
push_texts(MESSAGES, 10, n)
if ARGV[3] == '0' then redis.call('DEL', AUDIT) end
push_texts(AUDIT, 11 + n, na)
apply_rows(at, rows)
redis.call('HSET', S, 'head', ARGV[4], 'turn', ARGV[5], 'message_count', ARGV[6],
  'digest', ARGV[7], 'updated_at', ARGV[8])
return {'ok', redis.call('HINCRBY', S, 'revision', 1)}
"""

# ARGV: digest read, new digest, now, messages...
_APPEND = """
if redis.call('EXISTS', S) == 0 then return 'unknown' end
if redis.call('HGET', S, 'digest') ~= ARGV[1] then return 'conflict' end
push_texts(MESSAGES, 4, #ARGV - 3)
redis.call('HSET', S, 'message_count', redis.call('LLEN', MESSAGES), 'digest', ARGV[2],
  'updated_at', ARGV[3])
redis.call('HINCRBY', S, 'revision', 1)
return 'ok'
"""

# ARGV: head read, new head, now
_HEAD = """
if redis.call('EXISTS', S) == 0 then return 'unknown' end
if redis.call('HGET', S, 'head') ~= ARGV[1] then return 'conflict' end
redis.call('HSET', S, 'head', ARGV[2], 'updated_at', ARGV[3])
redis.call('HINCRBY', S, 'revision', 1)
return 'ok'
"""

# ARGV: id, mode, item, limit (0: none), now, channel
_ENQUEUE = """
if redis.call('EXISTS', S) == 0 then return 'unknown' end
if redis.call('HEXISTS', IDS, ARGV[1]) == 1 then return 'duplicate' end
local limit = tonumber(ARGV[4])
if limit > 0 and redis.call('LLEN', QUEUE) >= limit then return 'full' end
push_item(ARGV[1], ARGV[2], ARGV[3])
redis.call('HSET', S, 'updated_at', ARGV[5])
redis.call('PUBLISH', ARGV[6], ARGV[2])
return 'ok'
"""

# ARGV: now, modes... -> {'ok', id, item, id, item, ...} in FIFO order
_DRAIN = """
if redis.call('EXISTS', S) == 0 then return {'unknown'} end
local wanted = {}
for i = 2, #ARGV do wanted[ARGV[i]] = true end
local taken, kept = {'ok'}, {}
for _, id in ipairs(redis.call('LRANGE', QUEUE, 0, -1)) do
  if wanted[redis.call('HGET', MODES, id)] then
    table.insert(taken, id)
    table.insert(taken, redis.call('HGET', ITEMS, id))
    redis.call('HSET', IDS, id, 'delivered')
    redis.call('HDEL', ITEMS, id)
    redis.call('HDEL', MODES, id)
  else
    table.insert(kept, id)
  end
end
if #taken > 1 then
  redis.call('DEL', QUEUE)
  for _, id in ipairs(kept) do redis.call('RPUSH', QUEUE, id) end
  redis.call('HSET', S, 'updated_at', ARGV[1])
end
return taken
"""

# ARGV: id, now -> 'revoked', or the id's status when it is no longer pending
_REVOKE = """
if redis.call('EXISTS', S) == 0 then return 'unknown' end
local status = redis.call('HGET', IDS, ARGV[1])
if status ~= 'pending' then return status or 'none' end
settle(ARGV[1], 'revoked')
redis.call('HSET', S, 'updated_at', ARGV[2])
return 'revoked'
"""

# ARGV: now, then (topic, kind, payload) per record -> the seq before the first, or -1
_EVENTS = """
if redis.call('EXISTS', S) == 0 then return -1 end
local start = tonumber(redis.call('HGET', S, 'event_seq') or '0')
local seq = start
for i = 2, #ARGV, 3 do
  seq = seq + 1
  redis.call('XADD', EVENTS, seq .. '-0', 'topic', ARGV[i], 'kind', ARGV[i + 1],
    'payload', ARGV[i + 2])
end
if seq > start then redis.call('HSET', S, 'event_seq', seq, 'updated_at', ARGV[1]) end
return start
"""

# ARGV: owner, milliseconds, the owner it may replace ('' for none) -> {'ok'} |
# {'held', owner} | {'unknown'}; a live lease is taken over only from that very owner
_CLAIM = """
if redis.call('EXISTS', S) == 0 then return {'unknown'} end
if redis.call('SET', LEASE, ARGV[1], 'NX', 'PX', ARGV[2]) then return {'ok'} end
local held = redis.call('GET', LEASE)
if ARGV[3] ~= '' and held == ARGV[3] then
  redis.call('SET', LEASE, ARGV[1], 'PX', ARGV[2])
  return {'ok'}
end
return {'held', held}
"""

# ARGV: owner, milliseconds -> 1 renewed | 0 not the holder | -1 unknown session
_RENEW = """
if redis.call('EXISTS', S) == 0 then return -1 end
if redis.call('GET', LEASE) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', LEASE, ARGV[2])
return 1
"""

# ARGV: owner -> 1 released | 0 not the holder | -1 unknown session (compare-and-delete)
_RELEASE = """
if redis.call('EXISTS', S) == 0 then return -1 end
if redis.call('GET', LEASE) ~= ARGV[1] then return 0 end
redis.call('DEL', LEASE)
return 1
"""

# KEYS: the index's sorted set and counter; ARGV: session id
_TOUCH = "redis.call('ZADD', KEYS[1], redis.call('INCR', KEYS[2]), ARGV[1])"


def _redact(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``: safe for messages."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        host = parts.netloc.rpartition("@")[2]
        netloc = f"{parts.username or ''}:***@{host}"
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    except ValueError:
        return "<a redis URL that cannot be parsed>"


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _item_text(row: _rows.QueueRow) -> str:
    """The stored form of a pending item (``P:s:{SID}:items``)."""
    assert row.payload is not None
    kind, mode = _rows.dumps(row.kind), _rows.dumps(row.mode)
    return f'{{"kind":{kind},"mode":{mode},"payload":{row.payload}}}'


def _pending_row(item_id: str, text: str) -> _rows.QueueRow:
    doc = json.loads(text)
    return _rows.QueueRow(
        id=item_id,
        status="pending",
        kind=doc["kind"],
        mode=doc["mode"],
        payload=_rows.dumps(doc["payload"]),
    )


class RedisStore(ClosingStore):
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
        self.url = _redact(url)
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
        self._client: Redis | None = client
        self._scripts: dict[str, AsyncScript] = {
            name: client.register_script(_PRELUDE + body)
            for name, body in {
                "create": _CREATE,
                "save": _SAVE,
                "append": _APPEND,
                "head": _HEAD,
                "enqueue": _ENQUEUE,
                "drain": _DRAIN,
                "revoke": _REVOKE,
                "events": _EVENTS,
                "claim": _CLAIM,
                "renew": _RENEW,
                "release": _RELEASE,
            }.items()
        }
        self._touch_script = client.register_script(_TOUCH)
        self._memo = _save_plan.Memo()
        self._index = f"{prefix}:i:{{index}}:sessions"
        self._index_clock = f"{prefix}:i:{{index}}:clock"

    def __repr__(self) -> str:
        return f"RedisStore({self.url!r}, prefix={self.prefix!r}, closed={self.closed})"

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._client is None

    async def close(self) -> None:
        """Close the connections (idempotent); later calls raise ``StoreError``."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def ping(self) -> None:
        """Check that the server answers.

        Raises:
            StoreError: ``RMD-109`` naming the URL (its password hidden).
        """
        with self._talk("cannot reach Redis at ") as client:
            await client.ping()

    # -- the key layout ---------------------------------------------------------------------

    def session_keys(self, session_id: str) -> dict[str, str]:
        """The keys of one session by part (``session``, ``messages``, ``queue``, ``items``,
        ``modes``, ``ids``, ``events``, ``lease``, ``audit``), each hash-tagged
        ``{session_id}``."""
        base = f"{self.prefix}:s:{{{_rows.check_session_id(session_id)}}}"
        return {part: f"{base}:{part}" for part in _PARTS}

    def wake_channel(self, session_id: str) -> str:
        """The pub/sub channel an ``enqueue`` publishes to (the item's mode is the message)."""
        return f"{self.prefix}:s:{{{_rows.check_session_id(session_id)}}}:wake"

    def index_keys(self) -> tuple[str, str]:
        """The two keys outside any session: the activity sorted set and its counter."""
        return self._index, self._index_clock

    # -- helpers ----------------------------------------------------------------------------

    @contextmanager
    def _talk(self, context: str = "") -> Iterator[Redis]:
        """The client, with every Redis failure turned into one ``StoreError``."""
        client = self._client
        if client is None:
            raise StoreError(f"{self.url}: this store is closed")
        try:
            yield client
        except self._errors as exc:
            raise StoreError(f"{context}{self.url}: {exc}") from None

    def _keys(self, session_id: str) -> list[str]:
        return list(self.session_keys(session_id).values())

    async def _script(self, name: str, session_id: str, args: Sequence[Arg]) -> Any:
        with self._talk():
            return await self._scripts[name](keys=self._keys(session_id), args=list(args))

    async def _touch(self, session_id: str) -> None:
        with self._talk():
            await self._touch_script(keys=[self._index, self._index_clock], args=[session_id])

    async def _read(self, session_id: str, *commands: tuple[Arg, ...]) -> Any:
        """One ``MULTI``/``EXEC`` of reads: ``EXISTS`` on the session, then each command
        ``(NAME, part, *args)`` on the session's key ``part``; their replies. Raises
        ``UnknownSessionError`` for a missing session."""
        keys = self.session_keys(session_id)
        with self._talk() as client:
            async with client.pipeline(transaction=True) as pipe:
                pipe.exists(keys["session"])
                for name, part, *args in commands:
                    pipe.execute_command(name, keys[str(part)], *args)
                found = await pipe.execute()
        if not found[0]:
            raise UnknownSessionError(session_id)
        return found[1:]

    def _item(self, row: _rows.QueueRow) -> QueueItem:
        try:
            return row.item()
        except AgentRemindersError as exc:
            raise StoreError(
                f"{self.url}: stored queue item {row.id!r} is invalid: {exc}"
            ) from None

    def _gave_up(self, session_id: str) -> StoreError:
        return StoreError(
            f"{self.url}: session {session_id!r} kept changing under this write "
            f"({_ATTEMPTS} tries); try again"
        )

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
            item = _item_text(row) if row.status == "pending" else ""
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
                pending = [_pending_row(i, items[i]) for i in queue]
                settled = [(i, s) for i, s in ids.items() if s in ("delivered", "revoked")]
                state = _rows.join_state(_text(head), messages, audit, pending, settled)
            except (StateError, ValueError, KeyError, TypeError) as exc:
                raise StoreError(
                    f"{self.url}: stored session {session_id!r} cannot be read: {exc}"
                ) from None
            self._memo.read(state, int(revision or 0), _text(digest), len(audit))
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
        for _ in range(_ATTEMPTS):
            (revision, count, digest), *found = await self._read(sid, *reads)
            statuses = found[0] if found else []
            at = (int(revision or 0), int(count), _text(digest))
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
                item = _item_text(merged) if merged.status == "pending" else ""
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
        for _ in range(_ATTEMPTS):
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

    async def _applied(self, sid: str, result: object) -> bool:
        """The outcome of an optimistic write script: ``True`` when it applied (the activity
        is touched), ``False`` when the session changed meanwhile and the caller retries."""
        if result == "unknown":
            raise UnknownSessionError(sid)
        if result != "ok":
            return False
        await self._touch(sid)
        return True

    async def save_reminders(self, session_id: str, reminders: Sequence[Reminder]) -> None:
        """Replace the pending reminders (see ``Store``)."""
        sid = _rows.check_session_id(session_id)
        for _ in range(_ATTEMPTS):
            (head,) = await self._read(sid, ("HGET", "session", "head"))
            new = _rows.head_with_reminders(head, reminders)
            if await self._applied(sid, await self._script("head", sid, [head, new, self.clock()])):
                return
        raise self._gave_up(sid)

    async def list_sessions(self) -> list[SessionInfo]:
        """Every session, most recent activity first."""
        with self._talk() as client:
            ids = [_text(i) for i in await client.zrevrange(self._index, 0, -1)]
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
        return _text(top[0]) if top else None

    # -- the injection queue ----------------------------------------------------------------

    async def session_ids(self, *, limit: int, among: Iterable[str] | None = None) -> list[str]:
        """Up to ``limit`` stored session ids (those in ``among`` when given): a range of the
        session index, or its scores of ``among`` in pipelined chunks until enough are found."""
        if limit <= 0:
            return []
        with self._talk() as client:
            if among is None:
                return [_text(i) for i in await client.zrange(self._index, 0, limit - 1)]
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

    async def enqueue(
        self, session_id: str, item: QueueItem, *, max_pending: int | None = None
    ) -> str:
        """Queue a validated item; in Redis, and announced on the session's channel, before
        this returns."""
        sid = _rows.check_session_id(session_id)
        row = _rows.item_row(item)
        limit = _queue_rules.check_max_pending(max_pending)
        mode = row.mode or ""
        args: list[Arg] = [row.id, mode, _item_text(row), limit or 0, self.clock()]
        args.append(self.wake_channel(sid))
        result = await self._script("enqueue", sid, args)
        if result == "unknown":
            raise UnknownSessionError(sid)
        if result == "duplicate":
            raise _queue_rules.duplicate_id(row.id)
        if result == "full":
            assert limit is not None
            raise _queue_rules.queue_full(limit)
        await self._touch(sid)
        return row.id

    async def pending(self, session_id: str) -> list[dict[str, Any]]:
        """The pending rows of 04 §3, FIFO."""
        sid = _rows.check_session_id(session_id)
        queue, items = await self._read(sid, ("LRANGE", "queue", 0, -1), ("HGETALL", "items"))
        return _queue_rules.pending_rows([self._item(_pending_row(i, items[i])) for i in queue])

    async def drain(self, session_id: str, modes: Iterable[DeliveryMode | str]) -> list[QueueItem]:
        """Take the pending items of ``modes`` (FIFO) and mark them delivered, in one script:
        two workers draining one session never both take an item."""
        sid = _rows.check_session_id(session_id)
        wanted = sorted(m.value for m in _queue_rules.check_modes(modes))
        found = await self._script("drain", sid, [self.clock(), *wanted])
        if found[0] == "unknown":
            raise UnknownSessionError(sid)
        pairs = found[1:]
        items = [self._item(_pending_row(pairs[i], pairs[i + 1])) for i in range(0, len(pairs), 2)]
        if items:
            await self._touch(sid)
        return items

    async def revoke(self, session_id: str, reminder_id: str) -> RevokeStatus:
        """Revoke a queued reminder (see ``Store``)."""
        sid = _rows.check_session_id(session_id)
        probe = reminder_id if isinstance(reminder_id, str) else ""
        for _ in range(_ATTEMPTS):
            status, text = await self._read(sid, ("HGET", "ids", probe), ("HGET", "items", probe))
            rid = _queue_rules.check_revoke_id(reminder_id)
            row = None
            if status == "pending" and text is not None:
                row = _pending_row(rid, text)
            elif status is not None:
                row = _rows.QueueRow(id=rid, status=status)
            if _queue_rules.revoke_status(row, rid) == "already_revoked":
                return "already_revoked"
            result = await self._script("revoke", sid, [rid, self.clock()])
            if result == "unknown":
                raise UnknownSessionError(sid)
            if result == "revoked":
                await self._touch(sid)
                return "revoked"
            # settled meanwhile (a drain on another worker): decide again on what it is now
        raise self._gave_up(sid)

    async def _has_items(
        self, session_id: str, wanted: frozenset[str] | None, ignore: Container[str]
    ) -> bool:
        (modes,) = await self._read(session_id, ("HGETALL", "modes"))
        return any(
            (wanted is None or mode in wanted) and item_id not in ignore
            for item_id, mode in modes.items()
        )

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

        Subscribes to the session's channel, then looks; every ``enqueue`` — by any worker —
        publishes there, so the wait ends as soon as an item is queued. Without a message it
        looks again every ``poll_interval`` seconds (a safety net only).
        """
        sid = _rows.check_session_id(session_id)
        checked = None if modes is None else _queue_rules.check_modes(modes)
        wanted = None if checked is None else frozenset(m.value for m in checked)
        limit = check_timeout(timeout)
        if await self._has_items(sid, wanted, ignore):
            return True
        if limit <= 0:
            return False
        deadline = anyio.current_time() + limit
        with self._talk() as client:
            async with client.pubsub() as pubsub:
                await pubsub.subscribe(self.wake_channel(sid))
                await self._subscribed(pubsub, deadline)
                while True:
                    # subscribed before this look: an item queued after it publishes to us
                    if await self._has_items(sid, wanted, ignore):
                        return True
                    remaining = deadline - anyio.current_time()
                    if remaining <= 0:
                        return False
                    await pubsub.get_message(
                        ignore_subscribe_messages=True, timeout=min(remaining, self.poll_interval)
                    )

    async def _subscribed(self, pubsub: PubSub, deadline: float) -> None:
        """Wait for the server's confirmation of the subscription (so a publish that follows
        the next look cannot be missed), at most ``poll_interval`` seconds."""
        until = min(deadline, anyio.current_time() + self.poll_interval)
        while (remaining := until - anyio.current_time()) > 0:
            message = await pubsub.get_message(timeout=remaining)
            if message is not None and message.get("type") == "subscribe":
                return

    # -- leases -----------------------------------------------------------------------------

    async def claim(
        self, session_id: str, owner: str, ttl_seconds: float, *, replace: str | None = None
    ) -> str | None:
        """Claim the session for ``owner`` (``SET NX PX``; with ``replace``, a compare-and-set
        from that owner): ``None`` when claimed, else the owner holding it (see ``Store``).
        Expiry is kept by the Redis server."""
        sid = _rows.check_session_id(session_id)
        who, ttl = _lease_rules.check_lease(owner, ttl_seconds)
        gone = _lease_rules.check_replace(replace) or ""
        found = await self._script("claim", sid, [who, _milliseconds(ttl), gone])
        if found[0] == "unknown":
            raise UnknownSessionError(sid)
        return None if found[0] == "ok" else _text(found[1])

    async def renew(self, session_id: str, owner: str, ttl_seconds: float) -> bool:
        """Extend ``owner``'s lease to ``ttl_seconds`` from now; ``False`` when it is not the
        holder (any more)."""
        sid = _rows.check_session_id(session_id)
        who, ttl = _lease_rules.check_lease(owner, ttl_seconds)
        return self._lease_result(sid, await self._script("renew", sid, [who, _milliseconds(ttl)]))

    async def release(self, session_id: str, owner: str) -> bool:
        """Release ``owner``'s lease (compare-and-delete); ``False`` when it is not the holder
        (any more) — another owner's lease is never touched."""
        sid = _rows.check_session_id(session_id)
        who = _lease_rules.check_owner(owner)
        return self._lease_result(sid, await self._script("release", sid, [who]))

    async def lease(self, session_id: str) -> Lease | None:
        """The live lease on the session (its owner, and its time left on the Redis
        server's clock), else ``None``."""
        sid = _rows.check_session_id(session_id)
        owner, left = await self._read(sid, ("GET", "lease"), ("PTTL", "lease"))
        if owner is None or int(left) <= 0:  # PTTL: -2 gone, -1 no expiry (never set so)
            return None
        return Lease(owner=_text(owner), expires_in=int(left) / 1000)

    def _lease_result(self, session_id: str, result: object) -> bool:
        if result == -1:
            raise UnknownSessionError(session_id)
        return result == 1

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
            _rows.decode_event(_seq(entry_id), f["topic"], f["kind"], f["payload"])
            for entry_id, f in entries
            if f["kind"].startswith(prefix)
        ]


def _seq(entry_id: object) -> int:
    """The ``seq`` of a stream entry id ``<seq>-0``."""
    return int(_text(entry_id).partition("-")[0])


def _milliseconds(seconds: float) -> int:
    return max(1, round(seconds * 1000))
