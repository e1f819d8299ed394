"""The Anthropic backend on the official ``anthropic`` SDK (Messages API, streaming off).

The request body is the library's one wire format
(:func:`~agent_reminders.integrations.to_anthropic`, with its cache breakpoints and, on a
model that takes them, mid-conversation system entries and ``clear_at``); retries and
timeouts are the SDK's own (``max_retries``, ``timeout``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

try:
    import anthropic
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    from .._core.errors import missing_extra

    raise missing_extra("anthropic", "anthropic", "agent_reminders.models.anthropic") from exc

from .._core.errors import ConfigError, ModelError
from .._core.records import Message
from .._core.request import ModelInfo, ModelRequest, ModelResponse, Usage
from ..capabilities import capabilities_for
from ..integrations import anthropic_betas, to_anthropic
from ._base import (
    api_key_or_error,
    assistant_message,
    check_client_options,
    count_of,
    endpoint_of,
    field_of,
    sdk_error,
)

__all__ = ["AnthropicModel"]

PROVIDER = "anthropic"
_ENV = ("ANTHROPIC_API_KEY",)
_BETA = "anthropic-beta"
PREVIOUS_IDS_KEPT = 256
"""With ``diagnostics=True``: how many sessions' last response ids a backend remembers (the
least recently used session is forgotten first; its next request then opts in with a ``null``
previous id, as a first request does)."""


class AnthropicModel:
    """A model on Anthropic's Messages API (``POST /v1/messages``).

    Sends :func:`~agent_reminders.integrations.to_anthropic` of each request (``cache=True``
    puts the ``cache_control`` breakpoints where the prompt cache finds them) with ``model``
    and ``max_tokens``, plus ``request_options`` (``temperature=`` …) as they are. ``text``
    blocks of the answer give the text and ``tool_use`` blocks the tool calls. Usage:
    ``Usage.input_tokens`` is the whole prompt (``input_tokens + cache_read_input_tokens +
    cache_creation_input_tokens``), ``cached_input_tokens`` is ``cache_read_input_tokens`` and
    ``cache_write_tokens`` is ``cache_creation_input_tokens`` (each ``None`` when the server
    reports no such figure).

    ``diagnostics=True`` opts into Anthropic's cache diagnostics: each request carries
    ``"diagnostics": {"previous_message_id": ...}`` — the id of the previous response of the
    same session (:attr:`ModelRequest.session_id`), ``null`` on a session's first request or
    on a request without a session id — and the ``anthropic-beta`` header
    :data:`~agent_reminders.integrations.anthropic.CACHE_DIAGNOSIS_BETA`. The response's
    ``diagnostics.cache_miss_reason.type`` becomes ``Usage.cache_miss_reason``
    (``system_changed``, ``messages_changed`` …; ``None`` when there was no miss or the
    diagnosis is still pending), and ``agent_loop`` records a ``transcript.cache_missed``
    event for it. The backend remembers the last response id of at most
    :data:`PREVIOUS_IDS_KEPT` sessions.

    ``model_info`` tells ``agent_loop`` which model this is, so a session whose ``channel`` is
    ``"auto"`` sends its envelopes as ``system`` entries where the capability table says the
    model takes them. On a model with the ``clear_at`` beta a one-turn envelope carries
    ``"clear_at": "next_user_message"``; the ``anthropic-beta`` header then names the betas
    the body uses (:func:`~agent_reminders.integrations.anthropic_betas`), added to any the
    client or ``extra_headers=`` already send.

    Example:
        >>> model = AnthropicModel("claude-sonnet-4-5", max_tokens=1024)
        >>> model.name, model.cache, model.diagnostics
        ('anthropic:claude-sonnet-4-5', True, False)
        >>> AnthropicModel("claude-opus-4-8", base_url="http://127.0.0.1:9000").model_info
        ModelInfo(provider='anthropic', name='claude-opus-4-8', base_url='http://127.0.0.1:9000')

    Raises:
        ModelError: (``RMD-108``, when called) an HTTP error or no response after the SDK's
            retries, naming the provider, the status and the server's message; a refused
            mid-conversation system entry names the entry and the ``channel`` setting that
            avoids it.
        ConfigError: (when called) no API key (``api_key=``, ``ANTHROPIC_API_KEY``) and no
            ``base_url``.
    """

    def __init__(
        self,
        model: str,
        *,
        client: anthropic.AsyncAnthropic | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        max_tokens: int = 4096,
        cache: bool = True,
        diagnostics: bool = False,
        max_retries: int | None = None,
        timeout: float | None = None,
        **request_options: Any,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ConfigError(f"AnthropicModel: model must be a non-blank name; got {model!r}")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ConfigError(f"AnthropicModel: max_tokens must be an int >= 1; got {max_tokens!r}")
        check_client_options(
            "AnthropicModel",
            client,
            base_url=base_url,
            api_key=api_key,
            max_retries=max_retries,
            timeout=timeout,
        )
        self.model = model
        self.name = f"anthropic:{model}"
        self.base_url = base_url
        self.max_tokens = max_tokens
        self.cache = bool(cache)
        self.diagnostics = bool(diagnostics)
        # session id -> the id of its last response, least recently used first
        self._previous: OrderedDict[str, str] = OrderedDict()
        self.max_retries = max_retries
        self.timeout = timeout
        self.request_options = dict(request_options)
        self._api_key = api_key
        self._client = client
        self._owns_client = client is None
        self.model_info = ModelInfo(
            provider=PROVIDER,
            name=model,
            base_url=endpoint_of(base_url, client, "ANTHROPIC_BASE_URL", "api.anthropic.com"),
        )
        """The model, as ``agent_loop`` reports it to the session (``channel="auto"``)."""

    @property
    def client(self) -> anthropic.AsyncAnthropic:
        """The SDK client, made on first use (building the backend needs no credentials).

        Raises:
            ConfigError: no API key and no ``base_url``.
        """
        if self._client is None:
            base_url = self.base_url or None
            options: dict[str, Any] = {
                "api_key": api_key_or_error(
                    PROVIDER,
                    self._api_key,
                    _ENV,
                    base_url,
                    'pip install "agent-reminders[anthropic]"',
                )
            }
            if base_url:
                options["base_url"] = base_url
            if self.max_retries is not None:
                options["max_retries"] = self.max_retries
            if self.timeout is not None:
                options["timeout"] = self.timeout
            self._client = anthropic.AsyncAnthropic(**options)
        return self._client

    def _label(self) -> str:
        return f"Anthropic model {self.model!r}"

    async def __call__(self, request: ModelRequest) -> ModelResponse:
        clear_at = capabilities_for(self.model_info).clear_at
        payload = to_anthropic(request, cache=self.cache, clear_at=clear_at)
        options: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": payload["messages"],
        }
        if payload["system"]:
            options["system"] = payload["system"]
        if payload["tools"]:
            options["tools"] = payload["tools"]
        body: dict[str, Any] = {}
        if self.diagnostics:
            previous = self._previous.get(request.session_id) if request.session_id else None
            body["diagnostics"] = {"previous_message_id": previous}
        client = self.client
        extra = self._headers(client, anthropic_betas({**payload, **body}))
        if body:  # through extra_body: older SDKs have no diagnostics parameter
            extra["extra_body"] = {**(extra.get("extra_body") or {}), **body}
        try:
            message = await client.messages.create(**options, **extra)
        except anthropic.APIError as exc:
            raise self._error(exc, client, payload["messages"]) from None
        if self.diagnostics and request.session_id:
            self._remember(request.session_id, field_of(message, "id"))
        return ModelResponse(
            message=self._message(field_of(message, "content") or []),
            usage=self._usage(field_of(message, "usage"), field_of(message, "diagnostics")),
        )

    def _remember(self, session_id: str, message_id: object) -> None:
        """Keep ``message_id`` as the session's previous response (a bounded LRU)."""
        if not isinstance(message_id, str) or not message_id:
            self._previous.pop(session_id, None)  # nothing to compare the next request with
            return
        self._previous[session_id] = message_id
        self._previous.move_to_end(session_id)
        while len(self._previous) > PREVIOUS_IDS_KEPT:
            self._previous.popitem(last=False)

    def _headers(self, client: anthropic.AsyncAnthropic, betas: list[str]) -> dict[str, Any]:
        """``request_options`` with the ``anthropic-beta`` header the body needs: the values
        the client and ``extra_headers=`` send, then the missing ones (a header given per
        request replaces the client's, so both are kept here)."""
        options = dict(self.request_options)
        if not betas:
            return options
        given: dict[str, Any] = dict(options.get("extra_headers") or {})
        values: list[str] = []
        sources: list[Mapping[str, Any]] = [client.default_headers, given]
        for headers in sources:
            for name, value in headers.items():
                if name.lower() == _BETA and isinstance(value, str):
                    values.extend(v.strip() for v in value.split(",") if v.strip())
        values.extend(beta for beta in betas if beta not in values)
        headers = {k: v for k, v in given.items() if k.lower() != _BETA}
        headers[_BETA] = ",".join(dict.fromkeys(values))
        options["extra_headers"] = headers
        return options

    def _error(
        self,
        exc: anthropic.APIError,
        client: anthropic.AsyncAnthropic,
        messages: list[dict[str, Any]],
    ) -> ModelError:
        return sdk_error(
            anthropic,
            exc,
            PROVIDER,
            self._label(),
            self.model_info,
            str(client.base_url),
            # the system prompt is a field of its own: every system entry is mid-list
            entries=[i for i, m in enumerate(messages) if m["role"] == "system"],
            where="messages",
        )

    def _message(self, blocks: list[Any]) -> Message:
        texts: list[str] = []
        calls = []
        for i, block in enumerate(blocks):
            kind = field_of(block, "type")
            if kind == "text":
                texts.append(field_of(block, "text") or "")
            elif kind == "tool_use":
                name = field_of(block, "name")
                where = f"content[{i}] ({name}).input"
                calls.append((field_of(block, "id"), name, field_of(block, "input"), where))
            # thinking blocks are not kept (extended thinking with tools is not supported yet)
        return assistant_message(PROVIDER, self._label(), "".join(texts), calls)

    @staticmethod
    def _usage(usage: Any, diagnostics: Any) -> Usage | None:
        """``usage`` and the top-level ``diagnostics`` of a response (SDKs without a
        ``diagnostics`` field keep it among the message's extra fields, as a dict)."""
        if usage is None:
            return None
        fresh = count_of(field_of(usage, "input_tokens")) or 0
        read = count_of(field_of(usage, "cache_read_input_tokens"))
        written = count_of(field_of(usage, "cache_creation_input_tokens"))
        reason = field_of(field_of(diagnostics, "cache_miss_reason"), "type")
        return Usage(
            input_tokens=fresh + (read or 0) + (written or 0),
            output_tokens=count_of(field_of(usage, "output_tokens")) or 0,
            cached_input_tokens=read,
            cache_write_tokens=written,
            cache_miss_reason=reason if isinstance(reason, str) and reason else None,
        )

    async def aclose(self) -> None:
        """Close the SDK client when the backend made it (a given client is the caller's)."""
        if self._client is not None and self._owns_client:
            await self._client.close()
            self._client = None

    async def __aenter__(self) -> AnthropicModel:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"AnthropicModel({self.model!r}, base_url={self.base_url!r})"
