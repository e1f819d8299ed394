"""The provider registry: canonical providers, user providers, and result normalization."""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from .._core.errors import (
    ConfigError,
    Diagnostic,
    PropagateError,
    ProviderResultError,
    ReminderError,
)
from .._core.fields import OPTION_KEYS, ParsedOptions, check_unknown, parse_reminder_options
from .._core.records import Reminder
from .._options import ReminderOptions, coerce_reminder_options
from . import (
    goal_anchor,
    grounded_review,
    idle_nudge,
    post_compact_recap,
    project_facts,
    resume_continuity,
    token_pressure,
    tool_output_truncated,
    workspace_anchor,
)
from .base import (
    Evaluate,
    ProviderSpec,
    common_config_problems,
    config_problems,
    normalize_event,
)

__all__ = [
    "CANONICAL_PROVIDERS",
    "OPTIONAL_PROVIDERS",
    "ProviderRegistry",
    "Resolution",
    "enabled_provider_ids",
    "lint_agent_options",
    "normalize_results",
    "reminder_config_problems",
]

# The fixed evaluation order of the canonical providers, before any user provider.
CANONICAL_PROVIDERS: tuple[ProviderSpec, ...] = (
    token_pressure.PROVIDER,
    idle_nudge.PROVIDER,
    tool_output_truncated.PROVIDER,
    post_compact_recap.PROVIDER,
    resume_continuity.PROVIDER,
    project_facts.PROVIDER,
    workspace_anchor.PROVIDER,
    grounded_review.PROVIDER,
)
# Built in as well, but off until named in reminders.providers; evaluated after the canonical
# ones, before any user provider.
OPTIONAL_PROVIDERS: tuple[ProviderSpec, ...] = (goal_anchor.PROVIDER,)
_BUILT_IN = (*CANONICAL_PROVIDERS, *OPTIONAL_PROVIDERS)
_CANONICAL_IDS = frozenset(p.id for p in CANONICAL_PROVIDERS)
_BUILT_IN_IDS = frozenset(p.id for p in _BUILT_IN)
_WRAPPER_KEYS = frozenset({"reminder"})


class _Enabled(NamedTuple):
    """What one set of options enables, remembered with the registry version it saw."""

    options: ReminderOptions
    version: int
    specs: tuple[ProviderSpec, ...]
    by_event: dict[str, tuple[ProviderSpec, ...]]
    blocking_by_event: dict[str, tuple[ProviderSpec, ...]]


