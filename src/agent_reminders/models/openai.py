"""OpenAI backends on the official ``openai`` SDK: Chat Completions and the Responses API.

Both work with OpenAI and with OpenAI-compatible servers (vLLM, llama.cpp ``llama-server``,
Ollama, LM Studio) through ``base_url``. The request body is the library's one wire format
(:func:`~agent_reminders.integrations.to_openai_chat`, :func:`~agent_reminders.integrations.
to_openai_responses`); retries and timeouts are the SDK's own (``max_retries``, ``timeout``).
An envelope on the system channel travels as a ``developer`` message (Chat Completions may
send ``system`` instead: ``system_role=``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

try:
    import openai
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    from .._core.errors import missing_extra

    raise missing_extra("openai", "openai", "agent_reminders.models.openai") from exc

from .._core.errors import ConfigError, ModelError
from .._core.records import Message
from .._core.request import ModelInfo, ModelRequest, ModelResponse, Usage
from ..integrations import to_openai_chat, to_openai_responses
from ..integrations.openai import SystemRole
from ._base import (
    CacheKey,
    api_key_or_error,
    assistant_message,
    cache_key_for,
    cached_usage,
    check_client_options,
    endpoint_of,
    field_of,
    sdk_error,
)

__all__ = ["OpenAIChatModel", "OpenAIResponsesModel"]

PROVIDER = "openai"
_ENV = ("OPENAI_API_KEY",)


class _OpenAIBackend:
    """The client, the cache key and the error mapping both OpenAI backends share."""

    api_label = "OpenAI"
    prefix = "openai"
    list_key = "messages"  # the request field that holds the conversation

    def __init__(
        self,
        model: str,
        *,
        client: openai.AsyncOpenAI | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        prompt_cache_key: CacheKey = None,
        max_retries: int | None = None,
        timeout: float | None = None,
        **request_options: Any,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ConfigError(
                f"{type(self).__name__}: model must be a non-blank name; got {model!r}"
            )
        check_client_options(
            type(self).__name__,
            client,
            base_url=base_url,
            api_key=api_key,
            max_retries=max_retries,
            timeout=timeout,
        )
        if not (
            prompt_cache_key is None
            or prompt_cache_key is False
            or isinstance(prompt_cache_key, str)
        ):
            raise ConfigError(
                f"{type(self).__name__}: prompt_cache_key must be a str, None (the session id) "
                f"or False (send none); got {prompt_cache_key!r}"
            )
        self.model = model
        self.name = f"{self.prefix}:{model}"
        self.base_url = base_url
        self.prompt_cache_key = prompt_cache_key
        self.max_retries = max_retries
        self.timeout = timeout
        self.request_options = dict(request_options)
        self._api_key = api_key
        self._client = client
        self._owns_client = client is None
        self.model_info = ModelInfo(
            provider=PROVIDER,
            name=model,
            base_url=endpoint_of(base_url, client, "OPENAI_BASE_URL", "api.openai.com"),
        )
        """The model, as ``agent_loop`` reports it to the session (``channel="auto"``): on
        OpenAI's endpoint the system channel (sent as ``developer``); another ``base_url``
        is an OpenAI-compatible server, on the user channel unless the capability table says
        otherwise."""

    @property
    def client(self) -> openai.AsyncOpenAI:
        """The SDK client, made on first use (building the backend needs no credentials).

        Raises:
            ConfigError: no API key (``api_key=``, ``OPENAI_API_KEY``) and no ``base_url``.
        """
        if self._client is None:
            base_url = self.base_url or None
            options: dict[str, Any] = {
                "api_key": api_key_or_error(
                    PROVIDER, self._api_key, _ENV, base_url, 'pip install "agent-reminders[openai]"'
                )
            }
            if base_url:
                options["base_url"] = base_url
            if self.max_retries is not None:
                options["max_retries"] = self.max_retries
            if self.timeout is not None:
                options["timeout"] = self.timeout
            self._client = openai.AsyncOpenAI(**options)
        return self._client

    def _cache_body(self, request: ModelRequest) -> dict[str, Any]:
        key = cache_key_for(self.prompt_cache_key, request)
        return {} if key is None else {"prompt_cache_key": key}

    def _label(self) -> str:
        return f"{self.api_label} model {self.model!r}"

    def _refusal_hint(self, said: str) -> str:
        """A backend's own way out of a refused system entry, added to the error."""
        return ""

    def _error(
        self, exc: openai.APIError, client: openai.AsyncOpenAI, entries: Sequence[int]
    ) -> ModelError:
        """``entries``: where the request's mid-conversation system entries stand."""
        return sdk_error(
            openai,
            exc,
            PROVIDER,
            self._label(),
            self.model_info,
            str(client.base_url),
            entries=entries,
            where=self.list_key,
            hint=self._refusal_hint,
        )

    async def aclose(self) -> None:
        """Close the SDK client when the backend made it (a given client is the caller's)."""
        if self._client is not None and self._owns_client:
            await self._client.close()
            self._client = None

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r}, base_url={self.base_url!r})"


