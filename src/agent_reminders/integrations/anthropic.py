"""Anthropic Messages API wire format (pure, no SDK), with prompt-cache breakpoints.

``to_anthropic`` turns a :class:`~agent_reminders.ModelRequest` into the ``system``,
``messages`` and ``tools`` of a request body; ``from_anthropic`` reads an existing body back
into neutral messages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from .._core.channels import TOOL_CHANGE_BLOCKS, placement
from .._core.envelope import lasts_one_turn, message_text
from .._core.errors import MessageError
from .._core.records import Message
from .._core.request import ModelRequest
from ._wire import (
    call_names,
    checked_messages,
    content_blocks,
    copy_json,
    is_plain_text_block,
    message_list,
    plain_content,
    text_only,
    tool_specs,
)

__all__ = [
    "CACHE_CONTROL",
    "CACHE_DIAGNOSIS_BETA",
    "CLEAR_AT_BETA",
    "INLINE_TOOLS_BETA",
    "LOOKBACK_BLOCKS",
    "TOOL_CHANGES_BETA",
    "anthropic_betas",
    "from_anthropic",
    "strip_cache_control",
    "to_anthropic",
]

CACHE_CONTROL: Mapping[str, str] = MappingProxyType({"type": "ephemeral"})
"""The marker ``to_anthropic`` puts on a block (a fresh copy, as the block's last key,
``cache_control``); read-only, so no caller can change what every later request sends."""

LOOKBACK_BLOCKS = 20
"""How many blocks before a breakpoint the provider looks for an earlier cache entry."""


def _assistant_blocks(message: Message) -> list[dict[str, Any]]:
    content = message["content"]
    # An empty text block is refused by the API; an assistant turn may be tool calls only.
    blocks = [] if content == "" else content_blocks(content)
    blocks.extend(
        {
            "type": "tool_use",
            "id": call["id"],
            "name": call["name"],
            "input": copy_json(call["arguments"]),
        }
        for call in message.get("tool_calls") or ()
    )
    return blocks


def _system_blocks(content: object, declared: frozenset[str]) -> list[dict[str, Any]]:
    """A system entry's content: text blocks as they are; a tool addition a reference to a
    tool the request declares, else its definition inline; a tool removal a reference."""
    out: list[dict[str, Any]] = []
    for block in content_blocks(content):
        kind = block.get("type")
        if kind == "tool_removal":
            out.append({"type": "tool_removal", "tool": _reference(block["name"])})
        elif kind == "tool_addition" and block["name"] in declared:
            out.append({"type": "tool_addition", "tool": _reference(block["name"])})
        elif kind == "tool_addition":
            (_, description, parameters), *_ = tool_specs([block])
            definition = {
                "name": block["name"],
                "description": description,
                "input_schema": parameters,
            }
            out.append(
                {
                    "type": "tool_addition",
                    "tool": {"type": "tool_definition", "definition": definition},
                }
            )
        else:
            out.append(block)
    return out


def _reference(name: str) -> dict[str, Any]:
    return {"type": "tool_reference", "name": name}


def _messages(request: ModelRequest, clear_at: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    results: list[dict[str, Any]] | None = None  # the open tool_result user turn
    downgraded = placement(request.messages)
    declared = frozenset(t["name"] for t in request.tools)
    for index, message in enumerate(request.messages):
        role = message["role"]
        if role == "tool":
            block = {
                "type": "tool_result",
                "tool_use_id": message.get("tool_call_id", ""),
                "content": plain_content(message["content"]),
            }
            if results is None:
                results = [block]
                out.append({"role": "user", "content": results})
            else:
                results.append(block)
            continue
        # Anything else — the envelope above all — is a message of its own, so a turn an
        # earlier request already sent is never changed.
        results = None
        if role == "assistant":
            out.append({"role": "assistant", "content": _assistant_blocks(message)})
        elif role == "system" and index not in downgraded:
            # a mid-conversation system entry, in place; one that may leave the model's view
            # after its one turn says so (it stays in the array, byte for byte)
            entry: dict[str, Any] = {
                "role": "system",
                "content": _system_blocks(message["content"], declared),
            }
            if clear_at and lasts_one_turn(message_text(message)):
                entry["clear_at"] = "next_user_message"
            out.append(entry)
        else:
            # a user message, or a system message that cannot stand where it is (downgraded)
            out.append({"role": "user", "content": content_blocks(text_only(message["content"]))})
    return out


def _place_breakpoints(messages: list[dict[str, Any]]) -> None:
    blocks = [m["content"] for m in messages]
    ends: list[int] = []  # the global index of each message's last block (-1: none yet)
    total = 0
    for content in blocks:
        total += len(content)
        ends.append(total - 1)
    last = next((i for i in range(len(messages) - 1, -1, -1) if blocks[i]), None)
    if last is None:
        return
    blocks[last][-1]["cache_control"] = dict(CACHE_CONTROL)
    assistant = next(
        (i for i in range(len(messages) - 1, -1, -1) if messages[i]["role"] == "assistant"), None
    )
    if assistant is None or assistant == 0 or not blocks[assistant - 1]:
        return
    previous_end = ends[assistant - 1]
    if ends[last] - previous_end > LOOKBACK_BLOCKS:
        blocks[assistant - 1][-1]["cache_control"] = dict(CACHE_CONTROL)


def to_anthropic(
    request: ModelRequest, *, cache: bool = True, clear_at: bool = False
) -> dict[str, Any]:
    """The ``system``, ``messages`` and ``tools`` of a Messages API request.

    Tool calls are ``tool_use`` blocks; the results of one assistant turn's calls are one
    ``user`` message of ``tool_result`` blocks; every other neutral message (the envelope
    above all) is a message of its own, so the envelope after tool results is the next
    ``user`` message. A neutral ``system`` message in the conversation (an envelope on the
    system channel) is a ``{"role": "system"}`` entry in place where the API's placement
    rules allow it, else a ``user`` message (downgraded; see
    :func:`agent_reminders.placement`). With ``clear_at=True`` (a model with the
    ``clear_at`` beta; send :func:`anthropic_betas` with it) a system entry whose
    directives all have ``ttl_turns="1"`` carries ``"clear_at": "next_user_message"``.
    Every content is a list of blocks (a string is one text block), so
    markers can come and go without changing any other byte. Tools are ``{name, description,
    input_schema}``.

    With ``cache=True`` a ``cache_control`` marker goes on (1) the last system block, (2) the
    last block of the last message and (3) the last block of the message just before the last
    assistant message, when it lies more than :data:`LOOKBACK_BLOCKS` blocks before (2) —
    where the previous request ended, which the provider's look-back would no longer reach.
    With ``cache=False`` there are no markers and the output is byte-append-only.

    Example:
        >>> from agent_reminders import ModelRequest
        >>> body = to_anthropic(ModelRequest(system="Be brief.",
        ...                                  messages=[{"role": "user", "content": "hi"}]))
        >>> body["system"]
        [{'type': 'text', 'text': 'Be brief.', 'cache_control': {'type': 'ephemeral'}}]
        >>> body["messages"]
        [{'role': 'user', 'content': [{'type': 'text', 'text': 'hi', 'cache_control': {'type': 'ephemeral'}}]}]
    """  # noqa: E501
    system: list[dict[str, Any]] = (
        [{"type": "text", "text": request.system}] if request.system else []
    )
    messages = _messages(request, clear_at)
    if cache:
        if system:
            system[-1]["cache_control"] = dict(CACHE_CONTROL)
        _place_breakpoints(messages)
    tools = [
        {"name": name, "description": description, "input_schema": parameters}
        for name, description, parameters in tool_specs(request.tools)
    ]
    return {"system": system, "messages": messages, "tools": tools}


CLEAR_AT_BETA = "mid-conversation-system-clear-at-2026-08-21"
TOOL_CHANGES_BETA = "mid-conversation-tool-changes-2026-07-01"
INLINE_TOOLS_BETA = "inline-tools-2026-09-15"
CACHE_DIAGNOSIS_BETA = "cache-diagnosis-2026-04-07"
"""What a body carrying ``diagnostics`` (``{"previous_message_id": ...}``, Anthropic's cache
diagnostics) needs: the response then says why the prompt cache missed."""


def anthropic_betas(body: Mapping[str, Any]) -> list[str]:
    """The ``anthropic-beta`` values a body from :func:`to_anthropic` needs: the ``clear_at``
    beta when an entry carries ``clear_at``, the tool-change beta when an entry carries
    ``tool_addition`` / ``tool_removal`` blocks (and the inline-tools beta when one defines
    its tool inline), the cache-diagnosis beta when the body carries ``diagnostics``; ``[]``
    for a body that uses none.

    Example:
        >>> anthropic_betas({"messages": [{"role": "system", "content": [],
        ...                                "clear_at": "next_user_message"}]})
        ['mid-conversation-system-clear-at-2026-08-21']
        >>> anthropic_betas({"messages": [], "diagnostics": {"previous_message_id": None}})
        ['cache-diagnosis-2026-04-07']
    """
    betas: list[str] = []
    messages = body.get("messages") or []
    if any("clear_at" in m for m in messages):
        betas.append(CLEAR_AT_BETA)
    changes = [
        b
        for m in messages
        if m.get("role") == "system"
        for b in m.get("content") or ()
        if isinstance(b, Mapping) and b.get("type") in TOOL_CHANGE_BLOCKS
    ]
    if changes:
        betas.append(TOOL_CHANGES_BETA)
    if any(b.get("tool", {}).get("type") == "tool_definition" for b in changes):
        betas.append(INLINE_TOOLS_BETA)
    if "diagnostics" in body:
        betas.append(CACHE_DIAGNOSIS_BETA)
    return betas


def strip_cache_control(value: Any) -> Any:
    """A copy without any ``cache_control`` key, at any depth: what the prompt cache compares
    (the markers move by design). The one copy of the rule: the audit, the recording server
    and the prompt-cache oracle use it too.

    Example:
        >>> strip_cache_control([{"type": "text", "text": "a", "cache_control": CACHE_CONTROL}])
        [{'type': 'text', 'text': 'a'}]
    """
    if isinstance(value, Mapping):
        return {k: strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list | tuple):
        return [strip_cache_control(v) for v in value]
    return value


def _neutral_content(blocks: list[Any]) -> str | list[Any]:
    """Blocks as neutral content: one plain text block is its string, none is ``""``."""
    if not blocks:
        return ""
    if len(blocks) == 1 and is_plain_text_block(blocks[0]):
        text: str = blocks[0]["text"]
        return text
    return blocks


def _blocks(content: Any, where: str) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise MessageError(f"{where}: must be a string or a list of blocks; got {content!r}")
    for i, block in enumerate(content):
        if not isinstance(block, Mapping):
            raise MessageError(f"{where}[{i}]: must be a mapping with a string 'type'")
    return list(content)


def _from_user(
    blocks: list[Any], where: str, names: Mapping[str, str]
) -> list[tuple[dict[str, Any], str]]:
    """A user turn: each ``tool_result`` a tool message, each run of other blocks a user
    message, in order."""
    out: list[tuple[dict[str, Any], str]] = []
    run: list[Any] = []
    for i, block in enumerate(blocks):
        if block.get("type") != "tool_result":
            run.append(block)
            continue
        if run:
            out.append(({"role": "user", "content": _neutral_content(run)}, where))
            run = []
        call_id = block.get("tool_use_id")
        tool: dict[str, Any] = {"role": "tool", "tool_call_id": call_id}
        if isinstance(call_id, str) and call_id in names:
            tool["name"] = names[call_id]
        content = block.get("content", "")
        tool["content"] = _neutral_content(_blocks(content, f"{where}[{i}].content"))
        out.append((tool, f"{where}[{i}]"))
    if run or not out:
        out.append(({"role": "user", "content": _neutral_content(run)}, where))
    return out


def _from_assistant(blocks: list[Any], where: str) -> dict[str, Any]:
    calls = [
        {"id": b.get("id"), "name": b.get("name"), "arguments": b.get("input", {})}
        for b in blocks
        if b.get("type") == "tool_use"
    ]
    rest = [b for b in blocks if b.get("type") != "tool_use"]
    out: dict[str, Any] = {"role": "assistant", "content": _neutral_content(rest)}
    if calls:
        out["tool_calls"] = calls
    return out


def _neutral_block(block: Any, tools: Mapping[str, Mapping[str, Any]]) -> Any:
    """A system entry's block as a neutral one: a tool change names its tool (with the
    definition it carries inline, or the one of the body's ``tools`` it refers to)."""
    kind = block.get("type")
    if kind not in TOOL_CHANGE_BLOCKS:
        return block
    tool = block.get("tool") if isinstance(block.get("tool"), Mapping) else {}
    if tool.get("type") == "tool_definition":
        found = tool.get("definition") or {}
    else:
        found = tools.get(tool.get("name", ""), {"name": tool.get("name", "")})
    if kind == "tool_removal":
        return {"type": "tool_removal", "name": found.get("name", tool.get("name", ""))}
    return {
        "type": "tool_addition",
        "name": found.get("name", ""),
        "description": found.get("description", ""),
        "parameters": found.get("input_schema", {"type": "object", "properties": {}}),
    }


