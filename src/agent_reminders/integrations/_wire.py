"""What the three wire formats share: copying neutral values out, tool-call arguments as
JSON, tool names by call id, and the text of content blocks.

Every converter builds fresh plain ``dict``/``list`` values (never the read-only views of the
history), in a fixed key order, from nothing but the request: the same request always gives
the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from .._core.channels import TOOL_CHANGE_BLOCKS
from .._core.errors import MessageError
from .._core.messages import copy_json, validate_message
from .._core.records import Message
from ..toolset import tool_change_text

__all__ = [
    "arguments_json",
    "call_names",
    "checked_messages",
    "content_blocks",
    "copy_json",
    "is_plain_text_block",
    "message_list",
    "parse_arguments",
    "plain_content",
    "text_only",
    "tool_specs",
]


def arguments_json(arguments: Mapping[str, Any]) -> str:
    """Tool-call arguments as a JSON string: keys in the call's own order, no ASCII escaping,
    compact separators — the same mapping always gives the same string."""
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))


def parse_arguments(raw: object, where: str) -> dict[str, Any]:
    """Read tool-call arguments that came as a JSON string (or already as a mapping).

    An empty string means no arguments (some OpenAI-compatible servers send ``""`` for a
    call without parameters).

    Raises:
        MessageError: ``RMD-101`` naming ``where`` when the text is not JSON or not an object.
    """
    if isinstance(raw, Mapping):
        return cast(dict[str, Any], copy_json(raw))
    if not isinstance(raw, str):
        raise MessageError(f"{where}: must be a JSON object string; got {raw!r}")
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as err:
        raise MessageError(
            f"{where}: is not valid JSON ({err.msg} at character {err.pos}); the arguments of "
            "a tool call must be a JSON object string"
        ) from None
    if not isinstance(value, dict):
        raise MessageError(
            f"{where}: must be a JSON object, not {type(value).__name__}; wrap the values in "
            "an object keyed by parameter name"
        )
    return value


def call_names(messages: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Tool name by call id, over the neutral assistant messages' ``tool_calls``."""
    names: dict[str, str] = {}
    for message in messages:
        for call in message.get("tool_calls") or ():
            names[call["id"]] = call["name"]
    return names


def is_plain_text_block(block: object) -> bool:
    """A neutral text block: exactly ``{"type": "text", "text": str}``."""
    return (
        isinstance(block, Mapping)
        and block.keys() == {"type", "text"}
        and block["type"] == "text"
        and isinstance(block["text"], str)
    )


def content_blocks(content: object) -> list[dict[str, Any]]:
    """Neutral content as a fresh list of blocks: a string is one text block."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return cast(list[dict[str, Any]], copy_json(content))


def plain_content(content: object) -> Any:
    """Neutral content copied out as plain JSON values (a string stays a string)."""
    return content if isinstance(content, str) else copy_json(content)


def tool_specs(tools: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, Any]]:
    """``(name, description, parameters)`` of each neutral tool spec, parameters copied."""
    return [
        (
            tool["name"],
            tool.get("description") or "",
            copy_json(tool.get("parameters") or {"type": "object", "properties": {}}),
        )
        for tool in tools
    ]


def message_list(value: object, name: str) -> list[Any]:
    """The message list of a provider body, or the list itself."""
    if isinstance(value, Mapping):
        value = value.get("messages", [])
    if not isinstance(value, list | tuple):
        raise MessageError(f"{name}: must be a list of messages; got {type(value).__name__}")
    return list(value)


def checked_messages(built: Iterable[tuple[dict[str, Any], str]]) -> list[Message]:
    """Validate converted neutral messages (``where`` names their source) and return plain
    copies the caller owns."""
    return [cast(Message, copy_json(validate_message(message, where))) for message, where in built]


def text_only(content: Any) -> Any:
    """``content`` for a role that carries no tool-change blocks: each such block becomes a
    text block saying the change (content without one is returned as it is)."""
    if isinstance(content, str) or not any(
        isinstance(b, Mapping) and b.get("type") in TOOL_CHANGE_BLOCKS for b in content
    ):
        return content
    return [
        {"type": "text", "text": tool_change_text(b)}
        if isinstance(b, Mapping) and b.get("type") in TOOL_CHANGE_BLOCKS
        else b
        for b in content
    ]
