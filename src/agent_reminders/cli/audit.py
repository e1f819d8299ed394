"""``agent-reminders audit``: prefix breaks and prompt-cache reuse of a request log
(docs/audit.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from .common import handle_errors_with

__all__ = ["audit"]

# CI tells a finding from a failure, like grep and diff: 1 is a break, 2 an error.
BREAK_EXIT = 1
ERROR_EXIT = 2


def _check_html(path: Path) -> None:
    """Refuse an --html path the report cannot be written to, before the audit runs."""
    from .._core.errors import ConfigError

    if path.is_dir():
        raise ConfigError(f"--html {path}: is a folder; give the report's file name")
    if not path.parent.is_dir():
        raise ConfigError(f"--html {path}: the folder {path.parent} does not exist")


@handle_errors_with(ERROR_EXIT)
def audit(
    file: Annotated[
        str,
        typer.Argument(
            help="JSON Lines of successive requests: OpenAI Chat or Responses bodies, "
            "Anthropic Messages bodies, or this library's request log; '-' reads stdin.",
            show_default=False,
        ),
    ],
    format: Annotated[
        str,
        typer.Option("--format", help="auto (detected per file), openai, anthropic or log."),
    ] = "auto",
    encoding: Annotated[
        str,
        typer.Option(
            "--encoding",
            help="tiktoken encoding (o200k_base, cl100k_base…); bytes/4 counts a token per "
            "4 bytes (the fallback when tiktoken's files cannot be had).",
        ),
    ] = "o200k_base",
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    html: Annotated[
        Path | None,
        typer.Option("--html", help="Also write a self-contained HTML report with charts."),
    ] = None,
    fail_on_break: Annotated[
        bool,
        typer.Option(
            "--fail-on-break", help="Exit 1 when any prefix break is found (errors exit 2)."
        ),
    ] = False,
    price_read: Annotated[
        float | None,
        typer.Option("--price-read", help="Price of a cached token (1.0 = uncached; default 0.1)."),
    ] = None,
    price_write: Annotated[
        float | None,
        typer.Option(
            "--price-write", help="Price of a token written to Anthropic's cache (default 1.25)."
        ),
    ] = None,
) -> None:
    """Audit successive model requests: every prefix break, and prompt-cache reuse under the
    exact, OpenAI, Anthropic and vLLM cache models.

    Exit codes: 0 a clean run (without --fail-on-break, also a run that found breaks); 1 a
    prefix break with --fail-on-break, after the report is printed; 2 an error, with nothing
    reported: input that is not successive requests, a file that cannot be read, a bad
    option. An error is one line on stderr, error: RMD-NNN: ..., naming the line or the file
    (agent-reminders explain RMD-NNN says more).
    """
    from rich.console import Console

    from .._core.errors import AuditError, ConfigError
    from ..audit import audit_file, print_table, render_html

    if html is not None:
        _check_html(html)
    try:
        report = audit_file(
            file, format=format, encoding=encoding, price_read=price_read, price_write=price_write
        )
    except OSError as exc:  # the input itself: missing, a folder, not readable
        name = "stdin" if file == "-" else file
        raise AuditError(f"{name}: cannot be read ({exc.strerror or exc})") from None
    if html is not None:
        try:
            html.write_text(render_html(report), encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"--html {html}: cannot be written ({exc.strerror or exc})") from None
    if as_json:
        # the keys in their documented order (emit_json would sort them)
        typer.echo(json.dumps(report.to_json(), ensure_ascii=False, indent=2))
        if report.tokenizer_note:
            typer.echo(f"note: token counts are bytes/4: {report.tokenizer_note}", err=True)
    else:
        print_table(report, Console())
    if html is not None:
        typer.echo(f"wrote {html}", err=True)
    if fail_on_break and report.prefix_breaks:
        raise typer.Exit(BREAK_EXIT)
