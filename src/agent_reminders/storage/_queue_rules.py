"""The queue's rules as every backend applies them to its stored rows.

They are the rules of ``InjectionQueue`` (``queue.py``), restated for rows a store reads and
writes: which modes a drain takes, which id a revoke needs, the errors for an id used twice
and a full queue, what a revoke does to a row, how a saved state's queue merges with the
stored one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal

from .._core.errors import (
    AlreadyDeliveredError,
    MissingReminderIdError,
    QueueError,
    QueueFullError,
    ReminderError,
    UnknownReminderIdError,
)
from .._core.records import DeliveryMode
from ..queue import InjectionQueue, QueueItem, QueueState, normalize_mode
from ._rows import QueueRow


def check_modes(modes: Iterable[DeliveryMode | str]) -> frozenset[DeliveryMode]:
    """Delivery modes (or their aliases) to drain; an empty set drains nothing."""
    if isinstance(modes, str | bytes):
        modes = (modes,)  # one mode given bare
    resolved: set[DeliveryMode] = set()
    for mode in modes:
        if mode is None:
            raise ReminderError("RMD-002", "a mode to drain must not be None")
        resolved.add(normalize_mode(mode))
    return frozenset(resolved)


def check_revoke_id(reminder_id: object) -> str:
    """The queue's rule for a missing or blank id (``missing_reminder_id``)."""
    if not isinstance(reminder_id, str) or not reminder_id.strip():
        raise MissingReminderIdError("reminderId is missing or blank")
    return reminder_id


def duplicate_id(item_id: str) -> ReminderError:
    """The error ``InjectionQueue`` raises for an id already used in the session."""
    return ReminderError("RMD-002", f"id {item_id!r} was already used in this session")


def queue_full(limit: int) -> QueueError:
    """The error ``InjectionQueue`` raises when ``max_pending`` items are queued."""
    return QueueFullError(f"the queue holds {limit} items already")


def check_max_pending(limit: object) -> int | None:
    """An optional ``max_pending`` argument: ``None`` or an int > 0."""
    if limit is not None and (type(limit) is not int or limit <= 0):
        raise ReminderError("RMD-001", f"max_pending must be an int > 0; got {limit!r}")
    return limit


def pending_rows(items: Sequence[QueueItem]) -> list[dict[str, Any]]:
    """The rows ``session/pending_injections`` reports for pending items, exactly as
    ``InjectionQueue.pending`` makes them (the queue builds them; the store never has a
    second copy of the row format)."""
    return InjectionQueue.from_state(QueueState(items=tuple(items))).pending()


def revoke_status(row: QueueRow | None, reminder_id: str) -> Literal["revoked", "already_revoked"]:
    """What revoking ``reminder_id`` does given its stored row — the rules of
    ``InjectionQueue.revoke``: ``"revoked"`` (the caller marks it), ``"already_revoked"``.

    Raises:
        QueueError: ``already_delivered``, or ``unknown_reminder_id`` (also for a queued user
            message: only reminders are revoked).
    """
    if row is not None and row.status == "revoked":
        return "already_revoked"
    if row is not None and row.status == "delivered":
        raise AlreadyDeliveredError(f"reminder {reminder_id!r} was already delivered")
    if row is not None and row.kind == "reminder":
        return "revoked"
    raise UnknownReminderIdError(f"no reminder {reminder_id!r} in this session")


def merge_row(current: QueueRow | None, incoming: QueueRow) -> QueueRow | None:
    """The row to store when a saved state's queue meets the stored one, or ``None`` to keep
    the stored row: what the store knows is never undone (a delivered or revoked id stays
    so), a state may only move a pending item on to delivered or revoked, and an item the
    store lacks is added."""
    if current is None:
        return incoming
    if current.status == "pending" and incoming.status != "pending":
        return QueueRow(id=current.id, status=incoming.status)
    return None