class OpenAIChatModel(_OpenAIBackend):
    """A model on OpenAI Chat Completions (``POST /v1/chat/completions``, streaming off).

    Sends :func:`~agent_reminders.integrations.to_openai_chat` of each request plus ``model``
    and a ``prompt_cache_key`` (the session id unless ``prompt_cache_key=`` says otherwise;
    ``False`` sends none), and ``request_options`` (``temperature=``, ``max_tokens=`` …) as
    they are. The answer's tool calls become neutral ``{"id", "name", "arguments": dict}``;
    ``usage`` maps to :class:`~agent_reminders.Usage` with ``cached_input_tokens`` from
    ``usage.prompt_tokens_details.cached_tokens`` (``None`` when the server reports none).

    ``model_info`` tells ``agent_loop`` which model and endpoint this is: on OpenAI's own
    endpoint a session whose ``channel`` is ``"auto"`` sends its envelopes as ``developer``
    messages in place; at any other ``base_url`` as user messages, unless the capability
    table says the server's model takes a late system message
    (``register_model_capabilities("openai-compatible:NAME", system_messages=True)``).
    ``system_role="system"`` sends those entries as ``system`` messages, for a server that
    wants that role rather than ``developer``.

    Example:
        >>> model = OpenAIChatModel("llama3.1", base_url="http://127.0.0.1:11434/v1")
        >>> model.name, model.model_info.key, model.system_role
        ('openai:llama3.1', 'openai-compatible:llama3.1', 'developer')

    Raises:
        ModelError: (``RMD-108``, when called) an HTTP error or no response after the SDK's
            retries, naming the provider, the status and the server's message (a refused
            mid-conversation system entry names the entry and the ``channel`` setting that
            avoids it); or tool-call arguments that are not a JSON object.
        ConfigError: ``system_role`` is neither ``"developer"`` nor ``"system"``; (when
            called) no API key and no ``base_url``.
    """

    api_label = "OpenAI chat"

    def __init__(
        self,
        model: str,
        *,
        client: openai.AsyncOpenAI | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        prompt_cache_key: CacheKey = None,
        max_retries: int | None = None,
        timeout: float | None = None,
        system_role: SystemRole = "developer",
        **request_options: Any,
    ) -> None:
        if system_role != "developer" and system_role != "system":
            raise ConfigError(
                f"OpenAIChatModel: system_role must be 'developer' or 'system'; got {system_role!r}"
            )
        super().__init__(
            model,
            client=client,
            base_url=base_url,
            api_key=api_key,
            prompt_cache_key=prompt_cache_key,
            max_retries=max_retries,
            timeout=timeout,
            **request_options,
        )
        self.system_role: SystemRole = system_role

    def _refusal_hint(self, said: str) -> str:
        if self.system_role == "developer" and "developer" in said.lower():
            return (
                ', or OpenAIChatModel(..., system_role="system") for a server that takes a '
                "late system message but not the developer role"
            )
        return ""

    async def __call__(self, request: ModelRequest) -> ModelResponse:
        payload = to_openai_chat(request, system_role=self.system_role)
        options: dict[str, Any] = {"model": self.model, "messages": payload["messages"]}
        if payload["tools"]:
            options["tools"] = payload["tools"]
        client = self.client
        try:
            completion = await client.chat.completions.create(
                **options,
                stream=False,
                extra_body=self._cache_body(request) or None,
                **self.request_options,
            )
        except openai.APIError as exc:
            # the system prompt, when there is one, comes first; then one entry per message
            first = 1 if request.system else 0
            entries = [first + i for i, m in enumerate(request.messages) if m["role"] == "system"]
            raise self._error(exc, client, entries) from None
        choices = field_of(completion, "choices") or []
        if not choices:
            raise ModelError(PROVIDER, f"{self._label()}: the server returned no choices")
        return ModelResponse(
            message=self._message(field_of(choices[0], "message")),
            usage=self._usage(field_of(completion, "usage")),
        )

    def _message(self, wire: Any) -> Message:
        content = field_of(wire, "content") or field_of(wire, "refusal") or ""
        calls = []
        for i, call in enumerate(field_of(wire, "tool_calls") or []):
            function = field_of(call, "function")
            name = field_of(function, "name")
            where = f"choices[0].message.tool_calls[{i}] ({name}).function.arguments"
            calls.append((field_of(call, "id"), name, field_of(function, "arguments"), where))
        return assistant_message(PROVIDER, self._label(), content, calls)

    @staticmethod
    def _usage(usage: Any) -> Usage | None:
        return cached_usage(usage, "prompt_tokens", "completion_tokens", "prompt_tokens_details")


