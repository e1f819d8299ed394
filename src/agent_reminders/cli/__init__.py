"""The ``agent-reminders`` command line (typer + rich).

Every failure prints one line (``error: …``) on stderr and exits non-zero; ``--debug`` shows
the traceback instead.
"""

from __future__ import annotations

from typing import Annotated

import typer

from .._errors import explain as _explain
from .._version import __version__
from ._common import handle_errors, state
from .facts import facts_app

__all__ = ["app", "main"]

app = typer.Typer(
    name="agent-reminders",
    help="System reminders for LLM agent loops.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(facts_app, name="facts")


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
) -> None:
    state.debug = debug


@app.command()
def version() -> None:
    """Print the installed version."""
    typer.echo(__version__)


@app.command()
@handle_errors
def explain(code: Annotated[str, typer.Argument(help="e.g. RMD-004 (any case).")]) -> None:
    """Explain a diagnostic code (RMD-001 … RMD-009): its cause and its fix."""
    try:
        typer.echo(_explain(code))
    except KeyError as exc:
        typer.echo(f"error: {exc.args[0]}", err=True)
        raise typer.Exit(2) from None


def main() -> None:
    """Entry point of the ``agent-reminders`` command."""
    app()
