"""What each event kind says: the one table of :class:`~agent_reminders.Kind` records, their
topics and the keys of their payloads.

The docs' event reference (``docs/reference-events.md``) is generated from :data:`EVENTS`, and
``tests/core/test_event_payloads.py`` checks every record a session writes against it, so a key
added to an emitter without a row here fails a test instead of going undocumented.
"""

from __future__ import annotations

from dataclasses import dataclass

from .events import LIFECYCLE_TOPIC, Kind
from .fields import FIELDS, FIRED_EVENT_FIELDS, INHERITED_EVENT_FIELDS, INJECTED_EVENT_FIELDS

__all__ = ["EVENTS", "LIFECYCLE_IDS", "EventShape", "event_shape"]

# Every lifecycle payload starts with these (EventLog.lifecycle stamps them).
LIFECYCLE_IDS: tuple[str, ...] = ("session_id", "task_id", "agent_id")

_EVENT_KEY = {f.name: f.event for f in FIELDS}


def _keys(names: tuple[str, ...]) -> tuple[str, ...]:
    """Reminder field names as their keys in event payloads (``id`` is ``reminder_id``)."""
    return tuple(_EVENT_KEY[n] for n in names)


@dataclass(frozen=True, slots=True)
class EventShape:
    """One kind of record: when it is written and what its payload holds.

    Attributes:
        kind: The wire string (a :class:`Kind` attribute).
        topic: The record's topic.
        when: When the library writes it, in a sentence.
        keys: The payload keys every record of the kind has (after :data:`LIFECYCLE_IDS`
            on the lifecycle topic).
        optional: Keys only some records have.
    """

    kind: str
    topic: str
    when: str
    keys: tuple[str, ...]
    optional: tuple[str, ...] = ()

    @property
    def all_keys(self) -> tuple[str, ...]:
        """Every key a record of this kind may carry, ids first."""
        ids = LIFECYCLE_IDS if self.topic == LIFECYCLE_TOPIC else ()
        return (*ids, *self.keys, *self.optional)


def _lifecycle(kind: str, when: str, keys: tuple[str, ...], *optional: str) -> EventShape:
    return EventShape(kind, LIFECYCLE_TOPIC, when, keys, tuple(optional))


EVENTS: tuple[EventShape, ...] = (
    _lifecycle(
        Kind.INJECTED,
        "A reminder joined the pending reminders (from inject, a provider, a hook, the queue or "
        "a parent).",
        _keys(INJECTED_EVENT_FIELDS),
    ),
    _lifecycle(
        Kind.DEDUPED,
        "A newer reminder, or a compaction (`boundary`), replaced older pending ones with the "
        "same dedupe key.",
        ("replaced_id", "replacing_id", "replaced_ids", "dedupe_key", "dropped_count"),
        "boundary",
    ),
    _lifecycle(
        Kind.EXPIRED,
        "A pending reminder left for good; `reason` is `ttl`, `compaction`, `cleared` or "
        "`resolved`. Its committed directive stays in history.",
        ("reminder_id", "reason", "ttl_turns_before", "expired_at_turn", "expired_at_boundary"),
    ),
    _lifecycle(
        Kind.FIRED,
        "A directive was committed into the envelope of request `turn_number`, in the role "
        "`rendered_role`.",
        (*_keys(FIRED_EVENT_FIELDS), "turn_number", "rendered_role"),
    ),
    _lifecycle(
        Kind.ITERATION_SUMMARY,
        "After the `fired` records of one request: how many directives, their bytes, and who "
        "produced them.",
        ("turn_number", "count", "body_bytes", "rendered_bytes", "by_source"),
    ),
    _lifecycle(
        Kind.DROPPED,
        "A reminder was refused or withdrawn before it was committed; `reason` is `invalid` "
        "(a stored event that cannot be read), `first_after`, `cooldown` or `max_fires` (its "
        "cadence) or `budget` (the directive budget).",
        ("reminder_id", "reason"),
        "turn_number",
        "dedupe_key",
        "tokens",
    ),
    _lifecycle(
        Kind.INHERITED,
        "A sub-agent received a reminder of its parent (after that reminder's `injected`).",
        (*_keys(INHERITED_EVENT_FIELDS), "sub_agent_id"),
    ),
    _lifecycle(
        Kind.PROVIDER_EVALUATED,
        "A provider or a generator was asked whether it had something to say; `fired` says "
        "whether it produced a reminder the firing policy let through.",
        ("provider_id", "event", "fired", "fired_count"),
        "error",
    ),
    _lifecycle(
        Kind.OVER_BUDGET,
        "Contract directives, which the directive budget never drops, took request "
        "`turn_number` over the budget.",
        ("turn_number", "reminder_ids", "budget_tokens", "used_tokens"),
    ),
    _lifecycle(
        Kind.LINTED,
        "The wording lint flagged the body of a reminder a producer wrote; the reminder is "
        "queued all the same. The body itself is never in an event.",
        (*_keys(INJECTED_EVENT_FIELDS[:4]), "findings"),
    ),
    EventShape(
        Kind.CHANNEL_DOWNGRADED,
        "transcript.channel",
        "A system-channel envelope must travel as a user message from request `turn_number` "
        "on (its placement broke a rule of the API): a sanctioned prefix break.",
        ("message_index", "reason", "turn_number"),
    ),
    EventShape(
        Kind.TOOLS_CHANGED,
        "transcript.tools",
        "The tools request `turn_number` offers changed; `in_envelope` says whether the "
        "envelope told the model.",
        ("turn_number", "added", "removed", "in_envelope"),
    ),
    EventShape(
        Kind.CACHE_MISSED,
        "transcript.cache",
        "The provider said why its prompt cache could not reuse the previous request's prefix.",
        (
            "session_id",
            "turn_number",
            "model",
            "reason",
            "input_tokens",
            "cached_input_tokens",
            "cache_write_tokens",
        ),
    ),
)

_BY_KIND = {shape.kind: shape for shape in EVENTS}


def event_shape(kind: str) -> EventShape:
    """The row of ``kind`` (a :class:`Kind` wire string).

    Raises:
        KeyError: no such kind.

    Example:
        >>> event_shape("transcript.reminder.fired").keys[-2:]
        ('turn_number', 'rendered_role')
    """
    return _BY_KIND[kind]
