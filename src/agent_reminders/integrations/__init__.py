"""Provider wire formats and framework integrations.

The wire formats are pure functions over a :class:`~agent_reminders.ModelRequest` and need no
SDK: ``to_openai_chat``, ``to_openai_responses``, ``to_anthropic``, ``to_gemini``, and the way
back for existing histories, ``from_openai_chat`` and ``from_anthropic``. Importing this
package imports no framework and no SDK; the framework integrations live in their own modules.
"""

from .anthropic import anthropic_betas, from_anthropic, to_anthropic
from .gemini import to_gemini
from .openai import from_openai_chat, to_openai_chat, to_openai_responses

__all__ = [
    "anthropic_betas",
    "from_anthropic",
    "from_openai_chat",
    "to_anthropic",
    "to_gemini",
    "to_openai_chat",
    "to_openai_responses",
]
