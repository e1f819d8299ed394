"""``hook install|uninstall <agent>``: the hook entries in each coding agent's own settings.

Every agent keeps its hooks under a ``hooks`` key that maps an event name to a list. Claude
Code, Gemini CLI and Codex CLI list matcher groups, each with its own ``hooks`` list of
commands (Codex in TOML, as ``[[hooks.<Event>]]`` tables); Cursor lists the commands
themselves. Installing adds one entry per event the library answers, keeping every other
setting and hook (and, in TOML, every comment); an event that already has the entry is left
alone. Uninstalling removes only the library's entries — those whose command contains
``hook <agent>`` — and the groups and events they leave empty. A file that changes is backed
up first (``<file>.agent-reminders.bak``) and replaced atomically.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .._core.errors import ConfigError

__all__ = ["SettingsChange", "SettingsFile", "hook_command", "install", "uninstall"]


@dataclass(frozen=True, slots=True)
class SettingsFile:
    """Where and how one agent keeps its hooks.

    Attributes:
        agent: The agent's name (``hook <agent>`` is in every command installed).
        events: The events the library registers, in order.
        nested: Matcher groups with their own ``hooks`` list (``False``: Cursor's flat
            entries).
        format: ``"json"`` or ``"toml"``.
        top: Keys the file must have at the top level (Cursor's ``version``).
        extra: Keys added to each command entry (a timeout).
    """

    agent: str
    events: tuple[str, ...]
    nested: bool = True
    format: Literal["json", "toml"] = "json"
    top: tuple[tuple[str, Any], ...] = ()
    extra: tuple[tuple[str, Any], ...] = ()

    @property
    def mark(self) -> str:
        """What every command this library installs for the agent contains."""
        return f"hook {self.agent}"


@dataclass(frozen=True, slots=True)
class SettingsChange:
    """What ``install`` / ``uninstall`` did: the file, the events changed, the backup."""

    path: Path
    events: tuple[str, ...]
    backup: Path | None


def hook_command(agent: str) -> str:
    """The command line the agent should run: this installation's ``agent-reminders`` (the
    script beside the running interpreter, as a virtual environment has it), else ``python
    -m agent_reminders`` with the running interpreter — never whichever ``agent-reminders``
    happens to come first on ``PATH``."""
    script = Path(sys.executable).with_name("agent-reminders")
    if script.is_file() and os.access(script, os.X_OK):
        return f"{shlex.quote(str(script))} hook {agent}"
    return f"{shlex.quote(sys.executable)} -m agent_reminders hook {agent}"


def _read(path: Path, spec: SettingsFile) -> MutableMapping[str, Any]:
    if not path.exists():
        return _parse("", spec)
    try:
        return _parse(path.read_text(encoding="utf-8"), spec)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        kind = "TOML" if spec.format == "toml" else "JSON"
        raise ConfigError(
            f"{path}: not a readable {kind} settings file ({exc}); left unchanged"
        ) from None


def _parse(text: str, spec: SettingsFile) -> MutableMapping[str, Any]:
    if spec.format == "toml":
        import tomlkit  # a base dependency, imported only by the installer

        return tomlkit.parse(text)
    data = json.loads(text or "{}")
    if not isinstance(data, dict):
        raise ValueError("the settings must be a JSON object")
    return data


def _hooks(data: MutableMapping[str, Any], path: Path, create: bool) -> MutableMapping[str, Any]:
    hooks = data.get("hooks")
    if hooks is None:
        if not create:
            return {}
        data["hooks"] = {}
        hooks = data["hooks"]
    if not isinstance(hooks, MutableMapping) or not all(
        isinstance(v, list) for v in hooks.values()
    ):
        raise ConfigError(
            f"{path}: 'hooks' must map event names to lists of entries; left unchanged"
        )
    return hooks


def _write(path: Path, data: MutableMapping[str, Any], spec: SettingsFile) -> Path | None:
    """Write ``data`` to ``path`` (atomically), backing up the old file first."""
    backup = None
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        backup = path.with_name(path.name + ".agent-reminders.bak")
        backup.write_bytes(path.read_bytes())
    if spec.format == "toml":
        import tomlkit

        text = tomlkit.dumps(data)
    else:
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    temporary = path.with_name(path.name + ".agent-reminders.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
    return backup


def _ours(entry: object, spec: SettingsFile) -> bool:
    return isinstance(entry, Mapping) and spec.mark in str(entry.get("command", ""))


def _commands(group: object, spec: SettingsFile) -> list[Any]:
    """The command entries of one list element: a group's ``hooks`` (nested) or itself."""
    if not spec.nested:
        return [group]
    inner = group.get("hooks") if isinstance(group, Mapping) else None
    return list(inner) if isinstance(inner, list) else []


def install(path: Path, spec: SettingsFile, command: str | None = None) -> SettingsChange:
    """Add the hook to every event of ``spec.events`` in the settings file at ``path``,
    keeping every other setting and hook; an event that already has it is left alone."""
    data = _read(path, spec)
    missing = [(k, v) for k, v in spec.top if k not in data]
    for key, value in missing:
        data[key] = value
    hooks = _hooks(data, path, create=True)
    entry = {"command": command or hook_command(spec.agent), **dict(spec.extra)}
    if spec.nested:
        entry = {"type": "command", **entry}
    added = []
    for event in spec.events:
        if event not in hooks:
            hooks[event] = []
        groups = hooks[event]
        if any(_ours(c, spec) for g in groups for c in _commands(g, spec)):
            continue
        groups.append({"hooks": [entry]} if spec.nested else entry)
        added.append(event)
    backup = _write(path, data, spec) if added or missing else None
    return SettingsChange(path=path, events=tuple(added), backup=backup)


def uninstall(path: Path, spec: SettingsFile) -> SettingsChange:
    """Remove this library's hook entries (and groups and events left empty by that) from
    the settings file at ``path``."""
    data = _read(path, spec)
    hooks = _hooks(data, path, create=False)
    removed = []
    for event, groups in list(hooks.items()):
        kept = []
        for group in groups:
            commands = _commands(group, spec)
            if not any(_ours(c, spec) for c in commands):
                kept.append(group)
                continue
            removed.append(event)
            rest = [c for c in commands if not _ours(c, spec)]
            if spec.nested and rest:
                group["hooks"] = rest
                kept.append(group)
        if len(kept) == len(groups):
            continue
        if kept:
            groups[:] = kept
        else:
            del hooks[event]
    if "hooks" in data and not hooks:
        del data["hooks"]
    done = tuple(dict.fromkeys(removed))
    backup = _write(path, data, spec) if done else None
    return SettingsChange(path=path, events=done, backup=backup)
