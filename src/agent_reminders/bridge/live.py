"""How the store's queue reaches a running prompt's seams.

The loop drains its queue synchronously at each seam, and a store is async, so a running
prompt keeps a :class:`LiveQueue`: the session's in-memory queue, loaded from the store when the
prompt starts and fed by every ``session/remind`` / ``session/inject`` this server
acknowledges for that session while the prompt runs (after the item is durable in the store).
Seams drain it like any queue; the bridge saves ``session.state()`` before each model request
and when the prompt ends, and the store's ``save_session`` marks the drained ids delivered.
While a prompt runs the live queue is the authority for revoke and pending (an item drained
into the transcript but not yet saved must already count as delivered).
"""

from __future__ import annotations

import anyio

from ..queue import InjectionQueue, QueueItem
from ..session import Session

__all__ = ["LiveQueue", "LivePrompt"]


class LiveQueue(InjectionQueue):
    """An :class:`InjectionQueue` that also takes items already validated and stored."""

    def offer(self, item: QueueItem) -> bool:
        """Add ``item`` unless its id is known (pending, delivered or revoked); ``True`` when
        added. Loading the store and offering may both see an item: it is queued once."""
        with self._lock:
            known = (
                item.id in self._delivered
                or item.id in self._revoked
                or any(i.id == item.id for i in self._items)
            )
            if not known:
                self._items.append(item)
        return not known


class LivePrompt:
    """A prompt running on a session: its cancel event and, once loaded, its session."""

    def __init__(self) -> None:
        self.cancel = anyio.Event()
        self.session: Session | None = None
        self._early: list[QueueItem] = []

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

    def attach(self, session: Session) -> None:
        """The session is loaded: give it a live queue with everything offered meanwhile."""
        queue = LiveQueue.from_state(session.queue.state(), id_factory=session.id_factory)
        assert isinstance(queue, LiveQueue)  # from_state builds the class it is called on
        for item in self._early:
            queue.offer(item)
        self._early.clear()
        session.queue = queue
        self.session = session
