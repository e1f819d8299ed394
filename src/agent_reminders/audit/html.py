"""The audit as one self-contained HTML file: the figures, and per cache model an inline SVG
chart of cached vs uncached prompt tokens per request with the prefix breaks marked. Every
red mark says in words what it means (a break at a known compaction is the intended one). No
network: no external style sheet, script, font or image."""

from __future__ import annotations

import math
from collections.abc import Collection
from html import escape

from .billed import CAUSES, BilledReport
from .cache_models import MODELS, CacheModel
from .explain import (
    BreakWords,
    miss_label,
    miss_words,
    misses_said,
    misses_words,
    ratio_words,
)
from .nag import NagReport
from .report import AuditReport, RequestRow

__all__ = ["render_html"]

_WIDTH, _HEIGHT = 1200, 260
_LEFT, _RIGHT, _TOP, _BOTTOM = 72, 16, 26, 34
_CACHED, _UNCACHED, _BREAK = "#2f9e44", "#f08c00", "#e03131"
_WRITTEN = "#1c7ed6"
_MAX_BAR = 48.0  # a few requests: narrow bars, not slabs
_MAX_LABELS = 12  # more break labels than this would overlap: lines only
_LABEL_ROW = 14  # the timeline's miss labels take turns on three rows

_STYLE = """
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1f2328;
       background: #f6f8fa; margin: 0; padding: 28px 40px 48px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 30px 0 8px; }
.sub { color: #59636e; margin: 0 0 20px; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin-bottom: 8px; }
.card { background: #fff; border: 1px solid #d1d9e0; border-radius: 8px; padding: 10px 16px;
        min-width: 170px; max-width: 400px; }
.card .v { font-size: 22px; font-weight: 600; font-variant-numeric: tabular-nums; }
.card .k { color: #59636e; font-size: 13px; }
.card.bad .v { color: #e03131; } .card.good .v { color: #2f9e44; }
.card .why { font-size: 13px; margin-top: 6px; }
.card.bad .why { color: #a51d1d; }
table { border-collapse: collapse; background: #fff; border: 1px solid #d1d9e0;
        border-radius: 8px; overflow: hidden; }
th, td { padding: 6px 14px; text-align: left; border-bottom: 1px solid #eef1f4; }
th { background: #f0f3f6; font-weight: 600; font-size: 13px; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.chart { background: #fff; border: 1px solid #d1d9e0; border-radius: 8px; padding: 8px;
         margin-bottom: 4px; }
.chart svg { display: block; width: 100%; height: auto; }
.legend { color: #59636e; font-size: 13px; margin: 4px 0 0; }
.marks { font-size: 13px; margin: 2px 0 0; color: #a51d1d; }
.marks.ok { color: #59636e; }
.sw { display: inline-block; width: 11px; height: 11px; border-radius: 2px;
      vertical-align: -1px; margin: 0 4px 0 12px; }
.note { background: #fff8c5; border: 1px solid #d4a72c; border-radius: 8px; padding: 8px 14px; }
footer { color: #59636e; font-size: 12px; margin-top: 32px; }
"""


def _tokens(n: float) -> str:
    for size, unit in ((1_000_000, "M"), (1_000, "k")):
        if n >= size:
            return f"{n / size:.2f}".rstrip("0").rstrip(".") + unit
    return f"{n:.0f}"


def _scale(top: int) -> tuple[int, list[int]]:
    """A round axis maximum at or above ``top`` and its ticks (at most six steps)."""
    raw = max(top, 6) / 6
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    step = max(1, math.ceil(step))
    count = max(1, math.ceil(top / step))
    return count * step, [i * step for i in range(count + 1)]


