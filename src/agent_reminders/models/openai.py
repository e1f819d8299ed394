"""OpenAI backends on the official ``openai`` SDK: Chat Completions and the Responses API.

Both work with OpenAI and with OpenAI-compatible servers (vLLM, llama.cpp ``llama-server``,
Ollama, LM Studio) through ``base_url``. The request body is the library's one wire format
(:func:`~agent_reminders.integrations.to_openai_chat`, :func:`~agent_reminders.integrations.
to_openai_responses`); retries and timeouts are the SDK's own (``max_retries``, ``timeout``).
"""

from __future__ import annotations

from typing import Any

try:
    import openai
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    from .._core.errors import missing_extra

    raise missing_extra("openai", "openai", "agent_reminders.models.openai") from exc

from .._core.errors import ConfigError, ModelError
from .._core.records import Message
from .._core.request import ModelRequest, ModelResponse, Usage
from ..integrations import to_openai_chat, to_openai_responses
from ._base import (
    CacheKey,
    api_key_or_error,
    assistant_message,
    cache_key_for,
    cached_usage,
    check_client_options,
    connection_error,
    field_of,
    status_error,
)

__all__ = ["OpenAIChatModel", "OpenAIResponsesModel"]

PROVIDER = "openai"
_ENV = ("OPENAI_API_KEY",)


class _OpenAIBackend:
    """The client, the cache key and the error mapping both OpenAI backends share."""

    api_label = "OpenAI"
    prefix = "openai"

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

    def _error(self, exc: openai.APIError, client: openai.AsyncOpenAI) -> ModelError:
        url = str(client.base_url)
        if isinstance(exc, openai.APIStatusError):
            text = exc.response.text if exc.response is not None else None
            return status_error(PROVIDER, self._label(), exc.status_code, exc.body, text, url)
        if isinstance(exc, openai.APIConnectionError):
            timed_out = isinstance(exc, openai.APITimeoutError)
            return connection_error(
                PROVIDER, self._label(), url, timed_out=timed_out, detail=str(exc)
            )
        return ModelError(PROVIDER, f"{self._label()}: {type(exc).__name__}: {exc} ({url})")

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

    Example:
        >>> model = OpenAIChatModel("llama3.1", base_url="http://127.0.0.1:11434/v1")
        >>> model.name
        'openai:llama3.1'

    Raises:
        ModelError: (``RMD-108``, when called) an HTTP error or no response after the SDK's
            retries, naming the provider, the status and the server's message; or tool-call
            arguments that are not a JSON object.
        ConfigError: (when called) no API key and no ``base_url``.
    """

    api_label = "OpenAI chat"

    async def __call__(self, request: ModelRequest) -> ModelResponse:
        payload = to_openai_chat(request)
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
            raise self._error(exc, client) from None
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
            raise self._error(exc, client) from None
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
