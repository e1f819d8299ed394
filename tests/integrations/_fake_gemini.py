"""A fake Gemini API (``generativelanguage.googleapis.com``) on 127.0.0.1, for driving the real
Gemini CLI offline: it records every request and answers from a script.

What the Gemini CLI (through its ``@google/genai`` client) calls, and what this server answers:

- ``POST /v1beta/models/<model>:streamGenerateContent?alt=sse`` — the chat turns: server-sent
  events, one ``data: {GenerateContentResponse}`` per chunk (text split in two chunks, a function
  call in one), the last chunk with ``finishReason`` and ``usageMetadata``;
- ``POST /v1beta/models/<model>:generateContent`` — the CLI's side requests (compression
  summary and its verification, next-speaker checks, routing, …): one JSON response;
- ``POST /v1beta/models/<model>:countTokens`` — ``{"totalTokens": N}`` (4 bytes of JSON a
  token);
- anything else: HTTP 404 in Google's error shape (the CLI tolerates it for what it probes).

``answer(request) -> reply`` decides every generate reply. A reply is a ``str`` (text),
``{"text": ...}``, ``{"function_call": {"name": ..., "args": {...}}}`` (``"function_calls"``:
a list of them), ``{"error": "message", "status": 500}`` or ``{"raw": {...}}`` (the whole
response, verbatim); ``"usage": {"promptTokenCount": N, ...}`` on a reply replaces the computed
``usageMetadata`` fields it names.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

__all__ = ["FakeGemini", "GeminiRequest", "Reply", "texts"]

Reply = str | dict[str, Any]


@dataclass
class GeminiRequest:
    """One request the server got, in arrival order."""

    http_method: str
    path: str  # with its query string
    model: str | None  # ``gemini-2.5-pro`` from ``/v1beta/models/gemini-2.5-pro:…``
    rpc: str | None  # ``streamGenerateContent``, ``generateContent``, ``countTokens``, …
    body: Any  # the parsed JSON body (None when there was none)
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def streamed(self) -> bool:
        return self.rpc == "streamGenerateContent"

    @property
    def contents(self) -> list[dict[str, Any]]:
        body = self.body if isinstance(self.body, dict) else {}
        return list(body.get("contents") or [])

    @property
    def system(self) -> str:
        """The text of the request's ``systemInstruction`` (empty when it has none)."""
        body = self.body if isinstance(self.body, dict) else {}
        instruction = body.get("systemInstruction") or {}
        if isinstance(instruction, str):
            return instruction
        return "".join(p.get("text", "") for p in instruction.get("parts") or [])


def texts(content: dict[str, Any]) -> list[str]:
    """The text parts of one ``Content``, and the ``output`` of its function responses."""
    found: list[str] = []
    for part in content.get("parts") or []:
        if "text" in part:
            found.append(part["text"])
        response = (part.get("functionResponse") or {}).get("response") or {}
        for key in ("output", "error"):
            if isinstance(response.get(key), str):
                found.append(response[key])
    return found


