"""Cadence: how often a reminder's key may fire in a session (docs/core.md, "Cadence").

Three reminder fields of the one field table say it, for every producer alike — ``inject``,
hooks, providers, generators and pushed reminders all reach a session through the same insert:

- ``first_after``: the key may not fire before that turn of the session;
- ``cooldown_turns``: after it fired, not again for that many turns;
- ``max_fires``: at most that many times in the session.

A reminder's **key** is its ``dedupe_key``, else its body (a provider may name another: the
level of ``token_pressure``). A fire the cadence refuses is not queued: the session records
``transcript.reminder.dropped`` with the reason (``first_after``, ``cooldown`` or
``max_fires``) and the insert says so (``Injected.dropped``). Nothing of a key a provider
*resolved* is admitted for the rest of the turn it was resolved in (reason ``resolved``): the
reminder about a thing that just happened does not come right back; its counts go on.

The session's directive budget (docs/restraint.md, "The directive budget") is paced here too: the
tokens committed per turn over the last turns, and the context window last reported.

What a session remembers is part of its saved state, so a restored session goes on exactly as
the one it was saved from.

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
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from .events import EventLog, Kind
from .fields import parse_reminder_options
from .records import Reminder
from .transcript import Transcript

__all__ = [
    "CADENCE_FIELDS",
    "MAX_CADENCE_KEYS",
    "Cadence",
    "Refusal",
    "admit",
    "cadence_key",
    "check_cadence",
]

CADENCE_FIELDS: tuple[str, ...] = ("first_after", "cooldown_turns", "max_fires")
MAX_CADENCE_KEYS = 1024
"""How many keys a session remembers; past it the one that fired longest ago is forgotten."""

Refusal = Literal["first_after", "cooldown", "max_fires", "resolved"]


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


def check_cadence(value: object, at: str) -> dict[str, int | None]:
    """A cadence setting (a bridge token's default, a provider's ``config[id]["cadence"]``):
    a mapping of cadence fields, each checked by the field table; ``None`` turns one off.

    Raises:
        ValueError: not a mapping, an unknown key, or a value the field table refuses; the
            message names ``at``.

    Example:
        >>> check_cadence({"cooldown_turns": 3, "max_fires": None}, "cadence")
        {'cooldown_turns': 3, 'max_fires': None}
    """
    if not isinstance(value, Mapping):
        raise ValueError(f"{at} must be a table of {', '.join(CADENCE_FIELDS)}")
    unknown = sorted(str(k) for k in set(value) - set(CADENCE_FIELDS))
    if unknown:
        raise ValueError(
            f"{at}: unknown key(s) {', '.join(unknown)}; it takes {', '.join(CADENCE_FIELDS)}"
        )
    try:
        parsed = parse_reminder_options({"body": "-", **value})
    except Exception as exc:  # a ReminderError: its message names the field and the rule
        raise ValueError(f"{at}: {getattr(exc, 'message', exc)}") from None
    return {name: getattr(parsed, name) for name in CADENCE_FIELDS if name in value}


def _has_cadence(reminder: Reminder) -> bool:
    return (
        reminder.first_after is not None
        or reminder.cooldown_turns is not None
        or reminder.max_fires is not None
    )


@dataclass(frozen=True, slots=True)
class Cadence:
    """What a session remembers to pace its reminders.

    Attributes:
        fires: Per key, ``(times fired, the turn it last fired or was resolved at)``, oldest
            first.
        spent: ``(turn, directive tokens committed at it)`` for the turns the directive
            budget still looks at, oldest first.
        context_window: The context window the last ``on_budget_threshold`` reported.
        resolved: The dedupe keys resolved at turn ``resolved_turn``.
        resolved_turn: The turn of :attr:`resolved`.
    """

    fires: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    spent: tuple[tuple[int, int], ...] = ()
    context_window: int | None = None
    resolved: frozenset[str] = frozenset()
    resolved_turn: int = 0

    def refusal(self, reminder: Reminder, turn: int, key: str | None = None) -> Refusal | None:
        """Why the cadence refuses ``reminder`` at ``turn`` (``None``: it may fire); ``key``
        overrides :func:`cadence_key`."""
        if self.resolved and turn == self.resolved_turn and reminder.dedupe_key in self.resolved:
            return "resolved"
        if not _has_cadence(reminder):
            return None
        count, last = self.fires.get(key or cadence_key(reminder), (0, None))
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

    def fired(self, reminder: Reminder, turn: int, key: str | None = None) -> Cadence:
        """This cadence after ``reminder`` fired at ``turn`` (unchanged for a reminder without
        cadence fields: nothing to count)."""
        if not _has_cadence(reminder):
            return self
        return self._counted(key or cadence_key(reminder), turn, 1)

    def resolve(self, key: str, turn: int) -> Cadence:
        """This cadence after a provider resolved the dedupe key ``key`` at ``turn``: the key
        is refused for the rest of ``turn``."""
        keys = self.resolved if turn == self.resolved_turn else frozenset()
        return replace(self, resolved=keys | {key}, resolved_turn=turn)

    def _counted(self, key: str, turn: int, more: int) -> Cadence:
        fires = dict(self.fires)
        count, _ = fires.pop(key, (0, turn))
        fires[key] = (count + more, turn)
        while len(fires) > MAX_CADENCE_KEYS:
            del fires[next(iter(fires))]
        return replace(self, fires=fires)

    def spent_since(self, turn: int) -> int:
        """Directive tokens committed at ``turn`` and after."""
        return sum(tokens for at, tokens in self.spent if at >= turn)

    def spend(self, turn: int, tokens: int, keep_from: int) -> Cadence:
        """This cadence after ``tokens`` of directives were committed at ``turn``, forgetting
        the turns before ``keep_from``."""
        kept = tuple(entry for entry in self.spent if entry[0] >= keep_from)
        return replace(self, spent=(*kept, (turn, tokens)) if tokens else kept)

    def seen(self, payload: Mapping[str, Any]) -> Cadence:
        """This cadence after an ``on_budget_threshold`` whose ``payload`` may report the
        context window."""
        window = payload.get("context_window")
        if type(window) is not int or window <= 0 or window == self.context_window:
            return self
        return replace(self, context_window=window)

    @property
    def is_empty(self) -> bool:
        """Nothing remembered (a session saves no ``cadence`` key then)."""
        return (
            not self.fires and not self.spent and self.context_window is None and not self.resolved
        )

    def to_document(self) -> dict[str, Any]:
        """``{"keys": {key: [times fired, last turn]}, "spent": [[turn, tokens]...],
        "context_window": n, "resolved": [turn, [keys]]}``, each part only when it holds
        something."""
        doc: dict[str, Any] = {}
        if self.fires:
            doc["keys"] = {key: [count, last] for key, (count, last) in self.fires.items()}
        if self.spent:
            doc["spent"] = [list(entry) for entry in self.spent]
        if self.context_window is not None:
            doc["context_window"] = self.context_window
        if self.resolved:
            doc["resolved"] = [self.resolved_turn, sorted(self.resolved)]
        return doc


def admit(
    cadence: Cadence,
    reminder: Reminder,
    log: EventLog,
    transcript: Transcript,
    key: str | None = None,
) -> tuple[Cadence, Refusal | None]:
    """Whether ``reminder`` may fire at its ``fired_at_turn``: the cadence after it (counted
    when it may), and the refusal (``None``: it may). A refusal is recorded on ``log`` as
    ``dropped`` with the ``reason``, ``reminder_id``, ``dedupe_key`` and ``turn_number``."""
    turn = reminder.fired_at_turn
    refused = cadence.refusal(reminder, turn, key)
    if refused is None:
        return cadence.fired(reminder, turn, key), None
    payload = {"reminder_id": reminder.id, "reason": refused, "turn_number": turn}
    payload["dedupe_key"] = reminder.dedupe_key
    log.lifecycle(Kind.DROPPED, transcript.id, payload)
    return cadence, refused
