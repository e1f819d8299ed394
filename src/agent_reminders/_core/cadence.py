"""Cadence: how often a reminder's key may fire in a session (docs/core.md, "Cadence").

Three reminder fields of the one field table say it, for every producer alike — ``inject``,
hooks, providers, generators and pushed reminders all reach a session through the same insert:

- ``first_after``: the key may not fire before that turn of the session;
- ``cooldown_turns``: after it fired, not again for that many turns;
- ``max_fires``: at most that many times in the session.

A reminder's **key** is its ``dedupe_key``, else its body. A fire the cadence refuses is not
queued: the session records ``transcript.reminder.dropped`` with the reason (``first_after``,
``cooldown`` or ``max_fires``) and the insert says so (``Injected.dropped``). What a session
remembers — per key, how many times it fired and when last — is part of its saved state, so a
restored session goes on exactly as the one it was saved from.

Example:
    >>> from agent_reminders import Reminder
    >>> cadence = Cadence()
    >>> nag = Reminder(body="Update the to-do list.", dedupe_key="todo", cooldown_turns=3)
    >>> cadence.refusal(nag, 0) is None
    True
    >>> cadence = cadence.fired(nag, 0)
    >>> cadence.refusal(nag, 2), cadence.refusal(nag, 3)
    ('cooldown', None)
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from .events import EventLog, Kind
from .records import Reminder

__all__ = ["CADENCE_FIELDS", "MAX_CADENCE_KEYS", "Cadence", "Refusal", "admit", "cadence_key"]

CADENCE_FIELDS: tuple[str, ...] = ("first_after", "cooldown_turns", "max_fires")
MAX_CADENCE_KEYS = 1024
"""How many keys a session remembers; past it the one that fired longest ago is forgotten."""

Refusal = Literal["first_after", "cooldown", "max_fires"]


def cadence_key(reminder: Reminder) -> str:
    """The key a cadence counts by: the ``dedupe_key``, else a digest of the body.

    Example:
        >>> from agent_reminders import Reminder
        >>> cadence_key(Reminder(body="x", dedupe_key="k"))
        'k'
        >>> cadence_key(Reminder(body="x")).startswith("body:")
        True
    """
    if reminder.dedupe_key is not None:
        return reminder.dedupe_key
    digest = hashlib.sha256(reminder.body.encode("utf-8", "surrogatepass")).hexdigest()
    return "body:" + digest[:32]


def _has_cadence(reminder: Reminder) -> bool:
    return (
        reminder.first_after is not None
        or reminder.cooldown_turns is not None
        or reminder.max_fires is not None
    )


@dataclass(frozen=True, slots=True)
class Cadence:
    """What a session remembers of the keys that fired under a cadence.

    Attributes:
        fires: Per key, ``(times fired, the turn it last fired at)``, oldest fire first.
    """

    fires: Mapping[str, tuple[int, int]] = field(default_factory=dict)

    def refusal(self, reminder: Reminder, turn: int) -> Refusal | None:
        """Why the cadence refuses ``reminder`` at ``turn`` (``None``: it may fire)."""
        if not _has_cadence(reminder):
            return None
        count, last = self.fires.get(cadence_key(reminder), (0, None))
        if reminder.first_after is not None and turn < reminder.first_after:
            return "first_after"
        if reminder.max_fires is not None and count >= reminder.max_fires:
            return "max_fires"
        if (
            reminder.cooldown_turns is not None
            and last is not None
            and turn < last + reminder.cooldown_turns
        ):
            return "cooldown"
        return None

    def fired(self, reminder: Reminder, turn: int) -> Cadence:
        """This cadence after ``reminder`` fired at ``turn`` (unchanged for a reminder without
        cadence fields: nothing to count)."""
        if not _has_cadence(reminder):
            return self
        key = cadence_key(reminder)
        fires = dict(self.fires)
        count, _ = fires.pop(key, (0, turn))
        fires[key] = (count + 1, turn)
        while len(fires) > MAX_CADENCE_KEYS:
            del fires[next(iter(fires))]
        return Cadence(fires)

    def to_document(self) -> dict[str, list[int]]:
        """``{key: [times fired, last turn]}``, oldest fire first."""
        return {key: [count, last] for key, (count, last) in self.fires.items()}


def admit(
    cadence: Cadence, reminder: Reminder, log: EventLog, transcript_id: str
) -> tuple[Cadence, Refusal | None]:
    """Whether ``reminder`` may fire at its ``fired_at_turn``: the cadence after it (counted
    when it may), and the refusal (``None``: it may). A refusal is recorded on ``log`` as
    ``dropped`` with the ``reason``, ``reminder_id``, ``dedupe_key`` and ``turn_number``."""
    turn = reminder.fired_at_turn
    refused = cadence.refusal(reminder, turn)
    if refused is None:
        return cadence.fired(reminder, turn), None
    payload = {"reminder_id": reminder.id, "reason": refused, "turn_number": turn}
    payload["dedupe_key"] = reminder.dedupe_key
    log.lifecycle(Kind.DROPPED, transcript_id, payload)
    return cadence, refused
