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
    "MIN_ITERATION_BYTES",
    "ReminderOptions",
    "Workspace",
    "WorkspaceRoot",
    "coerce_reminder_options",
    "parse_workspace",
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
