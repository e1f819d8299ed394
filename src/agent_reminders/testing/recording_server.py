"""A local model server that records requests and answers like OpenAI or Anthropic would."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import urlsplit

from .._core.request import ModelResponse
from ..integrations.anthropic import strip_cache_control
from ._refusals import anthropic_refusal, openai_role_refusal
from ._sse import anthropic_sse_events
from .prompt_cache import AnthropicPromptCache
from .scripted import response_from

__all__ = [
    "RecordedRequest",
    "RecordingModelServer",
    "ServerReply",
    "anthropic_refusal",
    "strip_cache_control",
]

Api = Literal["chat", "responses", "messages"]

# Path suffix -> API, so both SDKs work with either base URL (``.../v1`` or the root).
_ROUTES: tuple[tuple[str, Api], ...] = (
    ("/chat/completions", "chat"),
    ("/responses", "responses"),
    ("/messages", "messages"),
)
_BYTES_PER_TOKEN = 4
_ERROR_KEYS = frozenset({"error", "status", "headers"})

ServerReply = ModelResponse | Mapping[str, Any] | str
"""What a script entry or handler gives: a response, a response mapping or a ``str``."""


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One HTTP request the server received.

    Attributes:
        api: ``"chat"`` (Chat Completions), ``"responses"`` or ``"messages"`` (Anthropic).
        method: ``"POST"``.
        path: The request path without the query string (``"/v1/chat/completions"``).
        query: The query string (``"beta=true"``) or ``""``.
        headers: Header names in lower case, e.g. ``headers["authorization"]``.
        body: The raw request bytes, exactly as the client sent them.
        json: ``body`` parsed as JSON (``None`` when it is not JSON).
    """

    api: Api
    method: str
    path: str
    query: str
    headers: Mapping[str, str]
    body: bytes
    json: Any


def _conversation(api: Api, body: Mapping[str, Any]) -> list[Any]:
    """The prompt as a list of items, each item being one unit of prefix caching."""
    if api == "chat":
        return [body.get("tools"), *(body.get("messages") or [])]
    if api == "responses":
        return [body.get("tools"), body.get("instructions"), *(body.get("input") or [])]
    system = body.get("system")
    return [body.get("tools"), system, *(body.get("messages") or [])]