def _tokens(value: Any) -> int:
    return max(1, len(json.dumps(value, separators=(",", ":"))) // 4)


def _candidate(parts: list[dict[str, Any]], finish: str | None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return candidate


class FakeGemini:
    """``with FakeGemini(answer) as server:`` — ``server.url`` is the base URL for
    ``GOOGLE_GEMINI_BASE_URL``; ``server.requests`` the recorded requests; ``server.errors``
    what went wrong on the server side (an unknown reply, a handler that raised)."""

    def __init__(self, answer: Callable[[GeminiRequest], Reply]) -> None:
        self.answer = answer
        self.requests: list[GeminiRequest] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeGemini:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def generate(self, kind: str | None = None) -> list[GeminiRequest]:
        """The generate requests (``kind`` = ``streamGenerateContent`` or ``generateContent``
        for one of the two), in order."""
        kinds = {kind} if kind else {"streamGenerateContent", "generateContent"}
        with self._lock:
            return [r for r in self.requests if r.rpc in kinds]

    # -- answering ------------------------------------------------------------------------

    def _response(self, request: GeminiRequest) -> tuple[int, list[dict[str, Any]]]:
        """The HTTP status and the response chunks (one for a non-streamed answer)."""
        reply = self.answer(request)
        if isinstance(reply, str):
            reply = {"text": reply}
        if "error" in reply:
            status = int(reply.get("status", 500))
            error = {"code": status, "message": reply["error"], "status": "INTERNAL"}
            return status, [{"error": error}]
        if "raw" in reply:
            return 200, [reply["raw"]]
        calls = reply.get("function_calls") or (
            [reply["function_call"]] if "function_call" in reply else []
        )
        chunks: list[list[dict[str, Any]]]
        if calls:  # all in one chunk
            chunks = [
                [{"functionCall": {"name": c["name"], "args": c.get("args", {})}} for c in calls]
            ]
        elif "text" in reply:
            text = str(reply["text"])
            half = len(text) // 2
            chunks = [[{"text": text[:half]}], [{"text": text[half:]}]]
            if not (request.streamed and half):
                chunks = [[{"text": text}]]
        else:
            raise ValueError(f"unknown reply: {reply!r}")
        usage = {
            "promptTokenCount": _tokens(request.body),
            "candidatesTokenCount": _tokens(chunks),
        }
        usage.update(reply.get("usage") or {})
        usage["totalTokenCount"] = usage["promptTokenCount"] + usage["candidatesTokenCount"]
        model = request.model or "gemini"
        if not request.streamed:
            parts = [p for chunk in chunks for p in chunk]
            body = {
                "candidates": [_candidate(parts, "STOP")],
                "usageMetadata": usage,
                "modelVersion": model,
            }
            return 200, [body]
        out = []
        for i, parts in enumerate(chunks):
            last = i == len(chunks) - 1
            chunk: dict[str, Any] = {
                "candidates": [_candidate(parts, "STOP" if last else None)],
                "modelVersion": model,
            }
            if last:
                chunk["usageMetadata"] = usage
            out.append(chunk)
        return 200, out

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, body: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _json(self, status: int, value: Any) -> None:
                self._send(status, json.dumps(value).encode(), "application/json")

            def _record(self) -> GeminiRequest:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                route = urlsplit(self.path).path
                model = rpc = None
                if route.startswith(("/v1beta/models/", "/v1/models/")):
                    name = route.split("/models/", 1)[1]
                    model, _, rpc = name.partition(":")
                request = GeminiRequest(
                    self.command, self.path, model, rpc or None, body, dict(self.headers)
                )
                with server._lock:
                    server.requests.append(request)
                return request

            def _not_found(self) -> None:
                error = {
                    "code": 404,
                    "message": f"{self.path} is not served here",
                    "status": "NOT_FOUND",
                }
                self._json(404, {"error": error})

            def do_GET(self) -> None:
                self._record()
                self._not_found()

            def do_POST(self) -> None:
                request = self._record()
                if request.rpc == "countTokens":
                    self._json(200, {"totalTokens": _tokens(request.body)})
                    return
                if request.rpc not in ("streamGenerateContent", "generateContent"):
                    self._not_found()
                    return
                try:
                    status, chunks = server._response(request)
                except Exception as exc:  # a broken script: say so, to the CLI and the test
                    with server._lock:
                        server.errors.append(f"{request.rpc}: {exc!r}")
                    self._json(500, {"error": {"code": 500, "message": repr(exc)}})
                    return
                if status != 200 or not request.streamed:
                    self._json(status, chunks[0])
                    return
                events = b"".join(b"data: " + json.dumps(c).encode() + b"\r\n\r\n" for c in chunks)
                self._send(200, events, "text/event-stream")

        return Handler
