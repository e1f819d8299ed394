"""The Reminder record, the delivery modes and the provider-neutral message shapes.

The reminder field enums and rules live in the field table (``fields.py``); they are
re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from enum import StrEnum
from typing import Any, Literal, NotRequired, TypedDict

from .errors import ReminderOptionError
from .fields import (
    AUTHORITY_RANK,
    PRODUCER_FIELDS,
    REMINDER_FIELDS,
    Authority,
    Propagate,
    RoleHint,
    Source,
    check_declaration,
    check_record,
    check_unknown,
    record_dict,
)
from .ids import new_id

__all__ = [
    "AUTHORITY_RANK",
    "PRODUCER_FIELDS",
    "REMINDER_FIELDS",
    "Authority",
    "DeliveryMode",
    "Message",
    "Propagate",
    "Reminder",
    "RoleHint",
    "Source",
    "TextBlock",
    "ToolCallDict",
    "check_turn",
    "evolve_unchecked",
    "reminder_unchecked",
]


class DeliveryMode(StrEnum):
    """When a queued item is drained into the session (see the seam table)."""

    INTERRUPT_IMMEDIATE = "interrupt_immediate"
    FINISH_STEP = "finish_step"
    AUDIT_ONLY = "audit_only"


class TextBlock(TypedDict):
    """A text content block."""

    type: Literal["text"]
    text: str


class ToolCallDict(TypedDict):
    """A tool call in the neutral form: ``{"id", "name", "arguments"}``."""

    id: str
    name: str
    arguments: dict[str, Any]


class Message(TypedDict):
    """A provider-neutral chat message.

    ``directive_ids`` is internal metadata on committed envelope messages; adapters strip it.
    """

    role: Literal["system", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]]
    tool_calls: NotRequired[list[ToolCallDict]]
    tool_call_id: NotRequired[str]
    name: NotRequired[str]
    directive_ids: NotRequired[list[str]]


@dataclass(frozen=True, kw_only=True)
class Reminder:
    """The lifecycle record of one system reminder.

    Construct reminders through ``inject_reminder`` (or a ``Session``) in normal code; direct
    construction validates types and accepts enum values as strings.

    Example:
        >>> r = Reminder(body="Run the tests before committing.", ttl_turns=2)
        >>> r.authority
        <Authority.CONTRACT: 'contract'>
    """

    id: str = field(default_factory=new_id)
    body: str
    tags: tuple[str, ...] = ()
    dedupe_key: str | None = None
    ttl_turns: int | None = None
    first_after: int | None = None
    cooldown_turns: int | None = None
    max_fires: int | None = None
    preserve_on_compact: bool = False
    propagate: Propagate = Propagate.SESSION
    role_hint: RoleHint = RoleHint.SYSTEM
    authority: Authority = Authority.CONTRACT
    source: Source = Source.IN_PIPELINE
    fired_at_turn: int = 0
    originating_agent_id: str | None = None

    def __post_init__(self) -> None:
        # The field table's rules; they normalize tags and dedupe_key and coerce enum strings.
        check_record(self.__dict__)

    @property
    def is_durable(self) -> bool:
        """True when the reminder has no TTL and survives compaction."""
        return self.ttl_turns is None and self.preserve_on_compact

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON payload: enum values as strings, tags as a list.

        ``dedupe_key``, ``ttl_turns`` and ``originating_agent_id`` are left out when ``None``.
        """
        return record_dict(self.__dict__)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Reminder:
        """Build a reminder from its JSON payload; the strict inverse of ``to_dict``.

        Raises:
            ReminderError: ``RMD-001`` for unknown keys or bad values, ``RMD-005`` for an
                unknown ``propagate``.
        """
        if not isinstance(data, Mapping):
            raise ReminderOptionError(
                f"a reminder payload must be a mapping, not {type(data).__name__}"
            )
        check_unknown(data, _RECORD_KEYS)
        if "body" not in data:
            raise ReminderOptionError("body is required")
        return cls(**data)


_RECORD_KEYS = frozenset(REMINDER_FIELDS)
_TEMPLATE: dict[str, Any] = {
    f.name: None if f.default is MISSING else f.default for f in fields(Reminder)
}
# The declaration above is what type checkers see; the field table must say the same.
check_declaration((f.name, f.default) for f in fields(Reminder))


def check_turn(value: object, name: str = "turn") -> int:
    """Validate a turn number (an ``int`` >= 0)."""
    if type(value) is not int:
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < 0:
        raise ReminderOptionError(f"{name} must be >= 0; got {value}")
    return value


def reminder_unchecked(values: Mapping[str, Any]) -> Reminder:
    """A ``Reminder`` from field values that already passed the field table's rules (``id``
    and ``body`` among them; the rest take their defaults), skipping validation.

    For the core's own producers on hot paths (a provider's validated options); anything else
    builds a ``Reminder`` (validated).
    """
    new = object.__new__(Reminder)
    new.__dict__.update(_TEMPLATE)  # every field, in declaration order
    new.__dict__.update(values)
    return new


def evolve_unchecked(reminder: Reminder, **changes: Any) -> Reminder:
    """Copy ``reminder`` with already-valid field values changed, skipping validation.

    For the core's own transforms on hot paths (a TTL tick, a re-stamped turn), whose new
    values are valid by construction. Anything else builds a ``Reminder`` (validated).
    """
    new = object.__new__(Reminder)
    new.__dict__.update(reminder.__dict__)
    new.__dict__.update(changes)
    return new