def _has_cache_control(value: Any) -> bool:
    if isinstance(value, Mapping):
        return "cache_control" in value or any(_has_cache_control(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_cache_control(v) for v in value)
    return False


def _size(item: Any) -> int:
    return len(json.dumps(item, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def _tokens(nbytes: int) -> int:
    return -(-nbytes // _BYTES_PER_TOKEN)


def _output_tokens(response: ModelResponse) -> int:
    if response.usage is not None:
        return response.usage.output_tokens
    return _tokens(_size(response.message))


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(str(b.get("text", "")) for b in content or [] if isinstance(b, Mapping))


@dataclass(frozen=True, slots=True)
class _Stream:
    """An Anthropic message to send as server-sent events instead of one JSON body."""

    message: dict[str, Any]


def _error_body(api: Api, status: int, message: str) -> dict[str, Any]:
    kind = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error"}
    kind |= {429: "rate_limit_error", 529: "overloaded_error"}
    if api == "messages":
        return {
            "type": "error",
            "error": {"type": kind.get(status, "api_error"), "message": message},
        }
    return {
        "error": {
            "message": message,
            "type": kind.get(status, "server_error"),
            "param": None,
            "code": None,
        }
    }


class RecordingModelServer:
    """A local HTTP model server for tests: records every request, answers from a script.

    It listens on ``127.0.0.1`` on a free port, in a background thread, and speaks enough of
    ``POST /v1/chat/completions``, ``POST /v1/responses`` and Anthropic's ``POST /v1/messages``
    (also streamed) for the real ``openai`` and ``anthropic`` clients — and the Claude Code
    CLI — to run a multi-turn, tool-using session against it. ``base_url``
    (``http://127.0.0.1:PORT/v1``) works for both SDKs: requests are routed by the end of
    their path; the Claude Code CLI takes the root, ``url``, as ``ANTHROPIC_BASE_URL``.

    ``script`` is a list of replies, played in order whatever the API (``loop=True`` starts over
    instead of running out), or a callable ``fn(recorded_request) -> reply``. A reply is what
    :class:`~agent_reminders.testing.ScriptedModel` takes — a ``ModelResponse``, a ``str``,
    ``{"content": "text"}``, ``{"tool_calls": [{"id", "name", "arguments"}]}``,
    ``{"message": {...}}``, optionally with ``"usage"`` and ``"delay_seconds"`` (the server
    sleeps before answering) — plus two server-only forms:

    - ``{"error": "message", "status": 500}`` answers with that HTTP error in the provider's
      error shape (``headers`` may add response headers, e.g. ``{"retry-after": "0"}``);
    - ``"raw_usage": {...}`` on a reply is sent as the response's ``usage`` object verbatim;
    - ``{"raw_response": {...}}`` is sent as the whole response body (status 200) verbatim,
      for shapes a neutral reply cannot express (e.g. tool-call arguments that are not JSON).

    What the server answered is kept in ``replies`` (``(status, body)``, one per request).

    Usage, unless scripted: the prompt is cut into items (the tools, the system text, each
    message or input item; Anthropic ``cache_control`` markers removed) and one token is 4
    bytes of an item's compact JSON. ``cached`` is the size of the longest run of leading
    items equal to the previous request's of the same API and cache key (``prompt_cache_key``
    for OpenAI; Anthropic: only when the request carries ``cache_control`` markers, and only up
    to the last marked item, the rest counted as written to the cache). A scripted neutral
    ``usage`` ``{input_tokens, output_tokens, cached_input_tokens}`` is mapped to each API's
    fields (for Anthropic ``input_tokens`` is the whole prompt, so ``cache_read_input_tokens``
    = cached and ``input_tokens`` = the rest). With ``cached_tokens=False`` no cached-token
    figure is sent at all, as many OpenAI-compatible servers do.

    ``prompt_cache``: an :class:`~agent_reminders.testing.AnthropicPromptCache` (also
    ``server.prompt_cache``) gives ``/messages`` answers, streamed or not, the usage its
    simulated prompt cache counts — ``input_tokens``, ``cache_read_input_tokens``,
    ``cache_creation_input_tokens``, ``cache_creation`` (output tokens as above) — and, to a
    request with a ``diagnostics`` object, the top-level ``diagnostics``, fingerprinted under
    the ``msg_n`` id this server answers with. Its refusals (too many breakpoints, a ``1h``
    one after a ``5m`` one, ``diagnostics`` without its beta) are the server's 400s. A
    scripted ``raw_usage`` still wins over its usage; ``cached_tokens`` does not apply.

    Streaming: an Anthropic Messages request with ``"stream": true`` (what the Claude Code CLI
    and the Claude Agent SDK send) is answered with the server-sent events of the Messages API
    — ``message_start``, then per content block ``content_block_start``,
    ``content_block_delta`` (``text_delta`` / ``input_json_delta``) and
    ``content_block_stop``, then ``message_delta`` (stop reason, output tokens) and
    ``message_stop`` — carrying the same message and usage as the non-streaming answer;
    ``replies`` keeps that message. A Chat Completions or Responses request asking for
    ``"stream": true``, an unknown path, a body that is not JSON, an exhausted script or a
    handler that raises gets an HTTP error (400, 404, 400, 500, 500) whose message says why;
    handler exceptions are also kept in ``errors``.

    What the real APIs refuse, the server refuses too, before any reply is played (the script
    does not move on): on ``/messages`` every rule for a ``system`` entry inside ``messages``
    — a model the capability table says takes one, not first, after a ``user`` entry (or an
    ``assistant`` one ending in a ``server_tool_use`` block), last or before an ``assistant``
    entry, never next to another ``system`` entry, text only — and the betas on top of it
    (``clear_at`` only on such an entry, with the ``anthropic-beta`` header
    ``mid-conversation-system-clear-at-2026-08-21`` and a model that takes it;
    ``tool_addition`` / ``tool_removal`` blocks likewise with
    ``mid-conversation-tool-changes-2026-07-01``), answered as the API answers: HTTP 400,
    ``{"type": "error", "error": {"type": "invalid_request_error", "message":
    "messages.3: …"}}`` naming the entry. So a misplaced entry fails a test the way it fails
    in production. Chat Completions and Responses refuse an unknown role (``param``
    ``messages[3].role``) and take ``developer`` and ``system`` at any position, as OpenAI
    does.

    Example:
        >>> import anyio, openai
        >>> async def ask(base_url):
        ...     async with openai.AsyncOpenAI(base_url=base_url, api_key="test") as client:
        ...         return await client.chat.completions.create(
        ...             model="m", messages=[{"role": "user", "content": "hi"}])
        >>> with RecordingModelServer([{"content": "hello"}]) as server:
        ...     completion = anyio.run(ask, server.base_url)
        >>> completion.choices[0].message.content
        'hello'
        >>> [r.path for r in server.requests], server.requests[0].json["messages"][0]["content"]
        (['/v1/chat/completions'], 'hi')
    """

    def __init__(
        self,
        script: Iterable[ServerReply] | Callable[[RecordedRequest], ServerReply] = (),
        *,
        loop: bool = False,
        cached_tokens: bool = True,
        prompt_cache: AnthropicPromptCache | None = None,
    ) -> None:
        self._handler: Callable[[RecordedRequest], ServerReply] | None = None
        self._script: list[ServerReply] = []
        if callable(script):
            self._handler = script
        else:
            self._script = list(script)
            for index, item in enumerate(self._script):
                self._check(item, index)
        self.loop = loop
        self.cached_tokens = cached_tokens
        self.prompt_cache = prompt_cache
        self.requests: list[RecordedRequest] = []
        self.errors: list[BaseException] = []
        self.replies: list[tuple[int, Any]] = []
        self._next = 0
        self._count = 0
        self._previous: dict[tuple[Api, str], list[str]] = {}
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._make_handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="RecordingModelServer", daemon=True
        )
        self._thread.start()
        self._closed = False

    @staticmethod
    def _check(item: ServerReply, index: int) -> None:
        if isinstance(item, Mapping) and ("error" in item or "raw_response" in item):
            return
        if isinstance(item, Mapping) and "raw_usage" in item:
            item = {k: v for k, v in item.items() if k != "raw_usage"}
        if not isinstance(item, str):
            response_from(item, index)  # a malformed entry fails here, not in the server thread

    @property
    def port(self) -> int:
        """The TCP port the server listens on."""
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (the root; ``base_url`` is this plus ``/v1``)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``: pass it as ``base_url`` to either SDK or backend."""
        return f"{self.url}/v1"

    def bodies(self, api: Api | None = None) -> list[Any]:
        """The parsed JSON bodies received (of one API, when given), in order."""
        return [r.json for r in self.requests if api is None or r.api == api]

    def close(self) -> None:
        """Stop serving and release the port (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> RecordingModelServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- request handling (runs in the server's threads) --------------------------------------

    def _make_handler(self) -> type[BaseHTTPRequestHandler]:
        answer = self._answer
        record = self._record_reply

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass  # a test server is silent

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                status, payload, headers = answer(
                    self.command, self.path, dict(self.headers.items()), raw
                )
                record(status, payload)
                if isinstance(payload, _Stream):
                    self._stream(payload)
                    return
                data = json.dumps(payload).encode("utf-8")
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, stream: _Stream) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                for name, data in anthropic_sse_events(stream.message):
                    event = f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")

        return Handler

    def _record_reply(self, status: int, payload: Any) -> None:
        if isinstance(payload, _Stream):
            payload = payload.message
        with self._lock:
            self.replies.append((status, payload))

    def _answer(
        self, method: str, target: str, headers: dict[str, str], raw: bytes
    ) -> tuple[int, Any, Mapping[str, str]]:
        parts = urlsplit(target)
        api = next((a for suffix, a in _ROUTES if parts.path.endswith(suffix)), None)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        record = RecordedRequest(
            api=api or "chat",
            method=method,
            path=parts.path,
            query=parts.query,
            headers={k.lower(): v for k, v in headers.items()},
            body=raw,
            json=body,
        )
        with self._lock:
            self.requests.append(record)
        if api is None:
            known = ", ".join(f"POST .../v1{s}" for s, _ in _ROUTES)
            return 404, _error_body("chat", 404, f"unknown path {parts.path}; known: {known}"), {}
        if not isinstance(body, dict):
            return 400, _error_body(api, 400, "the request body is not a JSON object"), {}
        stream = body.get("stream") is True
        if stream and api != "messages":
            message = "RecordingModelServer does not stream Chat Completions or Responses"
            return 400, _error_body(api, 400, message), {}
        if api == "messages":
            refusal = anthropic_refusal(body, record.headers)
            if refusal is None and self.prompt_cache is not None:
                refusal = self.prompt_cache.refusal(body, record.headers.get("anthropic-beta", ""))
            if refusal is not None:
                return 400, _error_body(api, 400, refusal), {}
        else:
            refused = openai_role_refusal(api, body)
            if refused is not None:
                error = _error_body(api, 400, refused[0])
                error["error"]["param"] = refused[1]
                error["error"]["code"] = "invalid_value"
                return 400, error, {}
        try:
            reply, n = self._reply(record)
        except Exception as exc:
            with self._lock:
                self.errors.append(exc)
            return 500, _error_body(api, 500, f"{type(exc).__name__}: {exc}"), {}
        if isinstance(reply, Mapping) and "error" in reply:
            status = int(reply.get("status", 500))
            extra = {str(k): str(v) for k, v in (reply.get("headers") or {}).items()}
            return status, _error_body(api, status, str(reply["error"])), extra
        if isinstance(reply, Mapping) and "raw_response" in reply:
            return 200, reply["raw_response"], {}
        raw_usage: Any = None
        if isinstance(reply, Mapping) and "raw_usage" in reply:
            raw_usage = reply["raw_usage"]
            reply = {k: v for k, v in reply.items() if k != "raw_usage"}
        delay = float(reply.get("delay_seconds", 0)) if isinstance(reply, Mapping) else 0.0
        response = (
            ModelResponse(message={"role": "assistant", "content": reply})
            if isinstance(reply, str)
            else response_from(reply, n)
        )
        if delay > 0:
            time.sleep(delay)
        usage = raw_usage
        diagnostics: dict[str, Any] | None = None
        opted_in = False
        if api == "messages" and self.prompt_cache is not None:
            # the cache sees every answered request, a scripted raw_usage or not, so its
            # entries and fingerprints follow what a real server would have seen
            cache_usage, diagnostics = self.prompt_cache.respond(
                body, f"msg_{n}", record.headers.get("anthropic-beta", "")
            )
            opted_in = isinstance(body.get("diagnostics"), Mapping)
            if usage is None:
                usage = {**cache_usage, "output_tokens": _output_tokens(response)}
        elif usage is None:
            usage = self._usage(api, body, response)
        rendered = self._render(api, body, response, usage, n)
        if opted_in:
            rendered["diagnostics"] = diagnostics
        return 200, _Stream(rendered) if stream else rendered, {}

    def _reply(self, record: RecordedRequest) -> tuple[ServerReply, int]:
        """The reply to play and its number (1, 2, …: the ``n`` of ``msg_n``)."""
        if self._handler is not None:
            with self._lock:
                self._count += 1
                n = self._count
            return self._handler(record), n
        with self._lock:
            if self._next >= len(self._script):
                if not self.loop or not self._script:
                    raise RuntimeError(
                        f"RecordingModelServer script exhausted after {len(self._script)} replies"
                    )
                self._next = 0
            item = self._script[self._next]
            self._next += 1
            self._count += 1
            return item, self._count

    # -- usage ----------------------------------------------------------------------------------

    def _usage(self, api: Api, body: Mapping[str, Any], response: ModelResponse) -> dict[str, Any]:
        output = _output_tokens(response)
        if response.usage is not None:
            total = response.usage.input_tokens
            cached: int | None = response.usage.cached_input_tokens
            written = 0
        else:
            total, cached, written = self._measure(api, body)
        if api == "chat":
            usage: dict[str, Any] = {
                "prompt_tokens": total,
                "completion_tokens": output,
                "total_tokens": total + output,
            }
            if self.cached_tokens and cached is not None:
                usage["prompt_tokens_details"] = {"cached_tokens": cached}
            return usage
        if api == "responses":
            usage = {"input_tokens": total, "output_tokens": output, "total_tokens": total + output}
            if self.cached_tokens and cached is not None:
                usage["input_tokens_details"] = {"cached_tokens": cached}
            usage["output_tokens_details"] = {"reasoning_tokens": 0}
            return usage
        if not self.cached_tokens:  # a server without a prompt cache: the whole prompt is new
            return {"input_tokens": total, "output_tokens": output}
        read = cached or 0
        return {
            "input_tokens": total - read - written,
            "output_tokens": output,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
        }

    def _measure(self, api: Api, body: Mapping[str, Any]) -> tuple[int, int, int]:
        """(total, cached, written to the cache) in tokens, against the previous request."""
        items = _conversation(api, body)
        marked = [i for i, item in enumerate(items) if _has_cache_control(item)]
        texts = [
            json.dumps(strip_cache_control(item), ensure_ascii=False, separators=(",", ":"))
            for item in items
        ]
        sizes = [len(t.encode("utf-8")) for t in texts]
        key = (api, str(body.get("prompt_cache_key") or ""))
        with self._lock:
            previous = self._previous.get(key, [])
            self._previous[key] = texts
        common = 0
        while common < min(len(texts), len(previous)) and texts[common] == previous[common]:
            common += 1
        total = _tokens(sum(sizes))
        if api != "messages":
            return total, _tokens(sum(sizes[:common])), 0
        if not marked:
            return total, 0, 0
        end = marked[-1] + 1  # Anthropic reads and writes the cache up to the last breakpoint
        read = _tokens(sum(sizes[: min(common, end)]))
        written = _tokens(sum(sizes[:end])) - read
        return total, read, written

    # -- responses ----------------------------------------------------------------------------

    def _render(
        self, api: Api, body: Mapping[str, Any], response: ModelResponse, usage: Any, n: int
    ) -> dict[str, Any]:
        model = body.get("model", "recorded")
        message = response.message
        text = _text(message.get("content"))
        calls = list(message.get("tool_calls") or [])
        if api == "chat":
            wire: dict[str, Any] = {
                "role": "assistant",
                "content": text if text or not calls else None,
            }
            if calls:
                wire["tool_calls"] = [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
                    }
                    for c in calls
                ]
            return {
                "id": f"chatcmpl-{n}",
                "object": "chat.completion",
                "created": 0,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": wire,
                        "finish_reason": "tool_calls" if calls else "stop",
                        "logprobs": None,
                    }
                ],
                "usage": usage,
            }
        if api == "responses":
            output: list[dict[str, Any]] = []
            if text:
                output.append(
                    {
                        "type": "message",
                        "id": f"msg_{n}",
                        "role": "assistant",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": text, "annotations": []}],
                    }
                )
            output.extend(
                {
                    "type": "function_call",
                    "id": f"fc_{n}_{i}",
                    "call_id": c["id"],
                    "name": c["name"],
                    "arguments": json.dumps(c["arguments"]),
                    "status": "completed",
                }
                for i, c in enumerate(calls)
            )
            return {
                "id": f"resp_{n}",
                "object": "response",
                "created_at": 0,
                "model": model,
                "status": "completed",
                "output": output,
                "parallel_tool_calls": True,
                "tool_choice": "auto",
                "tools": [],
                "store": False,
                "error": None,
                "incomplete_details": None,
                "instructions": None,
                "metadata": {},
                "usage": usage,
            }
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        content.extend(
            {"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["arguments"]}
            for c in calls
        )
        return {
            "id": f"msg_{n}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": "tool_use" if calls else "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }
