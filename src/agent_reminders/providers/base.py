"""Provider types: the evaluation context, provider records and event names."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .._core.cadence import check_cadence
from .._core.fields import OPTION_KEYS, ParsedOptions, check_unknown, option_defaults
from .._core.frozen import fast_init

if TYPE_CHECKING:
    from .._core.records import Reminder
    from .._core.transcript import Transcript
    from .._options import ReminderOptions, Workspace

__all__ = [
    "ConfigSchema",
    "EVENTS",
    "FireResult",
    "ProviderContext",
    "ProviderResult",
    "ProviderSpec",
    "canonical_reminder",
    "command_of",
    "COMMON_CONFIG",
    "common_config_problems",
    "config_problems",
    "mapping_or_empty",
    "normalize_event",
]

EVENTS: tuple[str, ...] = (
    "session_start",
    "on_budget_threshold",
    "session_idle",
    "post_tool_use",
    "post_step",
    "post_agent_turn",
    "post_compact",
    "worker_resumed",
)

_DEFAULTS = option_defaults()  # canonical_reminder copies them into each result

_EVENT_NAMES = frozenset(EVENTS)

_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")

# What evaluate() may return: None, a reminder mapping, {"reminder": {...}}, or a list of those.
ProviderResult = Mapping[str, Any] | list[Mapping[str, Any]] | None


def canonical_reminder(
    provider_id: str, body: str, *, ttl_turns: int | None, **options: Any
) -> dict[str, Any]:
    """The reminder mapping of a canonical provider, every lifecycle key explicit.

    ``options`` are further strict reminder options (``tags``, ``dedupe_key``,
    ``preserve_on_compact``, ``propagate``, ``role_hint``); the rest take the defaults of the
    field table, except the two every canonical provider shares: tags ``[provider_id]`` and
    dedupe key ``provider_id``. The lifetime (``ttl_turns``) is always the provider's explicit
    choice.

    Raises:
        ReminderError: ``RMD-001`` for a key that is not a reminder option.
    """
    if options:
        check_unknown(options, OPTION_KEYS, where=f" (provider {provider_id!r})")
    return {
        "body": body,
        **_DEFAULTS,
        "tags": [provider_id],
        "dedupe_key": provider_id,
        **options,
        "ttl_turns": ttl_turns,
    }


_EMPTY: Mapping[str, Any] = MappingProxyType({})


def mapping_or_empty(value: object) -> Mapping[str, Any]:
    """``value`` when it is a mapping, else an empty read-only one.

    How providers read a payload, a config or a nested record that may be anything: a plain
    ``dict`` (the usual case, several times per event) is recognised without the slower ABC
    check.

    Example:
        >>> mapping_or_empty({"a": 1}), dict(mapping_or_empty("not a mapping"))
        ({'a': 1}, {})
    """
    if type(value) is dict or isinstance(value, Mapping):
        return value
    return _EMPTY


def command_of(arguments: object) -> str | None:
    """The ``command`` (or ``cmd``) tool argument as a string; a list is joined with spaces.

    Used for ``post_tool_use`` payloads and by providers reading tool calls.
    """
    if type(arguments) is not dict and not isinstance(arguments, Mapping):
        return None
    for key in ("command", "cmd"):
        value = arguments.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list | tuple):
            return " ".join(str(v) for v in value)
    return None


def normalize_event(name: object) -> str:
    """Return the snake_case event name; PascalCase spellings are accepted.

    Raises:
        ValueError: not one of the provider events.

    Example:
        >>> normalize_event("PostToolUse")
        'post_tool_use'
    """
    if type(name) is str and name in _EVENT_NAMES:  # the usual case: already the snake_case name
        return name
    if not isinstance(name, str):
        raise ValueError(f"event must be a string naming one of {', '.join(EVENTS)}; got {name!r}")
    snake = name if "_" in name or name.islower() else _CAMEL.sub("_", name).lower()
    if snake not in EVENTS:
        raise ValueError(f"unknown provider event {name!r}; expected one of {', '.join(EVENTS)}")
    return snake


@fast_init
@dataclass(frozen=True, slots=True)
class ProviderContext:
    """What a provider's ``evaluate(ctx)`` receives.

    Attributes:
        event: The snake_case event name being fired.
        session_id: The session's id.
        payload: The event payload (read-only by convention).
        options: The session's reminder options.
        config: ``options.config[provider_id]`` or ``None``.
        turn: The number of the next request (``session.turn``).
        workspace: The session's workspace anchor, if any.
        transcript: The session's transcript when the event fired (read-only: it is
            immutable), or ``None``.
        full_bodies: The body each dedupe key last carried in full (what the firing policy
            remembers for short repeats; read-only).
    """

    event: str
    session_id: str
    payload: Mapping[str, Any]
    options: ReminderOptions
    config: Mapping[str, Any] | None
    turn: int = 0
    workspace: Workspace | None = None
    transcript: Transcript | None = None
    full_bodies: Mapping[str, str] = field(default_factory=dict)

    def for_provider(self, spec: ProviderSpec) -> ProviderContext:
        """This context for ``spec``: with its ``config`` (this very context when it has none,
        so unconfigured providers share one)."""
        config = self.options.config.get(spec.id)
        return self if config is None else replace(self, config=config)

    @property
    def pending(self) -> tuple[Reminder, ...]:
        """The session's pending reminders (what a provider may resolve), oldest first."""
        return () if self.transcript is None else self.transcript.reminders


Evaluate = Callable[[ProviderContext], ProviderResult]

