"""Test doubles users need: a scripted model that records what it was sent."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .._core.messages import validate_message
from .._core.request import ModelRequest, ModelResponse, Usage

__all__ = ["ScriptExhaustedError", "ScriptedModel", "response_from"]


class ScriptExhaustedError(RuntimeError):
    """The scripted model was called more often than it has responses."""


def response_from(item: ModelResponse | Mapping[str, Any], index: int = 0) -> ModelResponse:
    """Build a :class:`ModelResponse` from a response or a mapping.

    Mappings: ``{"message": {...}, "usage": {...}}``, or the shorthands ``{"content": "text"}``
    and ``{"tool_calls": [{"id", "name", "arguments"}]}`` (usage optional).
    """
    if isinstance(item, ModelResponse):
        return item
    if not isinstance(item, Mapping):
        raise TypeError(
            f"response {index} must be a ModelResponse or a mapping, not {type(item).__name__}"
        )
    where = f"response {index}"
    if "message" in item:
        message = validate_message(item["message"], f"{where}.message")
    elif "content" in item or "tool_calls" in item:
        raw: dict[str, Any] = {"role": "assistant", "content": item.get("content") or ""}
        if item.get("tool_calls"):
            raw["tool_calls"] = item["tool_calls"]
        message = validate_message(raw, where)
    else:
        raise ValueError(f"{where} needs 'message', 'content' or 'tool_calls'")
    usage = item.get("usage")
    if usage is not None:
        if not isinstance(usage, Mapping):
            raise TypeError(f"{where}.usage must be a mapping")
        try:
            usage = Usage(
                input_tokens=int(usage["input_tokens"]),
                output_tokens=int(usage["output_tokens"]),
                cached_input_tokens=usage.get("cached_input_tokens"),
            )
        except KeyError as exc:
            raise ValueError(f"{where}.usage is missing {exc.args[0]!r}") from None
    return ModelResponse(message=message, usage=usage)


class ScriptedModel:
    """A model that plays back responses in order and records every request in ``requests``.

    Example:
        >>> model = ScriptedModel([{"content": "hello"}])
        >>> model.name
        'scripted'
    """

    name = "scripted"

    def __init__(
        self, responses: Iterable[ModelResponse | Mapping[str, Any]], *, loop: bool = False
    ) -> None:
        self.responses: list[ModelResponse] = [response_from(r, i) for i, r in enumerate(responses)]
        if not self.responses:
            raise ValueError("a ScriptedModel needs at least one response")
        self.loop = loop
        self.requests: list[ModelRequest] = []
        self._next = 0

    @classmethod
    def from_file(cls, path: str | Path, *, loop: bool = False) -> ScriptedModel:
        """Read a JSON array, or JSON Lines, of response mappings."""
        file = Path(path)
        try:
            text = file.read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"cannot read script {file}: {exc.strerror or exc}") from None
        try:
            stripped = text.lstrip()
            if stripped.startswith("["):
                items = json.loads(stripped)
            else:
                items = [json.loads(line) for line in text.splitlines() if line.strip()]
        except ValueError as exc:
            raise ValueError(f"script {file} is not JSON or JSON Lines: {exc}") from None
        return cls(items, loop=loop)

    @property
    def remaining(self) -> int:
        """How many responses are left before the script runs out (or starts over)."""
        return len(self.responses) - self._next

    async def __call__(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        if self._next >= len(self.responses):
            if not self.loop:
                raise ScriptExhaustedError(
                    f"ScriptedModel ran out after {len(self.responses)} responses "
                    f"(request {len(self.requests)} for session {request.session_id!r})"
                )
            self._next = 0
        response = self.responses[self._next]
        self._next += 1
        return response
