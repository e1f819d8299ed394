"""``agent-reminders audit``: prefix breaks and prompt-cache reuse of a request log (spec 07)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from .common import handle_errors

__all__ = ["audit"]


@handle_errors
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
        typer.Option("--fail-on-break", help="Exit 1 when any prefix break is found."),
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

    A line that is not a request is one error naming the line (exit 1), and nothing is
    reported. Exit 0 on a clean run; with --fail-on-break, 1 when a break is found (after the
    report is printed).
    """
    from rich.console import Console

    from ..audit import audit_file, print_table, render_html

    report = audit_file(
        file, format=format, encoding=encoding, price_read=price_read, price_write=price_write
    )
    if html is not None:
        html.write_text(render_html(report), encoding="utf-8")
    if as_json:
        # the keys in the order of spec 07 (emit_json would sort them)
        typer.echo(json.dumps(report.to_json(), ensure_ascii=False, indent=2))
        if report.tokenizer_note:
            typer.echo(f"note: token counts are bytes/4: {report.tokenizer_note}", err=True)
    else:
        print_table(report, Console())
    if html is not None:
        typer.echo(f"wrote {html}", err=True)
    if fail_on_break and report.prefix_breaks:
        raise typer.Exit(1)
