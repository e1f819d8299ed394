"""Shared CLI plumbing: the --debug flag, one-line errors, terminal-aware output."""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from .._core.errors import AgentRemindersError

__all__ = [
    "emit_json",
    "fail",
    "handle_errors",
    "is_terminal",
    "safe_text",
    "state",
    "strip_control",
]

F = TypeVar("F", bound=Callable[..., Any])


class _State:
    debug: bool = False


state = _State()


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print ``error: message`` on stderr and return the exit to raise."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def handle_errors(fn: F) -> F:
    """Turn any exception of a command into one clear line and exit 1 (``--debug`` re-raises)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (typer.Exit, typer.Abort):
            raise
        except Exception as exc:
            if state.debug:
                raise
            if isinstance(exc, AgentRemindersError | ValueError | KeyError | OSError):
                text = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
                raise fail(str(text)) from None
            raise fail(
                f"internal error: {type(exc).__name__}: {exc} (run with --debug for details)"
            ) from None

    return wrapper  # type: ignore[return-value]


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
