"""Canonical provider ``project_facts``: recall durable project facts from the fact store."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._core.errors import FactError, ProviderSkippedError
from ..facts import DEFAULT_NAMESPACE, Fact, FactStore, normalize_kind
from .base import ConfigSchema, ProviderContext, ProviderSpec, canonical_reminder, mapping_or_empty
from .token_pressure import context_window, live_tokens

__all__ = ["CONFIG", "DEFAULT_PATH", "GENERIC_QUERY", "PROVIDER", "evaluate", "reads_store"]

DEFAULT_PATH = Path(".agent-reminders") / "facts.db"
GENERIC_QUERY = "project decisions constraints conventions requirements architecture"
DEFAULT_MAX_FACTS = 5
MAX_FACTS = 25
DEFAULT_MIN_CONFIDENCE = 0.5
DEFAULT_REFRESH_RATIO = 0.70


def _number(value: object, default: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    return float(value)


def _max_facts(config: Mapping[str, Any]) -> int:
    value = config.get("max_facts", DEFAULT_MAX_FACTS)
    if isinstance(value, bool) or not isinstance(value, int):
        return DEFAULT_MAX_FACTS
    return min(max(value, 0), MAX_FACTS)


def _kinds(value: object) -> list[str] | None:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list | tuple):
        return None
    kinds = [normalize_kind(k) for k in items if isinstance(k, str) and k.strip()]
    return kinds or None


def _query(config: Mapping[str, Any], payload: Mapping[str, Any]) -> str:
    for value in (config.get("relevance_query"), payload.get("task")):
        if isinstance(value, str) and value.strip():
            return value
    return GENERIC_QUERY


def _line(fact: Fact) -> str:
    evidence = fact.evidence[0] if fact.evidence else None
    source = f" (evidence: {evidence['kind']} {evidence['ref']})" if evidence else ""
    return f"- {fact.kind}, confidence {fact.confidence:.2f}: {fact.claim}{source}"


def _recall(config: Mapping[str, Any], payload: Mapping[str, Any], limit: int) -> list[Fact]:
    namespace = config.get("namespace")
    namespace = namespace if isinstance(namespace, str) and namespace.strip() else DEFAULT_NAMESPACE
    options: dict[str, Any] = {
        "namespace": namespace,
        "limit": limit,
        "min_confidence": _number(config.get("min_confidence"), DEFAULT_MIN_CONFIDENCE),
        "kinds": _kinds(config.get("kind_filter")),
    }
    store = config.get("store")
    if isinstance(store, FactStore):
        try:
            return store.recall(_query(config, payload), **options)
        except FactError as exc:
            raise ProviderSkippedError(f"project_facts skipped: {exc.message}") from exc
    raw = config.get("path")
    path = Path(os.fspath(raw)) if isinstance(raw, str | os.PathLike) and raw else DEFAULT_PATH
    if not path.exists():  # no store yet means no facts; never create one from here
        return []
    # A store that exists but cannot be used (a directory, a foreign or corrupt file, an
    # unreadable one) is reported, never read as "no facts": the session records the error in
    # provider_evaluated and goes on.
    try:
        with FactStore(path, create=False) as opened:
            return opened.recall(_query(config, payload), **options)
    except FactError as exc:
        raise ProviderSkippedError(
            f"project_facts skipped: cannot use fact store {path}: {exc.message}"
        ) from exc


def reads_store(ctx: ProviderContext) -> bool:
    """Whether evaluating ``ctx`` reads the fact store (its ``ProviderSpec.blocks_when``): always on
    ``session_start``; on ``on_budget_threshold`` only when live tokens / window reaches
    ``refresh_ratio``; never with ``max_facts=0``. Cheap and free of I/O, so the loop asks it
    before deciding to hop to a worker thread."""
    config: Mapping[str, Any] = mapping_or_empty(ctx.config)
    if ctx.event == "on_budget_threshold":  # the usual question: asked after every model call
        used = live_tokens(ctx.payload)
        window = None if used is None else context_window(ctx.payload, config)
        ratio = _number(config.get("refresh_ratio"), DEFAULT_REFRESH_RATIO)
        if window is None or used is None or used < ratio * window:
            return False
    return _max_facts(config) != 0


def evaluate(ctx: ProviderContext) -> dict[str, Any] | None:
    """Recall up to ``max_facts`` facts and state them, best match first.

    On ``on_budget_threshold`` it refreshes only when live tokens / window reaches
    ``refresh_ratio`` (default 0.70). Config: ``store`` or ``path``, ``namespace``,
    ``max_facts`` (5, clamped to 0..25), ``min_confidence`` (0.5), ``kind_filter``,
    ``relevance_query``, ``refresh_ratio``, ``context_window``.

    It reads SQLite (blocking I/O), so its ``ProviderSpec`` says ``blocking=True``.

    Raises:
        ProviderSkippedError: the fact store exists but cannot be used (a directory, not a fact
            store, unreadable); the message names the file. A missing file is no error.
    """
    if not reads_store(ctx):
        return None
    config: Mapping[str, Any] = mapping_or_empty(ctx.config)
    payload: Mapping[str, Any] = mapping_or_empty(ctx.payload)
    facts = _recall(config, payload, _max_facts(config))
    if not facts:
        return None
    namespace = facts[0].namespace
    body = "\n".join(
        [f"Project facts from '{namespace}' (recorded earlier; most relevant first):"]
        + [_line(f) for f in facts]
    )
    return canonical_reminder("project_facts", body, ttl_turns=1)


# Keys of reminders.config['project_facts'] and their types (checked at parse time).
CONFIG: ConfigSchema = {
    "store": (FactStore,),
    "path": (str, os.PathLike),
    "namespace": (str,),
    "max_facts": (int,),
    "min_confidence": (int, float),
    "kind_filter": (str, list, tuple),
    "relevance_query": (str,),
    "refresh_ratio": (int, float),
    "context_window": (int,),
}

PROVIDER = ProviderSpec(
    id="project_facts",
    subscribes_to=("session_start", "on_budget_threshold"),
    evaluate=evaluate,
    canonical=True,
    cadence={"on_budget_threshold": {"cooldown_turns": 10}},  # its refreshes, paced
    config_schema=CONFIG,
    blocking=True,
    blocks_when=reads_store,
    description="States recorded project facts at session start and under context pressure.",
)
