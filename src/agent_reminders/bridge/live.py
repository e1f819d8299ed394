"""How the store's queue reaches a running prompt's seams.

The loop drains its queue synchronously at each seam, and a store is async, so a running
prompt keeps a live queue: the session's own in-memory ``InjectionQueue``, loaded from the
store when the prompt starts and fed by every ``session/remind`` / ``session/inject`` this server
acknowledges for that session while the prompt runs (after the item is durable in the store).
Seams drain it like any queue; the bridge saves ``session.state()`` before each model request
and when the prompt ends, and the store's ``save_session`` marks the drained ids delivered.
While a prompt runs the live queue is the authority for revoke and pending (an item drained
into the transcript but not yet saved must already count as delivered).

Items that reach the store some other way — another worker on the same Redis
(docs/many-workers.md), another ``serve`` process on the same SQLite file, a script calling
``store.enqueue`` — are picked up (:meth:`LivePrompt.pick_up`: one ``pending()`` read of the
queued items, and a ``load_session`` only when that read shows an id the live queue does not
know) at two moments: each time the model answers (so whatever was acknowledged before the
answer is in the next request), and as soon as the store wakes the prompt's watcher
(:meth:`LivePrompt.watch`: ``wait_for_items`` ignoring what the live queue holds — pub/sub on
Redis, the store's poll on SQLite), so an item queued while tools run reaches the very next
seam. The next seam drains them like the rest. A reminder revoked in the store meanwhile
(through another worker) is dropped from the live queue by the same pick-up.
"""

from __future__ import annotations

import logging

import anyio

from .._core.errors import AgentRemindersError
from ..queue import InjectionQueue, QueueItem
from ..session import Session
from ..storage.base import Store

log = logging.getLogger("agent_reminders.bridge")
# a watcher's wait is renewed this often (a safety net: a wake-up ends it at once)
WATCH_SECONDS = 30.0
# after a store failure the watcher tries again this much later (the prompt goes on)
WATCH_RETRY_SECONDS = 1.0

__all__ = ["LivePrompt"]


class LivePrompt:
    """A prompt running on a session: its cancel event and, once loaded, its session."""

    def __init__(self) -> None:
        self.cancel = anyio.Event()
        self.session: Session | None = None
        self._early: list[QueueItem] = []
        self._arriving: set[str] = set()

    @property
    def queue(self) -> InjectionQueue | None:
        """The running session's own queue (``None`` while it is being loaded)."""
        return None if self.session is None else self.session.queue

    def offer(self, item: QueueItem) -> None:
        """Hand a stored item to the running session (kept until the session is loaded)."""
        queue = self.queue
        if queue is None:
            self._early.append(item)
        else:
            queue.offer(item)

    def expect(self, item_id: str) -> None:
        """This server is storing ``item_id`` and will offer it once durable: until
        :meth:`forget`, :meth:`pick_up` leaves it to that offer (the store may already show
        it)."""
        self._arriving.add(item_id)

    def forget(self, item_id: str) -> None:
        """The store call for an :meth:`expect`-ed id is over (stored or refused)."""
        self._arriving.discard(item_id)

    def __contains__(self, item_id: object) -> bool:
        """Whether the running prompt already has ``item_id`` (pending, delivered or revoked
        in its live queue) or this server is storing it: what its watcher need not wait for."""
        queue = self.queue
        return isinstance(item_id, str) and (
            item_id in self._arriving or (queue is not None and queue.knows(item_id))
        )

    async def pick_up(self, store: Store) -> int:
        """Offer the running session what ``store`` holds for it that its live queue does not
        know (queued by another worker, process or store object), and drop what the store
        shows revoked; returns how many were added.

        Safe while seams run: an item this queue drained but the store still shows pending
        (not saved yet) is known, so nothing is delivered twice; only reminders the freshly
        loaded state shows revoked are dropped.
        """
        queue, session = self.queue, self.session
        if queue is None or session is None:
            return 0
        rows = await store.pending(session.id)
        stored = {row["id"] for row in rows}
        new = any(i not in self for i in stored)
        missing = queue.pending_ids() - stored - self._arriving  # revoked elsewhere, perhaps
        if not new and not missing:
            return 0
        state = await store.load_session(session.id)
        if state is None:
            return 0
        dropped = queue.mark_revoked(missing & state.queue.revoked_ids)
        if dropped:
            log.info("session %s: %d reminder(s) revoked elsewhere", session.id, dropped)
        return sum(queue.offer(item) for item in state.queue.items)

    async def watch(self, store: Store) -> None:
        """Until cancelled: wait for the store to hold something new for the running session
        (``wait_for_items`` ignoring what this prompt has: woken by pub/sub on Redis) and pick
        it up, so it reaches the next seam. A store failure is logged and tried again; it
        never ends the prompt."""
        session = self.session
        if session is None:
            raise RuntimeError("watch() needs the session: call attach() first")
        while True:
            try:
                if await store.wait_for_items(session.id, WATCH_SECONDS, ignore=self):
                    await self.pick_up(store)
            except AgentRemindersError as exc:
                log.warning("session %s: watching the store failed: %s", session.id, exc)
                await anyio.sleep(WATCH_RETRY_SECONDS)

    def attach(self, session: Session) -> None:
        """The session is loaded: its own queue becomes the live queue, with everything offered
        meanwhile."""
        for item in self._early:
            session.queue.offer(item)
        self._early.clear()
        self.session = session
