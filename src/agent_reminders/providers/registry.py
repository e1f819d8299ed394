"""The provider registry: canonical providers, user providers, and result normalization."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .._core.errors import Diagnostic, ReminderError
from .._core.fields import OPTION_KEYS, ParsedOptions, check_unknown, parse_reminder_options
from ..config import ReminderOptions, parse_reminder_config
from . import (
    grounded_review,
    idle_nudge,
    post_compact_recap,
    project_facts,
    resume_continuity,
    token_pressure,
    tool_output_truncated,
    workspace_anchor,
)
from .base import Evaluate, ProviderSpec, normalize_event

__all__ = [
    "CANONICAL_PROVIDERS",
    "ProviderRegistry",
    "enabled_provider_ids",
    "lint_agent_options",
    "normalize_results",
]

# The fixed evaluation order of spec 02 §6.
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
_CANONICAL_IDS = frozenset(p.id for p in CANONICAL_PROVIDERS)
_WRAPPER_KEYS = frozenset({"reminder"})


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

    def register(self, id: str, *, subscribes_to: str | Iterable[str], evaluate: Evaluate) -> None:
        """Add a provider; an existing id is replaced and moves last.

        Raises:
            ValueError: a blank id, a canonical id, an unknown event, or no events.
            TypeError: ``evaluate`` is not callable.
        """
        if not isinstance(id, str) or not id.strip() or id.startswith("-"):
            raise ValueError(
                f"provider id must be a non-blank string not starting with '-'; got {id!r}"
            )
        if id in _CANONICAL_IDS:
            raise ValueError(
                f"{id!r} is a canonical provider; configure it through reminders.config or "
                f"disable it with '-{id}' and register under another id"
            )
        if not callable(evaluate):
            raise TypeError(f"provider {id!r}: evaluate must be callable")
        names = [subscribes_to] if isinstance(subscribes_to, str) else list(subscribes_to)
        if not names:
            raise ValueError(f"provider {id!r} subscribes to no event")
        events = tuple(dict.fromkeys(normalize_event(n) for n in names))
        self._user.pop(id, None)
        self._user[id] = ProviderSpec(id=id, subscribes_to=events, evaluate=evaluate)

    def unregister(self, id: str) -> bool:
        """Remove a user provider; ``True`` only if it was registered."""
        return self._user.pop(id, None) is not None

    def clear(self) -> None:
        """Remove every user provider."""
        self._user.clear()

    def user_providers(self) -> list[ProviderSpec]:
        """The user providers in registration order."""
        return list(self._user.values())

    def all_providers(self) -> list[ProviderSpec]:
        """Canonical providers in their fixed order, then user providers."""
        return [*CANONICAL_PROVIDERS, *self._user.values()]

    def enabled(self, options: ReminderOptions) -> list[ProviderSpec]:
        """The providers ``options`` enables, in evaluation order."""
        ids = enabled_provider_ids(options, user_ids=self._user)
        return [p for p in self.all_providers() if p.id in ids]


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


def lint_agent_options(reminders: object = True) -> list[Diagnostic]:
    """``RMD-007`` (info) when more than eight distinct providers would be enabled."""
    options = parse_reminder_config(reminders)
    ids = enabled_provider_ids(options)
    if len(ids) <= 8:
        return []
    return [
        Diagnostic(
            code="RMD-007",
            severity="info",
            message=(
                f"{len(ids)} reminder providers are enabled ({', '.join(sorted(ids))}); "
                "more than eight may crowd every request — disable the ones this agent does "
                "not need"
            ),
        )
    ]


def _as_options(item: object, provider_id: str) -> Mapping[str, Any]:
    if isinstance(item, Mapping):
        if "reminder" in item:
            check_unknown(item, _WRAPPER_KEYS, where=f" (provider {provider_id!r})")
            inner = item["reminder"]
            if not isinstance(inner, Mapping):
                raise ReminderError(
                    "RMD-006",
                    f"provider {provider_id!r} returned a 'reminder' that is not a mapping",
                )
            return inner
        return item
    raise ReminderError(
        "RMD-006",
        f"provider {provider_id!r} returned {type(item).__name__}; expected None, a reminder "
        "mapping, {'reminder': {...}} or a list of those",
    )


def normalize_results(result: object, provider_id: str) -> list[ParsedOptions]:
    """Validate what a provider returned into strict reminder options.

    Raises:
        ReminderError: ``RMD-001`` (unknown keys), ``RMD-005`` (``propagate``), ``RMD-006``
            (anything else malformed), each naming the provider.
    """
    if result is None:
        return []
    items = result if isinstance(result, list | tuple) else [result]
    parsed: list[ParsedOptions] = []
    for item in items:
        options = _as_options(item, provider_id)
        # unknown keys stay RMD-001; every other malformation becomes RMD-006 below
        check_unknown(options, OPTION_KEYS, where=f" (provider {provider_id!r})")
        try:
            parsed.append(parse_reminder_options(options))
        except ReminderError as exc:
            if exc.code == "RMD-005":
                raise ReminderError(
                    "RMD-005", f"{exc.message} (provider {provider_id!r})"
                ) from None
            raise ReminderError(
                "RMD-006", f"provider {provider_id!r} returned a malformed reminder: {exc.message}"
            ) from None
    return parsed