class OpenAIResponsesModel(_OpenAIBackend):
    """A model on the OpenAI Responses API (``POST /v1/responses``), used statelessly.

    Every call sends the whole input of
    :func:`~agent_reminders.integrations.to_openai_responses` with ``store=False`` and never a
    ``previous_response_id``, so the request itself is the conversation and stays append-only;
    the ``prompt_cache_key`` is the session id as for :class:`OpenAIChatModel`. Output
    ``message`` items give the text, ``function_call`` items the tool calls (``call_id`` is
    the id); ``usage.input_tokens_details.cached_tokens`` becomes ``cached_input_tokens``.
    Needs an ``openai`` SDK with the Responses API (1.66 or later).

    Example:
        >>> OpenAIResponsesModel("gpt-4.1-mini").name
        'openai-responses:gpt-4.1-mini'
    """

    api_label = "OpenAI Responses"
    prefix = "openai-responses"
    list_key = "input"

    async def __call__(self, request: ModelRequest) -> ModelResponse:
        payload = to_openai_responses(request)
        options: dict[str, Any] = {"model": self.model, "input": payload["input"], "store": False}
        if payload.get("instructions"):
            options["instructions"] = payload["instructions"]
        if payload["tools"]:
            options["tools"] = payload["tools"]
        client = self.client
        responses = getattr(client, "responses", None)
        if responses is None:  # pragma: no cover - only with openai < 1.66
            raise ConfigError(
                f"OpenAIResponsesModel needs openai>=1.66 (installed: {openai.__version__}); "
                'pip install -U "agent-reminders[openai]"'
            )
        try:
            response = await responses.create(
                **options, extra_body=self._cache_body(request) or None, **self.request_options
            )
        except openai.APIError as exc:
            # the system prompt is ``instructions``: every developer item is mid-conversation
            items = payload["input"]
            entries = [i for i, item in enumerate(items) if item.get("role") == "developer"]
            raise self._error(exc, client, entries) from None
        return ModelResponse(
            message=self._message(field_of(response, "output") or []),
            usage=self._usage(field_of(response, "usage")),
        )

    def _message(self, output: list[Any]) -> Message:
        texts: list[str] = []
        calls = []
        for i, item in enumerate(output):
            kind = field_of(item, "type")
            if kind == "message":
                for part in field_of(item, "content") or []:
                    if field_of(part, "type") in ("output_text", "refusal"):
                        texts.append(field_of(part, "text") or field_of(part, "refusal") or "")
            elif kind == "function_call":
                name = field_of(item, "name")
                where = f"output[{i}] ({name}).arguments"
                calls.append((field_of(item, "call_id"), name, field_of(item, "arguments"), where))
            # reasoning items are not kept: with store=False they cannot be referred to later
        return assistant_message(PROVIDER, self._label(), "".join(texts), calls)

    @staticmethod
    def _usage(usage: Any) -> Usage | None:
        return cached_usage(usage, "input_tokens", "output_tokens", "input_tokens_details")
