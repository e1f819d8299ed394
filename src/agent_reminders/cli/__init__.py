"""The ``agent-reminders`` command line (typer + rich).

Every failure prints one line (``error: …``) on stderr and exits non-zero; ``--debug`` (anywhere
on the command line) shows the traceback instead. With no arguments it prints the help.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence
from typing import Annotated, Any

import typer
from typer._click.exceptions import NoArgsIsHelpError
from typer.core import TyperGroup

from .._core.errors import CODES
from .._core.errors import explain as _explain
from .._version import __version__
from .audit import audit
from .common import handle_errors, state, tidy_help
from .demo import demo
from .facts import facts_app
from .hook import hook_app
from .lint import lint
from .remind import pending, remind, revoke
from .serve import serve
from .sessions import sessions_app

__all__ = ["app", "main"]


class _OneLineErrors(TyperGroup):
    """Usage errors print one ``error: …`` line (exit 2) instead of click's usage block; every
    help text is tidied for the terminal once, when the command tree is built."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        tidy_help(self)

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        # --debug works anywhere, not only before the subcommand: take it out before click
        # parses (an argument after "--" is left alone).
        end = argv.index("--") if "--" in argv else len(argv)
        state.debug = "--debug" in argv[:end]
        argv = [a for a in argv[:end] if a != "--debug"] + argv[end:]
        if state.debug:
            argv.insert(0, "--debug")  # so the root callback sees it too
        run = functools.partial(
            super().main,
            argv,
            prog_name,
            complete_var,
            standalone_mode=False,
            windows_expand_args=windows_expand_args,
            **extra,
        )
        if not standalone_mode:
            return run()
        try:
            code = run()  # without standalone mode an Exit comes back as its code
        except typer.Abort:
            typer.echo("error: aborted", err=True)
            sys.exit(1)
        except NoArgsIsHelpError as exc:
            # A group called without a command: the help, not an empty "error:" line. (Rich
            # help is printed while the error is made; plain help is its message.)
            if exc.format_message():
                typer.echo(exc.format_message())
            sys.exit(exc.exit_code)
        except typer.TyperException as exc:  # usage errors and the like: one line
            ctx = getattr(exc, "ctx", None)
            hint = f" (see: {ctx.command_path} --help)" if ctx is not None else ""
            typer.echo(f"error: {exc.format_message()}{hint}", err=True)
            sys.exit(exc.exit_code)
        sys.exit(code if isinstance(code, int) else 0)


app = typer.Typer(
    cls=_OneLineErrors,
    name="agent-reminders",
    help="System reminders for LLM agent loops.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(facts_app, name="facts")
app.add_typer(hook_app, name="hook")
app.add_typer(sessions_app, name="sessions")
app.command(name="serve")(serve)
app.command(name="remind")(remind)
app.command(name="pending")(pending)
app.command(name="revoke")(revoke)
app.command(name="audit")(audit)
app.command(name="demo")(demo)
app.command(name="lint")(lint)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(__version__)
        raise typer.Exit()


@app.callback()
def _root(
    debug: Annotated[
        bool, typer.Option("--debug", help="Show tracebacks on errors (anywhere on the line).")
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print the installed version and exit.",
        ),
    ] = False,
) -> None:
    state.debug = state.debug or debug


@app.command()
def version() -> None:
    """Print the installed version."""
    typer.echo(__version__)


def _code_ranges() -> str:
    """The codes of the table as runs: ``RMD-001 … RMD-009, RMD-101 … RMD-111``."""
    runs: list[list[int]] = []
    for number in sorted(int(code.removeprefix("RMD-")) for code in CODES):
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    return ", ".join(
        f"RMD-{run[0]:03d}" if len(run) == 1 else f"RMD-{run[0]:03d} … RMD-{run[-1]:03d}"
        for run in runs
    )


@app.command(help=f"Explain a diagnostic code ({_code_ranges()}): its cause and its fix.")
@handle_errors
def explain(code: Annotated[str, typer.Argument(help="e.g. RMD-004 (any case).")]) -> None:
    """Print the cause-and-fix paragraph of a diagnostic code (exit 2 for an unknown one)."""
    try:
        typer.echo(_explain(code))
    except KeyError as exc:
        typer.echo(f"error: {exc.args[0]}", err=True)
        raise typer.Exit(2) from None


def main() -> None:
    """Entry point of the ``agent-reminders`` command."""
    app()
