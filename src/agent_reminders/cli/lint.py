"""``agent-reminders lint``: the wording lint of reminder bodies (docs/core.md, "Writing
reminders"); the rules are :func:`agent_reminders.lint_body`'s, this module only reads bodies and
prints what it finds."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .common import emit_json, fail, handle_errors_with, safe_text

if TYPE_CHECKING:
    from .._core.wording import WordingFinding

__all__ = ["lint"]

# Like grep and diff (and ``audit``): 1 means something was found, 2 that the check failed.
FLAGGED_EXIT = 1
ERROR_EXIT = 2


@dataclass(frozen=True, slots=True)
class _Body:
    """One body to lint and where it came from: ``argument 2``, ``notes.txt:3``, ``stdin:1``."""

    where: str
    text: str


def _read(file: str) -> str:
    name = "stdin" if file == "-" else file
    try:
        data = sys.stdin.buffer.read() if file == "-" else Path(file).read_bytes()
    except OSError as exc:
        raise fail(f"--file {name}: cannot be read ({exc.strerror or exc})", ERROR_EXIT) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise fail(
            f"--file {name}: is not UTF-8 text (byte {exc.start}); lint reads text files",
            ERROR_EXIT,
        ) from None


def _json_object(line: str) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _file_bodies(file: str) -> list[_Body]:
    """A body per line, or, when the first non-blank line is a JSON object, a JSON Lines file
    of reminder options whose ``body`` is linted. Blank lines are skipped."""
    name = "stdin" if file == "-" else file
    lines = [(n, line) for n, line in enumerate(_read(file).splitlines(), 1) if line.strip()]
    if not lines or _json_object(lines[0][1]) is None:
        return [_Body(f"{name}:{n}", line) for n, line in lines]
    bodies: list[_Body] = []
    for n, line in lines:
        options = _json_object(line)
        if options is None:
            raise fail(
                f"{name}:{n}: not a JSON object; a JSON Lines file of reminder options holds "
                'one object per line, such as {"body": "..."}',
                ERROR_EXIT,
            )
        body = options.get("body")
        if not isinstance(body, str):
            got = "no body" if body is None else f"a body of type {type(body).__name__}"
            raise fail(f"{name}:{n}: the options have {got}; body must be a string", ERROR_EXIT)
        bodies.append(_Body(f"{name}:{n}", body))
    return bodies


def _line(body: _Body, finding: WordingFinding) -> str:
    return f"{body.where}: {finding.code}: {finding.message}: {safe_text(finding.excerpt)!r}"


@handle_errors_with(ERROR_EXIT)
def lint(
    bodies: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="BODY...",
            help="Reminder bodies to check, one per argument.",
            show_default=False,
        ),
    ] = None,
    file: Annotated[
        str | None,
        typer.Option(
            "--file",
            "-f",
            help="A file of bodies, one per line, or a JSON Lines file of reminder options "
            "({\"body\": ...} per line; told by its first line); '-' reads stdin.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Check the wording of reminder bodies: shouting (NEVER, MUST, words or sentences in
    capitals), threats, phrasing of prompt injection, and runs of exclamation marks. Acronyms
    (API, JSON, HTTP…) and code in backticks are fine.

    The check is advisory: sessions queue such reminders all the same and report a linted
    event. Exit codes: 0 nothing flagged; 1 something flagged (each finding printed as
    WHERE: CODE: MESSAGE: 'EXCERPT'); 2 an error, such as a file that cannot be read, with
    nothing checked.
    """
    from .._core.wording import lint_body

    given = [_Body(f"argument {n}", text) for n, text in enumerate(bodies or (), 1)]
    if file is not None:
        given += _file_bodies(file)
    elif not given:
        raise fail("give reminder bodies as arguments, or --file FILE ('-' for stdin)", ERROR_EXIT)
    results = [(body, lint_body(body.text)) for body in given]
    flagged = [(body, found) for body, found in results if found]
    if as_json:
        emit_json(
            {
                "checked": len(given),
                "flagged": len(flagged),
                "findings": [
                    {"where": body.where, **finding.to_dict()}
                    for body, found in flagged
                    for finding in found
                ],
            }
        )
    else:
        for body, found in flagged:
            for finding in found:
                typer.echo(_line(body, finding))
        count = sum(len(found) for _, found in flagged)
        noun = "body" if len(given) == 1 else "bodies"
        summary = (
            f"{count} finding{'s' if count != 1 else ''} in {len(flagged)} of {len(given)} {noun}"
            if flagged
            else f"{len(given)} {noun} checked: nothing flagged"
        )
        typer.echo(summary)
    if flagged:
        raise typer.Exit(FLAGGED_EXIT)
