"""A fake OpenAI Responses API on 127.0.0.1, enough of it for the Codex CLI.

Codex (0.171) talks to a custom ``model_providers`` entry with ``wire_api = "responses"`` by
``POST {base_url}/responses`` with ``"stream": true`` and reads Server-Sent Events: it needs
``response.created``, the output items (``response.output_item.added`` / ``.done``, text
deltas in between) and ``response.completed`` with the response ``id`` and ``usage``, then the
end of the stream. Its token accounting (and so its auto-compaction) reads that ``usage``. The
server also answers ``POST {base_url}/responses/compact`` (remote compaction, which Codex uses
only for providers that support it) and ``GET {base_url}/models`` with an empty list, and
records anything else it is asked as an error.

Each request is recorded (path, headers, parsed JSON body) before the script function is
called with it; the function returns a :class:`Reply`. The ``usage`` each streamed answer
reported is kept in ``usages`` (``(request index, usage)``), and ``responses`` maps each
response ``id`` given to the request's index (Codex writes that id in its rollout).

Cached tokens: by default (``cache="any"``) the longest run of leading ``input`` items shared
with any earlier request. ``cache="by_key"`` models OpenAI's prompt cache the way
``agent_reminders.testing.RecordingModelServer`` does: the prompt is cut into items
(``tools``, ``instructions``, then each ``input`` item; one token per 4 bytes of an item's
compact JSON, rounded up), ``input_tokens`` is their sum and ``cached_tokens`` the size of the
longest run of leading items equal to the previous request's with the same ``model`` and
``prompt_cache_key`` (the first request of a key caches nothing; OpenAI's cache is per model).
``cache_ttl`` (seconds, with ``by_key``) forgets a key's prompt when its last request is older
than that, as the real cache evicts an idle prefix after some minutes.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

__all__ = ["FakeResponses", "Reply", "Request"]

_BYTES_PER_TOKEN = 4


@dataclass(frozen=True)
class Request:
    """One request Codex made: ``path`` without the query, lower-case ``headers``, ``json``."""

    method: str
    path: str
    headers: dict[str, str]
    json: Any


@dataclass(frozen=True)
class Reply:
    """What the fake model answers: some text, a function call, or both (text first).

    ``call`` is ``(name, arguments)``; ``input_tokens`` overrides the reported prompt size
    (by default the request body's length over four), which is how a test makes Codex think
    its context is full; ``usage=False`` leaves ``usage`` out of the completed response.
    """

    text: str | None = None
    call: tuple[str, dict[str, Any]] | None = None
    input_tokens: int | None = None
    usage: bool = True  # False: ``response.completed`` carries no ``usage``


@dataclass
class _Counter:
    value: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next(self) -> int:
        with self.lock:
            self.value += 1
            return self.value


def _items(reply: Reply, n: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.text is not None:
        items.append(
            {
                "type": "message",
                "id": f"msg_{n}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    if reply.call is not None:
        name, arguments = reply.call
        items.append(
            {
                "type": "function_call",
                "id": f"fc_{n}",
                "call_id": f"call_{n}",
                "name": name,
                "arguments": json.dumps(arguments),
                "status": "completed",
            }
        )
    return items


def _input_of(body: Any) -> list[Any]:
    items = body.get("input") if isinstance(body, dict) else None
    return items if isinstance(items, list) else []


def _cached_tokens(body: Any, earlier: list[Any]) -> int:
    """Tokens of the longest item prefix this prompt shares with an earlier one."""
    items = _input_of(body)
    best = 0
    for other in earlier:
        previous = _input_of(other)
        shared = 0
        for mine, theirs in zip(items, previous, strict=False):
            if mine != theirs:
                break
            shared += len(json.dumps(mine))
        best = max(best, shared)
    return best // _BYTES_PER_TOKEN


def _prompt_items(body: Any) -> list[str]:
    """The prompt as cacheable units, each as compact JSON."""
    if not isinstance(body, dict):
        return []
    items = [body.get("tools"), body.get("instructions"), *_input_of(body)]
    return [json.dumps(i, ensure_ascii=False, separators=(",", ":")) for i in items]


def _tokens(text: str) -> int:
    return -(-len(text.encode("utf-8")) // _BYTES_PER_TOKEN)


def _sse(kind: str, payload: dict[str, Any]) -> bytes:
    data = json.dumps({"type": kind, **payload})
    return f"event: {kind}\ndata: {data}\n\n".encode()


class FakeResponses:
    """The server; ``with FakeResponses(answer) as server: ... server.url ...``."""

    def __init__(
        self,
        answer: Callable[[Request], Reply],
        *,
        cache: str = "any",
        cache_ttl: float | None = None,
    ) -> None:
        if cache not in ("any", "by_key"):
            raise ValueError(f"cache must be 'any' or 'by_key', not {cache!r}")
        self._answer = answer
        self._cache = cache
        self._cache_ttl = cache_ttl
        # (model, prompt_cache_key) -> (when, the last prompt's items)
        self._previous: dict[tuple[str, str], tuple[float, list[str]]] = {}
        self.requests: list[Request] = []
        self.usages: list[tuple[int, dict[str, Any]]] = []
        self.responses: dict[str, int] = {}  # response id -> request index
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._ids = _Counter()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """The base URL to give Codex (``.../v1``)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def bodies(self, path_suffix: str = "/responses") -> list[Any]:
        with self._lock:
            return [r.json for r in self.requests if r.path.endswith(path_suffix)]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeResponses:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _record(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Request:
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
            self.errors.append(f"{method} {path}: body is not JSON ({raw[:80]!r})")
        request = Request(method, path, headers, parsed)
        with self._lock:
            self.requests.append(request)
        return request

    def _stream(self, request: Request) -> list[bytes]:
        with self._lock:
            at = next(i for i, r in enumerate(self.requests) if r is request)
            earlier = [r.json for r in self.requests[:at] if r.path.endswith("/responses")]
        reply = self._answer(request)
        n = self._ids.next()
        response_id = f"resp_{n}"
        with self._lock:
            self.responses[response_id] = at
        model = request.json.get("model", "") if isinstance(request.json, dict) else ""
        base = {"id": response_id, "object": "response", "model": model}
        events = [
            _sse("response.created", {"response": {**base, "status": "in_progress"}}),
        ]
        items = _items(reply, n)
        for index, item in enumerate(items):
            if item["type"] == "message":
                text = item["content"][0]["text"]
                empty = {**item, "status": "in_progress", "content": []}
                events.append(
                    _sse("response.output_item.added", {"output_index": index, "item": empty})
                )
                for start in range(0, len(text), 40):
                    delta = text[start : start + 40]
                    events.append(
                        _sse(
                            "response.output_text.delta",
                            {
                                "item_id": item["id"],
                                "output_index": index,
                                "content_index": 0,
                                "delta": delta,
                            },
                        )
                    )
            else:
                events.append(
                    _sse(
                        "response.output_item.added",
                        {"output_index": index, "item": {**item, "arguments": ""}},
                    )
                )
            events.append(_sse("response.output_item.done", {"output_index": index, "item": item}))
        if self._cache == "by_key":
            texts = _prompt_items(request.json)
            body = request.json
            key = (str(body.get("model") or ""), str(body.get("prompt_cache_key") or ""))
            now = time.monotonic()
            with self._lock:
                when, previous = self._previous.get(key, (now, []))
                self._previous[key] = (now, texts)
            if self._cache_ttl is not None and now - when > self._cache_ttl:
                previous = []
            common = 0
            while common < min(len(texts), len(previous)) and texts[common] == previous[common]:
                common += 1
            measured = sum(_tokens(t) for t in texts)
            shared = sum(_tokens(t) for t in texts[:common])
        else:
            measured = len(json.dumps(request.json)) // _BYTES_PER_TOKEN
            shared = _cached_tokens(request.json, earlier)
        input_tokens = reply.input_tokens if reply.input_tokens is not None else measured
        cached = min(shared, input_tokens)
        output_tokens = max(1, len(json.dumps(items)) // _BYTES_PER_TOKEN)
        usage = {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output_tokens,
        }
        if reply.usage:
            with self._lock:
                self.usages.append((at, usage))
        done = {**base, "status": "completed", "output": items}
        if reply.usage:
            done["usage"] = usage
        events.append(_sse("response.completed", {"response": done}))
        return events

    def _compact(self, request: Request) -> dict[str, Any]:
        reply = self._answer(request)
        n = self._ids.next()
        summary = reply.text or ""
        return {
            "id": f"resp_{n}",
            "object": "response.compaction",
            "output": [
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": summary}],
                }
            ],
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # each response ends the connection: end of stream

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _read(self) -> Request:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                path = urlsplit(self.path).path
                if headers.get("content-encoding"):
                    fake.errors.append(f"{path}: content-encoding {headers['content-encoding']}")
                return fake._record(self.command, path, headers, raw)

            def _json(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                request = self._read()
                if request.path.endswith("/models"):
                    self._json(200, {"object": "list", "data": [], "models": []})
                    return
                fake.errors.append(f"unexpected GET {request.path}")
                self._json(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                request = self._read()
                try:
                    if request.path.endswith("/responses/compact"):
                        self._json(200, fake._compact(request))
                        return
                    if not request.path.endswith("/responses"):
                        fake.errors.append(f"unexpected POST {request.path}")
                        self._json(404, {"error": {"message": "not found"}})
                        return
                    events = fake._stream(request)
                except Exception as error:  # the script failed: tell the test, not Codex
                    fake.errors.append(f"{request.path}: {type(error).__name__}: {error}")
                    self._json(400, {"error": {"message": str(error), "type": "invalid_request"}})
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.end_headers()
                for event in events:
                    self.wfile.write(event)
                    self.wfile.flush()

        return Handler