class _Frame:
    """One chart's geometry and its shared parts: the grid, the bottom axis, the red marks
    (a prefix break, a cache miss) and the stacked bars, ``count`` bars high up to ``tallest``
    tokens, with ``rows`` rows of mark labels above the plot."""

    def __init__(self, count: int, tallest: int, label: str, rows: int = 1) -> None:
        self.count = count
        self.head = _TOP + (rows - 1) * _LABEL_ROW
        self.plot_h = _HEIGHT - self.head - _BOTTOM
        self.top, self.ticks = _scale(tallest)
        self.slot = (_WIDTH - _LEFT - _RIGHT) / count
        self.gap = min(2.0, self.slot * 0.2) if self.slot > 3 else 0.0
        self.parts = [
            f'<svg viewBox="0 0 {_WIDTH} {_HEIGHT}" role="img" aria-label="{escape(label)}">'
        ]
        for tick in self.ticks:
            self.parts.append(
                f'<line x1="{_LEFT}" x2="{_WIDTH - _RIGHT}" y1="{self.y(tick):.1f}" '
                f'y2="{self.y(tick):.1f}" stroke="#eef1f4"/>'
                f'<text x="{_LEFT - 8}" y="{self.y(tick) + 4:.1f}" text-anchor="end" '
                f'font-size="12" fill="#59636e">{_tokens(tick)}</text>'
            )

    def y(self, value: float) -> float:
        return self.head + self.plot_h - self.plot_h * value / self.top

    def centre(self, position: int) -> float:
        return _LEFT + (position + 0.5) * self.slot

    def mark(self, position: int, level: float, attrs: str, title: str, label: str | None) -> None:
        """A red dashed line with a triangle at ``level`` (its label beside it, if any)."""
        x = self.centre(position)
        self.parts.append(
            f"<g {attrs}><title>{escape(title)}</title>"
            f'<line x1="{x:.2f}" x2="{x:.2f}" y1="{level - 6}" y2="{self.y(0):.1f}" '
            f'stroke="{_BREAK}" stroke-width="1.5" stroke-dasharray="4 3"/>'
            f'<path d="M{x - 5:.2f},{level - 14} h10 l-5,8 z" fill="{_BREAK}"/>'
            + ("" if label is None else _label(x, level - 7, label))
            + "</g>"
        )

    def bar(self, position: int, tip: str, stack: list[tuple[str, int, str]]) -> None:
        """One request's bar: ``(class, tokens, colour)`` stacked from the bottom."""
        w = min(max(self.slot - self.gap, 0.5), _MAX_BAR)
        x = self.centre(position) - w / 2
        bottom, rects = 0, []
        for name, value, colour in stack:
            rects.append(
                f'<rect class="{name}" x="{x:.2f}" y="{self.y(bottom + value):.2f}" '
                f'width="{w:.2f}" height="{self.y(bottom) - self.y(bottom + value):.2f}" '
                f'fill="{colour}"/>'
            )
            bottom += value
        self.parts.append(f'<g class="bar"><title>{escape(tip)}</title>{"".join(rects)}</g>')

    def close(self, names: list[int]) -> str:
        """The bottom axis (``names``: each bar's request index), and the whole SVG."""
        axis = self.y(0)
        self.parts.append(
            f'<text x="{_LEFT - 8}" y="{self.head - 12}" text-anchor="end" font-size="12" '
            'fill="#59636e">tokens</text>'
            f'<text x="{_WIDTH - _RIGHT}" y="{axis + 30:.1f}" text-anchor="end" font-size="12" '
            'fill="#59636e">request</text>'
            f'<line x1="{_LEFT}" x2="{_WIDTH - _RIGHT}" y1="{axis:.1f}" y2="{axis:.1f}" '
            'stroke="#8c959f"/>'
        )
        step = max(1, round(self.count / 10))
        for position in range(0, self.count, step):
            self.parts.append(
                f'<text x="{self.centre(position):.1f}" y="{axis + 18:.1f}" '
                f'text-anchor="middle" font-size="12" fill="#59636e">{names[position]}</text>'
            )
        self.parts.append("</svg>")
        return "".join(self.parts)


