"""Gemini ``generateContent`` wire format, REST field names (pure, no SDK)."""

from __future__ import annotations

from typing import Any

from .._core.request import ModelRequest
from ._wire import call_names, content_blocks, copy_json, plain_content, text_only, tool_specs

__all__ = ["to_gemini"]


def _parts(content: Any) -> list[dict[str, Any]]:
    return [
        {"text": block["text"]} if block.get("type") == "text" else block
        for block in content_blocks(content)
    ]


def to_gemini(request: ModelRequest) -> dict[str, Any]:
    """The ``systemInstruction``, ``contents`` and ``tools`` of a ``generateContent`` body.

    Roles are ``user`` and ``model``; a tool call is a ``{"functionCall": {"id", "name",
    "args"}}`` part after the model's text (left out when empty); the results of one model
    turn's calls are one ``user`` content of ``{"functionResponse": {"id", "name",
    "response": {"output": content}}}`` parts, and every other message — the envelope above
    all — is a content of its own. ``systemInstruction`` is left out when the system prompt
    is empty; ``tools`` is ``[{"functionDeclarations": [...]}]``, or ``[]`` without tools.

    Example:
        >>> from agent_reminders import ModelRequest
        >>> body = to_gemini(ModelRequest(system="Be brief.",
        ...                               messages=[{"role": "user", "content": "hi"}]))
        >>> body["systemInstruction"], body["contents"]
        ({'parts': [{'text': 'Be brief.'}]}, [{'role': 'user', 'parts': [{'text': 'hi'}]}])
    """
    names = call_names(request.messages)
    contents: list[dict[str, Any]] = []
    responses: list[dict[str, Any]] | None = None  # the open functionResponse turn
    for message in request.messages:
        role = message["role"]
        if role == "tool":
            call_id = message.get("tool_call_id", "")
            part = {
                "functionResponse": {
                    "id": call_id,
                    "name": message.get("name") or names.get(call_id, ""),
                    "response": {"output": plain_content(message["content"])},
                }
            }
            if responses is None:
                responses = [part]
                contents.append({"role": "user", "parts": responses})
            else:
                responses.append(part)
            continue
        responses = None
        if role == "assistant":
            parts = [] if message["content"] == "" else _parts(message["content"])
            parts.extend(
                {
                    "functionCall": {
                        "id": call["id"],
                        "name": call["name"],
                        "args": copy_json(call["arguments"]),
                    }
                }
                for call in message.get("tool_calls") or ()
            )
            contents.append({"role": "model", "parts": parts})
        else:
            # Gemini has no system role inside contents: a later system message is a user turn.
            contents.append({"role": "user", "parts": _parts(text_only(message["content"]))})
    body: dict[str, Any] = {}
    if request.system:
        body["systemInstruction"] = {"parts": [{"text": request.system}]}
    body["contents"] = contents
    declarations = [
        {"name": name, "description": description, "parameters": parameters}
        for name, description, parameters in tool_specs(request.tools)
    ]
    body["tools"] = [{"functionDeclarations": declarations}] if declarations else []
    return body
