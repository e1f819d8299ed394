"""``agent-reminders hook``: Claude Code hooks (docs/claude-code.md).

``hook claude-code`` is the hook command itself (the console entry point runs it without
loading typer; this registration gives it help and ``--debug``); ``hook install claude-code``
and ``hook uninstall claude-code`` edit Claude Code's settings files.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from ..integrations import claude_code
from .common import handle_errors

__all__ = ["hook_app"]

hook_app = typer.Typer(
    help="Claude Code hooks: the library's reminders in a Claude Code session.",
    no_args_is_help=True,
)
install_app = typer.Typer(help="Add the hook to Claude Code's settings.", no_args_is_help=True)
uninstall_app = typer.Typer(
    help="Remove the hook from Claude Code's settings.", no_args_is_help=True
)
hook_app.add_typer(install_app, name="install")
hook_app.add_typer(uninstall_app, name="uninstall")

Scope = Annotated[
    str,
    typer.Option(
        "--scope",
        help="project: .claude/settings.json; local: .claude/settings.local.json; "
        "user: ~/.claude/settings.json.",
    ),
]


@hook_app.command("claude-code")
def run(
    store: Annotated[str | None, typer.Option(help="Store URL (default: the project's).")] = None,
    style: Annotated[
        str, typer.Option(help="context_directives (default) or system_reminder.")
    ] = "context_directives",
) -> None:
    """Run one Claude Code hook: the hook input on stdin, the additional context on stdout."""
    argv = ["--style", style] + ([] if store is None else ["--store", store])
    raise typer.Exit(claude_code.hook_main(argv))


Settings = Annotated[
    Path | None,
    typer.Option(
        "--settings",
        help="This settings file instead of the scope's (e.g. one given to claude --settings).",
        dir_okay=False,
    ),
]


def _path(scope: str, settings: Path | None) -> Path:
    if settings is not None:
        return settings
    project = Path(os.environ.get("CLAUDE_PROJECT_DIR") or Path.cwd())
    return claude_code.settings_path(scope, project=project, home=Path.home())


@install_app.command("claude-code")
@handle_errors
def install(scope: Scope = "project", settings: Settings = None) -> None:
    """Add the hook entries, keeping every other setting and hook (idempotent)."""
    done = claude_code.install(_path(scope, settings))
    if not done.events:
        typer.echo(f"already installed in {done.path}")
        return
    saved = f" (backup: {done.backup})" if done.backup else ""
    typer.echo(f"installed for {', '.join(done.events)} in {done.path}{saved}")


@uninstall_app.command("claude-code")
@handle_errors
def uninstall(scope: Scope = "project", settings: Settings = None) -> None:
    """Remove only this library's hook entries."""
    done = claude_code.uninstall(_path(scope, settings))
    if not done.events:
        typer.echo(f"nothing to remove in {done.path}")
        return
    saved = f" (backup: {done.backup})" if done.backup else ""
    typer.echo(f"removed from {', '.join(done.events)} in {done.path}{saved}")
