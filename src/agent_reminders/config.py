"""Session configuration: reminder options and the workspace anchor."""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from ._core.errors import ConfigError, ReminderOptionError

__all__ = [
    "DEFAULT_MAX_ITERATION_BYTES",
    "MIN_ITERATION_BYTES",
    "ReminderOptions",
    "Workspace",
    "WorkspaceRoot",
    "parse_reminder_config",
    "parse_workspace",
    "reminder_config_problems",
]

DEFAULT_MAX_ITERATION_BYTES = 16384
MIN_ITERATION_BYTES = 256
_OPTION_KEYS = frozenset({"enabled", "providers", "config", "max_iteration_bytes"})


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
    """

    enabled: bool = True
    providers: tuple[str, ...] = ()
    config: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    max_iteration_bytes: int = DEFAULT_MAX_ITERATION_BYTES

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


def parse_reminder_config(value: object) -> ReminderOptions:
    """Accept ``True``/``False``, a mapping or a :class:`ReminderOptions`, and check it.

    Besides the shape (``RMD-001``), the settings of the canonical providers are checked
    against the config schema each one declares (``ProviderSpec.config_schema``): an unknown
    key, a value of the wrong type, or a provider id that is a misspelling of a canonical one
    is a :class:`ConfigError` (``RMD-104``) naming the setting and the known ones.

    Other ids are taken to be user providers: those are registered on a session after it is
    made (``session.providers.register``), are enabled by default, and may be disabled
    (``"-id"``) or configured (``config[id]``) here.

    Example:
        >>> parse_reminder_config({"config": {"idle_nudge": {"idle_secs": 5}}})
        Traceback (most recent call last):
        ...
        agent_reminders.ConfigError: RMD-104: unknown key 'idle_secs' in reminders.config.idle_nudge; known keys: idle_seconds, seconds
    """  # noqa: E501
    options = _parse(value)
    problems = reminder_config_problems(options)
    if problems:
        raise ConfigError("; ".join(problems))
    return options


def _parse(value: object) -> ReminderOptions:
    """The shape check of :func:`parse_reminder_config`, without the provider schemas."""
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


_USER_PROVIDERS_NOTE = (
    "user providers are registered on the session after it is made "
    "(session.providers.register) and are enabled by default"
)


def reminder_config_problems(options: ReminderOptions) -> list[str]:
    """Every problem :func:`parse_reminder_config` would raise for, one message each.

    Checks the config of each canonical provider against its schema and flags provider ids
    (in ``providers`` and ``config``) that are misspellings of canonical ids.
    """
    # Imported here: the providers import this module for ReminderOptions.
    from .providers.base import config_problems
    from .providers.registry import CANONICAL_PROVIDERS

    specs = {spec.id: spec for spec in CANONICAL_PROVIDERS}
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
    return problems


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
