"""The one table of what each model accepts mid-conversation.

Which models take a ``system`` entry in the middle of the conversation (the trusted channel of
an envelope), and which take the two betas on top of it: ``clear_at`` (a one-turn directive
leaves the model's view without leaving the prompt) and tool changes (``tool_addition`` /
``tool_removal`` blocks instead of a new ``tools`` list). ``channel="auto"`` resolves through
it from the model a backend or an integration reports (:class:`ModelInfo`).

A row is a pattern over ``"provider:model"`` (``fnmatch`` syntax, lower case), the provider
being ``anthropic``, ``openai`` (OpenAI's own endpoint), ``openai-compatible`` (any other
``base_url``: vLLM, llama.cpp, Ollama…), ``gemini`` or a name of your own. Rows registered at
run time (:func:`register_model_capabilities`) come before the built-in ones, the latest
first; the first matching row answers, and a model no row matches takes nothing.

Sources of the built-in rows (read 2026-12-03):

- Anthropic, "Mid-conversation system messages" (platform.claude.com/docs/en/build-with-
  claude/mid-conversation-system-messages) and "What's new in Claude Opus 4.8": a ``system``
  entry inside ``messages`` on Claude Opus 4.8, no beta header; the ``anthropic`` SDK 2.16's
  ``BetaSystemMessageParam`` (``clear_at``) and ``BetaRequestToolAdditionBlockParam`` /
  ``BetaRequestToolRemovalBlockParam`` for the betas.
- ``langchain-anthropic``'s model profiles (``data/profile_augmentations.toml``:
  ``mid_conversation_system_messages``, ``mid_conversation_tools``) for the later Claude models.
- OpenAI: ``developer`` messages at any position of Chat Completions and as Responses input
  items, ranked above user messages (the chain of command of OpenAI's
  published Model Spec).
- Gemini: one ``systemInstruction``; no role for an instruction inside ``contents``.
"""

from __future__ import annotations

import fnmatch
import threading
from dataclasses import dataclass

from ._core.request import ModelInfo

__all__ = [
    "CAPABILITY_TABLE",
    "ModelCapabilities",
    "ModelInfo",
    "capabilities_for",
    "register_model_capabilities",
]


@dataclass(frozen=True, slots=True)
class ModelCapabilities:
    """What a model accepts in the middle of a conversation.

    Attributes:
        system_messages: A system (OpenAI: ``developer``) entry after the first turn, sent
            where it stands.
        clear_at: ``"clear_at": "next_user_message"`` on such an entry (Anthropic beta).
        tool_changes: ``tool_addition`` / ``tool_removal`` blocks in such an entry
            (Anthropic beta).
    """

    system_messages: bool = False
    clear_at: bool = False
    tool_changes: bool = False


NOTHING = ModelCapabilities()
_ALL = ModelCapabilities(system_messages=True, clear_at=True, tool_changes=True)
_NO_TOOLS = ModelCapabilities(system_messages=True, clear_at=True)

# (pattern, capabilities), first match wins. Dated model names (claude-opus-4-8-20260528) and
# aliases share a row through the trailing "*".
CAPABILITY_TABLE: tuple[tuple[str, ModelCapabilities], ...] = (
    ("anthropic:claude-opus-4-8*", _ALL),
    ("anthropic:claude-opus-5*", _ALL),
    ("anthropic:claude-sonnet-5-5*", _ALL),
    ("anthropic:claude-sonnet-5*", _NO_TOOLS),
    ("anthropic:claude-haiku-5-5*", _ALL),
    ("anthropic:claude-fable-5*", _ALL),
    ("anthropic:claude-mythos-5*", _ALL),
    ("openai:*", ModelCapabilities(system_messages=True)),
)

_lock = threading.Lock()
_registered: list[tuple[str, ModelCapabilities]] = []
_cache: dict[str, ModelCapabilities] = {}


def register_model_capabilities(
    pattern: str,
    *,
    system_messages: bool,
    clear_at: bool = False,
    tool_changes: bool = False,
) -> None:
    """Add a row to the table for this process, ahead of every row before it.

    ``pattern`` is ``"provider:model"`` with ``fnmatch`` wildcards, e.g.
    ``"openai-compatible:qwen3-*"`` for a local server whose chat template accepts a late
    system message, or ``"anthropic:claude-opus-4-8*"`` with ``system_messages=False`` to turn
    the trusted channel off for a model.

    Raises:
        ValueError: ``pattern`` has no ``provider:`` part, or a flag is not a bool.

    Example:
        >>> register_model_capabilities("openai-compatible:my-local-model", system_messages=True)
        >>> capabilities_for(ModelInfo(provider="openai", name="my-local-model",
        ...                            base_url="http://127.0.0.1:8080/v1")).system_messages
        True
    """
    if not isinstance(pattern, str) or ":" not in pattern or not pattern.split(":", 1)[0]:
        raise ValueError(f"pattern must be 'provider:model' (wildcards allowed); got {pattern!r}")
    for name, flag in (
        ("system_messages", system_messages),
        ("clear_at", clear_at),
        ("tool_changes", tool_changes),
    ):
        if type(flag) is not bool:
            raise ValueError(f"{name} must be True or False; got {flag!r}")
    row = ModelCapabilities(
        system_messages=system_messages,
        clear_at=system_messages and clear_at,
        tool_changes=system_messages and tool_changes,
    )
    with _lock:
        _registered.insert(0, (pattern.lower(), row))
        _cache.clear()


def capabilities_for(model: ModelInfo | None) -> ModelCapabilities:
    """What ``model`` accepts (nothing for ``None``: no model known).

    Example:
        >>> capabilities_for(ModelInfo(provider="anthropic", name="claude-opus-4-8")).clear_at
        True
        >>> capabilities_for(ModelInfo(provider="openai", name="gpt-5",
        ...                            base_url="http://localhost:8000/v1")).system_messages
        False
    """
    if model is None:
        return NOTHING
    key = model.key
    found = _cache.get(key)
    if found is not None:
        return found
    with _lock:
        rows = [*_registered, *CAPABILITY_TABLE]
        found = next((caps for pattern, caps in rows if fnmatch.fnmatchcase(key, pattern)), NOTHING)
        _cache[key] = found
    return found
