"""How the store's queue reaches a running prompt's seams.

The loop drains its queue synchronously at each seam, and a store is async, so a running
prompt keeps a :class:`LiveQueue`: the session's in-memory queue, loaded from the store when the
prompt starts and fed by every ``session/remind`` / ``session/inject`` this server
acknowledges for that session while the prompt runs (after the item is durable in the store).
Seams drain it like any queue; the bridge saves ``session.state()`` before each model request
and when the prompt ends, and the store's ``save_session`` marks the drained ids delivered.
While a prompt runs the live queue is the authority for revoke and pending (an item drained
into the transcript but not yet saved must already count as delivered).

Items that reach the store some other way — another ``serve`` process on the same SQLite
file, a script calling ``store.enqueue`` — are picked up each time the model answers
(:meth:`LivePrompt.pick_up`): one ``pending`` read, and a ``load_session`` only when that
read shows an id the live queue does not know. The next seam drains them like the rest, so
they reach the next model request.
"""

from __future__ import annotations

import anyio

from ..queue import InjectionQueue, QueueItem
from ..session import Session
from ..storage.base import Store

__all__ = ["LiveQueue", "LivePrompt"]


class LiveQueue(InjectionQueue):
    """An :class:`InjectionQueue` that also takes items already validated and stored."""

    def _known(self, item_id: str) -> bool:
        # the caller holds the lock
        return (
            item_id in self._delivered
            or item_id in self._revoked
            or any(i.id == item_id for i in self._items)
        )

    def knows(self, item_id: str) -> bool:
        """Whether ``item_id`` is pending here, or was delivered or revoked."""
        with self._lock:
            return self._known(item_id)

    def offer(self, item: QueueItem) -> bool:
        """Add ``item`` unless its id is known (pending, delivered or revoked); ``True`` when
        added. Loading the store and offering may both see an item: it is queued once."""
        with self._lock:
            known = self._known(item.id)
            if not known:
                self._items.append(item)
        return not known


class LivePrompt:
    """A prompt running on a session: its cancel event and, once loaded, its session."""

    def __init__(self) -> None:
        self.cancel = anyio.Event()
        self.session: Session | None = None
        self._early: list[QueueItem] = []
        self._arriving: set[str] = set()

    @property
    def queue(self) -> LiveQueue | None:
        """The running session's queue (``None`` while it is being loaded)."""
        queue = None if self.session is None else self.session.queue
        return queue if isinstance(queue, LiveQueue) else None

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

    async def pick_up(self, store: Store) -> int:
        """Offer the running session what ``store`` holds for it that its live queue does not
        know (queued by another process or store object); returns how many were added.

        Call it where no seam can run meanwhile: after the model answered, before the loop
        goes on. Items this queue drained but the store still shows pending (not saved yet)
        are known, so nothing is delivered twice.
        """
        queue, session = self.queue, self.session
        if queue is None or session is None:
            return 0
        rows = await store.pending(session.id)
        if all(queue.knows(row["id"]) or row["id"] in self._arriving for row in rows):
            return 0
        state = await store.load_session(session.id)
        if state is None:
            return 0
        return sum(queue.offer(item) for item in state.queue.items)

    def attach(self, session: Session) -> None:
        """The session is loaded: give it a live queue with everything offered meanwhile."""
        queue = LiveQueue.from_state(session.queue.state(), id_factory=session.id_factory)
        assert isinstance(queue, LiveQueue)  # from_state builds the class it is called on
        for item in self._early:
            queue.offer(item)
        self._early.clear()
        session.queue = queue
        self.session = session
