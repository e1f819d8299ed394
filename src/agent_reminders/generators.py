"""Generators: the lightest reminder producers, in the style of pi's reminders extension.

A generator has an ``id`` and ``compute(force) -> str | None``, optionally an ``interval``
(force it when that many calls passed since it last spoke), ``reset()`` and ``authority``.
A registry keeps them in order; an injector runs them once per model call (docs/generators.md).

Example:
    >>> reg = GeneratorRegistry()
    >>> class Clock:
    ...     id = "clock"
    ...     interval = 2
    ...     def compute(self, force):
    ...         return "Time check." if force else None
    >>> reg.register(Clock())
    >>> injector = ReminderInjector(reg, clock=lambda: 0)
    >>> messages = []
    >>> for _ in range(4):
    ...     injector.on_context(messages)
    >>> len(messages), messages[0]["content"][0]["text"]
    (2, '<system-reminder>\\nTime check.\\n</system-reminder>')
"""

from __future__ import annotations

import sys
import threading
import time
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from ._core.envelope import escape_body
from ._core.events import EventLog, Kind
from ._core.fields import Authority, Source, coerce_enum
from ._core.records import Reminder

__all__ = [
    "AnnouncedDelta",
    "Emission",
    "Generator",
    "GeneratorClock",
    "GeneratorRegistry",
    "GeneratorState",
    "ReminderInjector",
    "build_reminder_message",
    "create_announced_delta",
    "default_registry",
    "get_generators",
    "register_generator",
    "reset_generators",
    "unregister_generator",
]

GENERATOR_EVENT = "before_request"
_AUTHORITIES = ("contract", "corrective", "advisory")


@runtime_checkable
class Generator(Protocol):
    """What the registry holds: an ``id`` and ``compute(force)``.

    Optional attributes: ``interval`` (``int | None``), ``reset()`` and ``authority``.
    """

    id: str

    def compute(self, force: bool) -> str | None: ...


def _check_generator(generator: object) -> Generator:
    gid = getattr(generator, "id", None)
    if not isinstance(gid, str) or not gid.strip():
        raise TypeError(f"a generator needs a non-blank string id; got {gid!r}")
    if not callable(getattr(generator, "compute", None)):
        raise TypeError(f"generator {gid!r} needs a compute(force) method")
    interval = getattr(generator, "interval", None)
    if interval is not None and (type(interval) is not int or interval < 0):
        raise ValueError(
            f"generator {gid!r}: interval must be an int >= 0 or None; got {interval!r}"
        )
    return generator  # type: ignore[return-value]