# A provider's config keys and the type(s) each value may have. ``None`` always means "use the
# default"; ``bool`` is only accepted where it is listed (it is an ``int`` subclass); a ``list``
# or ``tuple`` entry means a list of strings.
ConfigSchema = Mapping[str, tuple[type, ...]]


@dataclass(frozen=True, slots=True)
class ProviderSpec:
    """A provider record: an ``id``, the events it ``subscribes_to`` and its ``evaluate``.

    Attributes:
        id: The provider id (the eight canonical ids are fixed).
        subscribes_to: The snake_case events it is evaluated on.
        evaluate: ``evaluate(ctx) -> ProviderResult``, a plain (synchronous) function.
        canonical: ``True`` for the eight built-in providers.
        description: One line for humans.
        config_schema: The keys ``reminders.config[id]`` may hold and their types; checked
            when reminder options are parsed (canonical providers only).
        blocking: ``evaluate`` does blocking I/O (``project_facts`` reads SQLite); the loop
            runs it in a worker thread.
        blocks_when: For a ``blocking`` provider, ``blocks_when(ctx)`` says whether this
            evaluation would do its blocking I/O (``project_facts`` on
            ``on_budget_threshold`` reads the store only above its refresh ratio); when it
            says no, the loop evaluates it inline and skips the worker thread. ``None``: every
            evaluation may block. It must be cheap and do no I/O.
        interval: After a turn it fired at, the provider is not asked again for this many
            turns (``reminders.config[id]["interval"]`` overrides it).
        cadence: Per event, the cadence its reminders take under ``restraint`` where they set
            none (docs/restraint.md); ``reminders.config[id]["cadence"]`` overrides it.
        cadence_key: What counts as the same reminder for the cadence, from a result (default:
            its dedupe key, else its body): ``token_pressure`` paces each level apart.
    """

    id: str
    subscribes_to: tuple[str, ...]
    evaluate: Evaluate
    canonical: bool = False
    blocking: bool = False
    description: str = field(default="", compare=False)
    config_schema: ConfigSchema = field(default_factory=dict, compare=False)
    blocks_when: Callable[[ProviderContext], bool] | None = field(default=None, compare=False)
    interval: int | None = None
    cadence: Mapping[str, Mapping[str, int]] = field(default_factory=dict, compare=False)
    cadence_key: Callable[[ParsedOptions], str] | None = field(default=None, compare=False)


def _type_names(types: tuple[type, ...]) -> str:
    names = ["list of str" if t in (list, tuple) else t.__name__ for t in types]
    return " or ".join(dict.fromkeys(names))


def config_problems(spec: ProviderSpec, config: Mapping[str, Any] | None) -> list[str]:
    """What is wrong with ``config`` for ``spec``: unknown keys and values of the wrong type.

    Each problem names the setting (``reminders.config.<id>.<key>``) and the known keys.

    Example:
        >>> spec = ProviderSpec("demo", ("post_step",), lambda ctx: None,
        ...                     config_schema={"limit": (int,)})
        >>> for problem in config_problems(spec, {"limit": True, "colour": "red"}):
        ...     print(problem)
        unknown key 'colour' in reminders.config.demo; known keys: limit
        reminders.config.demo.limit must be int; got True (bool)
    """
    if config is None:
        return []
    schema = spec.config_schema
    where = f"reminders.config.{spec.id}"
    known = ", ".join(sorted(schema)) or f"none ({spec.id} takes no config)"
    problems = [
        f"unknown key {key!r} in {where}; known keys: {known}"
        for key in config
        if key not in schema and key not in COMMON_CONFIG
    ]
    problems += common_config_problems(config, where)
    for key, types in schema.items():
        value = config.get(key)
        if value is None:
            continue
        if isinstance(value, bool) and bool not in types:
            ok = False
        elif isinstance(value, list | tuple) and (list in types or tuple in types):
            ok = all(isinstance(item, str) for item in value)
        else:
            ok = isinstance(value, tuple(t for t in types if t not in (list, tuple)))
        if not ok:
            problems.append(
                f"{where}.{key} must be {_type_names(types)}; got {value!r} "
                f"({type(value).__name__})"
            )
    return problems


COMMON_CONFIG = ("cadence", "interval")
"""The config keys every provider takes (docs/restraint.md)."""


def common_config_problems(config: Mapping[str, Any], where: str) -> list[str]:
    """What is wrong with ``config``'s ``cadence`` and ``interval``, one message each.

    Example:
        >>> for problem in common_config_problems({"interval": 0, "cadence": {"every": 2}}, "c"):
        ...     print(problem)
        c.cadence: unknown key(s) every; it takes first_after, cooldown_turns, max_fires
        c.interval must be an int > 0; got 0
    """
    problems = []
    if config.get("cadence") is not None:
        try:
            check_cadence(config["cadence"], f"{where}.cadence")
        except ValueError as exc:
            problems.append(str(exc))
    interval = config.get("interval")
    if interval is not None and not (type(interval) is int and interval > 0):
        problems.append(f"{where}.interval must be an int > 0; got {interval!r}")
    return problems


@fast_init
@dataclass(frozen=True, slots=True)
class FireResult:
    """What one ``session.fire`` did.

    ``reports`` are ``{provider, reminder_id, deduped_count, body_bytes}`` per injected
    reminder; ``skipped_reports`` are ``{provider, reason, reminder_id?, body_bytes?}`` with
    ``reason`` ``"reminder_iteration_budget_exceeded"`` or ``"unchanged_durable_reminder"``.
    """

    fired_count: int = 0
    reports: list[dict[str, Any]] = field(default_factory=list)
    skipped_count: int = 0
    skipped_reports: list[dict[str, Any]] = field(default_factory=list)
    budget_bytes: int = 0
    used_body_bytes: int = 0
