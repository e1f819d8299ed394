"""Reminder providers: the registry, the evaluation context and the canonical providers.

``parse_reminder_options`` validates what a provider returns (strict options:
see docs/core.md, "Reminder options"). The names of its modules are imported when first read
(``providers.registry`` loads every canonical provider).
"""

from .._core.fields import OPTION_KEYS, ParsedOptions, parse_reminder_options
from .._lazy import exports

TYPE_CHECKING = False  # what type checkers take as typing.TYPE_CHECKING, without loading typing
if TYPE_CHECKING:
    from .base import EVENTS, FireResult, ProviderContext, ProviderSpec, normalize_event
    from .fire import FirePolicy, ProviderState
    from .registry import (
        CANONICAL_PROVIDERS,
        OPTIONAL_PROVIDERS,
        ProviderRegistry,
        Resolution,
        lint_agent_options,
    )
else:
    __getattr__, __dir__ = exports(
        __name__,
        {
            ".base": ("EVENTS", "FireResult", "ProviderContext", "ProviderSpec", "normalize_event"),
            ".fire": ("FirePolicy", "ProviderState"),
            ".registry": (
                "CANONICAL_PROVIDERS",
                "OPTIONAL_PROVIDERS",
                "ProviderRegistry",
                "Resolution",
                "lint_agent_options",
            ),
        },
    )

__all__ = [
    "CANONICAL_PROVIDERS",
    "EVENTS",
    "FirePolicy",
    "FireResult",
    "OPTIONAL_PROVIDERS",
    "OPTION_KEYS",
    "ParsedOptions",
    "ProviderContext",
    "ProviderRegistry",
    "ProviderSpec",
    "ProviderState",
    "Resolution",
    "lint_agent_options",
    "normalize_event",
    "parse_reminder_options",
]

# defined with the field table; its documented home is this module
ParsedOptions.__module__ = __name__
