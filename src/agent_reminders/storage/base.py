"""The ``Store`` protocol (docs/storage.md, "The protocol"): what a session needs to survive a
restart and to be shared between processes — session records, the injection queue, the event
log.

Every backend (``MemoryStore``, ``SQLiteStore``, ``RedisStore``) implements the same
async methods with the same results and errors; ``agent_reminders.testing.store_contract``
checks that, unchanged, against each of them. The backends build on this module; opening one
from a URL is :mod:`.factory`, above them all.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, Self, runtime_checkable

from .._core.errors import QueueError, QueueErrorReason
from .._core.events import EventRecord
from .._core.records import DeliveryMode, Message, Reminder
from ..queue import QueueItem
from ..state import SessionState

__all__ = [
    "ClosingStore",
    "Lease",
    "RevokeStatus",
    "SessionExistsError",
    "SessionInfo",
    "Store",
    "StoredSessionError",
    "UnknownSessionError",
]

RevokeStatus = Literal["revoked", "already_revoked"]


class ClosingStore:
    """What every store does with ``async with``: hand itself out, close on the way out."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Release what the store holds (each store says what)."""
        raise NotImplementedError


class StoredSessionError(QueueError):
    """A store refused an operation because of a session's existence: the family of
    :class:`UnknownSessionError` and :class:`SessionExistsError`.

    Still a :class:`~agent_reminders.QueueError` (``RMD-102``, with a ``reason``), as these
    errors always were, so ``except QueueError`` keeps catching them; catch this class to
    tell a missing or taken session from a refused queue operation.
    """

    session_id: str


class UnknownSessionError(StoredSessionError, LookupError):
    """The store holds no session with this id (``RMD-102``, ``reason`` ``unknown_session``).

    Raised by every method that needs an existing session; ``load_session`` returns ``None``
    instead. The bridge answers it with ``-32004`` ``Session not found``.
    """

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(
            QueueErrorReason.UNKNOWN_SESSION,
            f"no session {session_id!r} in this store; create it first (create_session)",
        )