def _chart(report: AuditReport, model: CacheModel, explained: BreakWords) -> str:
    rows = report.rows
    frame = _Frame(
        len(rows),
        max(r.prompt_tokens for r in rows),
        f"cached and uncached prompt tokens per request under the {model} model",
    )
    # breaks first: their lines run behind the bars, the marks stay above them
    labels = len(report.prefix_breaks) <= _MAX_LABELS
    for brk in report.prefix_breaks:
        frame.mark(
            brk.request,
            _TOP,
            f'class="break" data-request="{brk.request}"',
            f"break at request {brk.request}: {brk.reason} (message {brk.message}): "
            + explained.words(brk),
            explained.label(brk) if labels else None,
        )
    for row in rows:
        cached, uncached = row.cached[model], row.uncached(model)
        tip = (
            f"request {row.index}"
            + (f" (line {row.line})" if row.line is not None else "")
            + (f", session {row.session_id}" if row.session_id else "")
            + f": {row.prompt_tokens:,} prompt tokens, {cached:,} cached, {uncached:,} uncached"
        )
        frame.bar(row.index, tip, [("cached", cached, _CACHED), ("uncached", uncached, _UNCACHED)])
    return frame.close([r.index for r in rows])


def _card(key: str, value: str, tone: str = "", why: str = "") -> str:
    """A figure, what it is, and (``why``) what its value means."""
    words = f'<div class="why">{escape(why)}</div>' if why else ""
    return (
        f'<div class="card {tone}"><div class="v">{escape(value)}</div>'
        f'<div class="k">{escape(key)}</div>{words}</div>'
    )


def _nag_card(nag: NagReport | None) -> str:
    """The nag rate in one card: fires per 100 calls, the rest in its caption."""
    if nag is None:
        return ""
    o = nag.overall
    parts = [f"{o.requests_with_directive_share:.0%} of requests carry a new one"]
    if o.directive_share is not None:
        parts.append(f"{o.directive_share:.1%} of the final prompt")
    parts.append(f"{o.fast_repeats} fast repeat{'' if o.fast_repeats == 1 else 's'}")
    if o.ignored_checked:
        parts.append(f"{o.ignored_heuristic} of {o.ignored_checked} ignored (heuristic)")
    why = (
        f"{o.fast_repeats} fast repeat{'s' if o.fast_repeats > 1 else ''}: the same reminder "
        f"again within {nag.fast_repeat_window} requests (a model told the same thing that "
        "soon tends to skip it)"
        if o.fast_repeats
        else ""
    )
    return _card(
        "nag rate: directive fires per 100 model calls · " + " · ".join(parts),
        f"{o.fires_per_100_calls:.1f}",
        "bad" if o.fast_repeats else "",
        why,
    )


def _break_rows(rows: tuple[RequestRow, ...], explained: BreakWords) -> str:
    out = []
    for row in rows:
        brk = row.prefix_break
        if brk is None:
            continue
        out.append(
            f'<tr><td class="n">{brk.request}</td>'
            f'<td class="n">{"" if brk.line is None else brk.line}</td>'
            f'<td>{escape(brk.session_id or "")}</td><td class="n">{brk.message}</td>'
            f"<td>{escape(brk.reason)}</td><td>{escape(explained.words(brk))}</td>"
            f'<td class="n">{row.uncached("exact"):,}</td></tr>'
        )
    return "".join(out)


def _money(value: float | None) -> str:
    if value is None:
        return "—"
    return f"${value:,.4f}" if value < 10 else f"${value:,.2f}"


