"""The directive budget (docs/restraint.md, "The directive budget"): at most so many tokens of
directives over any few turns, held before each envelope is committed.

When a turn's new directives would take more than the budget leaves, they are ranked —
higher authority first, then the most recent — and kept while they fit; a ``contract``
directive is always kept (never dropped for the budget: a turn it carries over the limit is
recorded as ``transcript.reminder.over_budget``); the others that do not fit are withdrawn,
each recorded as ``transcript.reminder.dropped`` with ``reason: "budget"``. Tokens are
estimated as one per 4 UTF-8 bytes of a directive's body.
"""

from __future__ import annotations

from collections.abc import Mapping

from ._core.cadence import Cadence
from ._core.commit import fresh_directives
from ._core.events import EventLog, Kind
from ._core.records import AUTHORITY_RANK, Authority, Reminder
from ._core.transcript import Transcript
from ._options import ReminderOptions

__all__ = ["directive_tokens", "keep_to_budget"]


def directive_tokens(body: str) -> int:
    """The tokens a directive's body is counted at: one per 4 UTF-8 bytes, rounded up.

    Example:
        >>> directive_tokens("Run the tests.")
        4
    """
    return (len(body.encode("utf-8", "surrogatepass")) + 3) // 4


def _window(options: ReminderOptions, cadence: Cadence) -> int | None:
    if cadence.context_window is not None:
        return cadence.context_window
    config = options.config.get("token_pressure")
    window = config.get("context_window") if isinstance(config, Mapping) else None
    return window if type(window) is int and window > 0 else None


def _rank(
    fresh: list[Reminder], used: int, limit: int | None
) -> tuple[int, list[tuple[Reminder, int]], list[str]]:
    """Of ``fresh``, by authority then recency: the tokens kept, the directives dropped (with
    their tokens), and the ids of the contract directives kept over the limit."""
    ranked = sorted(
        enumerate(fresh), key=lambda p: (AUTHORITY_RANK[p[1].authority], -p[1].fired_at_turn, -p[0])
    )
    kept, dropped, over = 0, [], []
    for _, reminder in ranked:
        tokens = directive_tokens(reminder.body)
        fits = limit is None or used + kept + tokens <= limit
        if fits or reminder.authority is Authority.CONTRACT:
            kept += tokens
            if not fits:
                over.append(reminder.id)
        else:
            dropped.append((reminder, tokens))
    return kept, dropped, over


def keep_to_budget(
    transcript: Transcript, cadence: Cadence, options: ReminderOptions, turn: int, log: EventLog
) -> tuple[Transcript, Cadence]:
    """The transcript with the directives of request ``turn`` held to the budget, and the
    cadence that counted what it commits."""
    budget = options.budget
    if budget is None or not transcript.uncommitted_ids:
        return transcript, cadence
    since = turn - budget.turns + 1
    limit = budget.limit(_window(options, cadence))
    used = cadence.spent_since(since)
    while True:  # a dropped directive may have stood for others of the same text: look again
        fresh = fresh_directives(transcript)
        kept, dropped, over = _rank(fresh, used, limit)
        if not dropped:
            break
        gone = {r.id for r, _ in dropped}
        transcript = transcript.with_pending(
            (e for e in transcript.pending if e.reminder.id not in gone), kept_only=True
        )
        for reminder, tokens in dropped:
            payload = {"reminder_id": reminder.id, "reason": "budget", "turn_number": turn}
            payload |= {"tokens": tokens, "dedupe_key": reminder.dedupe_key}
            log.lifecycle(Kind.DROPPED, transcript.id, payload)
    if over:
        payload = {"turn_number": turn, "reminder_ids": over, "budget_tokens": limit}
        log.lifecycle(Kind.OVER_BUDGET, transcript.id, {**payload, "used_tokens": used + kept})
    return transcript, cadence.spend(turn, kept, since)
