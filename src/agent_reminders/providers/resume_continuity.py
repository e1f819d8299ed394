"""Canonical provider ``resume_continuity``: tell a resumed worker where it left off."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .base import ConfigSchema, ProviderContext, ProviderSpec, canonical_reminder, mapping_or_empty

__all__ = ["CONFIG", "INITIATORS", "PROVIDER", "evaluate"]

INITIATORS: tuple[str, ...] = ("parent", "timeout", "trigger", "operator")


def _text(value: object) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _turn(value: object) -> str:
    # bool is an int subclass but not a turn number.
    if type(value) is int and value >= 0:
        return f"turn {value}"
    return "an unknown turn"


def _resumer(payload: Mapping[str, Any]) -> str:
    initiator = payload.get("initiator")
    if isinstance(initiator, str) and initiator in INITIATORS:
        who = initiator
    else:
        who = "an unknown initiator"
    ids = [
        f"{key} {value}"
        for key in ("trigger_id", "event_id")
        if (value := _text(payload.get(key))) is not None
    ]
    return f"{who} ({', '.join(ids)})" if ids else who


def _input(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value.strip() or None
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    except Exception:  # odd payloads must never make the provider raise
        return "(structured input that could not be rendered as text)"


def evaluate(ctx: ProviderContext) -> dict[str, Any] | None:
    """Always fire on ``worker_resumed`` with what the worker needs to continue.

    Missing or malformed payload fields are stated as unknown rather than suppressing the
    reminder, because a resumed worker always needs to know that it was suspended.

    Args:
        ctx: The evaluation context; the payload carries ``suspended_at_turn``, ``reason``,
            ``initiator``, ``trigger_id``, ``event_id``, ``input``, ``continue_transcript``
            and ``digest``.

    Returns:
        One reminder mapping.
    """
    payload = mapping_or_empty(ctx.payload)
    reason = _text(payload.get("reason")) or "none given"
    lines = [
        f"This worker was suspended at {_turn(payload.get('suspended_at_turn'))} "
        "and has now been resumed.",
        f"Reason: {reason}",
        f"Resumed by: {_resumer(payload)}.",
    ]
    given = _input(payload.get("input"))
    lines.append(f"Input given on resume: {given}" if given else "No input was given on resume.")
    digest = _text(payload.get("digest"))
    # The digest only matters when the earlier transcript was not carried over.
    if payload.get("continue_transcript") is False and digest is not None:
        lines.append(f"The earlier transcript was not kept; digest of the work so far: {digest}")
    return canonical_reminder(
        "resume_continuity",
        "\n".join(lines),
        ttl_turns=1,
        preserve_on_compact=True,
        propagate="none",
    )


# Keys of reminders.config['resume_continuity'] and their types (checked at parse time).
CONFIG: ConfigSchema = {}

PROVIDER = ProviderSpec(
    id="resume_continuity",
    subscribes_to=("worker_resumed",),
    evaluate=evaluate,
    canonical=True,
    config_schema=CONFIG,
    description="On resume, states where the worker stopped, why, who resumed it and the input.",
)
