"""Canonical provider ``token_pressure``: warn as the live prompt nears the context window."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._core.request import Usage
from .base import ConfigSchema, ProviderContext, ProviderSpec, canonical_reminder

__all__ = ["CONFIG", "PROVIDER", "context_window", "evaluate", "live_tokens"]

# (level word, threshold percent), highest first; the first threshold reached wins.
_LEVELS: tuple[tuple[str, int], ...] = (("CRITICAL", 95), ("WARNING", 85), ("CAUTION", 70))


def _count(value: object) -> int | None:
    # bool is a subclass of int, but True is not a token count; negatives are not evidence.
    if type(value) is int and value >= 0:
        return value
    return None


def live_tokens(payload: object) -> int | None:
    """Return the live prompt size from an event payload, or ``None`` when it says nothing.

    Sources, first usable wins: ``context_tokens``, ``prompt_tokens``,
    ``usage["input_tokens"]`` (plus ``usage["output_tokens"]`` when present; ``usage`` is a
    mapping or a :class:`~agent_reminders.Usage`), ``tokens_used``.
    Only non-negative ``int`` values count; anything else falls through to the next source.

    Args:
        payload: The event payload; a non-mapping is treated as empty.

    Returns:
        The token count, or ``None``.
    """
    if type(payload) is not dict and not isinstance(payload, Mapping):
        return None
    for key in ("context_tokens", "prompt_tokens"):
        value = payload.get(key)
        if value is not None and (found := _count(value)) is not None:
            return found
    usage = payload.get("usage")
    if isinstance(usage, Usage):  # a host may pass the loop's record as it is
        usage = usage.to_dict()
    if type(usage) is dict or isinstance(usage, Mapping):
        source = _count(usage.get("input_tokens"))
        if source is not None:
            return source + (_count(usage.get("output_tokens")) or 0)
    return _count(payload.get("tokens_used"))


def context_window(payload: object, config: object) -> int | None:
    """Return the context window size: payload ``context_window``, else config ``context_window``.

    Args:
        payload: The event payload; a non-mapping is treated as empty.
        config: The provider config; a non-mapping is treated as absent.

    Returns:
        A positive ``int`` window, or ``None`` when neither source gives one.
    """
    for source in (payload, config):
        if type(source) is dict or isinstance(source, Mapping):
            window = _count(source.get("context_window"))
            if window:  # a zero window cannot hold anything, so it is no window at all
                return window
    return None


def evaluate(ctx: ProviderContext) -> dict[str, Any] | None:
    """Fire at CAUTION (70%), WARNING (85%) or CRITICAL (95%) of the context window.

    Args:
        ctx: The evaluation context; ``ctx.config`` may carry ``context_window``.

    Returns:
        One reminder mapping, or ``None`` below 70% or without token / window evidence.
    """
    used = live_tokens(ctx.payload)
    window = context_window(ctx.payload, ctx.config)
    if used is None or window is None:
        return None
    # Integer comparison so that exactly 70/85/95 percent fires regardless of float rounding.
    level = next((word for word, pct in _LEVELS if used * 100 >= pct * window), None)
    if level is None:
        return None
    percent = (200 * used + window) // (2 * window)  # round half up, in integers
    body = (
        f"Context pressure {level}: {percent}% of the context window is in use "
        f"({used}/{window} tokens). Compact or summarize the conversation before "
        "continuing, so that earlier details are not lost when the window overflows."
    )
    # Only the last warning before overflow must survive a compaction.
    return canonical_reminder(
        "token_pressure",
        body,
        ttl_turns=2,
        preserve_on_compact=level == "CRITICAL",
        role_hint="developer",
    )


# Keys of reminders.config['token_pressure'] and their types (checked at parse time).
CONFIG: ConfigSchema = {"context_window": (int,)}

PROVIDER = ProviderSpec(
    id="token_pressure",
    subscribes_to=("on_budget_threshold",),
    evaluate=evaluate,
    canonical=True,
    config_schema=CONFIG,
    cadence={"on_budget_threshold": {"cooldown_turns": 5}},
    cadence_key=lambda result: result.body.split(":", 1)[0],  # each level paced apart
    description="Warns at 70/85/95% of the context window and asks to compact or summarize.",
)
