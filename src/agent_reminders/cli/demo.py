"""``agent-reminders demo``: a scripted coding-agent session, its timeline and its audit
(docs/demo.md).

By default a few plain lines: what happened, which reminders reached the model and why, the
prompt-cache reuse, the files and what to try next. ``--verbose``: the timeline (``rich`` on a
terminal, plain lines when piped), the audit tables and the nag rate. The request log and the
HTML report go to ``--out`` (``--json``: the audit object only).
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..demo.scenario import CONTEXT_WINDOW, DEFAULT_TURNS, MAX_TURNS, MIN_TURNS
from .common import fail, handle_errors, is_terminal, strip_control

if TYPE_CHECKING:
    from rich.console import Console

    from ..audit import AuditReport, NagReport
    from ..demo import DemoResult, Row

__all__ = [
    "ALL_FILES",
    "DEFAULT_OUT",
    "LEGEND",
    "REPORT_FILE",
    "REQUESTS_FILE",
    "demo",
    "nag_lines",
    "plain_lines",
    "short_lines",
]

DEFAULT_OUT = Path(".agent-reminders") / "demo"
REQUESTS_FILE = "demo-requests.jsonl"
REPORT_FILE = "demo-report.html"
ALL_FILES = (REQUESTS_FILE, REPORT_FILE)
"""What the demo writes into ``--out``."""
LEGEND = (
    "sent = the directives a request carried, each once (later requests repeat the message "
    "as it was, so the prefix stays the same); fired = a new reminder and the event that made "
    "it, for the next request; * = a short repeat: the text is unchanged, so a one-line note "
    "goes out instead."
)
_PIPED_WIDTH = 100  # the same bytes whatever the environment says about columns
_STYLE = {
    "note": "bold",
    "user": "bold cyan",
    "sent": "green",
    "model": "",
    "fired": "yellow",
    "host": "magenta",
    "expired": "red",
    "audit": "magenta",
}


def _audit(path: Path) -> AuditReport:
    """The audit of the demo's request log (the one place the demo calls the audit)."""
    from ..audit import audit_file

    return audit_file(path, format="log")


def _write_requests(result: DemoResult, path: Path) -> None:
    from ..bridge.request_log import request_log_line

    # no timestamp: the demo writes the same bytes on every run
    text = "".join(
        request_log_line(request, model=result.model, usage=usage) + "\n"
        for request, usage in zip(result.requests, result.usages, strict=True)
    )
    path.write_text(text, encoding="utf-8")


def _verdict(result: DemoResult, report: AuditReport) -> tuple[str, bool]:
    """One sentence on the prefix breaks, and whether they are exactly the compaction."""
    breaks = report.prefix_breaks
    at = result.compaction_request
    if [b.request for b in breaks] == [at]:
        b = breaks[0]
        return (
            f"1 prefix break, at request {at} (message {b.message}, {b.reason}): the "
            "compaction, the one sanctioned break. Every other request began with the request "
            "before it, byte for byte, so a provider's prompt cache could reuse it; "
            f"uncached ÷ final is {report.uncached_over_final:.2f} rather than 1.0 because "
            "the history after the compaction had to be prefilled again.",
            True,
        )
    found = ", ".join(f"request {b.request} ({b.reason})" for b in breaks) or "none"
    return (f"expected one prefix break, at request {at} (the compaction); found: {found}", False)


def plain_lines(rows: Iterable[Row]) -> list[str]:
    """The timeline as plain lines (piped output): a title line per row, one line per entry."""
    out: list[str] = []
    for row in rows:
        title = strip_control(row.title)
        out.append(title if row.turn is not None else f"-- {title} " + "-" * (60 - len(title)))
        for entry in row.entries:
            label = "" if entry.kind == "note" else entry.kind
            out.append(f"   {label:<8}{strip_control(entry.text)}".rstrip())
    return out


def nag_lines(nag: NagReport) -> list[str]:
    """The nag rate in two plain lines: each producer's fires per 100 model calls, then the
    share of requests with a new directive, the directives' share of the prompt and the fast
    repeats."""
    o, calls = nag.overall, nag.model_calls
    rates = ", ".join(f"{p.producer} {p.fires_per_100_calls:.1f}" for p in nag.producers if p.fires)
    second = (
        f"{o.requests_with_directive} of {calls} requests "
        f"({o.requests_with_directive_share:.0%}) carried a new directive"
    )
    if o.directive_share is not None:
        second += f"; directives are {o.directive_share:.1%} of the final prompt's tokens"
    second += (
        f"; {o.fast_repeats} fast repeat{'' if o.fast_repeats == 1 else 's'} (the same key "
        f"again within {nag.fast_repeat_window} turns)."
    )
    return [f"Nag rate, fires per 100 model calls: {rates or 'none'}.", second]


def _print_rich(rows: Sequence[Row], console: Console) -> None:
    from rich.table import Table
    from rich.text import Text

    table = Table(show_header=True, header_style="bold", show_lines=True)
    table.add_column("turn", no_wrap=True)
    table.add_column("what happened")
    for row in rows:
        cell = Text()
        for index, entry in enumerate(row.entries):
            if index:
                cell.append("\n")
            if entry.kind != "note":
                cell.append(f"{entry.kind:<8}", style=f"bold {_STYLE[entry.kind]}".strip())
            cell.append(strip_control(entry.text), style=_STYLE[entry.kind])
        table.add_row(
            Text(strip_control(row.title), style="bold" if row.turn is None else ""), cell
        )
    console.print(table)


