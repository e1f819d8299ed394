"""``agent-reminders audit``: prefix breaks and prompt-cache reuse of a request log
(docs/audit.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .common import handle_errors_with

if TYPE_CHECKING:
    from ..audit import AuditReport

__all__ = ["audit"]

# CI tells a finding from a failure, like grep and diff: 1 is a break, 2 an error.
BREAK_EXIT = 1
ERROR_EXIT = 2


def _check_html(path: Path | None) -> None:
    """Refuse an --html path the report cannot be written to, before the audit runs."""
    from .._core.errors import ConfigError

    if path is None:
        return
    if path.is_dir():
        raise ConfigError(f"--html {path}: is a folder; give the report's file name")
    if not path.parent.is_dir():
        raise ConfigError(f"--html {path}: the folder {path.parent} does not exist")


# The options of the provider's numbers, named once here (the command's signature stays short).
FailOnMiss = Annotated[
    bool,
    typer.Option(
        "--fail-on-miss",
        help="Exit 1 when the provider's numbers show a cache miss (beyond --max-misses "
        "or --max-miss-share, when given).",
    ),
]
MaxMisses = Annotated[
    int | None,
    typer.Option("--max-misses", min=0, help="With --fail-on-miss: allow up to this many misses."),
]
MaxMissShare = Annotated[
    float | None,
    typer.Option(
        "--max-miss-share",
        min=0.0,
        max=1.0,
        help="With --fail-on-miss: allow misses costing up to this share of the bill (0.05 = 5 %).",
    ),
]
IgnoreCause = Annotated[
    list[str] | None,
    typer.Option(
        "--ignore-cause",
        help="A cause --fail-on-miss does not count (repeatable), e.g. compaction.",
    ),
]
Prices = Annotated[
    Path | None,
    typer.Option(
        "--prices",
        help="A TOML or JSON file of model prices per million tokens, on top of the "
        'published ones: ["claude-sonnet-4"] input = 3.0, output = 15.0, read = 0.1, '
        "write_5m = 1.25, write_1h = 2.0.",
    ),
]


@dataclass(frozen=True)
class _MissGate:
    """--fail-on-miss and its limits."""

    on: bool
    max_misses: int | None
    max_share: float | None
    ignore: frozenset[str]

    @classmethod
    def of(
        cls, on: bool, max_misses: int | None, max_share: float | None, ignore: list[str] | None
    ) -> _MissGate:
        from .._core.errors import ConfigError
        from ..audit import CAUSES

        ignored = frozenset(ignore or ())
        for cause in sorted(ignored - set(CAUSES)):
            raise ConfigError(
                f"--ignore-cause {cause!r}: not a cause; the causes are {', '.join(CAUSES)}"
            )
        gate = on or max_misses is not None or max_share is not None
        return cls(gate, max_misses, max_share, ignored)

    def check(self, report: AuditReport, file: str) -> None:
        """Refuse (before anything is printed) input without the provider's numbers."""
        from .._core.errors import AuditError

        if self.on and report.billed is None:
            raise AuditError(
                f"--fail-on-miss: {file} has no provider numbers (usage) to find misses in; "
                "it needs a session file, {request, response} pairs or a request log with usage"
            )

    def fails(self, report: AuditReport) -> bool:
        billed = report.billed
        return (
            self.on
            and billed is not None
            and billed.fails(
                max_misses=self.max_misses, max_share=self.max_share, ignore=self.ignore
            )
        )


@handle_errors_with(ERROR_EXIT)
def audit(
    file: Annotated[
        str,
        typer.Argument(
            help="JSON Lines of successive requests (OpenAI Chat or Responses bodies, "
            "Anthropic Messages bodies, {request, response} pairs, this library's request "
            "log), a Claude Code transcript or a Codex rollout; a folder of them (every "
            "*.jsonl under it); '-' reads stdin.",
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
    fail_on_miss: FailOnMiss = False,
    max_misses: MaxMisses = None,
    max_miss_share: MaxMissShare = None,
    ignore_cause: IgnoreCause = None,
    prices: Prices = None,
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
    exact, OpenAI, Anthropic and vLLM cache models; from the provider's own numbers (Claude
    Code, Codex, request/response pairs, a request log with usage), every cache miss, its
    cause and its cost.

    Exit codes: 0 a clean run (without --fail-on-break / --fail-on-miss, also a run that
    found breaks or misses); 1 a prefix break with --fail-on-break, or a miss beyond the
    limits with --fail-on-miss, after the report is printed; 2 an error, with nothing
    reported: input that is not successive requests, a file that cannot be read, a bad
    option. An error is one line on stderr, error: RMD-NNN: ..., naming the line or the file
    (agent-reminders explain RMD-NNN says more).
    """
    from rich.console import Console

    from .._core.errors import AuditError, ConfigError
    from ..audit import PriceTable, audit_file, print_table, render_html

    _check_html(html)
    gate = _MissGate.of(fail_on_miss, max_misses, max_miss_share, ignore_cause)
    table = PriceTable.default() if prices is None else PriceTable.default().load(prices)
    try:
        report = audit_file(
            file,
            format=format,
            encoding=encoding,
            price_read=price_read,
            price_write=price_write,
            prices=table,
        )
    except OSError as exc:  # the input itself: missing, a folder, not readable
        name = "stdin" if file == "-" else file
        raise AuditError(f"{name}: cannot be read ({exc.strerror or exc})") from None
    gate.check(report, file)
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
    if (fail_on_break and report.prefix_breaks) or gate.fails(report):
        raise typer.Exit(BREAK_EXIT)
