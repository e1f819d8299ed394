"""Canonical provider ``tool_output_truncated``: say when a tool result was cut short."""

from __future__ import annotations

from typing import Any

from .base import ConfigSchema, ProviderContext, ProviderSpec, canonical_reminder, mapping_or_empty

__all__ = ["CONFIG", "PROVIDER", "evaluate"]

_UNKNOWN_TOOL = "unknown"


def _size(value: object) -> int | None:
    # bool is an int subclass but not a size.
    if type(value) is int and value >= 0:
        return value
    return None


def evaluate(ctx: ProviderContext) -> dict[str, Any] | None:
    """Fire when payload ``truncated`` or ``result["truncated"]`` is ``True``.

    Args:
        ctx: The evaluation context; the payload carries ``tool_name``, ``truncated``,
            ``original_size`` and/or ``result``.

    Returns:
        One reminder mapping keyed per tool, or ``None`` when nothing was truncated.
    """
    payload = mapping_or_empty(ctx.payload)
    raw_result = payload.get("result")
    result = mapping_or_empty(raw_result)
    # Only a literal True counts: a truthy string or number is not evidence of truncation.
    if payload.get("truncated") is not True and result.get("truncated") is not True:
        return None

    name = payload.get("tool_name")
    tool = name.strip() if isinstance(name, str) and name.strip() else _UNKNOWN_TOOL
    size = _size(payload.get("original_size"))
    if size is None:
        size = _size(result.get("original_size"))
    size_text = f"{size} characters" if size is not None else "unknown size"

    body = (
        f"The output of tool '{tool}' was truncated (original output: {size_text}); only part "
        "of it was shown. Do not assume what the missing part says: read the rest in smaller "
        "pieces or narrow the query."
    )
    return canonical_reminder(
        "tool_output_truncated",
        body,
        ttl_turns=1,
        tags=["truncation"],
        dedupe_key=f"tool_output_truncated:{tool}",
        propagate="none",
    )


# Keys of reminders.config['tool_output_truncated'] and their types (checked at parse time).
CONFIG: ConfigSchema = {}

PROVIDER = ProviderSpec(
    id="tool_output_truncated",
    subscribes_to=("post_tool_use",),
    evaluate=evaluate,
    canonical=True,
    config_schema=CONFIG,
    description="Says when a tool's output was truncated and how to read the rest.",
)