class GeneratorRegistry:
    """An ordered set of generators keyed by id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[str, Generator] = {}

    def register(self, generator: Generator) -> None:
        """Add a generator last; an existing id is replaced in place (same position, same
        clock — clocks are keyed by id)."""
        checked = _check_generator(generator)
        with self._lock:
            self._items[checked.id] = checked

    def unregister(self, id: str) -> bool:
        """Remove a generator; ``True`` only if it was present."""
        with self._lock:
            return self._items.pop(id, None) is not None

    def generators(self) -> list[Generator]:
        """A fresh snapshot list, in order; changing it changes nothing."""
        with self._lock:
            return list(self._items.values())

    def reset(self) -> None:
        """Call ``reset()`` on each generator that has one, in order."""
        for generator in self.generators():
            reset = getattr(generator, "reset", None)
            if callable(reset):
                reset()

    def __len__(self) -> int:
        return len(self._items)


# One process-wide registry in a namespaced slot that outlives this module object: a reload,
# or a second copy of the package under another name, finds the same registry there.
_SLOT = "agent_reminders.__default_generator_registry__"


def default_registry() -> GeneratorRegistry:
    """The process-wide registry that the module-level functions act on."""
    holder = sys.modules.get(_SLOT)
    if holder is None:
        fresh = types.ModuleType(_SLOT, "Holds agent-reminders' default generator registry.")
        fresh.registry = GeneratorRegistry()  # type: ignore[attr-defined]
        holder = sys.modules.setdefault(_SLOT, fresh)  # atomic: the first one wins
    registry: GeneratorRegistry = holder.registry
    return registry


def register_generator(generator: Generator) -> None:
    """Register on the default registry."""
    default_registry().register(generator)


def unregister_generator(id: str) -> bool:
    """Unregister from the default registry."""
    return default_registry().unregister(id)


def get_generators() -> list[Generator]:
    """Snapshot of the default registry."""
    return default_registry().generators()


def reset_generators() -> None:
    """Reset every generator of the default registry."""
    default_registry().reset()


@dataclass(frozen=True, slots=True)
class Emission:
    """Text one generator produced in one call (stripped), and the call number."""

    generator_id: str
    text: str
    call: int
    authority: str | None = None

    def reminder(self, reminder_id: str, turn: int) -> Reminder:
        """The ttl-1 reminder that carries this text into request ``turn`` (advisory unless
        the generator says otherwise), keyed by its generator."""
        return Reminder(
            id=reminder_id,
            body=self.text,
            tags=("generator", self.generator_id),
            dedupe_key=f"generator:{self.generator_id}",
            ttl_turns=1,
            authority=coerce_enum(Authority, self.authority or Authority.ADVISORY, "authority"),
            source=Source.STDLIB_PROVIDER,
            fired_at_turn=turn,
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class GeneratorState:
    """What a session's generators remember (part of ``SessionState``).

    Attributes:
        call_count: Injection events that ran generators so far.
        last_emitted_at: Call number of each generator's last delivered text, by id.
        announced: Each announced-delta generator's announced names, by generator id.
    """

    call_count: int = 0
    last_emitted_at: Mapping[str, int] = field(default_factory=dict)
    announced: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if type(self.call_count) is not int or self.call_count < 0:
            raise ValueError(f"call_count must be an int >= 0; got {self.call_count!r}")
        set_ = object.__setattr__
        set_(self, "last_emitted_at", MappingProxyType(dict(self.last_emitted_at)))
        set_(
            self,
            "announced",
            MappingProxyType({k: tuple(v) for k, v in self.announced.items()}),
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GeneratorState):
            return NotImplemented
        return (
            self.call_count == other.call_count
            and dict(self.last_emitted_at) == dict(other.last_emitted_at)
            and dict(self.announced) == dict(other.announced)
        )

    __hash__ = None  # type: ignore[assignment]


class GeneratorClock:
    """The interval clock (docs/generators.md, "The clock"): ``call_count`` and ``last_emitted_at``
    per id.

    ``collect()`` runs the generators once; ``delivered(emissions)`` advances the clocks of
    the texts that were actually delivered — a text that never reached the model leaves its
    generator's clock where it was.
    """

    def __init__(self, registry: GeneratorRegistry, *, event_log: EventLog | None = None) -> None:
        if not isinstance(registry, GeneratorRegistry):
            raise TypeError(f"registry must be a GeneratorRegistry, not {type(registry).__name__}")
        self.registry = registry
        self.event_log = event_log
        self.call_count = 0
        self.last_emitted_at: dict[str, int] = {}

    def collect(self) -> list[Emission]:
        """One injection event: run each generator (forced when its interval is due)."""
        generators = self.registry.generators()
        if not generators:
            return []
        self.call_count += 1
        out: list[Emission] = []
        for generator in generators:
            interval = getattr(generator, "interval", None)
            since = self.call_count - self.last_emitted_at.get(generator.id, 0)
            force = interval is not None and since >= interval
            try:
                text = generator.compute(force)
                if text is not None and not isinstance(text, str):
                    raise TypeError(f"compute() returned {type(text).__name__}, not str or None")
                authority = getattr(generator, "authority", None)
                if authority is not None and authority not in _AUTHORITIES:
                    raise ValueError(
                        f"authority must be one of {', '.join(_AUTHORITIES)}; got {authority!r}"
                    )
            except Exception as exc:  # isolated: the others still speak
                self._evaluated(generator.id, 0, f"{type(exc).__name__}: {exc}")
                continue
            spoke = text is not None and bool(text.strip())
            self._evaluated(generator.id, spoke)
            if text is not None and spoke:
                out.append(
                    Emission(
                        generator_id=generator.id,
                        text=text.strip(),
                        call=self.call_count,
                        authority=str(authority) if authority is not None else None,
                    )
                )
        return out

    def delivered(self, emissions: Iterable[Emission]) -> None:
        """Advance the clocks of delivered texts to the call that produced them."""
        for emission in emissions:
            self.last_emitted_at[emission.generator_id] = emission.call

    def on_session_start(self) -> None:
        """Reset the registry's generators and this clock."""
        self.registry.reset()
        self.last_emitted_at.clear()
        self.call_count = 0

    def state(self) -> GeneratorState:
        """The clock and the announced set of each :class:`AnnouncedDelta` in the registry."""
        return GeneratorState(
            call_count=self.call_count,
            last_emitted_at=self.last_emitted_at,
            announced={
                g.id: g.announced
                for g in self.registry.generators()
                if isinstance(g, AnnouncedDelta)
            },
        )

    def restore(self, state: GeneratorState) -> None:
        """Continue from ``state``: set the clock and restore the announced sets.

        An announced set whose generator is not in the registry (or is no announced delta)
        is ignored: the generator objects are configuration, given again on restore.
        """
        if not isinstance(state, GeneratorState):
            raise TypeError(f"state must be a GeneratorState, not {type(state).__name__}")
        self.call_count = state.call_count
        self.last_emitted_at = dict(state.last_emitted_at)
        for generator in self.registry.generators():
            names = state.announced.get(generator.id)
            if names is not None and isinstance(generator, AnnouncedDelta):
                generator.restore(names)

    def _evaluated(self, generator_id: str, fired: int, error: str | None = None) -> None:
        if self.event_log is None:
            return
        payload: dict[str, Any] = {
            "provider_id": generator_id,
            "event": GENERATOR_EVENT,
            "fired": fired > 0,
            "fired_count": int(fired),
        }
        if error is not None:
            payload["error"] = error
        self.event_log.lifecycle(Kind.PROVIDER_EVALUATED, "", payload)


