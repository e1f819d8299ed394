"""The audit as ``rich`` tables on a terminal (plain text when piped): the totals, the cache
models, the breaks, and the provider's numbers with every miss."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .cache_models import MODELS, CacheModel
from .nag import NagReport
from .report import AuditReport

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["print_table"]


_RULES: dict[CacheModel, str] = {
    "exact": "any earlier request",
    "openai": "1,024+, 128 steps",
    "anthropic": "breakpoints, 20 back",
    "vllm": "16-token blocks",
}


def print_table(report: AuditReport, console: Console, *, max_breaks: int = 20) -> None:
    """Print the report as ``rich`` tables: the totals, the cache models, the breaks — and,
    when the input has them, the provider's numbers with every miss.

    On a console that is not a terminal rich prints the same tables without colour.
    """
    from rich.table import Table
    from rich.text import Text

    title = "prompt-cache audit" + (f" of {report.source}" if report.source else "")
    if not report.rows:
        if report.billed is not None:
            _print_billed(report, console, title=f"{title} ({report.format})")
        return
    totals = Table(title=title, show_header=False, title_justify="left")
    totals.add_column("figure")
    totals.add_column("value", justify="right")
    totals.add_row("format", report.format)
    totals.add_row("encoding", report.encoding)
    totals.add_row("requests", f"{report.requests:,}")
    totals.add_row("prompt tokens (all requests)", f"{report.prompt_tokens:,}")
    totals.add_row("final prompt tokens", f"{report.final_prompt_tokens:,}")
    totals.add_row("uncached ÷ final (ideal 1.0)", f"{report.uncached_over_final:.4f}")
    totals.add_row(
        "directive tokens (overhead)",
        f"{report.directive_tokens:,} ({report.directive_overhead:.2%})",
    )
    breaks = len(report.prefix_breaks)
    totals.add_row("prefix breaks", Text(str(breaks), style="bold red" if breaks else "green"))
    console.print(totals)

    models = Table(title="cache models", title_justify="left")
    for name, justify in (("model", "left"), ("rule", "left"), ("reuse", "right")):
        models.add_column(name, justify=justify)  # type: ignore[arg-type]
    models.add_column("uncached tokens", justify="right")
    models.add_column("cost ratio", justify="right")
    cost = report.cost_ratio
    for model in MODELS:
        ratio = cost.get(model)
        models.add_row(
            model,
            _RULES[model],
            f"{report.reuse[model]:.2%}",
            f"{report.uncached_tokens[model]:,}",
            "—" if ratio is None else f"{ratio:.4f}",
        )
    console.print(models)

    if report.prefix_breaks:
        table = Table(title="prefix breaks", title_justify="left")
        for name in ("request", "line", "session", "message", "reason"):
            table.add_column(name)
        for b in report.prefix_breaks[:max_breaks]:
            table.add_row(
                str(b.request),
                "" if b.line is None else str(b.line),
                Text(b.session_id or ""),
                str(b.message),
                b.reason,
            )
        console.print(table)
        if breaks > max_breaks:
            console.print(f"… and {breaks - max_breaks} more (--json lists them all)")
    for change in report.model_changes[:max_breaks]:
        console.print(
            Text(
                f"model changed at request {change['request']}: {change['from']} → "
                f"{change['to']} (no cache is shared across models)"
            )
        )
    if report.nag is not None:
        _print_nag(report.nag, console)
    if report.billed is not None:
        _print_billed(report, console, title="what the provider billed")
    if report.tokenizer_note:
        console.print(Text(f"note: token counts are bytes/4: {report.tokenizer_note}"))


def _print_nag(nag: NagReport, console: Console) -> None:
    """The nag rate: how often directives reach the model, and how often again."""
    from rich.table import Table
    from rich.text import Text

    o, calls = nag.overall, nag.model_calls
    table = Table(title="nag rate", show_header=False, title_justify="left")
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_row("fires per 100 model calls", f"{o.fires_per_100_calls:.1f} ({o.fires:,} fires)")
    table.add_row(
        "requests with a new directive",
        f"{o.requests_with_directive:,} of {calls:,} ({o.requests_with_directive_share:.2%})",
    )
    if o.directive_share is not None:
        table.add_row(
            "directive share of the final prompt",
            f"{o.directive_share:.2%} of {nag.prompt_tokens or 0:,} tokens",
        )
    table.add_row("repeats of the same directive", f"{o.repeats:,}")
    fast = Text(f"{o.fast_repeats:,}", style="bold red" if o.fast_repeats else "green")
    table.add_row(f"fast repeats (within {nag.fast_repeat_window} requests)", fast)
    if o.ignored_checked is not None:
        table.add_row(
            "ignored by the next turn (heuristic)",
            f"{o.ignored_heuristic or 0:,} of {o.ignored_checked:,} judged",
        )
    console.print(table)


def _dollars(value: float | None) -> str:
    if value is None:
        return "—"
    return f"${value:,.4f}" if value < 10 else f"${value:,.2f}"


def _print_billed(report: AuditReport, console: Console, *, title: str, most: int = 20) -> None:
    """The provider's numbers: totals, the misses with cause and cost, the causes."""
    from rich.table import Table
    from rich.text import Text

    billed = report.billed
    assert billed is not None
    misses = billed.misses
    totals = Table(title=title, show_header=False, title_justify="left")
    totals.add_column("figure")
    totals.add_column("value", justify="right")
    if report.files:
        totals.add_row("session files", f"{len(report.files):,}")
    totals.add_row("requests", f"{len(billed.rows):,}")
    totals.add_row("input tokens read from the cache", f"{billed.total('read'):,}")
    totals.add_row("input tokens written to the cache", f"{billed.total('written'):,}")
    totals.add_row("input tokens uncached", f"{billed.total('uncached'):,}")
    totals.add_row("read ÷ all input", f"{billed.read_share:.2%}")
    totals.add_row("cost", _dollars(billed.cost))
    totals.add_row("cost with no miss", _dollars(billed.cost - billed.miss_cost))
    tone = "bold red" if misses else "green"
    totals.add_row(
        "cache misses (share of cost)",
        Text(f"{len(misses)} ({billed.miss_share:.2%})", style=tone),
    )
    if billed.unpriced:
        totals.add_row("not priced (no price known)", ", ".join(billed.unpriced))
    console.print(totals)
    if not misses:
        return
    table = Table(title="cache misses", title_justify="left")
    for name in ("request", "line", "session", "cause", "tokens", "cost", "what happened"):
        table.add_column(name, justify="right" if name in ("tokens", "cost") else "left")
    rows = {r.call.index: r.call for r in billed.rows}
    for miss in misses[:most]:
        call = rows[miss.request]
        session = (call.session or "")[:12] + (f" / {call.agent}" if call.agent else "")
        table.add_row(
            str(miss.request),
            "" if call.line is None else str(call.line),
            Text(session),
            miss.cause,
            f"{miss.tokens:,}",
            _dollars(miss.cost),
            Text(miss.detail),
        )
    console.print(table)
    if len(misses) > most:
        console.print(f"… and {len(misses) - most} more (--json lists them all)")
    causes = Table(title="misses by cause", title_justify="left")
    for name in ("cause", "misses", "tokens", "cost"):
        causes.add_column(name, justify="left" if name == "cause" else "right")
    for cause, entry in billed.by_cause().items():
        causes.add_row(cause, str(entry["misses"]), f"{entry['tokens']:,}", _dollars(entry["cost"]))
    console.print(causes)
