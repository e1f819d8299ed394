"""What is storage-specific about the queue: a stored row's status, the pending rows a store
reports, and how a saved state's queue merges with the stored one.

The queue's rules themselves (an id used twice, a full queue, what a revoke does, which
modes a drain takes) live once in ``_core/queue_rules.py``; ``InjectionQueue`` and every
store call them. They are re-exported here so a backend imports its queue helpers from one
place.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._core.queue_rules import (
    ItemStatus,
    RevokeOutcome,
    check_max_pending,
    check_modes,
    check_revoke_id,
    duplicate_id,
    push_allowed,
    queue_full,
    revoke_outcome,
)
from ..queue import InjectionQueue, QueueItem, QueueState
from ._rows import QueueRow

__all__ = [
    "check_max_pending",
    "check_modes",
    "check_revoke_id",
    "duplicate_id",
    "merge_row",
    "pending_rows",
    "push_allowed",
    "queue_full",
    "revoke_status",
    "row_status",
]


def row_status(row: QueueRow | None) -> ItemStatus:
    """The queue status of an id given its stored row (``None``: no row, never seen)."""
    return "unknown" if row is None else row.status


def pending_rows(items: Sequence[QueueItem]) -> list[dict[str, Any]]:
    """The rows ``session/pending_injections`` reports for pending items, exactly as
    ``InjectionQueue.pending`` makes them (the queue builds them; the store never has a
    second copy of the row format)."""
    return InjectionQueue.from_state(QueueState(items=tuple(items))).pending()


def revoke_status(row: QueueRow | None, reminder_id: str) -> RevokeOutcome:
    """What revoking ``reminder_id`` does given its stored row (``revoke_outcome`` on the
    row's status and kind): ``"revoked"`` (the caller marks it), ``"already_revoked"``.

    Raises:
        QueueError: ``already_delivered``, or ``unknown_reminder_id`` (also for a queued user
            message: only reminders are revoked).
    """
    return revoke_outcome(row_status(row), None if row is None else row.kind, reminder_id)


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