def _timeline(billed: BilledReport) -> str:
    """Per request, the input tokens read (green), written (blue) and uncached (orange), as
    the provider billed them; each miss marked in red with its cause and cost."""
    rows = billed.rows
    frame = _Frame(
        len(rows),
        max(r.call.prompt for r in rows),
        "input tokens read, written and uncached per request, as billed",
        rows=3,  # neighbours' miss labels on different rows
    )
    labels = len(billed.misses) <= _MAX_LABELS
    shown = 0
    for position, row in enumerate(rows):
        miss = row.miss
        if miss is None:
            continue
        frame.mark(
            position,
            frame.head - (shown % 3) * _LABEL_ROW,
            f'class="miss" data-request="{miss.request}" data-cause="{miss.cause}"',
            f"miss at request {miss.request}: {miss_words(miss)} — {miss.detail}; "
            f"{miss.tokens:,} tokens not read, {_money(miss.cost)}",
            f"{miss_label(miss)} {_money(miss.cost)}" if labels else None,
        )
        shown += 1
    for position, row in enumerate(rows):
        call = row.call
        where = f" ({call.source} line {call.line})" if call.line is not None else ""
        tip = (
            f"request {call.index}{where}"
            + (f", session {call.session}" if call.session else "")
            + (f", sub-agent {call.agent}" if call.agent else "")
            + (f", {call.model}" if call.model else "")
            + f": {call.read:,} read, {call.written:,} written, {call.uncached:,} uncached"
            + (f", {_money(row.cost)}" if row.cost is not None else "")
            + (f"; predicted read {row.predicted_read:,}" if row.predicted_read is not None else "")
        )
        stack = [
            ("read", call.read, _CACHED),
            ("written", call.written, _WRITTEN),
            ("uncached", call.uncached, _UNCACHED),
        ]
        frame.bar(position, tip, stack)
    return frame.close([r.call.index for r in rows])


def _label(x: float, y: float, text: str) -> str:
    """A miss's label right of its mark, or left of it where it would run off the chart
    (about 7 px a character at 12 px)."""
    if x + 7 + 7 * len(text) > _WIDTH - _RIGHT:
        return (
            f'<text x="{x - 7:.2f}" y="{y}" font-size="12" fill="{_BREAK}" '
            f'text-anchor="end">{escape(text)}</text>'
        )
    return f'<text x="{x + 7:.2f}" y="{y}" font-size="12" fill="{_BREAK}">{escape(text)}</text>'


