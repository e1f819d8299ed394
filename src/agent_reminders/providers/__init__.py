"""Reminder providers: the registry, the evaluation context and the canonical providers."""

from .base import EVENTS, FireResult, ProviderContext, ProviderSpec, normalize_event
from .fire import FirePolicy, ProviderState
from .registry import CANONICAL_PROVIDERS, ProviderRegistry, lint_agent_options

__all__ = [
    "CANONICAL_PROVIDERS",
    "EVENTS",
    "FirePolicy",
    "FireResult",
    "ProviderContext",
    "ProviderRegistry",
    "ProviderSpec",
    "ProviderState",
    "lint_agent_options",
    "normalize_event",
]
