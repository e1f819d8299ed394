"""What the model backends share: credentials, endpoints, cache keys, error text, tool-call
arguments.

No SDK is imported here; each backend module maps its own SDK's exceptions onto these helpers.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, cast
from urllib.parse import urlsplit

from .._core.errors import ConfigError, MessageError, ModelError
from .._core.records import Message
from .._core.request import ModelInfo, ModelRequest, Usage
from ..integrations._wire import parse_arguments

__all__ = [
    "CacheKey",
    "api_key_or_error",
    "assistant_message",
    "cache_key_for",
    "cached_usage",
    "channel_error",
    "check_client_options",
    "connection_error",
    "count_of",
    "endpoint_of",
    "field_of",
    "sdk_error",
    "server_message_of",
    "status_error",
    "tool_arguments",
]

CacheKey = str | Literal[False] | None
"""``None``: the session id; a ``str``: that key for every request; ``False``: send none."""

# Local OpenAI-compatible servers (llama.cpp, Ollama, vLLM without --api-key) accept any key,
# but the SDKs refuse to build a client without one.
NO_KEY = "no-key"


def api_key_or_error(
    provider: str, api_key: str | None, env: Sequence[str], base_url: str | None, extra: str
) -> str:
    """The key to give the SDK: ``api_key``, else the first set variable of ``env``, else
    (only when a ``base_url`` points at another server) a placeholder.

    Raises:
        ConfigError: no key anywhere and no ``base_url``: the official endpoint needs one.
    """
    if api_key:
        return api_key
    for name in env:
        value = os.environ.get(name)
        if value:
            return value
    if base_url:
        return NO_KEY
    names = " or ".join(env)
    raise ConfigError(
        f"{provider}: no API key: set {names} in the environment or pass api_key= to the "
        f"backend ({extra}); for a local OpenAI-compatible server pass base_url= (any key is "
        "accepted there)"
    )


def check_client_options(provider: str, client: object, **given: object) -> None:
    """Refuse settings that a ready-made ``client`` would silently ignore."""
    if client is None:
        return
    clash = sorted(name for name, value in given.items() if value is not None)
    if clash:
        raise ConfigError(
            f"{provider}: {', '.join(clash)} cannot be combined with client=; configure the "
            "client itself (or pass the settings without a client)"
        )


def endpoint_of(base_url: str | None, client: object, env: str, own_host: str) -> str | None:
    """Where a backend's requests go, for its :class:`ModelInfo`: ``base_url``, else a given
    client's, else the SDK's own environment variable ``env`` (the SDK reads it too); ``None``
    for the provider's own endpoint (host ``own_host``)."""
    if base_url:
        url: str = base_url
    elif client is not None:
        url = str(field_of(client, "base_url") or "")
    else:
        url = os.environ.get(env, "")
    if not url or urlsplit(url).hostname == own_host:
        return None
    return url


def cache_key_for(setting: CacheKey, request: ModelRequest) -> str | None:
    """The ``prompt_cache_key`` of one request: one session one key (its id), unless set."""
    if setting is False:
        return None
    if isinstance(setting, str):
        return setting
    return request.session_id or None


def server_message_of(body: object, fallback: str | None = None) -> str | None:
    """What the server said in an error body: ``{"error": {"message"}}`` (OpenAI, Anthropic),
    ``{"message"}``, ``{"error": "text"}`` (some compatible servers), else ``fallback``."""
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(error, str) and error:
            return error
    if isinstance(body, str) and body:
        return body
    return fallback or None


def status_error(
    provider: str, label: str, status: int, body: object, text: str | None, url: str
) -> ModelError:
    """One :class:`ModelError` for an HTTP error status that survived the SDK's retries."""
    said = server_message_of(body, text)
    message = f"{label}: HTTP {status} from {url}" + (f": {said}" if said else "")
    return ModelError(provider, message, status=status, server_message=said)


def connection_error(
    provider: str, label: str, url: str, *, timed_out: bool, detail: str
) -> ModelError:
    """One :class:`ModelError` for a request that got no response (after the retries)."""
    what = "timed out" if timed_out else "could not connect"
    return ModelError(provider, f"{label}: {what} ({url}): {detail}; no response arrived")


def sdk_error(
    sdk: Any,
    exc: BaseException,
    provider: str,
    label: str,
    model: ModelInfo,
    url: str,
    *,
    entries: Sequence[int],
    where: str,
    hint: Callable[[str], str] | None = None,
) -> ModelError:
    """One :class:`ModelError` for an exception of an official SDK (``sdk``: the ``openai`` or
    ``anthropic`` module, which name their errors alike): a refused mid-conversation system
    entry (:func:`channel_error`, with ``hint(server message)`` added), another HTTP status,
    no response, or anything else the SDK raised."""
    if isinstance(exc, sdk.APIStatusError):
        body = exc.body
        text = exc.response.text if exc.response is not None else None
        said = server_message_of(body, text) or ""
        refused = channel_error(
            provider,
            label,
            model,
            exc.status_code,
            body,
            text,
            url,
            entries=entries,
            where=where,
            hint=hint(said) if hint is not None else "",
        )
        return refused or status_error(provider, label, exc.status_code, body, text, url)
    if isinstance(exc, sdk.APIConnectionError):
        timed_out = isinstance(exc, sdk.APITimeoutError)
        return connection_error(provider, label, url, timed_out=timed_out, detail=str(exc))
    return ModelError(provider, f"{label}: {type(exc).__name__}: {exc} ({url})")