def _billed_section(billed: BilledReport) -> str:
    """What the provider billed: the summary a person looks at, the timeline, the misses."""
    misses = billed.misses
    tone, caption = misses_words(misses)
    saved = billed.cost - billed.miss_cost
    causes = billed.by_cause()
    cards = "".join(
        [
            _card("what it cost", _money(billed.cost)),
            _card("what it would have cost with no miss", _money(saved), "good"),
            _card(
                "cache misses (share of the bill)",
                f"{len(misses)} ({billed.miss_share:.1%})",
                tone,
                caption,
            ),
            _card("input read from the cache", f"{billed.read_share:.1%}"),
        ]
    )
    if misses:
        top = "; ".join(
            f"{CAUSES[cause]} ({entry['misses']} of them, {_money(entry['cost'])})"
            for cause, entry in list(causes.items())[:3]
        )
        summary = (
            f"<p>{len(misses)} cache miss{'es' if len(misses) != 1 else ''} cost "
            f"{_money(billed.miss_cost)} of {_money(billed.cost)}. Top causes: "
            f"{escape(top)}.</p>"
        )
    else:
        summary = "<p>No cache miss: every request read what the one before it cached.</p>"
    unpriced = (
        f'<p class="note">Not priced (no price known; pass --prices): '
        f"{escape(', '.join(billed.unpriced))}</p>"
        if billed.unpriced
        else ""
    )
    miss_rows = "".join(
        f'<tr><td class="n">{m.request}</td><td>{escape(_where(billed, m.request))}</td>'
        f"<td>{escape(miss_words(m))}</td><td>{escape(m.detail)}</td>"
        f'<td class="n">{m.tokens:,}</td><td class="n">{_money(m.cost)}</td></tr>'
        for m in misses
    )
    cause_rows = "".join(
        f"<tr><td>{escape(cause)}</td><td>{escape(CAUSES[cause])}</td>"
        f'<td class="n">{entry["misses"]}</td><td class="n">{entry["tokens"]:,}</td>'
        f'<td class="n">{_money(entry["cost"])}</td></tr>'
        for cause, entry in causes.items()
    )
    tables = (
        "<h2>Cache misses</h2><table><tr><th>request</th><th>where</th><th>cause</th>"
        f"<th>what happened</th><th>tokens not read</th><th>cost</th></tr>{miss_rows}</table>"
        "<h2>By cause</h2><table><tr><th>cause</th><th>meaning</th><th>misses</th>"
        f"<th>tokens</th><th>cost</th></tr>{cause_rows}</table>"
        if misses
        else ""
    )
    sessions = billed.by_session()
    if len(sessions) > 1:
        session_rows = "".join(
            f"<tr><td>{escape(name)}</td><td class='n'>{e['requests']}</td>"
            f"<td class='n'>{e['misses']}</td><td class='n'>{e['read_share']:.1%}</td>"
            f"<td class='n'>{_money(e['cost'])}</td></tr>"
            for name, e in sessions.items()
        )
        tables += (
            "<h2>By session</h2><table><tr><th>session</th><th>requests</th><th>misses</th>"
            f"<th>read from the cache</th><th>cost</th></tr>{session_rows}</table>"
        )
    return (
        f'<h2>What the provider billed</h2><div class="cards">{cards}</div>{summary}{unpriced}'
        f'<div class="chart" data-chart="billed">{_timeline(billed)}</div>'
        f'<p class="legend"><span class="sw" style="background:{_CACHED}"></span>read'
        f'<span class="sw" style="background:{_WRITTEN}"></span>written'
        f'<span class="sw" style="background:{_UNCACHED}"></span>uncached'
        f'<span class="sw" style="background:{_BREAK}"></span>cache miss</p>'
        + (
            f'<p class="marks {"ok" if tone != "bad" else ""}">Red dashed line: a cache miss, '
            "a request that could not read from the cache what the one before it left there. "
            f"Here: {escape(misses_said(misses))}.</p>"
            if misses
            else ""
        )
        + tables
    )


def _where(billed: BilledReport, request: int) -> str:
    call = next(r.call for r in billed.rows if r.call.index == request)
    parts = []
    if call.source is not None:
        parts.append(call.source + ("" if call.line is None else f":{call.line}"))
    if call.agent:
        parts.append(f"sub-agent {call.agent}")
    if call.model:
        parts.append(call.model)
    return " · ".join(parts)


def _marks_words(explained: BreakWords) -> str:
    """Under a chart: what its red marks are."""
    if not explained.breaks:
        return ""
    said = "; ".join(
        explained.words(b)
        if b in explained.intended
        else f"request {b.request}: " + explained.words(b)
        for b in explained.breaks[:3]
    )
    more = len(explained.breaks) - 3
    said += f"; and {more} more (the table below)" if more > 0 else ""
    tone = "marks ok" if explained.all_intended else "marks"
    return (
        f'<p class="{tone}">Red dashed line: a prefix break, a request that does not begin '
        f"with the one before it. Here: {escape(said)}.</p>"
    )