class ProviderRegistry:
    """User providers of one session, in registration order (canonical ones are built in).

    Example:
        >>> reg = ProviderRegistry()
        >>> reg.register("plan", subscribes_to="PostStep", evaluate=lambda ctx: None)
        >>> [p.subscribes_to for p in reg.user_providers()]
        [('post_step',)]
    """

    def __init__(self) -> None:
        self._user: dict[str, ProviderSpec] = {}
        self._version = 0  # bumped whenever the user providers change
        self._enabled: _Enabled | None = None

    def register(
        self,
        id: str,
        *,
        subscribes_to: str | Iterable[str],
        evaluate: Evaluate,
        blocking: bool = False,
        interval: int | None = None,
    ) -> None:
        """Add a provider; an existing id is replaced and moves last.

        ``evaluate`` must be a plain (synchronous) function: providers run inside
        ``session.fire``, which is synchronous, so a coroutine would never be awaited. Do async
        work (network, files) before firing and let ``evaluate`` read its result; blocking
        work is fine — the loop runs blocking providers in a worker thread.

        ``blocking=True`` says ``evaluate`` does blocking I/O: ``agent_loop`` then runs the
        evaluation of its events in a worker thread (``Session.afire``).

        ``interval=N``: after a turn the provider fired at, it is not asked again for ``N``
        turns (``reminders.config[id]["interval"]`` overrides it).

        Raises:
            ValueError: a blank id, a canonical id, an unknown event, or no events.
            TypeError: ``evaluate`` is not callable.
            ConfigError: ``evaluate`` is an ``async def`` (or another coroutine function).
        """
        if not isinstance(id, str) or not id.strip() or id.startswith("-"):
            raise ValueError(
                f"provider id must be a non-blank string not starting with '-'; got {id!r}"
            )
        if id in _BUILT_IN_IDS:
            raise ValueError(
                f"{id!r} is a built-in provider; configure it through reminders.config or "
                f"disable it with '-{id}' and register under another id"
            )
        if not callable(evaluate):
            raise TypeError(f"provider {id!r}: evaluate must be callable")
        if _is_async(evaluate):
            raise ConfigError(
                f"provider {id!r}: evaluate must be a plain function; got the coroutine function "
                f"{getattr(evaluate, '__qualname__', type(evaluate).__qualname__)!r}, whose "
                "result session.fire (synchronous) could never await. Do the async work before "
                "firing and return its result from a plain def evaluate(ctx)"
            )
        if type(blocking) is not bool:
            raise TypeError(f"provider {id!r}: blocking must be a bool; got {blocking!r}")
        if interval is not None and not (type(interval) is int and interval > 0):
            raise ValueError(f"provider {id!r}: interval must be an int > 0; got {interval!r}")
        names = [subscribes_to] if isinstance(subscribes_to, str) else list(subscribes_to)
        if not names:
            raise ValueError(f"provider {id!r} subscribes to no event")
        events = tuple(dict.fromkeys(normalize_event(n) for n in names))
        self._version += 1
        self._user.pop(id, None)
        self._user[id] = ProviderSpec(
            id=id, subscribes_to=events, evaluate=evaluate, blocking=blocking, interval=interval
        )

    def unregister(self, id: str) -> bool:
        """Remove a user provider; ``True`` only if it was registered."""
        self._version += 1
        return self._user.pop(id, None) is not None

    def clear(self) -> None:
        """Remove every user provider."""
        self._version += 1
        self._user.clear()

    def user_providers(self) -> list[ProviderSpec]:
        """The user providers in registration order."""
        return list(self._user.values())

    def all_providers(self) -> list[ProviderSpec]:
        """Built-in providers in their fixed order, then user providers."""
        return [*_BUILT_IN, *self._user.values()]

    def _check_named(self, options: ReminderOptions) -> None:
        unknown = _unknown_named(options, self._user)
        if unknown:
            known = ", ".join([*(p.id for p in _BUILT_IN), *self._user])
            raise ConfigError(
                f"reminder options name unknown provider(s) {', '.join(map(repr, unknown))}: "
                f"neither canonical nor registered on this session; known: {known}. Register "
                "a user provider (session.providers.register) before the session fires"
            )

    def enabled(self, options: ReminderOptions) -> list[ProviderSpec]:
        """The providers ``options`` enables, in evaluation order.

        Raises:
            ConfigError: ``options`` name an id that is neither canonical nor registered.
        """
        return list(self._enabled_for(options).specs)

    def subscribed(self, options: ReminderOptions, event: str) -> tuple[ProviderSpec, ...]:
        """The providers ``options`` enables that subscribe to ``event`` (snake_case), in
        evaluation order.

        Raises:
            ConfigError: ``options`` name an id that is neither canonical nor registered.
        """
        enabled = self._enabled_for(options)
        found = enabled.by_event.get(event)
        if found is None:
            found = tuple(p for p in enabled.specs if event in p.subscribes_to)
            enabled.by_event[event] = found
            enabled.blocking_by_event[event] = tuple(p for p in found if p.blocking)
        return found

    def subscribed_blocking(self, options: ReminderOptions, event: str) -> tuple[ProviderSpec, ...]:
        """Those of :meth:`subscribed` marked ``blocking`` (usually none)."""
        enabled = self._enabled_for(options)
        if event not in enabled.blocking_by_event:
            self.subscribed(options, event)  # fills both for this event
        return enabled.blocking_by_event[event]

    def _enabled_for(self, options: ReminderOptions) -> _Enabled:
        # Asked several times per loop iteration: remembered for the last (frozen) options
        # until the user providers change.
        cached = self._enabled
        if cached is None or cached.options is not options or cached.version != self._version:
            if options.enabled:
                self._check_named(options)
            ids = enabled_provider_ids(options, user_ids=self._user)
            specs = tuple(p for p in self.all_providers() if p.id in ids)
            cached = _Enabled(options, self._version, specs, {}, {})
            self._enabled = cached
        return cached


