"""The ``session/update`` payloads the bridge sends: a tool call, its result, and the replay of
a stored conversation.

Below the ACP methods (:mod:`.acp`) and the prompt run (:mod:`.prompt`), which both send them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._core.records import Message

__all__ = ["replay_updates", "tool_call_update", "tool_result_update"]


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list | tuple):
        return "".join(
            str(b.get("text", "")) for b in content if isinstance(b, Mapping) and "text" in b
        )
    return ""


def replay_updates(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """The ``session/update`` payloads that replay a stored conversation.

    Envelope messages (the directives the library committed) are not the person's words and
    are not replayed.
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message["role"]
        if role == "user" and "directive_ids" not in message:
            text = _text(message.get("content"))
            out.append(
                {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": text}}
            )
        elif role == "assistant":
            text = _text(message.get("content"))
            if text:
                out.append(
                    {
                        "sessionUpdate": "agent_message_chunk",
                        "content": {"type": "text", "text": text},
                    }
                )
            for call in message.get("tool_calls") or ():
                out.append(tool_call_update(call["id"], call["name"], dict(call["arguments"])))
        elif role == "tool":
            out.append(
                tool_result_update(
                    str(message.get("tool_call_id", "")), True, _text(message.get("content"))
                )
            )
    return out


def tool_call_update(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A ``tool_call`` update: the model asked for a tool."""
    return {
        "sessionUpdate": "tool_call",
        "toolCallId": call_id,
        "title": name,
        "kind": "other",
        "status": "pending",
        "rawInput": arguments,
    }


def tool_result_update(call_id: str, ok: bool, text: str) -> dict[str, Any]:
    """A ``tool_call_update``: the tool ran (``completed``) or failed (``failed``)."""
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "status": "completed" if ok else "failed",
        "content": [{"type": "content", "content": {"type": "text", "text": text}}],
    }
