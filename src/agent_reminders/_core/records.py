"""Enumerations, the Reminder record and the provider-neutral message shapes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any, Literal, NotRequired, TypedDict, TypeVar

from .errors import ReminderError
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
]


class Authority(StrEnum):
    """Precedence of a directive inside the envelope: contract > corrective > advisory."""

    CONTRACT = "contract"
    CORRECTIVE = "corrective"
    ADVISORY = "advisory"


# Lower rank = higher precedence; used for ordering and for dedupe winners.
AUTHORITY_RANK: dict[Authority, int] = {
    Authority.CONTRACT: 0,
    Authority.CORRECTIVE: 1,
    Authority.ADVISORY: 2,
}


class Propagate(StrEnum):
    """Whether sub-agents inherit a reminder (``all``, ``session`` or ``none``)."""

    ALL = "all"
    SESSION = "session"
    NONE = "none"


class RoleHint(StrEnum):
    """Decides the envelope's ``speaker``; never selects a wire role."""

    SYSTEM = "system"
    DEVELOPER = "developer"
    USER_BLOCK = "user_block"
    EPHEMERAL_CACHE = "ephemeral_cache"


class Source(StrEnum):
    """Where a reminder came from (audit, propagation, authority grants)."""

    STDLIB_PROVIDER = "stdlib_provider"
    HOOK = "hook"
    BRIDGE = "bridge"
    IN_PIPELINE = "in_pipeline"
    INHERITED = "inherited"


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


_OPTIONAL_KEYS = ("dedupe_key", "ttl_turns", "originating_agent_id")
# Set by the producer, never by strict options (RMD-001 names them as unknown options).
PRODUCER_FIELDS: frozenset[str] = frozenset(
    {"id", "source", "fired_at_turn", "originating_agent_id"}
)
_E = TypeVar("_E", bound=StrEnum)


def _enum_value(enum: type[_E], value: object, key: str, code: str = "RMD-001") -> _E:
    if isinstance(value, enum):
        return value
    if isinstance(value, str):
        try:
            return enum(value)
        except ValueError:
            pass
    allowed = ", ".join(m.value for m in enum)
    raise ReminderError(code, f"{key} must be one of {allowed}; got {value!r}")


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
    preserve_on_compact: bool = False
    propagate: Propagate = Propagate.SESSION
    role_hint: RoleHint = RoleHint.SYSTEM
    authority: Authority = Authority.CONTRACT
    source: Source = Source.IN_PIPELINE
    fired_at_turn: int = 0
    originating_agent_id: str | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        if not isinstance(self.id, str) or not self.id.strip():
            raise ReminderError("RMD-001", f"id must be a non-blank string; got {self.id!r}")
        if not isinstance(self.body, str) or not self.body.strip():
            raise ReminderError("RMD-001", "body must be a string with non-blank content")
        if not isinstance(self.tags, tuple | list):
            raise ReminderError("RMD-001", f"tags must be a list of strings; got {self.tags!r}")
        if not all(isinstance(t, str) and t.strip() for t in self.tags):
            raise ReminderError("RMD-001", f"tags must be non-blank strings; got {self.tags!r}")
        # Normalized like strict options, so every accepted value survives a JSON round trip.
        tags = tuple(dict.fromkeys(t.strip() for t in self.tags))
        if tags != self.tags:
            set_(self, "tags", tags)
        key = self.dedupe_key
        if key is not None:
            if not isinstance(key, str):
                raise ReminderError("RMD-001", f"dedupe_key must be a string; got {key!r}")
            if key.strip() != key or not key:
                set_(self, "dedupe_key", key.strip() or None)
        ttl = self.ttl_turns
        if ttl is not None and (type(ttl) is not int or ttl <= 0):
            raise ReminderError("RMD-001", f"ttl_turns must be a positive int; got {ttl!r}")
        if type(self.preserve_on_compact) is not bool:
            raise ReminderError(
                "RMD-001",
                f"preserve_on_compact must be a bool; got {self.preserve_on_compact!r}",
            )
        if type(self.propagate) is not Propagate:
            set_(self, "propagate", _enum_value(Propagate, self.propagate, "propagate", "RMD-005"))
        if type(self.role_hint) is not RoleHint:
            set_(self, "role_hint", _enum_value(RoleHint, self.role_hint, "role_hint"))
        if type(self.authority) is not Authority:
            set_(self, "authority", _enum_value(Authority, self.authority, "authority"))
        if type(self.source) is not Source:
            set_(self, "source", _enum_value(Source, self.source, "source"))
        turn = self.fired_at_turn
        if type(turn) is not int or turn < 0:
            raise ReminderError("RMD-001", f"fired_at_turn must be an int >= 0; got {turn!r}")
        origin = self.originating_agent_id
        if origin is not None and not isinstance(origin, str):
            raise ReminderError("RMD-001", f"originating_agent_id must be a string; got {origin!r}")

    @property
    def is_durable(self) -> bool:
        """True when the reminder has no TTL and survives compaction."""
        return self.ttl_turns is None and self.preserve_on_compact

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON payload: enum values as strings, tags as a list.

        ``dedupe_key``, ``ttl_turns`` and ``originating_agent_id`` are left out when ``None``.
        """
        out: dict[str, Any] = {
            "id": self.id,
            "body": self.body,
            "tags": list(self.tags),
            "dedupe_key": self.dedupe_key,
            "ttl_turns": self.ttl_turns,
            "preserve_on_compact": self.preserve_on_compact,
            "propagate": self.propagate.value,
            "role_hint": self.role_hint.value,
            "authority": self.authority.value,
            "source": self.source.value,
            "fired_at_turn": self.fired_at_turn,
            "originating_agent_id": self.originating_agent_id,
        }
        for key in _OPTIONAL_KEYS:
            if out[key] is None:
                del out[key]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Reminder:
        """Build a reminder from its JSON payload; the strict inverse of ``to_dict``.

        Raises:
            ReminderError: ``RMD-001`` for unknown keys or bad values, ``RMD-005`` for an
                unknown ``propagate``.
        """
        if not isinstance(data, Mapping):
            raise ReminderError(
                "RMD-001", f"a reminder payload must be a mapping, not {type(data).__name__}"
            )
        unknown = sorted(str(k) for k in data if k not in REMINDER_FIELDS)
        if unknown:
            raise ReminderError("RMD-001", f"unknown option(s): {', '.join(unknown)}")
        if "body" not in data:
            raise ReminderError("RMD-001", "body is required")
        tags = data.get("tags", ())
        if not isinstance(tags, list | tuple):
            raise ReminderError("RMD-001", f"tags must be a list of strings; got {tags!r}")
        kwargs = {k: data[k] for k in REMINDER_FIELDS if k in data}
        kwargs["tags"] = tuple(tags)
        return cls(**kwargs)


# Every field of the record, in declaration order (the JSON payload's keys).
REMINDER_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Reminder))


def check_turn(value: object, name: str = "turn") -> int:
    """Validate a turn number (an ``int`` >= 0)."""
    if type(value) is not int:
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < 0:
        raise ReminderError("RMD-001", f"{name} must be >= 0; got {value}")
    return value


def evolve_unchecked(reminder: Reminder, **changes: Any) -> Reminder:
    """Copy ``reminder`` with already-valid field values changed, skipping validation.

    For the core's own transforms on hot paths (a TTL tick, a re-stamped turn), whose new
    values are valid by construction. Anything else builds a ``Reminder`` (validated).
    """
    new = object.__new__(Reminder)
    new.__dict__.update(reminder.__dict__)
    new.__dict__.update(changes)
    return new
