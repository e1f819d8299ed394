"""Shared CLI plumbing: the --debug flag, one-line errors, terminal-aware output."""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from .._core.errors import AgentRemindersError, MissingExtraError

__all__ = [
    "emit_json",
    "fail",
    "handle_errors",
    "handle_errors_with",
    "help_text",
    "is_terminal",
    "safe_text",
    "state",
    "strip_control",
    "tidy_help",
]

F = TypeVar("F", bound=Callable[..., Any])


class _State:
    debug: bool = False


state = _State()


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print ``error: message`` on stderr and return the exit to raise."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def handle_errors_with(code: int) -> Callable[[F], F]:
    """:func:`handle_errors` whose failures exit ``code`` (``audit`` errors exit 2, so that 1
    can mean "a prefix break was found")."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except (typer.Exit, typer.Abort):
                raise
            except Exception as exc:
                if state.debug:
                    raise
                raise fail(_one_line(exc), code) from None

        return wrapper  # type: ignore[return-value]

    return decorate


def handle_errors(fn: F) -> F:
    """Turn any exception of a command into one clear line and exit 1 (``--debug`` re-raises)."""
    return handle_errors_with(1)(fn)


def _one_line(exc: Exception) -> str:
    # a missing optional package is the user's to install, not a bug: its message says how
    if isinstance(exc, AgentRemindersError | MissingExtraError | ValueError | OSError):
        return str(exc)
    if isinstance(exc, KeyError):
        return str(exc.args[0] if exc.args else exc)
    return f"internal error: {type(exc).__name__}: {exc} (run with --debug for details)"


def is_terminal() -> bool:
    """True when standard output is an interactive terminal (tables); else plain text."""
    return sys.stdout.isatty()


def emit_json(data: Any) -> None:
    """Print JSON for machines (UTF-8, stable key order)."""
    typer.echo(json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True))


# C0 and C1 control characters and DEL. Stored text is data: on a terminal, an escape sequence
# in a claim or a reminder body could retitle the window, move the cursor or hide earlier output.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def strip_control(text: str) -> str:
    """``text`` without control characters (line breaks and tabs go too; spaces stay)."""
    return _CONTROL.sub("", text)


def safe_text(text: str) -> str:
    """Text for one line of a terminal or a table cell: line breaks and tabs become spaces,
    other control characters go."""
    return strip_control(" ".join(text.split()))


# ``x`` in a docstring; a terminal shows `x`
_LITERAL = re.compile(r"``(.+?)``", re.DOTALL)
_PARAGRAPH = re.compile(r"\n[ \t]*\n")


def help_text(text: str, *, markup: bool) -> str:
    """``text`` (a docstring or an option's help) as ``--help`` should show it.

    Each paragraph becomes one line, which the terminal wraps at its own width (a line break
    left in the source would break a sentence mid-way at any other width); a literal in double
    backticks is shown in single ones; and with ``markup`` (rich help), text in square
    brackets is escaped so that ``[server]`` or ``[[tokens]]`` is shown as written, not read
    as a style and dropped.

    Example:
        >>> help_text("TOML config ([server],\\n[[tokens]]) in ``FILE``.", markup=False)
        'TOML config ([server], [[tokens]]) in `FILE`.'
    """
    paragraphs = (" ".join(p.split()) for p in _PARAGRAPH.split(text.strip()))
    plain = _LITERAL.sub(r"`\1`", "\n\n".join(p for p in paragraphs if p))
    if not markup:
        return plain
    from rich.markup import escape

    return escape(plain)


def tidy_help(command: TyperCommand | TyperGroup) -> None:
    """Rewrite the help of ``command``, its parameters and every subcommand with
    :func:`help_text`, once, before anything is shown."""
    markup = command.rich_markup_mode == "rich"
    if command.help:
        command.help = help_text(command.help, markup=markup)
    if command.short_help:
        command.short_help = help_text(command.short_help, markup=markup)
    for param in command.params:
        if isinstance(param, TyperOption | TyperArgument) and param.help:
            param.help = help_text(param.help, markup=markup)
    if isinstance(command, TyperGroup):
        for sub in command.commands.values():
            if isinstance(sub, TyperCommand | TyperGroup):
                tidy_help(sub)
