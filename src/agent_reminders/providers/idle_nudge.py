"""Canonical provider ``idle_nudge``: after a long pause, re-check state before acting."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .base import ConfigSchema, ProviderContext, ProviderSpec, canonical_reminder, mapping_or_empty

__all__ = ["CONFIG", "DEFAULT_IDLE_SECONDS", "PROVIDER", "evaluate"]

DEFAULT_IDLE_SECONDS = 60
_MIN_IDLE_SECONDS = 1


def _number(value: object) -> int | float | None:
    # bool is an int subclass but not a duration; NaN and infinities are not durations either.
    # Ints stay ints: converting a huge int to float would raise OverflowError.
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    return None


def _threshold_seconds(config: object) -> int | float:
    if isinstance(config, Mapping):
        for key in ("idle_seconds", "seconds"):
            seconds = _number(config.get(key))
            if seconds is not None:
                return max(seconds, _MIN_IDLE_SECONDS)
    return DEFAULT_IDLE_SECONDS


def evaluate(ctx: ProviderContext) -> dict[str, Any] | None:
    """Fire when payload ``wake_interval_ms`` reaches the idle threshold.

    The threshold is config ``idle_seconds`` (or ``seconds``), default 60, raised to at least 1.

    Args:
        ctx: The evaluation context.

    Returns:
        One reminder mapping, or ``None`` when the pause is shorter or not reported.
    """
    payload = mapping_or_empty(ctx.payload)
    waited_ms = _number(payload.get("wake_interval_ms"))
    if waited_ms is None or waited_ms < _threshold_seconds(ctx.config) * 1000:
        return None
    seconds = int(waited_ms // 1000)
    body = (
        f"The session was idle for {seconds} seconds. Files, processes or other state may "
        "have changed meanwhile; re-check the current state before acting on earlier results."
    )
    return canonical_reminder("idle_nudge", body, ttl_turns=1, tags=["idle"], propagate="none")


# Keys of reminders.config['idle_nudge'] and their types (checked at parse time).
CONFIG: ConfigSchema = {"idle_seconds": (int, float), "seconds": (int, float)}

PROVIDER = ProviderSpec(
    id="idle_nudge",
    subscribes_to=("session_idle",),
    evaluate=evaluate,
    canonical=True,
    config_schema=CONFIG,
    description="After a long idle pause, asks to re-check state before acting.",
)
