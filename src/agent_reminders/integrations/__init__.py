"""Provider wire formats and framework integrations.

The wire formats are pure functions over a :class:`~agent_reminders.ModelRequest` and need no
SDK: ``to_openai_chat``, ``to_openai_responses``, ``to_anthropic``, ``to_gemini``, and the way
back for existing histories, ``from_openai_chat`` and ``from_anthropic``. Importing this
package imports no framework and no SDK, nor the wire formats until one is first read; the
framework integrations live in their own modules.
"""

from .._lazy import exports

TYPE_CHECKING = False  # what type checkers take as typing.TYPE_CHECKING, without loading typing
if TYPE_CHECKING:
    from .anthropic import anthropic_betas, from_anthropic, to_anthropic
    from .gemini import to_gemini
    from .openai import from_openai_chat, to_openai_chat, to_openai_responses
else:
    __getattr__, __dir__ = exports(
        __name__,
        {
            ".anthropic": ("anthropic_betas", "from_anthropic", "to_anthropic"),
            ".gemini": ("to_gemini",),
            ".openai": ("from_openai_chat", "to_openai_chat", "to_openai_responses"),
        },
    )

__all__ = [
    "anthropic_betas",
    "from_anthropic",
    "from_openai_chat",
    "to_anthropic",
    "to_gemini",
    "to_openai_chat",
    "to_openai_responses",
]
