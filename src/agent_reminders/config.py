"""Session configuration: reminder options and the workspace anchor.

The values and their shape checks are defined below the providers; this module adds the checks
against the config schemas the canonical providers declare.
"""

from __future__ import annotations

from ._core.errors import ConfigError
from ._options import (
    DEFAULT_MAX_ITERATION_BYTES,
    MIN_ITERATION_BYTES,
    DirectiveBudget,
    ReminderOptions,
    Workspace,
    WorkspaceRoot,
    coerce_reminder_options,
    parse_workspace,
)
from .providers.registry import reminder_config_problems

__all__ = [
    "DEFAULT_MAX_ITERATION_BYTES",
    "DirectiveBudget",
    "MIN_ITERATION_BYTES",
    "ReminderOptions",
    "Workspace",
    "WorkspaceRoot",
    "parse_reminder_config",
    "parse_workspace",
    "reminder_config_problems",
]

# the public path, in tracebacks and the docs (the package root claims ReminderOptions)
Workspace.__module__ = WorkspaceRoot.__module__ = DirectiveBudget.__module__ = __name__


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
    options = coerce_reminder_options(value)
    problems = reminder_config_problems(options)
    if problems:
        raise ConfigError("; ".join(problems))
    return options