class SessionExistsError(StoredSessionError):
    """``create_session`` for an id the store already holds (``RMD-102``,
    ``reason`` ``session_exists``); save later turns with ``save_session``."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(
            QueueErrorReason.SESSION_EXISTS,
            f"session {session_id!r} already exists in this store; save later turns with "
            "save_session, or load it with load_session",
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class SessionInfo:
    """One row of ``list_sessions``.

    Attributes:
        session_id: The session's id.
        created_at: When ``create_session`` stored it (seconds since the epoch).
        updated_at: The last activity: any write to the session, its queue or its events.
        turn: The ``turn`` of the last saved state.
        message_count: How many transcript messages are stored.
    """

    session_id: str
    created_at: float
    updated_at: float
    turn: int
    message_count: int


@dataclass(frozen=True, kw_only=True, slots=True)
class Lease:
    """A live lease, as ``Store.lease`` reports it.

    Attributes:
        owner: The worker holding the session.
        expires_in: Seconds until the lease ends unless its owner renews it, on the store's
            clock (the Redis server's for ``RedisStore``).
    """

    owner: str
    expires_in: float


@runtime_checkable
class Store(Protocol):
    """The async store protocol every backend implements (docs/storage.md, "The protocol").

    Session records:

    - ``create_session(state)`` stores a new session (its queue too);
      :class:`SessionExistsError` when the id is taken.
    - ``load_session(session_id)`` → the ``SessionState``, or ``None`` when unknown. Its
      ``queue`` is the store's queue: queued items (FIFO), delivered and revoked ids.
    - ``save_session(state)`` writes one turn in one transaction: new messages are appended
      (a history rewritten by compaction is replaced), the rest of the state is replaced, and
      the state's queue is *merged* into the store's: items the store lacks are appended, ids
      the state delivered or revoked are marked so; items queued meanwhile by another process
      are kept.
    - ``append_messages(session_id, messages)`` and ``save_reminders(session_id, reminders)``
      are the two halves of a turn for callers that keep no ``SessionState``; each commits
      atomically.
    - ``list_sessions()`` (most recent activity first) and ``latest_session()`` (its id, for
      ``--session latest``).

    The injection queue, with the rules of ``InjectionQueue`` (docs/session-loop.md, "Seams and
    delivery modes"):

    - ``enqueue(session_id, item, *, max_pending=None)`` → the item's id, durable when it
      returns; an id already used in the session (queued, delivered or revoked) is
      ``ReminderError`` ``RMD-002``; ``max_pending`` items already queued is ``QueueError``
      ``queue_full``.
    - ``pending(session_id)`` → the queued items as ``session/pending_injections`` rows, FIFO,
      ``position`` from 0.
    - ``drain(session_id, modes)`` → the queued items of those modes, FIFO, marked delivered
      atomically: each item is returned by exactly one call, whatever the concurrency.
    - ``revoke(session_id, reminder_id)`` → ``"revoked"`` | ``"already_revoked"``;
      ``QueueError`` with ``reason`` ``already_delivered``, ``unknown_reminder_id`` or
      ``missing_reminder_id``.
    - ``wait_for_items(session_id, timeout, *, modes=None, ignore=())`` → ``True`` as soon as
      something (of those modes, with an id not in ``ignore``) is queued, ``False`` after
      ``timeout`` seconds. ``ignore`` is read at each look, so a live container works: a
      running prompt passes what it already holds and waits only for what is new.

    The event log: ``append_events(session_id, records)`` stores records under the store's
    own per-session ``seq`` (1, 2, …) and returns them so numbered;
    ``read_events(session_id, *, after_seq=0, kind_prefix="")`` reads them back in order.

    Leases (docs/storage.md, "Leases"): a session is prompted by one worker at a time.

    - ``claim(session_id, owner, ttl_seconds, *, replace=None)`` → ``None`` when ``owner``
      now holds the session for ``ttl_seconds``, else the id of the owner holding it (a
      second claim by the holder itself is refused too: one lease, one prompt). With
      ``replace``, a live lease held by exactly that owner is taken over in the same atomic
      step — for a caller that knows that owner's process has ended; any other holder is
      still returned, so a takeover that comes late never takes a newer owner's lease.
    - ``renew(session_id, owner, ttl_seconds)`` → ``True`` when ``owner`` still held it and
      it now lasts ``ttl_seconds`` from now; ``False`` when the lease was lost (it expired,
      perhaps taken by another worker).
    - ``release(session_id, owner)`` → ``True`` when ``owner``'s lease was released;
      ``False`` when ``owner`` did not hold it — never releases another owner's lease.
    - ``lease(session_id)`` → the live :class:`Lease` (its owner and the seconds it has
      left), or ``None`` when the session is free.

    A lease not renewed expires by itself: a killed worker's sessions can be prompted
    elsewhere after ``ttl_seconds``.

    ``close()`` releases the store; any later call raises ``StoreError``. Stores are async
    context managers (``async with``) that close on exit.
    """

    async def create_session(self, state: SessionState) -> None:
        """Store a new session."""
        ...

    async def load_session(self, session_id: str) -> SessionState | None:
        """The stored session, or ``None``."""
        ...

    async def save_session(self, state: SessionState) -> None:
        """Write one turn of an existing session atomically."""
        ...

    async def append_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        """Append transcript messages to a stored session."""
        ...

    async def save_reminders(self, session_id: str, reminders: Sequence[Reminder]) -> None:
        """Replace a stored session's pending reminders."""
        ...

    async def list_sessions(self) -> list[SessionInfo]:
        """Every stored session, most recent activity first."""
        ...

    async def latest_session(self) -> str | None:
        """The id of the session with the most recent activity, or ``None``."""
        ...

    async def session_ids(self, *, limit: int, among: Iterable[str] | None = None) -> list[str]:
        """Up to ``limit`` ids of stored sessions, in no particular order — only those in
        ``among`` when it is given. Costs what it returns, not what the store holds: how a
        request that leaves out ``sessionId`` finds the one session there is."""
        ...

    async def enqueue(
        self, session_id: str, item: QueueItem, *, max_pending: int | None = None
    ) -> str:
        """Queue a validated item; returns its id once it is durable."""
        ...

    async def pending(self, session_id: str) -> list[dict[str, Any]]:
        """The queued items as ``session/pending_injections`` rows, FIFO."""
        ...

    async def drain(self, session_id: str, modes: Iterable[DeliveryMode | str]) -> list[QueueItem]:
        """Take the queued items of ``modes`` (FIFO) and mark them delivered, atomically."""
        ...

    async def revoke(self, session_id: str, reminder_id: str) -> RevokeStatus:
        """Revoke a queued reminder."""
        ...

    async def wait_for_items(
        self,
        session_id: str,
        timeout: float,
        *,
        modes: Iterable[DeliveryMode | str] | None = None,
        ignore: Container[str] = (),
    ) -> bool:
        """Wait until something (of ``modes``, not in ``ignore``) is queued, at most
        ``timeout`` seconds."""
        ...

    async def claim(
        self, session_id: str, owner: str, ttl_seconds: float, *, replace: str | None = None
    ) -> str | None:
        """Claim the session for ``owner`` (taking it from ``replace``, an owner known to be
        gone, if that one holds it): ``None`` when claimed, else the current owner."""
        ...

    async def renew(self, session_id: str, owner: str, ttl_seconds: float) -> bool:
        """Extend ``owner``'s lease to ``ttl_seconds`` from now; ``False`` when lost."""
        ...

    async def release(self, session_id: str, owner: str) -> bool:
        """Release ``owner``'s lease; ``False`` when ``owner`` did not hold it."""
        ...

    async def lease(self, session_id: str) -> Lease | None:
        """The live lease on the session, or ``None`` when it is free."""
        ...

    async def append_events(
        self, session_id: str, records: Iterable[EventRecord]
    ) -> list[EventRecord]:
        """Append event records; returns them with the store's ``seq``."""
        ...

    async def read_events(
        self, session_id: str, *, after_seq: int = 0, kind_prefix: str = ""
    ) -> list[EventRecord]:
        """The records after ``after_seq`` whose kind starts with ``kind_prefix``."""
        ...

    async def close(self) -> None:
        """Release the store."""
        ...

    async def __aenter__(self) -> Store:
        """The store itself."""
        ...

    async def __aexit__(self, *exc_info: object) -> None:
        """Close the store."""
        ...
