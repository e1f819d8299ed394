"""The values of a session's configuration: reminder options and the workspace anchor, with
their shape checks.

Imports nothing of the package but the core, so the providers (which read these values) and
:mod:`agent_reminders.config` (which adds the checks against the canonical providers'
schemas, and is the public home of every name here) both build on it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from ._core.errors import ReminderOptionError

__all__ = [
    "DEFAULT_MAX_ITERATION_BYTES",
    "DirectiveBudget",
    "MIN_ITERATION_BYTES",
    "ReminderOptions",
    "Workspace",
    "WorkspaceRoot",
    "coerce_reminder_options",
    "parse_workspace",
]

DEFAULT_MAX_ITERATION_BYTES = 16384
MIN_ITERATION_BYTES = 256
_OPTION_KEYS = frozenset(
    {"enabled", "providers", "config", "max_iteration_bytes", "restraint", "directive_budget"}
)
_BUDGET_KEYS = ("share", "turns", "tokens", "min_tokens", "context_window")


def _positive(value: object, where: str, *, none: bool = True) -> None:
    if (value is None and none) or (type(value) is int and value > 0):
        return
    raise ReminderOptionError(f"{where} must be an int > 0; got {value!r}")


@dataclass(frozen=True, slots=True)
class DirectiveBudget:
    """How much of the prompt a session's directives may take (docs/restraint.md, "The directive
    budget"): over any ``turns`` consecutive turns, at most ``tokens`` — else ``share`` of the
    context window (``context_window``, else the one the last ``on_budget_threshold``
    reported, else ``reminders.config.token_pressure.context_window``), and never less than
    ``min_tokens``, so a small window does not starve the session. No window known and no
    ``tokens``: no limit.

    Attributes:
        share: The share of the context window the directives may take.
        turns: The window of turns the budget is counted over.
        tokens: An absolute limit instead of the share.
        min_tokens: The least the share may come to: 5 % of a small window would not hold one
            envelope.
        context_window: The window to take the share of; by default the one the last
            ``on_budget_threshold`` reported (the loop reports the model's), else
            ``reminders.config.token_pressure.context_window``.

    Example:
        >>> budget = DirectiveBudget()
        >>> budget.limit(200_000), budget.limit(8_000), DirectiveBudget(tokens=500).limit(None)
        (10000, 4096, 500)
    """

    share: float = 0.05
    turns: int = 10
    tokens: int | None = None
    min_tokens: int = 4096
    context_window: int | None = None

    def __post_init__(self) -> None:
        share = self.share
        if type(share) not in (int, float) or not 0 < share <= 1:
            raise ReminderOptionError(
                f"reminders.directive_budget.share must be a number in (0, 1]; got {share!r}"
            )
        _positive(self.turns, "reminders.directive_budget.turns", none=False)
        _positive(self.tokens, "reminders.directive_budget.tokens")
        _positive(self.min_tokens, "reminders.directive_budget.min_tokens", none=False)
        _positive(self.context_window, "reminders.directive_budget.context_window")

    def limit(self, context_window: int | None) -> int | None:
        """The most directive tokens over :attr:`turns` turns, given the window the session
        knows (``None``: no limit)."""
        if self.tokens is not None:
            return self.tokens
        window = self.context_window or context_window
        return None if window is None else max(self.min_tokens, int(window * self.share))


def _budget(value: object, restraint: bool) -> DirectiveBudget | None:
    if isinstance(value, DirectiveBudget) or value is None:
        return value
    if value is True:
        return DirectiveBudget() if restraint else None
    if value is False:
        return None
    if not isinstance(value, Mapping):
        raise ReminderOptionError(
            f"reminders.directive_budget must be a mapping, true or false; got {value!r}"
        )
    unknown = sorted(str(k) for k in value if k not in _BUDGET_KEYS)
    if unknown:
        raise ReminderOptionError(
            f"unknown reminders.directive_budget key(s) {', '.join(unknown)}; it takes "
            f"{', '.join(_BUDGET_KEYS)}"
        )
    return DirectiveBudget(**{k: value[k] for k in _BUDGET_KEYS if k in value})


class WorkspaceRoot(TypedDict):
    """One workspace root: a path and its mount mode."""

    path: str
    mount_mode: Literal["ro", "rw"]


class Workspace(TypedDict):
    """The workspace anchor of a session: a primary root and additional roots."""

    primary: str
    roots: list[WorkspaceRoot]


@dataclass(frozen=True, slots=True)
class ReminderOptions:
    """How a session uses reminder providers.

    Attributes:
        enabled: ``False`` turns every provider off.
        providers: Applied in order to the default set: ``"-id"`` disables, ``"id"`` enables.
        config: Per-provider configuration, ``{provider_id: {...}}``.
        max_iteration_bytes: Byte budget for reminder bodies within one ``fire``
            (values below 256 are raised to 256).
        restraint: The restraint defaults (docs/restraint.md): the canonical
            providers' cadences, ``grounded_review``'s resolution and the default directive
            budget. ``False`` turns them all off (a cadence set explicitly still holds).
        directive_budget: A :class:`DirectiveBudget`, its mapping, ``True`` (the default
            budget under ``restraint``) or ``False``/``None`` (none).
    """

    enabled: bool = True
    providers: tuple[str, ...] = ()
    config: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    max_iteration_bytes: int = DEFAULT_MAX_ITERATION_BYTES
    restraint: bool = True
    directive_budget: DirectiveBudget | Mapping[str, Any] | bool | None = True

    def __post_init__(self) -> None:
        if type(self.enabled) is not bool:
            raise ReminderOptionError(f"reminders.enabled must be a bool; got {self.enabled!r}")
        providers = self.providers
        if isinstance(providers, str) or not isinstance(providers, list | tuple):
            raise ReminderOptionError(
                f"reminders.providers must be a list of ids; got {providers!r}"
            )
        for entry in providers:
            if not isinstance(entry, str) or not entry.strip("-").strip():
                raise ReminderOptionError(
                    f"reminders.providers entries must be ids or '-id'; got {entry!r}"
                )
        object.__setattr__(self, "providers", tuple(p.strip() for p in providers))
        if not isinstance(self.config, Mapping) or not all(
            isinstance(k, str) and (v is None or isinstance(v, Mapping))
            for k, v in self.config.items()
        ):
            raise ReminderOptionError("reminders.config must map provider ids to mappings")
        budget = self.max_iteration_bytes
        if type(budget) is not int:
            raise ReminderOptionError(
                f"reminders.max_iteration_bytes must be an int; got {budget!r}"
            )
        object.__setattr__(self, "max_iteration_bytes", max(budget, MIN_ITERATION_BYTES))
        if type(self.restraint) is not bool:
            raise ReminderOptionError(f"reminders.restraint must be a bool; got {self.restraint!r}")
        object.__setattr__(self, "directive_budget", _budget(self.directive_budget, self.restraint))

    @property
    def budget(self) -> DirectiveBudget | None:
        """:attr:`directive_budget` as it was resolved (``None``: no budget)."""
        value = self.directive_budget
        return value if isinstance(value, DirectiveBudget) else None


def coerce_reminder_options(value: object) -> ReminderOptions:
    """``True``/``False``/``None``, a mapping or a :class:`ReminderOptions`, as
    :class:`ReminderOptions`: the shape check of
    :func:`agent_reminders.config.parse_reminder_config`, without the provider schemas."""
    if isinstance(value, ReminderOptions):
        return value
    if value is True or value is None:
        return ReminderOptions()
    if value is False:
        return ReminderOptions(enabled=False)
    if not isinstance(value, Mapping):
        raise ReminderOptionError(
            f"reminders must be a bool, a mapping or ReminderOptions; got {type(value).__name__}",
        )
    unknown = sorted(str(k) for k in value if k not in _OPTION_KEYS)
    if unknown:
        raise ReminderOptionError(f"unknown option(s): {', '.join(unknown)}")
    return ReminderOptions(**{k: value[k] for k in _OPTION_KEYS if k in value})


def _path(value: object, where: str) -> str:
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value.strip():
        raise ReminderOptionError(f"{where} must be a non-blank path; got {value!r}")
    return value


def parse_workspace(value: object) -> Workspace | None:
    """Validate ``{"primary": path, "roots": [{"path": ..., "mount_mode": "ro"|"rw"}]}``."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ReminderOptionError(f"workspace must be a mapping; got {type(value).__name__}")
    unknown = sorted(str(k) for k in value if k not in ("primary", "roots"))
    if unknown:
        raise ReminderOptionError(f"unknown workspace key(s): {', '.join(unknown)}")
    primary = _path(value.get("primary"), "workspace.primary")
    raw_roots = value.get("roots", [])
    if not isinstance(raw_roots, list | tuple):
        raise ReminderOptionError("workspace.roots must be a list")
    roots: list[WorkspaceRoot] = []
    for i, root in enumerate(raw_roots):
        if not isinstance(root, Mapping):
            raise ReminderOptionError(f"workspace.roots[{i}] must be a mapping")
        mode = root.get("mount_mode", "rw")
        if mode not in ("ro", "rw"):
            raise ReminderOptionError(
                f"workspace.roots[{i}].mount_mode must be 'ro' or 'rw'; got {mode!r}"
            )
        roots.append(
            {"path": _path(root.get("path"), f"workspace.roots[{i}].path"), "mount_mode": mode}
        )
    return {"primary": primary, "roots": roots}