def build_reminder_message(texts: Sequence[str], *, timestamp: int | None = None) -> dict[str, Any]:
    """The pi-compatible ``<system-reminder>`` user message for the given texts.

    Each text is escaped like a reminder body in the session envelope (``&``, ``<``, ``>``
    become entities), so no text can close the ``<system-reminder>`` element early — the
    session path with ``envelope_style="system_reminder"`` gives the same text.

    Raises:
        TypeError: ``texts`` is a single string (it would be split into characters).
        ValueError: ``texts`` is empty or holds something other than strings.

    Example:
        >>> build_reminder_message(["a < b"], timestamp=0)["content"][0]["text"]
        '<system-reminder>\\na &lt; b\\n</system-reminder>'
    """
    if isinstance(texts, str):
        raise TypeError(
            "build_reminder_message(texts): texts must be a list of strings, not a single str "
            f"(it would be split into characters); pass [{texts[:40]!r}]"
        )
    if not texts or not all(isinstance(t, str) for t in texts):
        raise ValueError("texts must be a non-empty list of strings")
    text = "<system-reminder>\n" + "\n\n".join(escape_body(t) for t in texts)
    text += "\n</system-reminder>"
    return {
        "role": "user",
        "content": [{"type": "text", "text": text}],
        "timestamp": int(time.time() * 1000) if timestamp is None else timestamp,
    }


class ReminderInjector:
    """The standalone, pi-compatible injector: appends one ``<system-reminder>`` message per
    call to the list it is given (for hosts that want exactly that shape)."""

    def __init__(
        self,
        registry: GeneratorRegistry | None = None,
        *,
        clock: Callable[[], int] | None = None,
        event_log: EventLog | None = None,
    ) -> None:
        chosen = default_registry() if registry is None else registry
        self._clock = GeneratorClock(chosen, event_log=event_log)
        self._now = clock or (lambda: int(time.time() * 1000))

    @property
    def call_count(self) -> int:
        """How many injection events ran generators."""
        return self._clock.call_count

    @property
    def last_emitted_at(self) -> dict[str, int]:
        """Call number of each generator's last delivered text."""
        return dict(self._clock.last_emitted_at)

    def on_context(self, messages: list[Any]) -> None:
        """Run the generators; append one message with everything they said (if anything)."""
        if not isinstance(messages, list):
            raise TypeError(f"messages must be a list, not {type(messages).__name__}")
        emissions = self._clock.collect()
        if not emissions:
            return
        messages.append(build_reminder_message([e.text for e in emissions], timestamp=self._now()))
        self._clock.delivered(emissions)

    def on_session_start(self) -> None:
        """Reset generators and the clock (a new session starts)."""
        self._clock.on_session_start()


