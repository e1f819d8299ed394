"""``agent-reminders hook``: coding agents' hooks (docs/coding-agents.md).

``hook <agent>`` is the hook command itself (the console entry point runs it without loading
typer; these registrations give it help and ``--debug``); ``hook install <agent>`` and ``hook
uninstall <agent>`` edit the agent's own settings file. The agents are Claude Code, Codex
CLI, Gemini CLI and Cursor.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from ..integrations import _agent_settings
from ..integrations.agents import AGENTS, SCOPES, agent_module, hook_main, settings_path
from .common import handle_errors

__all__ = ["hook_app"]

_NAMES = {
    "claude-code": "Claude Code",
    "codex": "Codex CLI",
    "gemini-cli": "Gemini CLI",
    "cursor": "Cursor",
}

# what a person must still do for the agent to run a hook it has just been given
_AFTER_INSTALL = {
    "codex": "Codex runs a new hook once you trust it: start codex here and accept the hook "
    "review (codex exec skips untrusted hooks without a word).",
    "gemini-cli": "Gemini runs project hooks in trusted folders; its first run names the new "
    "hook once.",
}

hook_app = typer.Typer(
    help="Coding agents' hooks: the library's reminders in Claude Code, Codex CLI, Gemini CLI "
    "and Cursor sessions.",
    no_args_is_help=True,
)
install_app = typer.Typer(help="Add the hook to an agent's settings.", no_args_is_help=True)
uninstall_app = typer.Typer(help="Remove the hook from an agent's settings.", no_args_is_help=True)
hook_app.add_typer(install_app, name="install")
hook_app.add_typer(uninstall_app, name="uninstall")

StoreOption = Annotated[str | None, typer.Option(help="Store URL (default: the project's).")]
StyleOption = Annotated[str, typer.Option(help="context_directives (default) or system_reminder.")]
Settings = Annotated[
    Path | None,
    typer.Option(
        "--settings",
        help="This settings file instead of the scope's (e.g. one given to claude --settings).",
        dir_okay=False,
    ),
]


def _run_command(agent: str) -> Callable[..., None]:
    def run(store: StoreOption = None, style: StyleOption = "context_directives") -> None:
        argv = ["--style", style] + ([] if store is None else ["--store", store])
        raise typer.Exit(hook_main(agent, argv))

    run.__doc__ = (
        f"Run one {_NAMES[agent]} hook: the hook input on stdin, what {_NAMES[agent]} reads "
        "on stdout."
    )
    return run


def _path(agent: str, scope: str, settings: Path | None) -> Path:
    if settings is not None:
        return settings
    # the agent's own project variable, as its hook reads it, else the current directory
    names = agent_module(agent).AGENT.project_env
    given = next((os.environ[n] for n in names if os.environ.get(n)), "")
    project = Path(given or Path.cwd())
    return settings_path(agent, scope, project=project)


def _spec(agent: str) -> _agent_settings.SettingsFile:
    spec: _agent_settings.SettingsFile = agent_module(agent).SETTINGS
    return spec


def _scope_option(agent: str) -> str:
    """``--scope`` with the agent's scopes, the first the default (an option object as the
    default value: the command functions are made per agent, so an annotation could not name
    a local option)."""
    files = {
        scope: settings_path(agent, scope, project=Path("."), env={"HOME": "~"})
        for scope in SCOPES[agent]
    }
    said = "; ".join(f"{scope}: {path}" for scope, path in files.items())
    option: str = typer.Option(SCOPES[agent][0], "--scope", help=f"{said}.")
    return option


def _settings_command(agent: str, removing: bool) -> Callable[..., None]:
    """``hook install <agent>`` (or ``uninstall``): edit the agent's settings file."""
    scope_option = _scope_option(agent)
    edit = _agent_settings.uninstall if removing else _agent_settings.install
    done_said, none_said = (
        ("removed from", "nothing to remove in")
        if removing
        else (
            "installed for",
            "already installed in",
        )
    )

    @handle_errors
    def command(scope: str = scope_option, settings: Settings = None) -> None:
        done = edit(_path(agent, scope, settings), _spec(agent))
        if not done.events:
            typer.echo(f"{none_said} {done.path}")
            return
        saved = f" (backup: {done.backup})" if done.backup else ""
        typer.echo(f"{done_said} {', '.join(done.events)} in {done.path}{saved}")
        if not removing and agent in _AFTER_INSTALL:
            typer.echo(_AFTER_INSTALL[agent], err=True)

    command.__doc__ = (
        f"Remove only this library's hook entries from {_NAMES[agent]}'s settings."
        if removing
        else f"Add the hook entries to {_NAMES[agent]}'s settings, keeping every other setting "
        "and hook (idempotent)."
    )
    return command


for _agent in AGENTS:
    hook_app.command(_agent)(_run_command(_agent))
    install_app.command(_agent)(_settings_command(_agent, removing=False))
    uninstall_app.command(_agent)(_settings_command(_agent, removing=True))
