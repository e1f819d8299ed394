"""Built-in provider ``goal_anchor``, off by default: restates the task's goal every few turns and
after compaction (docs/restraint.md, "Goal re-anchoring").

Long agent runs lose the goal first: it sits in the first user message, further and further
back. ``goal_anchor`` restates it — the ``goal`` of its config, else the session's first user
message (the one it stated before, once it has: a compaction may archive that message) — once
``every`` turns have passed (default 10), and again right after a compaction, which archives
the message that held it. Once its full text was sent, a restatement is a
one-line short repeat naming it; after a compaction it is the full text again. Its pacing is the
session's cadence: ``first_after`` and ``cooldown_turns`` of ``every`` turns.

Enable it with ``reminders={"providers": ["goal_anchor"]}``; set the text and the pace with
``reminders={"config": {"goal_anchor": {"goal": "...", "every": 10}}}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._core.envelope import message_text
from .base import ConfigSchema, ProviderContext, ProviderSpec, canonical_reminder, mapping_or_empty

__all__ = ["CONFIG", "DEFAULT_INTERVAL", "MAX_GOAL_CHARS", "PROVIDER", "evaluate"]

DEFAULT_INTERVAL = 10
MAX_GOAL_CHARS = 1000


_PREFIX = "The goal of this task, restated so it stays in view: "


def _goal(ctx: ProviderContext, config: Mapping[str, Any]) -> str | None:
    """The goal: the config's, else the one it stated before (a compaction may have archived
    the message it came from), else the session's first user message."""
    goal = config.get("goal")
    if isinstance(goal, str) and goal.strip():
        return goal.strip()
    stated = ctx.full_bodies.get("goal_anchor")
    if stated is not None and stated.startswith(_PREFIX):
        return stated[len(_PREFIX) :]
    if ctx.transcript is None:
        return None
    for message in ctx.transcript.message_view():
        if message.get("role") == "user" and "directive_ids" not in message:
            text = " ".join(message_text(message).split())
            if text:
                return text if len(text) <= MAX_GOAL_CHARS else text[: MAX_GOAL_CHARS - 1] + "…"
    return None


def evaluate(ctx: ProviderContext) -> dict[str, Any] | None:
    """Restate the goal on ``post_step`` (paced: not before ``interval`` turns, then at most
    once per ``interval`` turns) and on ``post_compact`` (at once).

    Args:
        ctx: The evaluation context; ``ctx.config`` may set ``goal`` (else the session's first
            user message) and ``interval`` (default 10).

    Returns:
        One reminder mapping, or ``None`` without a goal.
    """
    config = mapping_or_empty(ctx.config)
    goal = _goal(ctx, config)
    if goal is None:
        return None
    every = config.get("interval")
    every = every if type(every) is int and every > 0 else DEFAULT_INTERVAL
    body = _PREFIX + goal
    pace = {} if ctx.event == "post_compact" else {"first_after": every, "cooldown_turns": every}
    # no TTL: the goal holds until restated; a restatement replaces it (one key)
    return canonical_reminder("goal_anchor", body, ttl_turns=None, propagate="none", **pace)


# Keys of reminders.config['goal_anchor'] and their types (checked at parse time).
CONFIG: ConfigSchema = {"goal": (str,)}  # and the interval every provider takes

PROVIDER = ProviderSpec(
    id="goal_anchor",
    subscribes_to=("post_step", "post_compact"),
    evaluate=evaluate,
    config_schema=CONFIG,
    interval=DEFAULT_INTERVAL,
    description="Off by default: restates the task's goal every few turns and after compaction.",
)
