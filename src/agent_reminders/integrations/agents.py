"""The coding agents whose hooks the library answers, by their names on the command line.

``agent-reminders hook <agent>`` runs the hook of one of :data:`AGENTS`; ``hook install
<agent>`` and ``hook uninstall <agent>`` edit that agent's settings. Each agent's module
(:mod:`.claude_code`, :mod:`.codex`, :mod:`.gemini_cli`, :mod:`.cursor`) is imported only
when it is used: a hook run loads its own agent's module alone.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TextIO

from .._core.errors import ConfigError

__all__ = ["AGENTS", "SCOPES", "agent_module", "hook_main", "settings_path"]

AGENTS: dict[str, str] = {
    "claude-code": "claude_code",
    "codex": "codex",
    "gemini-cli": "gemini_cli",
    "cursor": "cursor",
}
# The scopes each agent's settings have, the first being the default.
SCOPES: dict[str, tuple[str, ...]] = {
    "claude-code": ("project", "user", "local"),
    "codex": ("project", "user"),
    "gemini-cli": ("project", "user"),
    "cursor": ("project", "user"),
}


def agent_module(name: str) -> ModuleType:
    """The module of the agent called ``name`` on the command line."""
    if name not in AGENTS:
        raise ConfigError(f"unknown agent {name!r}; the agents are {', '.join(AGENTS)}")
    return importlib.import_module(f"{__package__}.{AGENTS[name]}")


def hook_main(
    name: str,
    argv: Sequence[str],
    stdin: TextIO | None = None,
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> int:
    """``agent-reminders hook <name> [--store URL] [--style S]``: one run of that agent's hook
    (see :func:`._agent_hook.hook_main`); returns the exit code."""
    from . import _agent_hook

    return _agent_hook.hook_main(agent_module(name).AGENT, argv, stdin, env=env, cwd=cwd)


def settings_path(
    name: str, scope: str, *, project: Path, env: dict[str, str] | None = None
) -> Path:
    """The settings file of agent ``name`` at ``scope``:

    - ``claude-code``: ``.claude/settings.json``, ``.claude/settings.local.json`` (``local``),
      ``~/.claude/settings.json`` (``user``);
    - ``codex``: ``.codex/config.toml``, ``$CODEX_HOME/config.toml`` (``user``; default
      ``~/.codex``);
    - ``gemini-cli``: ``.gemini/settings.json``, ``~/.gemini/settings.json`` (``user``; the
      home being ``$GEMINI_CLI_HOME`` when set);
    - ``cursor``: ``.cursor/hooks.json``, ``~/.cursor/hooks.json`` (``user``).
    """
    given = os.environ if env is None else env
    if name not in AGENTS:
        raise ConfigError(f"unknown agent {name!r}; the agents are {', '.join(AGENTS)}")
    if scope not in SCOPES[name]:
        scopes = ", ".join(SCOPES[name])
        raise ConfigError(
            f"scope must be one of {scopes}; got {scope!r} ({name} settings have the scopes "
            f"{scopes})"
        )
    home = Path(given.get("HOME") or Path.home())
    folder = {
        "claude-code": ".claude",
        "codex": ".codex",
        "gemini-cli": ".gemini",
        "cursor": ".cursor",
    }[name]
    file = {"codex": "config.toml", "cursor": "hooks.json"}.get(name, "settings.json")
    if scope == "local":
        return project / folder / "settings.local.json"
    if scope == "project":
        return project / folder / file
    if name == "codex" and given.get("CODEX_HOME"):
        return Path(given["CODEX_HOME"]) / file
    if name == "gemini-cli" and given.get("GEMINI_CLI_HOME"):
        home = Path(given["GEMINI_CLI_HOME"])
    return home / folder / file