def _unknown_named(options: ReminderOptions, user_ids: Iterable[str]) -> list[str]:
    """Ids named in ``options.providers`` or ``options.config`` that no provider has."""
    known = set(_BUILT_IN_IDS) | set(user_ids)
    named = [entry.lstrip("-").strip() for entry in options.providers] + list(options.config)
    return [pid for pid in dict.fromkeys(named) if pid not in known]


def _is_async(fn: object) -> bool:
    """An ``async def`` (or async generator) function, a partial of one, or an object whose
    ``__call__`` is one."""
    if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
        return True
    call = getattr(type(fn), "__call__", None)  # noqa: B004 - the method itself
    return not inspect.isfunction(fn) and (
        inspect.iscoroutinefunction(call) or inspect.isasyncgenfunction(call)
    )


def enabled_provider_ids(options: ReminderOptions, *, user_ids: Iterable[str] = ()) -> set[str]:
    """Canonical defaults plus user providers, then ``options.providers`` applied in order."""
    if not options.enabled:
        return set()
    ids = set(_CANONICAL_IDS) | set(user_ids)
    for entry in options.providers:
        if entry.startswith("-"):
            ids.discard(entry[1:].strip())
        else:
            ids.add(entry)
    return ids


_USER_PROVIDERS_NOTE = (
    "user providers are registered on the session after it is made "
    "(session.providers.register) and are enabled by default"
)


def reminder_config_problems(options: ReminderOptions) -> list[str]:
    """Every problem :func:`~agent_reminders.config.parse_reminder_config` would raise for, one
    message each (``agent_reminders.config`` re-exports this function).

    Checks the config of each canonical provider against its schema and flags provider ids
    (in ``providers`` and ``config``) that are misspellings of canonical ids.
    """
    specs = {spec.id: spec for spec in _BUILT_IN}
    known = ", ".join(specs)
    problems: list[str] = []
    named = [(entry.lstrip("-").strip(), "reminders.providers") for entry in options.providers]
    named += [(key, "reminders.config") for key in options.config]
    for pid, where in dict.fromkeys(named):
        if pid in specs:
            continue
        folded = pid.lower().replace("-", "_").replace(" ", "_")
        close = difflib.get_close_matches(folded, specs, n=1, cutoff=0.8)
        if close:
            problems.append(
                f"unknown provider {pid!r} in {where}; did you mean {close[0]!r}? "
                f"Canonical providers: {known} ({_USER_PROVIDERS_NOTE})"
            )
    for pid, config in options.config.items():
        if pid in specs:
            problems.extend(config_problems(specs[pid], config))
        elif config is not None:  # a user provider's own keys are its own; these two are ours
            problems.extend(common_config_problems(config, f"reminders.config.{pid}"))
    return problems


def lint_agent_options(
    reminders: object = True, *, user_providers: Iterable[str] | ProviderRegistry | None = None
) -> list[Diagnostic]:
    """Check reminder options without raising.

    Reports, as ``RMD-104`` errors, every problem :func:`parse_reminder_config` raises for
    (unknown config keys or wrong value types of a canonical provider, misspelt canonical ids),
    then ``RMD-007`` (info) when more than eight distinct providers would be enabled.

    With ``user_providers`` (the ids of the user providers, or a session's ``providers``
    registry), an id that names neither a canonical nor one of those providers is an
    ``RMD-104`` error as well; without it other ids are taken to be user providers.

    Example:
        >>> [d.code for d in lint_agent_options({"providers": ["-nope"]}, user_providers=[])]
        ['RMD-104']
        >>> lint_agent_options({"config": {"grounded_review": {"max_findings": "6"}}})[0].message
        "reminders.config.grounded_review.max_findings must be int; got '6' (str)"
    """
    options = coerce_reminder_options(reminders)
    diagnostics = [
        Diagnostic(code=ConfigError.code, severity="error", message=problem)
        for problem in reminder_config_problems(options)
    ]
    if user_providers is not None:
        users = (
            {p.id for p in user_providers.user_providers()}
            if isinstance(user_providers, ProviderRegistry)
            else set(user_providers)
        )
        known = [p.id for p in _BUILT_IN] + sorted(users)
        named = [(e.lstrip("-").strip(), "reminders.providers") for e in options.providers]
        named += [(key, "reminders.config") for key in options.config]
        for pid, where in dict.fromkeys(named):
            if pid not in known:
                diagnostics.append(
                    Diagnostic(
                        code=ConfigError.code,
                        severity="error",
                        message=(
                            f"unknown provider {pid!r} in {where}; known providers: "
                            f"{', '.join(known)}"
                        ),
                    )
                )
    ids = enabled_provider_ids(options)
    if len(ids) > 8:
        diagnostics.append(
            Diagnostic(
                code="RMD-007",
                severity="info",
                message=(
                    f"{len(ids)} reminder providers are enabled ({', '.join(sorted(ids))}); "
                    "more than eight may crowd every request — disable the ones this agent "
                    "does not need"
                ),
            )
        )
    return diagnostics


