"""Reading successive model requests into prompt sequences (see docs/audit.md, "Formats").

Four formats, detected per file: OpenAI Chat Completions bodies, OpenAI Responses bodies,
Anthropic Messages bodies and this library's request log (``serve --request-log``). Each
request becomes one :class:`PromptSequence` — the tools, the system prompt and each message as
canonical JSON with Anthropic ``cache_control`` markers removed (and remembered as breakpoints).
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from .._core.errors import AuditError
from ..integrations._wire import content_blocks
from ..integrations.anthropic import strip_cache_control

__all__ = [
    "FORMATS",
    "FORMAT_OPTIONS",
    "Format",
    "Piece",
    "PromptSequence",
    "RequestReader",
    "block_values",
    "canonical_json",
    "read_lines",
]

Format = Literal["openai_chat", "openai_responses", "anthropic", "log"]
FORMATS: tuple[Format, ...] = ("openai_chat", "openai_responses", "anthropic", "log")
FORMAT_OPTIONS: tuple[str, ...] = ("auto", "openai", "anthropic", "log")
"""What ``--format`` takes: ``openai`` is Chat Completions or Responses, told apart by shape."""

_ALLOWED: dict[str, frozenset[Format]] = {
    "auto": frozenset(FORMATS),
    "openai": frozenset({"openai_chat", "openai_responses"}),
    "anthropic": frozenset({"anthropic"}),
    "log": frozenset({"log"}),
}
_NAMES: dict[Format, str] = {
    "openai_chat": "OpenAI Chat Completions",
    "openai_responses": "OpenAI Responses",
    "anthropic": "Anthropic Messages",
    "log": "agent-reminders request log",
}
_MARKER = '"cache_control"'
_SYSTEM_ROLES = frozenset({"system", "developer"})
# Fields only one of the two `messages` formats has: they settle a line's format.
# roles only OpenAI Chat has inside messages (Anthropic's messages may hold a mid-conversation
# "system" entry too, so that role decides nothing)
_CHAT_ROLES = frozenset({"developer", "tool", "function"})
_ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking"})
_CHAT_PARTS = frozenset({"image_url", "input_audio", "refusal"})
# Request fields that only hint (OpenAI-compatible servers accept some Anthropic ones and the
# other way round); they decide a file whose lines fit both formats.
_ANTHROPIC_HINTS = frozenset({"stop_sequences", "top_k", "thinking", "anthropic_version"})
_CHAT_HINTS = frozenset({"max_completion_tokens", "n", "logprobs", "response_format"})


def canonical_json(value: Any) -> str:
    """The canonical JSON the audit measures: sorted keys, no spaces, UTF-8 text kept.

    Example:
        >>> canonical_json({"role": "user", "content": "hi"})
        '{"content":"hi","role":"user"}'
    """
    return _ENCODER.encode(value)


# One encoder for every element: json.dumps with options builds a new one per call.
_ENCODER = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def block_values(value: Any) -> list[Any]:
    """The blocks of one prompt-sequence element, counted as ``to_anthropic`` counts them for
    its cache breakpoints: the tools list one block
    per tool, a system list one per block, a message one per content block (a string content,
    or any other value, is one block).

    Example:
        >>> len(block_values({"role": "user", "content": [{"type": "text", "text": "a"}] * 3}))
        3
        >>> len(block_values({"role": "user", "content": "hi"}))
        1
    """
    if isinstance(value, list) and value:
        return value
    if isinstance(value, Mapping):
        content = value.get("content")
        if isinstance(content, list) and content:
            return content
    return [value]


def _has_marker(value: Any) -> bool:
    if isinstance(value, Mapping):
        return "cache_control" in value or any(_has_marker(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_marker(v) for v in value)
    return False


@dataclass(frozen=True, slots=True)
class Piece:
    """One element of a prompt sequence (the tools, a system part or a message).

    Attributes:
        value: The JSON value, ``cache_control`` markers removed.
        text: Its canonical JSON (sorted keys, no spaces).
        digest: A hash of ``text``; equal digests mean equal elements.
        marked: The indexes (within :func:`block_values`) of the blocks that carried a
            ``cache_control`` marker — the request's explicit breakpoints.
    """

    value: Any
    text: str
    digest: bytes
    marked: tuple[int, ...] = ()

    @classmethod
    def of(cls, value: Any) -> Piece:
        """The piece for ``value``; markers are looked for only when the JSON names one."""
        text = canonical_json(value)
        if _MARKER not in text:
            return cls(value=value, text=text, digest=_digest(text))
        blocks = block_values(value)
        marked = tuple(i for i, block in enumerate(blocks) if _has_marker(block))
        if not marked and _has_marker(value):  # on the message itself: its last block
            marked = (len(blocks) - 1,)
        stripped = strip_cache_control(value)
        text = canonical_json(stripped)
        return cls(value=stripped, text=text, digest=_digest(text), marked=marked)


@dataclass(frozen=True, slots=True)
class PromptSequence:
    """What one request sends, in prompt order: tools, then system, then each message.

    Attributes:
        tools: The tools list (absent or empty: ``None``).
        system: The system prompt: one piece, or the leading ``system`` / ``developer``
            messages of an OpenAI Chat body, one piece each (none: empty).
        messages: The messages, numbered from 0 after the system prompt.
        session_id: The request log's ``session_id`` (other formats: ``None``).
        auto_cache: The body asks for Anthropic's automatic breakpoint on its last block (a
            top-level ``cache_control``).
        model: The body's ``model``, when it names one (a provider's cache belongs to one
            model).
    """

    tools: Piece | None
    system: tuple[Piece, ...]
    messages: tuple[Piece, ...]
    session_id: str | None = None
    auto_cache: bool = False
    model: str | None = None

    @property
    def pieces(self) -> tuple[Piece, ...]:
        """Every element in prompt order."""
        head = () if self.tools is None else (self.tools,)
        return head + self.system + self.messages


def _objects(value: Any, name: str, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise AuditError(f"{where}: {name} must be a list, not {_kind(value)}")
    for i, item in enumerate(value):
        if not isinstance(item, Mapping):
            raise AuditError(f"{where}: {name}[{i}] must be a JSON object, not {_kind(item)}")
    return value


def _kind(value: Any) -> str:
    kinds = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    kinds.update({int: "a number", float: "a number", type(None): "null"})
    return kinds.get(type(value), type(value).__name__)


def _lists(body: Mapping[str, Any]) -> Mapping[str, Any]:
    """``body`` with its top-level sequences as lists (a request built in Python may hold a
    tuple or a read-only view such as ``ModelRequest.messages``)."""
    found = {
        key: list(value)
        for key, value in body.items()
        if isinstance(value, Sequence) and not isinstance(value, str | bytes | list)
    }
    return {**body, **found} if found else body


def _tools(body: Mapping[str, Any], where: str) -> Piece | None:
    tools = body.get("tools")
    if tools is None:
        return None
    return Piece.of(tools) if _objects(tools, "tools", where) else None


def _chat_only(body: Mapping[str, Any]) -> bool:
    for message in body["messages"]:
        if message.get("role") in _CHAT_ROLES or "tool_calls" in message:
            return True
        content = message.get("content")
        if isinstance(content, list) and any(
            isinstance(p, Mapping) and p.get("type") in _CHAT_PARTS for p in content
        ):
            return True
    tools = body.get("tools")
    return isinstance(tools, list) and any(
        isinstance(t, Mapping) and "function" in t for t in tools
    )


def _anthropic_only(body: Mapping[str, Any]) -> bool:
    if "system" in body or "cache_control" in body:
        return True
    for message in body["messages"]:
        content = message.get("content")
        if isinstance(content, list) and any(
            isinstance(b, Mapping) and b.get("type") in _ANTHROPIC_BLOCKS for b in content
        ):
            return True
    tools = body.get("tools")
    return isinstance(tools, list) and any(
        isinstance(t, Mapping) and "input_schema" in t for t in tools
    )


def _lean(body: Mapping[str, Any], sequence: PromptSequence) -> int:
    """+1 for a body that looks Anthropic, -1 OpenAI, 0 either (used only to break ties)."""
    model = body.get("model")
    anthropic = (
        (isinstance(model, str) and model.startswith("claude"))
        or bool(_ANTHROPIC_HINTS.intersection(body))
        or sequence.auto_cache
        or any(piece.marked for piece in sequence.pieces)
    )
    chat = (isinstance(model, str) and model.startswith(("gpt", "o1", "o3", "o4"))) or bool(
        _CHAT_HINTS.intersection(body)
    )
    return int(anthropic) - int(chat)


def _shapes(body: Mapping[str, Any], where: str, *, auto: bool) -> frozenset[Format]:
    """The formats ``body`` can be. Every format's own fields are checked; with ``auto`` the
    fields only one format has decide between the two with ``messages``."""
    if "messages" in body:
        _objects(body["messages"], "messages", where)
        if not auto:  # --format says how to read it
            return frozenset({"openai_chat", "anthropic", "log"})
        if "session_id" in body:
            return frozenset({"log"})
        chat, anthropic = _chat_only(body), _anthropic_only(body)
        if chat and anthropic:
            raise AuditError(
                f"{where}: mixes OpenAI Chat fields (system/tool roles, tool_calls, function "
                "tools) with Anthropic ones (a top-level system, tool_use/tool_result blocks, "
                "input_schema tools); pick how to read it with --format"
            )
        if chat:
            return frozenset({"openai_chat"})
        if anthropic:
            return frozenset({"anthropic"})
        return frozenset({"openai_chat", "anthropic"})
    if "input" in body or "instructions" in body:
        return frozenset({"openai_responses"})
    keys = ", ".join(sorted(map(str, body))[:8]) or "none"
    raise AuditError(
        f"{where}: not a model request: expected 'messages' (OpenAI Chat, Anthropic, the "
        f"request log) or 'input' / 'instructions' (OpenAI Responses); its keys: {keys}"
    )


def _chat(body: Mapping[str, Any], where: str) -> PromptSequence:
    messages = body["messages"]
    head = 0
    while head < len(messages) and messages[head].get("role") in _SYSTEM_ROLES:
        head += 1
    return PromptSequence(
        tools=_tools(body, where),
        system=tuple(Piece.of(m) for m in messages[:head]),
        messages=tuple(Piece.of(m) for m in messages[head:]),
    )


def _responses(body: Mapping[str, Any], where: str) -> PromptSequence:
    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise AuditError(f"{where}: instructions must be a string, not {_kind(instructions)}")
    items = body.get("input")
    if items is None:
        items = []
    elif isinstance(items, str):
        items = [items]  # a bare string input is one user message
    else:
        _objects(items, "input", where)
    return PromptSequence(
        tools=_tools(body, where),
        system=(Piece.of(instructions),) if instructions else (),
        messages=tuple(Piece.of(item) for item in items),
    )


def _anthropic(body: Mapping[str, Any], where: str) -> PromptSequence:
    system = body.get("system")
    if system is not None and not isinstance(system, str | list):
        raise AuditError(
            f"{where}: system must be a string or a list of blocks, not {_kind(system)}"
        )
    if isinstance(system, list):
        _objects(system, "system", where)
    return PromptSequence(
        tools=_tools(body, where),
        system=(Piece.of(system),) if system else (),
        messages=tuple(_message_piece(m) for m in body["messages"]),
        auto_cache="cache_control" in body,
    )


def _message_piece(message: Mapping[str, Any]) -> Piece:
    """An Anthropic message's piece, equal (same digest) whether its content is a string or
    the one text block the API reads that string as — Claude Code sends the message under
    its last breakpoint as blocks, then as a string in the next request: the same prompt to
    the cache, no break. Its tokens are counted on the JSON as sent."""
    piece = Piece.of(message)
    content = message.get("content")
    if not isinstance(content, str):
        return piece
    same = Piece.of({**message, "content": content_blocks(content)})
    return replace(piece, digest=same.digest)


def _log(body: Mapping[str, Any], where: str) -> PromptSequence:
    session = body.get("session_id")
    if session is not None and not isinstance(session, str):
        raise AuditError(f"{where}: session_id must be a string, not {_kind(session)}")
    system = body.get("system")
    if system is not None and not isinstance(system, str):
        raise AuditError(f"{where}: system must be a string, not {_kind(system)}")
    # directive_ids is the library's own bookkeeping, never sent to a provider
    messages = [
        {k: v for k, v in m.items() if k != "directive_ids"} if "directive_ids" in m else m
        for m in body["messages"]
    ]
    return PromptSequence(
        tools=_tools(body, where),
        system=(Piece.of(system),) if system else (),
        messages=tuple(Piece.of(m) for m in messages),
        session_id=session,
    )


_READERS = {
    "openai_chat": _chat,
    "openai_responses": _responses,
    "anthropic": _anthropic,
    "log": _log,
}


class RequestReader:
    """Reads successive request bodies of one file into prompt sequences.

    The format is the file's: every line must fit it (``--format auto`` narrows it line by
    line; a line that fits none of the formats left is an error naming it).

    Example:
        >>> reader = RequestReader()
        >>> seq = reader.read({"messages": [{"role": "system", "content": "Be brief."},
        ...                                 {"role": "user", "content": "hi"}]}, "line 1")
        >>> len(seq.system), len(seq.messages), reader.format
        (1, 1, 'openai_chat')
    """

    def __init__(self, format: str = "auto") -> None:
        if format not in _ALLOWED:
            raise AuditError(f"--format must be one of {', '.join(FORMAT_OPTIONS)}; got {format!r}")
        self.option = format
        self._left = _ALLOWED[format]
        self._lean = 0

    @property
    def format(self) -> Format:
        """The file's format as read so far (a file that fits both ``messages`` formats is
        ``anthropic`` when its bodies look it, else ``openai_chat``)."""
        if len(self._left) == 1:
            return next(iter(self._left))
        if "openai_chat" not in self._left:
            return "anthropic" if "anthropic" in self._left else min(self._left)
        if "anthropic" in self._left and self._lean > 0:
            return "anthropic"
        return "openai_chat"

    def read(self, body: object, where: str, *, line: int | None = None) -> PromptSequence:
        """The prompt sequence of one request; ``where`` names it in errors, ``line`` is the
        error's :attr:`~agent_reminders.AuditError.line`."""
        try:
            if not isinstance(body, Mapping):
                raise AuditError(f"{where}: not a JSON object but {_kind(body)}")
            body = _lists(body)
            shapes = _shapes(body, where, auto=self.option == "auto")
            left = self._left & shapes
            if not left:
                raise AuditError(self._mismatch(shapes, where))
            self._left = left
            # a body that fits both messages formats reads the same either way
            kind: Format = "openai_chat" if "openai_chat" in left else min(left)
            sequence = _READERS[kind](body, where)
            model = body.get("model")
            if isinstance(model, str) and model:
                sequence = replace(sequence, model=model)
            if {"openai_chat", "anthropic"} <= left:
                self._lean += _lean(body, sequence)
            return sequence
        except AuditError as exc:
            raise AuditError(exc.message, line=line) from None

    def _mismatch(self, shapes: frozenset[Format], where: str) -> str:
        found = " or ".join(sorted(_NAMES[s] for s in shapes)) or "an unknown"
        if self.option == "auto":
            wanted = " or ".join(sorted(_NAMES[s] for s in self._left))
            return (
                f"{where}: a request of another format ({found}) than the lines before it "
                f"({wanted}); the format is detected per file, --format picks one"
            )
        return f"{where}: not a request of --format {self.option} (it looks like {found})"


def read_lines(source: str | Path, *, name: str | None = None) -> Iterator[tuple[int, object]]:
    """``(line number, parsed JSON)`` for each non-blank line of a JSON Lines file (``"-"``:
    standard input), starting at 1.

    Raises:
        AuditError: ``RMD-111`` naming the line that is not UTF-8 or not JSON.
        OSError: the file cannot be read.
    """
    label = name or ("stdin" if str(source) == "-" else str(source))
    data = sys.stdin.buffer.read() if str(source) == "-" else Path(source).read_bytes()
    try:
        text = data.decode("utf-8-sig")  # a BOM from a Windows editor is no error
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise AuditError(
            f"{label} line {line}: not UTF-8 (byte 0x{data[exc.start]:02x}); save it as UTF-8",
            line=line,
        ) from None
    # split on "\n" only: JSON written with ensure_ascii=False may hold U+2028 in a string
    for number, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        try:
            yield number, json.loads(raw)
        except ValueError as exc:
            raise AuditError(
                f"{label} line {number}: not valid JSON ({exc}); each line must be one JSON object",
                line=number,
            ) from None
