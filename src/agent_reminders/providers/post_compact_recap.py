"""Canonical provider ``post_compact_recap``: a durable recap after compaction."""

from __future__ import annotations

from typing import Any

from .base import ConfigSchema, ProviderContext, ProviderSpec, canonical_reminder, mapping_or_empty

__all__ = ["CONFIG", "PROVIDER", "evaluate"]


def evaluate(ctx: ProviderContext) -> dict[str, Any] | None:
    """Fire when payload ``archived_messages`` is an ``int`` greater than zero.

    The body is a pure function of the payload, so an identical second compaction report gives
    an identical reminder, which the session recognizes as an unchanged durable reminder.

    Args:
        ctx: The evaluation context; the payload carries ``archived_messages`` and
            optionally ``summary``.

    Returns:
        One durable reminder mapping, or ``None`` when nothing was archived.
    """
    payload = mapping_or_empty(ctx.payload)
    archived = payload.get("archived_messages")
    # bool is an int subclass but not a count.
    if type(archived) is not int or archived <= 0:
        return None
    noun = "message was" if archived == 1 else "messages were"
    summary = payload.get("summary")
    if isinstance(summary, str) and summary.strip():
        body = (
            f"The conversation was compacted: {archived} earlier {noun} archived. "
            f"Recap of the archived part: {summary.strip()}"
        )
    else:
        body = (
            f"The conversation was compacted: {archived} earlier {noun} archived and no "
            "recap was provided. Do not rely on details from before the compaction without "
            "checking them again."
        )
    # lives until the next recap replaces it
    return canonical_reminder(
        "post_compact_recap", body, ttl_turns=None, tags=["recap"], preserve_on_compact=True
    )


# Keys of reminders.config['post_compact_recap'] and their types (checked at parse time).
CONFIG: ConfigSchema = {}

PROVIDER = ProviderSpec(
    id="post_compact_recap",
    subscribes_to=("post_compact",),
    evaluate=evaluate,
    canonical=True,
    config_schema=CONFIG,
    description="After compaction, restates the recap or how many messages were archived.",
)