def _as_options(item: object, provider_id: str) -> Mapping[str, Any]:
    if type(item) is dict or isinstance(item, Mapping):
        if "reminder" in item:
            check_unknown(item, _WRAPPER_KEYS, where=f" (provider {provider_id!r})")
            inner = item["reminder"]
            if not isinstance(inner, Mapping):
                raise ProviderResultError(
                    f"provider {provider_id!r} returned a 'reminder' that is not a mapping",
                )
            return inner
        return item
    raise ProviderResultError(
        f"provider {provider_id!r} returned {type(item).__name__}; expected None, a reminder "
        "mapping, {'reminder': {...}} or a list of those",
    )


class Resolution(NamedTuple):
    """A provider's word that what its reminder ``key`` was about is over (docs/core.md,
    "Resolution"): the result ``{"resolved": key}``, with an optional one-line ``body`` told
    to the model when it had been told of the matter (its reminder is sent and still live)."""

    key: str
    body: str | None = None

    def note(self, told: Reminder) -> dict[str, Any]:
        """The reminder options of the note closing ``told``: :attr:`body`, for one turn,
        with ``told``'s tags, role and authority, keyed ``<key>:resolved``."""
        return {
            "body": self.body,
            "ttl_turns": 1,
            "dedupe_key": f"{self.key}:resolved",
            "tags": list(told.tags),
            "role_hint": told.role_hint.value,
            "authority": told.authority.value,
            "propagate": "none",
        }


_RESOLUTION_KEYS = frozenset({"resolved", "body"})


def _resolution(item: Mapping[str, Any], provider_id: str) -> Resolution:
    check_unknown(item, _RESOLUTION_KEYS, where=f" (provider {provider_id!r}, a resolution)")
    key, body = item["resolved"], item.get("body")
    if not isinstance(key, str) or not key.strip():
        raise ProviderResultError(
            f"provider {provider_id!r} resolved {key!r}; 'resolved' names a dedupe key (a "
            "non-blank string)"
        )
    if body is not None and (not isinstance(body, str) or not body.strip() or "\n" in body):
        raise ProviderResultError(
            f"provider {provider_id!r}: a resolution's body is one non-blank line; got {body!r}"
        )
    return Resolution(key, body)


def normalize_results(result: object, provider_id: str) -> list[ParsedOptions | Resolution]:
    """Validate what a provider returned into strict reminder options (and resolutions).

    Raises:
        ReminderError: ``RMD-001`` (unknown keys), ``RMD-005`` (``propagate``), ``RMD-006``
            (anything else malformed), each naming the provider.
    """
    if result is None:
        return []
    items = result if isinstance(result, list | tuple) else [result]
    parsed: list[ParsedOptions | Resolution] = []
    for item in items:
        if isinstance(item, Mapping) and "resolved" in item:
            parsed.append(_resolution(item, provider_id))
            continue
        options = _as_options(item, provider_id)
        try:
            parsed.append(parse_reminder_options(options))
        except ReminderError as exc:
            # unknown keys (checked first) stay RMD-001; every other malformation is RMD-006
            check_unknown(options, OPTION_KEYS, where=f" (provider {provider_id!r})")
            if isinstance(exc, PropagateError):
                raise PropagateError(f"{exc.message} (provider {provider_id!r})") from None
            raise ProviderResultError(
                f"provider {provider_id!r} returned a malformed reminder: {exc.message}"
            ) from None
    return parsed