def _names(value: object, argument: str, gid: str) -> list[str]:
    """The de-duplicated names an announced delta's ``get_current``/``get_baseline`` gave."""
    # A str is iterable too, but as a set of names it would be split into characters.
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise TypeError(
            f"announced delta {gid!r}: {argument}() must return an iterable of names (e.g. a "
            f"list of str), not {type(value).__name__} {value!r:.60}"
        )
    return list(dict.fromkeys(value))


class AnnouncedDelta:
    """A generator that announces what was added to and removed from a named set.

    Made by :func:`create_announced_delta`. ``announced`` is what it last announced;
    ``restore(names)`` sets it (a session restored from its state continues from there).
    """

    interval = None

    def __init__(
        self,
        id: str,
        get_current: Callable[[], Iterable[str]],
        get_baseline: Callable[[], Iterable[str]] | None,
        render_added: Callable[[list[str]], str],
        render_removed: Callable[[list[str]], str],
    ) -> None:
        self.id = id
        self._get_current = get_current
        self._get_baseline = get_baseline
        self._render_added = render_added
        self._render_removed = render_removed
        self._announced: list[str] = self._baseline()

    def _baseline(self) -> list[str]:
        if self._get_baseline is None:
            return []
        return _names(self._get_baseline(), "get_baseline", self.id)

    def compute(self, force: bool) -> str | None:
        if force:
            return None
        current = _names(self._get_current(), "get_current", self.id)
        known = set(self._announced)
        now = set(current)
        added = [name for name in current if name not in known]
        removed = [name for name in self._announced if name not in now]
        if not added and not removed:
            return None
        parts = []
        if added:
            parts.append(self._render_added(added))
        if removed:
            parts.append(self._render_removed(removed))
        self._announced = current
        return "\n".join(parts)

    def reset(self) -> None:
        """Re-read the baseline (or empty the announced set when there is none)."""
        self._announced = self._baseline()

    @property
    def announced(self) -> tuple[str, ...]:
        """The announced names, in order."""
        return tuple(self._announced)

    def restore(self, names: Iterable[str]) -> None:
        """Set the announced names (de-duplicated, first occurrence order) without a word."""
        if isinstance(names, str):
            raise TypeError("names must be an iterable of strings, not a string")
        items = list(dict.fromkeys(names))
        if not all(isinstance(n, str) for n in items):
            raise TypeError("names must be strings")
        self._announced = items


def create_announced_delta(
    *,
    id: str,
    get_current: Callable[[], Iterable[str]],
    get_baseline: Callable[[], Iterable[str]] | None = None,
    render_added: Callable[[list[str]], str],
    render_removed: Callable[[list[str]], str],
) -> AnnouncedDelta:
    """A generator that announces additions (first) and removals of a set of names.

    The baseline (``get_baseline()`` once, or empty) is announced silently; ``reset()`` reads
    it afresh. Forced calls return ``None`` without reading ``get_current``.

    Example:
        >>> pool = ["read"]
        >>> tools = create_announced_delta(
        ...     id="tools", get_current=lambda: pool, get_baseline=lambda: ["read"],
        ...     render_added=lambda n: "New tools: " + ", ".join(n),
        ...     render_removed=lambda n: "Gone: " + ", ".join(n))
        >>> pool = ["read", "grep"]; tools.compute(False)
        'New tools: grep'
    """
    if not isinstance(id, str) or not id.strip():
        raise ValueError(f"id must be a non-blank string; got {id!r}")
    for name, fn in (
        ("get_current", get_current),
        ("render_added", render_added),
        ("render_removed", render_removed),
    ):
        if not callable(fn):
            raise TypeError(f"{name} must be callable")
    if get_baseline is not None and not callable(get_baseline):
        raise TypeError("get_baseline must be callable or None")
    return AnnouncedDelta(id, get_current, get_baseline, render_added, render_removed)
