"""A scripted model that plays back responses and records what it was sent."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._core.errors import AgentRemindersError, ScriptError, ScriptExhaustedError
from .._core.messages import validate_message
from .._core.request import ModelInfo, ModelRequest, ModelResponse, Usage

__all__ = ["ScriptExhaustedError", "ScriptedModel", "response_from"]

_MESSAGE_KEYS = frozenset({"message", "usage", "delay_seconds"})
_SHORTHAND_KEYS = frozenset({"content", "tool_calls", "usage", "delay_seconds"})
_USAGE_KEYS = ("input_tokens", "output_tokens", "cached_input_tokens")
# requests a ScriptedModel keeps by default: far more than a test reads, and a bound for a
# script looping in a long-running process
_KEEP_REQUESTS = 100


class _ScriptTypeError(ScriptError, TypeError):
    """A script value of the wrong kind (a ``ScriptError`` that is also a ``TypeError``)."""


@dataclass(frozen=True, slots=True)
class _Step:
    response: ModelResponse
    delay: float = 0.0


def _usage(value: object, where: str) -> Usage:
    if not isinstance(value, Mapping):
        raise _ScriptTypeError(
            f"{where}.usage must be a mapping {{input_tokens, output_tokens}}; got "
            f"{type(value).__name__}"
        )
    unknown = sorted(str(k) for k in value if k not in _USAGE_KEYS)
    if unknown:
        raise ScriptError(
            f"{where}.usage: unknown key(s) {', '.join(unknown)}; known keys: "
            f"{', '.join(_USAGE_KEYS)}"
        )
    counts: dict[str, int | None] = {}
    for key in _USAGE_KEYS:
        if key not in value:
            if key == "cached_input_tokens":
                counts[key] = None
                continue
            raise ScriptError(f"{where}.usage is missing {key!r}")
        count = value[key]
        if count is None and key == "cached_input_tokens":
            counts[key] = None
        elif type(count) is int and count >= 0:
            counts[key] = count
        else:
            raise ScriptError(f"{where}.usage.{key} must be an int >= 0; got {count!r}")
    return Usage(
        input_tokens=counts["input_tokens"] or 0,
        output_tokens=counts["output_tokens"] or 0,
        cached_input_tokens=counts["cached_input_tokens"],
    )


def _delay(value: object, where: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
    ):
        raise ScriptError(f"{where}.delay_seconds must be a number >= 0; got {value!r}")
    return float(value)


def _step(item: object, where: str) -> _Step:
    if isinstance(item, ModelResponse):
        return _Step(item)
    if not isinstance(item, Mapping):
        raise _ScriptTypeError(
            f"{where} must be a ModelResponse or a mapping, not {type(item).__name__}"
        )
    if "message" in item:
        allowed = _MESSAGE_KEYS
    elif "content" in item or "tool_calls" in item:
        allowed = _SHORTHAND_KEYS
    else:
        keys = ", ".join(sorted(str(k) for k in item)) or "none"
        raise ScriptError(f"{where} needs 'message', 'content' or 'tool_calls' (its keys: {keys})")
    unknown = sorted(str(k) for k in item if k not in allowed)
    if unknown:
        raise ScriptError(
            f"{where}: unknown key(s) {', '.join(unknown)}; an entry has "
            f"{', '.join(sorted(allowed))}"
        )
    try:
        if "message" in item:
            message = validate_message(item["message"], f"{where}.message")
        else:
            raw: dict[str, Any] = {"role": "assistant", "content": item.get("content") or ""}
            if item.get("tool_calls"):
                raw["tool_calls"] = item["tool_calls"]
            message = validate_message(raw, where)
    except AgentRemindersError as exc:
        raise ScriptError(exc.message) from None
    except TypeError as exc:  # the message is not a mapping
        raise _ScriptTypeError(str(exc)) from None
    usage = item.get("usage")
    delay = item.get("delay_seconds")
    return _Step(
        ModelResponse(message=message, usage=None if usage is None else _usage(usage, where)),
        0.0 if delay is None else _delay(delay, where),
    )


def response_from(item: ModelResponse | Mapping[str, Any], index: int = 0) -> ModelResponse:
    """Build a :class:`ModelResponse` from a response or a mapping.

    Mappings: ``{"message": {...}, "usage": {...}}``, or the shorthands ``{"content": "text"}``
    and ``{"tool_calls": [{"id", "name", "arguments"}]}``; ``usage`` (``input_tokens``,
    ``output_tokens``, optional ``cached_input_tokens``: ints >= 0) and ``delay_seconds`` are
    optional. Anything else is a :class:`~agent_reminders.ScriptError` naming the entry and
    the key.

    Example:
        >>> response_from({"content": "hi", "usage": {"input_tokens": 3, "output_tokens": 1}})
        ModelResponse(message={'role': 'assistant', 'content': 'hi'}, usage=Usage(input_tokens=3, output_tokens=1, cached_input_tokens=None, cache_write_tokens=None, cache_miss_reason=None))
    """  # noqa: E501
    return _step(item, f"response {index}").response


class ScriptedModel:
    """A model that plays back responses in order and records the requests it gets in
    ``requests``.

    ``responses`` are :class:`ModelResponse` values or mappings (see :func:`response_from`);
    an entry's ``delay_seconds`` makes the model wait that long before answering, without
    blocking the event loop (``anyio.sleep``) — a stand-in for a real model's latency. With
    ``loop=True`` it starts over instead of running out.

    ``requests`` holds the last ``keep_requests`` requests, oldest first (default 100, more
    than a test reads; ``None`` keeps every one, ``0`` none): a request holds the conversation
    it carried, so a script looping in a long-running process would otherwise grow without
    end (``serve --model scripted:PATH`` keeps none). ``calls`` counts every request, kept or
    not.

    Example:
        >>> import anyio
        >>> from agent_reminders import ModelRequest
        >>> model = ScriptedModel([{"content": "hello", "delay_seconds": 0.01}])
        >>> anyio.run(model, ModelRequest(system="", messages=[])).message["content"]
        'hello'
        >>> len(model.requests), model.name
        (1, 'scripted')

        A looping script that keeps only its last two requests:

        >>> model = ScriptedModel([{"content": "ok"}], loop=True, keep_requests=2)
        >>> for turn in range(5):
        ...     _ = anyio.run(model, ModelRequest(system="", messages=[], turn=turn))
        >>> [r.turn for r in model.requests], model.calls
        ([3, 4], 5)

    Raises:
        ScriptError: a malformed entry (naming its index and key); ``ValueError`` for an empty
            script or a ``keep_requests`` that is not ``None`` or an int >= 0.
    """

    name = "scripted"

    def __init__(
        self,
        responses: Iterable[ModelResponse | Mapping[str, Any]],
        *,
        loop: bool = False,
        keep_requests: int | None = _KEEP_REQUESTS,
        model_info: ModelInfo | None = None,
    ) -> None:
        if model_info is not None and not isinstance(model_info, ModelInfo):
            raise TypeError(f"model_info must be a ModelInfo, not {type(model_info).__name__}")
        #: the model this double stands in for (the channel of ``"auto"`` sessions follows it)
        self.model_info = model_info
        steps = [
            item if isinstance(item, _Step) else _step(item, f"response {i}")
            for i, item in enumerate(responses)
        ]
        if not steps:
            raise ValueError("a ScriptedModel needs at least one response")
        self.responses: list[ModelResponse] = [s.response for s in steps]
        self.delays: list[float] = [s.delay for s in steps]
        self.loop = loop
        self.requests: list[ModelRequest] = []
        self.keep_requests = keep_requests
        self.calls = 0
        self._next = 0

    @property
    def keep_requests(self) -> int | None:
        """How many of the latest requests ``requests`` keeps (``None``: all). Setting it
        drops the older ones at once."""
        return self._keep

    @keep_requests.setter
    def keep_requests(self, value: int | None) -> None:
        if value is not None and (type(value) is not int or value < 0):
            raise ValueError(f"keep_requests must be None or an int >= 0; got {value!r}")
        self._keep = value
        if value is not None:
            del self.requests[: max(len(self.requests) - value, 0)]

    @classmethod
    def from_file(
        cls, path: str | Path, *, loop: bool = False, keep_requests: int | None = _KEEP_REQUESTS
    ) -> ScriptedModel:
        """Read a JSON array, or JSON Lines, of response mappings (UTF-8, a BOM is fine);
        ``loop`` and ``keep_requests`` as for the constructor.

        Example:
            >>> import json, pathlib, tempfile
            >>> script = pathlib.Path(tempfile.mkdtemp()) / "script.jsonl"
            >>> _ = script.write_text(
            ...     json.dumps({"tool_calls": [{"id": "c1", "name": "ls", "arguments": {}}],
            ...                 "usage": {"input_tokens": 120, "output_tokens": 8}}) + "\\n"
            ...     + json.dumps({"content": "Done.", "delay_seconds": 0.05}) + "\\n")
            >>> model = ScriptedModel.from_file(script)
            >>> model.delays
            [0.0, 0.05]

        Raises:
            ScriptError: the file cannot be read, is not UTF-8 JSON / JSON Lines, or an entry
                is malformed; the message names the file, the entry (and line) and the key.
        """
        file = Path(path)
        try:
            data = file.read_bytes()
        except OSError as exc:
            raise ScriptError(f"cannot read script {file}: {exc.strerror or exc}") from None
        try:
            text = data.decode("utf-8-sig")  # a BOM from a Windows editor is no error
        except UnicodeDecodeError as exc:
            raise ScriptError(
                f"script {file} is not UTF-8 text: byte 0x{data[exc.start]:02x} at offset "
                f"{exc.start} cannot be decoded; save it as UTF-8"
            ) from None
        stripped = text.lstrip()
        entries: list[tuple[object, str]] = []
        if stripped.startswith("["):
            try:
                items = json.loads(stripped)
            except ValueError as exc:
                raise ScriptError(f"script {file} is not JSON or JSON Lines: {exc}") from None
            entries = [(item, f"script {file}: response {i}") for i, item in enumerate(items)]
        else:
            for number, line in enumerate(text.splitlines(), start=1):
                if not line.strip():
                    continue
                try:
                    item = json.loads(line)
                except ValueError as exc:
                    raise ScriptError(
                        f"script {file} line {number} is not JSON (JSON Lines: one object per "
                        f"line): {exc}"
                    ) from None
                where = f"script {file}: response {len(entries)} (line {number})"
                entries.append((item, where))
        steps = [_step(item, where) for item, where in entries]
        # _Step passes through
        return cls(steps, loop=loop, keep_requests=keep_requests)  # type: ignore[arg-type]

    @property
    def remaining(self) -> int:
        """How many responses are left before the script runs out (or starts over)."""
        return len(self.responses) - self._next

    async def __call__(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        keep = self._keep
        if keep is None or keep > 0:
            if keep is not None and len(self.requests) >= keep:
                del self.requests[: len(self.requests) - keep + 1]
            self.requests.append(request)
        if self._next >= len(self.responses):
            if not self.loop:
                raise ScriptExhaustedError(
                    f"ScriptedModel ran out after {len(self.responses)} responses "
                    f"(request {self.calls} for session {request.session_id!r})"
                )
            self._next = 0
        index = self._next
        self._next += 1
        if self.delays[index] > 0:
            import anyio  # here, so `import agent_reminders` imports no third-party package

            await anyio.sleep(self.delays[index])
        return self.responses[index]
