"""Canonical provider ``workspace_anchor``: restate the session's workspace roots."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import ConfigSchema, ProviderContext, ProviderSpec, canonical_reminder

__all__ = ["CONFIG", "PROVIDER", "evaluate"]

_MODES = {"ro": "read-only", "rw": "read-write"}


def _path(value: object) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _roots(value: object) -> list[str]:
    if not isinstance(value, list | tuple):
        return []
    described = []
    for root in value:
        if type(root) is not dict and not isinstance(root, Mapping):
            continue
        path = _path(root.get("path"))
        # A missing mode means read-write, as in parse_workspace; an unknown one is skipped.
        raw_mode = root.get("mount_mode", "rw")
        mode = _MODES.get(raw_mode) if isinstance(raw_mode, str) else None
        if path is not None and mode is not None:
            described.append(f"{path} ({mode})")
    return described


def evaluate(ctx: ProviderContext) -> dict[str, Any] | None:
    """Fire whenever the session has a workspace anchor with a usable primary root.

    Args:
        ctx: The evaluation context; ``ctx.workspace`` holds the anchor.

    Returns:
        One reminder mapping, or ``None`` without a workspace.
    """
    workspace = ctx.workspace
    if type(workspace) is not dict and not isinstance(workspace, Mapping):
        return None
    primary = _path(workspace.get("primary"))
    if primary is None:
        return None
    roots = _roots(workspace.get("roots"))
    extra = f"Additional roots: {', '.join(roots)}." if roots else "There are no additional roots."
    body = (
        f"Primary workspace root: {primary}. {extra} Keep file work inside these roots and "
        "do not write to read-only roots."
    )
    return canonical_reminder("workspace_anchor", body, ttl_turns=1)


# Keys of reminders.config['workspace_anchor'] and their types (checked at parse time).
CONFIG: ConfigSchema = {}

PROVIDER = ProviderSpec(
    id="workspace_anchor",
    subscribes_to=("session_start", "on_budget_threshold"),
    evaluate=evaluate,
    canonical=True,
    cadence={"on_budget_threshold": {"cooldown_turns": 10}},  # its refreshes, paced
    config_schema=CONFIG,
    description="Restates the primary workspace root and each additional root with its mode.",
)