def render_html(report: AuditReport, *, compactions: Collection[int] = ()) -> str:
    """The report as one self-contained HTML page (inline styles and SVG, no network).

    ``compactions``: the first request after each compaction the caller knows of (the demo
    passes ``DemoResult.compaction_request``); a break there is labelled the intended one.
    Otherwise each break says what its reason means.

    Example:
        >>> from agent_reminders.audit import audit_requests
        >>> page = render_html(audit_requests(
        ...     [{"messages": [{"role": "user", "content": "hi"}]}], encoding="bytes/4"))
        >>> page.startswith("<!doctype html>"), "<svg" in page, "http" in page
        (True, True, False)
    """
    if not report.rows:  # a coding agent's session files: the provider's numbers only
        return _page(report, f"format {report.format} · {report.requests:,} requests", "")
    explained = BreakWords(report.prefix_breaks, compactions)
    breaks = len(report.prefix_breaks)
    cost = report.cost_ratio
    head = f"format {report.format} · encoding {report.encoding} · {report.requests:,} requests"
    ideal = report.uncached_over_final <= 1.02
    cards = "".join(
        [
            _card("prompt tokens, all requests", f"{report.prompt_tokens:,}"),
            _card("final prompt tokens", f"{report.final_prompt_tokens:,}"),
            _card(
                "uncached ÷ final (ideal 1.0)",
                f"{report.uncached_over_final:.3f}",
                "good" if ideal else "" if explained.all_intended else "bad",
                "" if ideal else ratio_words(report, explained),
            ),
            _card(
                "prefix breaks",
                str(breaks),
                "good" if not breaks else "" if explained.all_intended else "bad",
                explained.card(),
            ),
            _card(
                "directive tokens (overhead)",
                f"{report.directive_tokens:,} ({report.directive_overhead:.2%})",
            ),
            _nag_card(report.nag),
        ]
    )
    model_rows = "".join(
        f"<tr><td>{m}</td><td class='n'>{report.reuse[m]:.2%}</td>"
        f"<td class='n'>{report.uncached_tokens[m]:,}</td>"
        f"<td class='n'>{cost[m]:.4f}</td></tr>"
        if m in cost
        else f"<tr><td>{m}</td><td class='n'>{report.reuse[m]:.2%}</td>"
        f"<td class='n'>{report.uncached_tokens[m]:,}</td><td class='n'>—</td></tr>"
        for m in MODELS
    )
    marks = _marks_words(explained)
    charts = "".join(
        f"<h2>{m}: {report.reuse[m]:.2%} of prompt tokens cached</h2>"
        f'<div class="chart" data-model="{m}">{_chart(report, m, explained)}</div>'
        f'<p class="legend"><span class="sw" style="background:{_CACHED}"></span>cached (read '
        f'from the cache)<span class="sw" style="background:{_UNCACHED}"></span>uncached '
        f'(prefilled anew)<span class="sw" style="background:{_BREAK}"></span>prefix break</p>'
        f"{marks}"
        for m in MODELS
    )
    note = (
        f'<p class="note">Token counts are bytes/4: {escape(report.tokenizer_note)}</p>'
        if report.tokenizer_note
        else ""
    )
    breaks_table = (
        "<h2>Prefix breaks</h2><table><tr><th>request</th><th>line</th><th>session</th>"
        "<th>message</th><th>reason</th><th>what it means</th><th>prefilled (exact)</th></tr>"
        f"{_break_rows(report.rows, explained)}</table>"
        if breaks
        else "<h2>Prefix breaks</h2><p>None: every request extends the one before it.</p>"
    )
    body = (
        f'<div class="cards">{cards}</div>'
        "<h2>Cache models</h2><table><tr><th>model</th><th>reuse</th>"
        f"<th>uncached tokens</th><th>cost ratio</th></tr>{model_rows}</table>"
        f"{charts}{breaks_table}"
    )
    footer = (
        " · reuse = cached ÷ all prompt tokens · cost ratio at "
        f"read {report.price_read:g} and write {report.price_write:g} (an uncached token: 1)"
    )
    return _page(report, head, note + body, footer)


def _page(report: AuditReport, head: str, body: str, footer: str = "") -> str:
    """The whole page: the request-side ``body`` and, when there, the provider's numbers."""
    source = f"{report.source} · " if report.source else ""
    billed = "" if report.billed is None else _billed_section(report.billed)
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>prompt-cache audit{escape(' of ' + report.source if report.source else '')}"
        f"</title><style>{_STYLE}</style></head><body>"
        f'<h1>Prompt-cache audit</h1><p class="sub">{escape(source + head)}</p>'
        f"{billed}{body}"
        f"<footer>agent-reminders audit{escape(footer)}"
        f"{' · costs at the published prices unless --prices says otherwise' if billed else ''}"
        "</footer></body></html>\n"
    )
