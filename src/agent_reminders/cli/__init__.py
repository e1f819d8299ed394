"""The ``agent-reminders`` command line (typer + rich)."""

from __future__ import annotations

import typer

from .._errors import explain as _explain
from .._version import __version__

__all__ = ["app", "main"]

app = typer.Typer(
    name="agent-reminders",
    help="System reminders for LLM agent loops.",
    no_args_is_help=True,
    add_completion=False,
)


@app.command()
def version() -> None:
    """Print the installed version."""
    typer.echo(__version__)


@app.command()
def explain(code: str) -> None:
    """Explain a diagnostic code (RMD-001 … RMD-009): its cause and its fix."""
    try:
        typer.echo(_explain(code))
    except KeyError as exc:
        typer.echo(f"error: {exc.args[0]}", err=True)
        raise typer.Exit(2) from None


def main() -> None:
    """Entry point of the ``agent-reminders`` command."""
    app()
