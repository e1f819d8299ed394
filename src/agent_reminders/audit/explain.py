"""The audit's marks in plain words, for the HTML report: what each prefix break and each
cache miss means (a break at a known compaction is the intended one), and what the
uncached ÷ final figure says. The reasons' own words: :func:`~.breaks.explain_break` and
:data:`~.billed.CAUSES`."""

from __future__ import annotations

from collections.abc import Collection

from .billed import CAUSES, Miss
from .breaks import AuditBreak, explain_break
from .report import AuditReport

__all__ = [
    "BreakWords",
    "miss_label",
    "miss_words",
    "misses_said",
    "misses_words",
    "ratio_words",
]


class BreakWords:
    """The report's breaks, each in plain words: one at the first request after a compaction
    the caller knows of is the intended one."""

    def __init__(self, breaks: tuple[AuditBreak, ...], compactions: Collection[int]) -> None:
        self.breaks = breaks
        self.intended = [b for b in breaks if b.request in compactions]
        self.all_intended = bool(breaks) and len(self.intended) == len(breaks)

    def words(self, brk: AuditBreak) -> str:
        """What ``brk`` means (:func:`~.breaks.explain_break`)."""
        return explain_break(brk, compaction=brk in self.intended, only=len(self.intended) == 1)

    def label(self, brk: AuditBreak) -> str:
        """The few words beside a mark on the chart."""
        if brk in self.intended:
            return "compaction: the intended break"
        return self.words(brk).split(":", 1)[0]

    def card(self) -> str:
        """The caption of the breaks' card."""
        n = len(self.breaks)
        if not n:
            return "every request began with the one before it, so the cache could reuse it"
        if self.all_intended:
            return (
                self.words(self.breaks[0])
                if n == 1
                else (
                    f"{n} intended breaks: compactions at requests "
                    + ", ".join(str(b.request) for b in self.breaks)
                )
            )
        other = n - len(self.intended)
        return (
            f"{other} request{'s' if other > 1 else ''} did not begin with the one before "
            "it, so the provider's cache was lost from there on; the table below says why"
        )


def ratio_words(report: AuditReport, explained: BreakWords) -> str:
    """What uncached ÷ final means, with this report's numbers."""
    words = (
        f"{report.uncached_over_final:.2f}: the prompt tokens that had to be prefilled "
        f"({report.uncached_tokens['exact']:,}), over the final prompt "
        f"({report.final_prompt_tokens:,}); 1.0 is the ideal of an append-only log; each "
        "compaction adds one more prefill"
    )
    if explained.all_intended:
        n = len(explained.intended)
        words += f" (here {'the one' if n == 1 else n} at request" + (
            f" {explained.intended[0].request})"
            if n == 1
            else "s " + ", ".join(str(b.request) for b in explained.intended) + ")"
        )
    return words


def miss_words(miss: Miss) -> str:
    """A miss's cause in plain words; a compaction's is the intended one."""
    words = f"{miss.cause} — {CAUSES[miss.cause]}"
    return words + (" (on purpose: the intended miss)" if miss.cause == "compaction" else "")


def misses_said(misses: tuple[Miss, ...], shown: int = 3) -> str:
    """The first ``shown`` misses in plain words, for the line under the chart."""
    said = "; ".join(f"request {m.request}: {miss_words(m)}" for m in misses[:shown])
    more = len(misses) - shown
    return said + (f"; and {more} more (the table below)" if more > 0 else "")


def miss_label(miss: Miss) -> str:
    """The few words beside a miss's mark on the chart."""
    return "compaction (intended)" if miss.cause == "compaction" else miss.cause


def misses_words(misses: tuple[Miss, ...]) -> tuple[str, str]:
    """The misses card's tone and caption: what a miss is, or that each was a compaction."""
    if not misses:
        return "good", "every request read from the cache what the one before it left there"
    if all(m.cause == "compaction" for m in misses):
        at = ", ".join(str(m.request) for m in misses)
        return "", (
            f"{'the one intended miss' if len(misses) == 1 else 'intended misses'}: "
            f"compaction at request {at}, which replaces the history on purpose"
        )
    return "bad", (
        "a miss: a request that could not read from the cache what the one before it left "
        "there, so those tokens were billed in full; the table below gives each cause"
    )