def tool_arguments(provider: str, label: str, raw: object, where: str) -> dict[str, Any]:
    """A tool call's arguments as a mapping (``""`` is no arguments).

    Raises:
        ModelError: the model sent arguments that are not a JSON object; the message names
            the call and shows the start of the text (the call is never run on a guess).
    """
    try:
        return parse_arguments(raw, where)
    except MessageError as err:
        shown = raw if not isinstance(raw, str) or len(raw) <= 200 else raw[:200] + "…"
        raise ModelError(
            provider,
            f"{label}: the model sent malformed tool-call arguments: {err.message} "
            f"(received {shown!r})",
        ) from None


def field_of(value: Any, name: str) -> Any:
    """A field of an SDK object, or of a plain dict (older SDKs keep unknown fields raw).

    A field the SDK's model does not declare (``diagnostics`` on an ``anthropic`` older than
    the cache diagnostics) is one of its extras, ``model_extra``; attribute access reaches it
    too (pydantic serves extras as attributes), as the raw dict the server sent."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def count_of(value: Any) -> int | None:
    """A token count the server reported, or ``None`` when it reported none."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def assistant_message(
    provider: str,
    label: str,
    content: str,
    calls: Iterable[tuple[object, object, object, str]],
) -> Message:
    """The neutral assistant message of an answer: its text and its tool calls, each given as
    ``(id, name, raw arguments, where)`` (``where`` names the arguments in errors)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    neutral = [
        {"id": cid, "name": name, "arguments": tool_arguments(provider, label, raw, where)}
        for cid, name, raw, where in calls
    ]
    if neutral:
        message["tool_calls"] = neutral
    return cast(Message, message)


def cached_usage(usage: Any, input_key: str, output_key: str, details_key: str) -> Usage | None:
    """OpenAI-style usage (``prompt_tokens`` / ``input_tokens`` and a details object holding
    ``cached_tokens``) as a :class:`Usage`; ``None`` when the answer carried none."""
    if usage is None:
        return None
    return Usage(
        input_tokens=count_of(field_of(usage, input_key)) or 0,
        output_tokens=count_of(field_of(usage, output_key)) or 0,
        cached_input_tokens=count_of(field_of(field_of(usage, details_key), "cached_tokens")),
    )


# Where a server names the entry it refused: Anthropic "messages.3: …" / "messages.3.content",
# OpenAI "'messages[3].role'" / "input[3]".
_ENTRY = re.compile(r"\b(?:messages|input)(?:\.(\d+)|\[(\d+)\])")
_ROLE = re.compile(r"\b(?:system|developer)\b", re.IGNORECASE)
_WHY = re.compile(
    r"role|placement|position|first|beginning|start|follow|preced|alternat|support|allowed|"
    r"template|clear_at|tool_addition|tool_removal",
    re.IGNORECASE,
)
_BETA_FIELDS = ("clear_at", "tool_addition", "tool_removal")
# Statuses a refused role comes back with: 400 from the APIs, 422 from some proxies, 500 from
# compatible servers whose chat template raised.
_REFUSAL_STATUSES = frozenset({400, 422, 500})


def channel_error(
    provider: str,
    label: str,
    model: ModelInfo,
    status: int,
    body: object,
    text: str | None,
    url: str,
    *,
    entries: Sequence[int],
    where: str,
    hint: str = "",
) -> ModelError | None:
    """One :class:`ModelError` for a refused mid-conversation system entry, or ``None`` when
    the error is about something else.

    A refusal is recognised when the request carried such entries (``entries``: their indexes
    in the wire list named ``where``) and the server either names one of them
    (``messages.3``, ``messages[3]``, ``input[3]``) or, naming no entry, speaks of the system
    or developer role and where it stands or whether it is supported. The message names the
    model, the entry and the settings that avoid the error; ``hint`` adds a backend's own.
    """
    said = server_message_of(body, text)
    if status not in _REFUSAL_STATUSES or not said or not entries:
        return None
    named = _ENTRY.search(said)
    if named is not None:
        index = int(named[1] or named[2])
        if index not in entries:
            return None  # about another entry: the leading system prompt, a tool result…
        entry = f"{where}[{index}]"
    elif _ROLE.search(said) and _WHY.search(said):
        entry = f"{where}[{entries[0]}] (the first such entry of the request)"
    else:
        return None
    key = model.key
    if any(name in said for name in _BETA_FIELDS):
        table = (
            f'register_model_capabilities("{key}", system_messages=True) to keep the system '
            "channel without its betas"
        )
    else:
        table = (
            f'register_model_capabilities("{key}", system_messages=False) so that '
            'channel="auto" picks the user channel for this model'
        )
    message = (
        f"{label}: HTTP {status} from {url}: the server refused the mid-conversation system "
        f"entry at {entry}, an envelope sent on the system channel (it said: {said}). To send "
        'envelopes as user messages instead, use Session(channel="user") (on the command '
        f"line: serve --channel user), or {table}{hint}."
    )
    return ModelError(provider, message, status=status, server_message=said)