def short_lines(
    result: DemoResult, report: AuditReport, held: bool, requests: Path, html: Path
) -> list[str]:
    """The default output: the story in plain words, the prompt-cache reuse, the files and
    the next commands (``held``: the audit found the one break, at the compaction)."""
    from ..demo.story import WIDTH, story_lines

    at = result.compaction_request
    cache = (
        f"Prompt cache: {report.reuse['exact']:.0%} of the {report.prompt_tokens:,} prompt "
        "tokens could be read from the provider's cache, because every request began with "
        "the one before it. "
    )
    if held:
        cache += f"The one exception, by design: request {at}, the first after the compaction."
    else:
        found = ", ".join(str(b.request) for b in report.prefix_breaks) or "none"
        cache += (
            f"Not here: the one exception expected was request {at}, the first after the "
            f"compaction; the audit found breaks at requests {found}."
        )
    return [
        *story_lines(result),
        "",
        *textwrap.wrap(cache, WIDTH),
        "",
        f"Wrote {requests} ({len(result.requests)} requests, as the model got them)",
        f"  and {html} (the audit report: open it in a browser).",
        "Next: agent-reminders demo --verbose   (turn by turn, with the audit's tables)",
        f"      agent-reminders audit {requests}",
    ]


def _print(
    result: DemoResult, report: AuditReport, verdict: str, requests: Path, html: Path
) -> None:
    from rich.console import Console

    from ..audit import print_table

    terminal = is_terminal()
    if terminal:
        console = Console()
        _print_rich(result.rows, console)
        console.print(LEGEND, style="dim")
    else:
        console = Console(file=sys.stdout, width=_PIPED_WIDTH, color_system=None)
        for line in plain_lines(result.rows):
            typer.echo(line)
        typer.echo(LEGEND)
    typer.echo("")
    print_table(report, console)
    overhead = (
        f"Directives are {report.directive_overhead:.0%} of the prompt tokens because this "
        f"session is tiny (a {CONTEXT_WINDOW:,}-token window): the envelope instructions "
        "(once per context) and the host's and providers' reminders weigh far less in a real "
        "agent's prompts."
    )
    if terminal:
        console.print(verdict, style="bold green")
        console.print(overhead)
    else:
        typer.echo(verdict)
        typer.echo(overhead)
    typer.echo(
        f"wrote {requests} ({len(result.requests)} requests, the request log of "
        f"serve --request-log) and {html} (the audit report: open it in a browser)"
    )
    typer.echo(f"audit them yourself: agent-reminders audit {requests}")
    for line in nag_lines(result.nag):
        typer.echo(line)


@handle_errors
def demo(
    turns: Annotated[
        int,
        typer.Option(
            "--turns",
            min=MIN_TURNS,
            max=MAX_TURNS,
            help="Requests of the parent session in the scripted run; with --model it bounds "
            "each task the same way.",
        ),
    ] = DEFAULT_TURNS,
    out: Annotated[
        Path,
        typer.Option(
            "--out", help=f"Folder for {REQUESTS_FILE} and {REPORT_FILE} (made when missing)."
        ),
    ] = DEFAULT_OUT,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="Run the same task on a real backend: openai:NAME, openai-responses:NAME, "
            "anthropic:NAME (or scripted:PATH).",
        ),
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option("--base-url", help="An OpenAI-compatible server (vLLM, llama.cpp, Ollama)."),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print only the audit object (JSON), no timeline.")
    ] = False,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            help="Print the whole timeline (what fired and why, turn by turn), the audit "
            "tables and the nag rate instead of the short summary.",
        ),
    ] = False,
) -> None:
    """Run a scripted coding-agent session offline and show what the reminders did.

    About 30 turns of the real agent_loop on a scripted model, with the canonical providers,
    a generator, hooks, host pushes in each delivery mode, a compaction and a sub-agent. It
    says in a few lines which reminders reached the model and why, and how much of the
    prompt a provider's cache could reuse; it writes the parent session's requests and the
    audit report to --out. --verbose prints the timeline (each turn: what fired and why, what
    the request carried, what expired) and the audit tables. The same bytes on every run.
    Exit 1 when the audit finds any prefix break other than the one at the compaction.
    """
    from ..audit import render_html
    from ..demo import run_demo
    from ..models import parse_model_spec

    if base_url is not None and model is None:
        raise fail("--base-url needs --model (e.g. --model openai:NAME --base-url URL)")
    backend = None if model is None else parse_model_spec(model, base_url=base_url)
    result = run_demo(turns=turns, model=backend)
    out.mkdir(parents=True, exist_ok=True)
    requests_path = out / REQUESTS_FILE
    _write_requests(result, requests_path)
    report = _audit(requests_path)
    report_path = out / REPORT_FILE
    page = render_html(report, compactions=(result.compaction_request,))
    report_path.write_text(page, encoding="utf-8")
    verdict, held = _verdict(result, report)
    if verbose and not as_json:
        _print(result, report, verdict, requests_path, report_path)
    else:
        if as_json:  # the keys in their documented order, as `audit --json` prints them
            typer.echo(json.dumps(report.to_json(), ensure_ascii=False, indent=2))
        else:
            for line in short_lines(result, report, held, requests_path, report_path):
                typer.echo(line)
        if report.tokenizer_note:  # the table says it with --verbose
            typer.echo(f"note: token counts are bytes/4: {report.tokenizer_note}", err=True)
    if not held:
        raise fail(verdict)