def from_anthropic(
    body: Mapping[str, Any] | Sequence[Mapping[str, Any]],
) -> tuple[str, list[Message]]:
    """Read a Messages API body (``system`` and ``messages``; or just a message list) back
    into ``(system, neutral messages)``.

    System blocks are joined by a blank line; ``cache_control`` markers are dropped;
    ``tool_use`` blocks become the assistant's ``tool_calls``; each ``tool_result`` block
    (whose content may be a string or blocks) becomes a ``tool`` message named after the call
    it answers, and the other blocks of that user turn a ``user`` message after it. A content
    that is a single plain text block comes back as its string, none as ``""``.
    ``from_anthropic(to_anthropic(request))`` gives back ``request.system`` and
    ``request.messages`` (see docs/wire-formats.md for the normalisations).

    Raises:
        MessageError: ``RMD-101`` naming the path of the bad value.

    Example:
        >>> system, history = from_anthropic({"system": "Be brief.", "messages": [
        ...     {"role": "assistant", "content": [{"type": "tool_use", "id": "c1",
        ...      "name": "ls", "input": {}}]},
        ...     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1",
        ...      "content": "a.py"}, {"type": "text", "text": "go on"}]}]})
        >>> [(m["role"], m["content"]) for m in history]
        [('assistant', ''), ('tool', 'a.py'), ('user', 'go on')]
    """
    stripped = strip_cache_control(body)
    raw = message_list(stripped, "messages")
    system: Any = stripped.get("system", "") if isinstance(stripped, Mapping) else ""
    if system is None:
        system = ""
    if not isinstance(system, str):
        parts = _blocks(system, "system")
        system = "\n\n".join(b["text"] for b in parts if isinstance(b.get("text"), str))
    built: list[tuple[dict[str, Any], str]] = []
    names: dict[str, str] = {}
    declared = stripped.get("tools") if isinstance(stripped, Mapping) else None
    tools = {
        t["name"]: t
        for t in declared or ()
        if isinstance(t, Mapping) and isinstance(t.get("name"), str)
    }
    for index, message in enumerate(raw):
        where = f"messages[{index}]"
        if not isinstance(message, Mapping):
            raise MessageError(f"{where}: must be a mapping, not {type(message).__name__}")
        role = message.get("role")
        blocks = _blocks(message.get("content"), f"{where}.content")
        if role == "assistant":
            converted = _from_assistant(blocks, f"{where}.content")
            names.update(call_names([converted]))
            built.append((converted, where))
        elif role == "user":
            built.extend(_from_user(blocks, f"{where}.content", names))
        elif role == "system":  # a mid-conversation system entry stays in place
            neutral = [_neutral_block(b, tools) for b in blocks]
            built.append(({"role": "system", "content": _neutral_content(neutral)}, where))
        else:
            raise MessageError(
                f"{where}.role: must be 'user', 'assistant' or 'system'; got {role!r}"
            )
    return system, checked_messages(built)
