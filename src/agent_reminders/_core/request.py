"""Model requests and responses, the Model protocol, and the tool records."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from .frozen import fast_init
from .records import Message

__all__ = [
    "Model",
    "ModelInfo",
    "ModelRequest",
    "ModelResponse",
    "Tool",
    "ToolCall",
    "ToolReceipt",
    "ToolResult",
    "Usage",
]


@fast_init
@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage reported for one model call.

    Attributes:
        input_tokens: The whole prompt, cached or not.
        output_tokens: The answer.
        cached_input_tokens: Prompt tokens read from the provider's prompt cache (``None``:
            the provider reported no such figure).
        cache_write_tokens: Prompt tokens written to the provider's prompt cache (Anthropic's
            ``cache_creation_input_tokens``; ``None`` where the provider reports none).
        cache_miss_reason: The provider's own reason why the prompt cache could not reuse the
            previous request's prefix (Anthropic's cache diagnostics: ``model_changed``,
            ``system_changed``, ``tools_changed``, ``messages_changed``,
            ``previous_message_not_found``, ``unavailable``); ``None`` when it gave none.

    Example:
        >>> Usage(input_tokens=1200, output_tokens=40, cached_input_tokens=0,
        ...       cache_write_tokens=1100, cache_miss_reason="system_changed").to_dict()
        {'input_tokens': 1200, 'output_tokens': 40, 'cached_input_tokens': 0, 'cache_write_tokens': 1100, 'cache_miss_reason': 'system_changed'}
    """  # noqa: E501

    input_tokens: int
    output_tokens: int
    cached_input_tokens: int | None = None
    cache_write_tokens: int | None = None
    cache_miss_reason: str | None = None

    def to_dict(self) -> dict[str, int | str | None]:
        """``{input_tokens, output_tokens, cached_input_tokens, cache_write_tokens,
        cache_miss_reason}``."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_input_tokens": self.cached_input_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "cache_miss_reason": self.cache_miss_reason,
        }


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool the model may call: ``fn(**arguments)`` returns a ``str`` or a ``ToolResult``
    (``fn`` may be sync or async)."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    fn: Callable[..., Any]

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"Tool.name must be a non-blank string; got {self.name!r}")
        if not callable(self.fn):
            raise TypeError(f"Tool {self.name!r}: fn must be callable")
        if not isinstance(self.parameters, Mapping):
            raise TypeError(f"Tool {self.name!r}: parameters must be a JSON-schema mapping")

    def spec(self) -> dict[str, Any]:
        """The neutral tool description sent in a request."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": dict(self.parameters),
        }

    async def call(self, arguments: Mapping[str, Any]) -> Any:
        """Run ``fn(**arguments)``, awaiting it when it is a coroutine function."""
        value = self.fn(**arguments)
        # a plain text result (the usual one) skips the ABC check of isawaitable
        if type(value) is not str and inspect.isawaitable(value):
            value = await value
        return value


@fast_init
@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One request to a model: the byte-stable system prompt, the messages (without internal
    ``directive_ids``), the tool specs, the session id and the turn number.

    ``messages`` is a read-only sequence (a view over the session's append-only history, O(1)
    per request; ``list(request.messages)`` gives a list) of read-only messages: nothing done
    to a request can change the stored history."""

    system: str
    messages: Sequence[Message]
    tools: list[dict[str, Any]] = field(default_factory=list)
    session_id: str = ""
    turn: int = 0


@fast_init
@dataclass(frozen=True, slots=True)
class ModelResponse:
    """A model's answer: an assistant ``message`` and optional ``usage``."""

    message: Message
    usage: Usage | None = None


# The endpoints of OpenAI itself: a model served anywhere else is an OpenAI-compatible server.
_OPENAI_HOSTS = ("https://api.openai.com", "http://api.openai.com")


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """Which model a request goes to, as a backend or an integration reports it: what the
    capability table is asked about when a session's ``channel`` is ``"auto"``.

    Attributes:
        provider: ``"anthropic"``, ``"openai"``, ``"gemini"`` or a name of your own.
        name: The model's name as the API takes it (``"claude-opus-4-8"``, ``"gpt-5"``).
        base_url: The endpoint, when it is not the provider's own (an OpenAI-compatible
            server: vLLM, llama.cpp, Ollama…).

    Example:
        >>> ModelInfo(provider="openai", name="qwen3", base_url="http://127.0.0.1:8080/v1").key
        'openai-compatible:qwen3'
    """

    provider: str
    name: str
    base_url: str | None = None

    @property
    def key(self) -> str:
        """``"provider:name"`` in lower case, as the capability table's patterns read it
        (``openai-compatible`` for OpenAI's wire format at another endpoint)."""
        provider = self.provider
        if (
            provider == "openai"
            and self.base_url
            and not self.base_url.rstrip("/").startswith(_OPENAI_HOSTS)
        ):
            provider = "openai-compatible"
        return f"{provider}:{self.name}".lower()


@runtime_checkable
class Model(Protocol):
    """Anything that turns a :class:`ModelRequest` into a :class:`ModelResponse`.

    A model may also have a ``model_info`` attribute (a :class:`ModelInfo`): ``agent_loop``
    then tells the session which model it talks to, and a session whose ``channel`` is
    ``"auto"`` sends its envelopes on the most trusted channel that model accepts.
    """

    def __call__(self, request: ModelRequest) -> Awaitable[ModelResponse]: ...


@fast_init
@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call as hooks see it."""

    id: str
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)


@fast_init
@dataclass(frozen=True, slots=True)
class ToolResult:
    """The result of a tool call; ``truncated``/``original_size`` are set when output was cut."""

    content: str
    ok: bool = True
    truncated: bool = False
    original_size: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{content, ok, truncated, original_size}``."""
        return {
            "content": self.content,
            "ok": self.ok,
            "truncated": self.truncated,
            "original_size": self.original_size,
        }


@fast_init
@dataclass(frozen=True, slots=True)
class ToolReceipt:
    """What happened around one tool call: ``reminders`` lists the hook-made reminders
    (``{reminder_id, tags, dedupe_key, source, role_hint, authority, ttl_turns,
    deduped_count}``, never the body)."""

    tool_call_id: str
    tool_name: str
    ok: bool
    reminders: list[dict[str, Any]] = field(default_factory=list)
