"""``RedisStore``: the ``Store`` protocol on Redis, for many workers sharing sessions
on redis-py's asyncio client (``pip install 'agent-reminders[redis]'``).

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

The package: ``store`` (``RedisStore``), ``queueing`` (its queue and leases), ``connection``
(the client, the key layout, the helpers) and ``scripts/*.lua`` (the Lua scripts, package data
read with ``importlib.resources``; each session script runs after ``prelude.lua``).
"""

from .connection import DEFAULT_PREFIX
from .store import RedisStore

__all__ = ["DEFAULT_PREFIX", "RedisStore"]
