"""The injection queue and the leases of a ``RedisStore``."""

from __future__ import annotations

from collections.abc import Container, Iterable
from typing import TYPE_CHECKING, Any

import anyio

from ..._core.records import DeliveryMode
from ...queue import QueueItem
from .. import _lease_rules, _queue_rules, _rows
from .._wake import check_timeout
from ..base import Lease, RevokeStatus, UnknownSessionError
from .connection import (
    ATTEMPTS,
    Arg,
    RedisConnection,
    as_text,
    item_text,
    milliseconds,
    pending_row,
)

if TYPE_CHECKING:
    from redis.asyncio.client import PubSub


class RedisQueue(RedisConnection):
    """``enqueue``, ``pending``, ``drain``, ``revoke``, ``wait_for_items`` and the leases
    (``claim``, ``renew``, ``release``, ``lease``) of ``RedisStore``, each one script or one
    ``MULTI``/``EXEC``."""

    async def enqueue(
        self, session_id: str, item: QueueItem, *, max_pending: int | None = None
    ) -> str:
        """Queue a validated item; in Redis, and announced on the session's channel, before
        this returns."""
        sid = _rows.check_session_id(session_id)
        row = _rows.item_row(item)
        limit = _queue_rules.check_max_pending(max_pending)
        mode = row.mode or ""
        args: list[Arg] = [row.id, mode, item_text(row), limit or 0, self.clock()]
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
        """The pending rows ``session/pending_injections`` reports, FIFO."""
        sid = _rows.check_session_id(session_id)
        queue, items = await self._read(sid, ("LRANGE", "queue", 0, -1), ("HGETALL", "items"))
        return _queue_rules.pending_rows([self._item(pending_row(i, items[i])) for i in queue])

    async def drain(self, session_id: str, modes: Iterable[DeliveryMode | str]) -> list[QueueItem]:
        """Take the pending items of ``modes`` (FIFO) and mark them delivered, in one script:
        two workers draining one session never both take an item."""
        sid = _rows.check_session_id(session_id)
        wanted = sorted(m.value for m in _queue_rules.check_modes(modes))
        found = await self._script("drain", sid, [self.clock(), *wanted])
        if found[0] == "unknown":
            raise UnknownSessionError(sid)
        pairs = found[1:]
        items = [self._item(pending_row(pairs[i], pairs[i + 1])) for i in range(0, len(pairs), 2)]
        if items:
            await self._touch(sid)
        return items

    async def revoke(self, session_id: str, reminder_id: str) -> RevokeStatus:
        """Revoke a queued reminder (see ``Store``)."""
        sid = _rows.check_session_id(session_id)
        probe = reminder_id if isinstance(reminder_id, str) else ""
        for _ in range(ATTEMPTS):
            status, text = await self._read(sid, ("HGET", "ids", probe), ("HGET", "items", probe))
            rid = _queue_rules.check_revoke_id(reminder_id)
            row = None
            if status == "pending" and text is not None:
                row = pending_row(rid, text)
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
        found = await self._script("claim", sid, [who, milliseconds(ttl), gone])
        if found[0] == "unknown":
            raise UnknownSessionError(sid)
        return None if found[0] == "ok" else as_text(found[1])

    async def renew(self, session_id: str, owner: str, ttl_seconds: float) -> bool:
        """Extend ``owner``'s lease to ``ttl_seconds`` from now; ``False`` when it is not the
        holder (any more)."""
        sid = _rows.check_session_id(session_id)
        who, ttl = _lease_rules.check_lease(owner, ttl_seconds)
        return self._lease_result(sid, await self._script("renew", sid, [who, milliseconds(ttl)]))

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
        return Lease(owner=as_text(owner), expires_in=int(left) / 1000)

    def _lease_result(self, session_id: str, result: object) -> bool:
        if result == -1:
            raise UnknownSessionError(session_id)
        return result == 1
