"""The injection queue's rules, in one place: small pure functions over an item's status.

``InjectionQueue`` (``queue.py``) and every store (``storage/``) decide with these, so a
duplicate id, a full queue, a revoke and a drain come out the same whichever holds the queue
(docs/storage.md). The Redis scripts only apply what Python decided here, or report the
stored status for Python to decide on. An item's status is one of:

- ``"pending"``: queued, waiting for a seam that serves its mode;
- ``"delivered"``: drained (remembered for the life of the session);
- ``"revoked"``: a reminder taken back before delivery (remembered likewise);
- ``"unknown"``: never seen in this session.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from .errors import (
    AlreadyDeliveredError,
    MissingReminderIdError,
    QueueError,
    QueueFullError,
    ReminderError,
    ReminderOptionError,
    UnknownReminderIdError,
    payload_error,
)
from .records import DeliveryMode
from .seams import SEAMS

__all__ = [
    "MODE_ALIASES",
    "ItemStatus",
    "RevokeOutcome",
    "check_max_pending",
    "check_modes",
    "check_revoke_id",
    "duplicate_id",
    "normalize_mode",
    "push_allowed",
    "queue_full",
    "revoke_outcome",
    "seam_modes",
]

ItemStatus = Literal["pending", "delivered", "revoked", "unknown"]
RevokeOutcome = Literal["revoked", "already_revoked"]

MODE_ALIASES: dict[str, DeliveryMode] = {
    "interrupt_immediate": DeliveryMode.INTERRUPT_IMMEDIATE,
    "interrupt": DeliveryMode.INTERRUPT_IMMEDIATE,
    "finish_step": DeliveryMode.FINISH_STEP,
    "steer": DeliveryMode.FINISH_STEP,
    "after_current_operation": DeliveryMode.FINISH_STEP,
    "audit_only": DeliveryMode.AUDIT_ONLY,
    "queue": DeliveryMode.AUDIT_ONLY,
    "wait_for_completion": DeliveryMode.AUDIT_ONLY,
}


def normalize_mode(mode: object) -> DeliveryMode:
    """Resolve a delivery mode or alias; ``None`` means ``finish_step``.

    Raises:
        ReminderError: ``RMD-002`` for anything else.
    """
    if mode is None:
        return DeliveryMode.FINISH_STEP
    if isinstance(mode, str) and mode in MODE_ALIASES:
        return MODE_ALIASES[mode]
    allowed = ", ".join(sorted(MODE_ALIASES))
    raise payload_error(f"mode must be one of {allowed}; got {mode!r}")


def seam_modes(seam: object) -> frozenset[DeliveryMode]:
    """The delivery modes a drain at ``seam`` takes (the seam table, ``_core/seams.py``).

    Raises:
        ValueError: unknown seam.
    """
    modes = SEAMS.get(seam) if isinstance(seam, str) else None
    if modes is None:
        raise ValueError(f"unknown seam {seam!r}; expected one of {', '.join(SEAMS)}")
    return modes


def check_modes(modes: Iterable[DeliveryMode | str]) -> frozenset[DeliveryMode]:
    """Delivery modes (or their aliases) a store's drain takes; an empty set drains nothing."""
    if isinstance(modes, str | bytes):
        modes = (modes,)  # one mode given bare
    resolved: set[DeliveryMode] = set()
    for mode in modes:
        if mode is None:
            raise ReminderError("RMD-002", "a mode to drain must not be None")
        resolved.add(normalize_mode(mode))
    return frozenset(resolved)


def check_max_pending(limit: object) -> int | None:
    """An optional ``max_pending``: ``None`` or an int > 0.

    Raises:
        ReminderOptionError: anything else (``RMD-001``).
    """
    if limit is not None and (type(limit) is not int or limit <= 0):
        raise ReminderOptionError(f"max_pending must be an int > 0; got {limit!r}")
    return limit


def duplicate_id(item_id: str) -> ReminderError:
    """The error for an id already used in the session (pending, delivered or revoked)."""
    return payload_error(f"id {item_id!r} was already used in this session")


def queue_full(limit: int) -> QueueError:
    """The error for a push while ``limit`` items are pending."""
    return QueueFullError(f"the queue holds {limit} items already")


def push_allowed(
    item_id: str, status: ItemStatus, pending_count: int, max_pending: int | None
) -> None:
    """Whether an item may be queued, given its id's status and how many items are pending:
    an id is used once per session, and at most ``max_pending`` items wait.

    Raises:
        ReminderError: ``RMD-002``, the id is known (:func:`duplicate_id`).
        QueueFullError: the queue holds ``max_pending`` items (:func:`queue_full`).
    """
    if status != "unknown":
        raise duplicate_id(item_id)
    if max_pending is not None and pending_count >= max_pending:
        raise queue_full(max_pending)


def check_revoke_id(reminder_id: object) -> str:
    """The id a revoke names: a non-blank string.

    Raises:
        MissingReminderIdError: missing or blank (``missing_reminder_id``).
    """
    if not isinstance(reminder_id, str) or not reminder_id.strip():
        raise MissingReminderIdError("reminderId is missing or blank")
    return reminder_id


def revoke_outcome(status: ItemStatus, kind: str | None, reminder_id: str) -> RevokeOutcome:
    """What revoking ``reminder_id`` does, given its status and (when pending) its kind:
    ``"revoked"`` (the caller marks it so) or ``"already_revoked"`` (a repeat, no change).

    Raises:
        AlreadyDeliveredError: it was drained (``already_delivered``).
        UnknownReminderIdError: never seen, or a pending user message — only reminders are
            revoked (``unknown_reminder_id``).
    """
    if status == "revoked":
        return "already_revoked"
    if status == "delivered":
        raise AlreadyDeliveredError(f"reminder {reminder_id!r} was already delivered")
    if status == "pending" and kind == "reminder":
        return "revoked"
    raise UnknownReminderIdError(f"no reminder {reminder_id!r} in this session")
