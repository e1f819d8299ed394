"""OpenAI wire formats: Chat Completions and the Responses API (pure, no SDK).

``to_openai_chat`` / ``to_openai_responses`` turn a :class:`~agent_reminders.ModelRequest`
into the ``messages``/``input`` and ``tools`` of a request body; ``from_openai_chat`` reads an
existing Chat Completions history back into neutral messages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from .._core.envelope import message_text
from .._core.errors import MessageError
from .._core.records import Message
from .._core.request import ModelRequest
from ._wire import (
    arguments_json,
    call_names,
    checked_messages,
    message_list,
    parse_arguments,
    plain_content,
    text_only,
    tool_specs,
)

__all__ = ["SystemRole", "from_openai_chat", "to_openai_chat", "to_openai_responses"]


def _chat_tool_call(call: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": call["id"],
        "type": "function",
        "function": {"name": call["name"], "arguments": arguments_json(call["arguments"])},
    }


SystemRole = Literal["developer", "system"]


def _chat_message(message: Message, system_role: SystemRole = "developer") -> dict[str, Any]:
    role: str = message["role"]
    if role == "system":  # a mid-conversation system instruction
        role = system_role
    if role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.get("tool_call_id", ""),
            "content": plain_content(message["content"]),
        }
    out: dict[str, Any] = {"role": role, "content": plain_content(text_only(message["content"]))}
    if "name" in message:
        out["name"] = message["name"]
    calls = message.get("tool_calls") or []
    if role == "assistant" and calls:
        if out["content"] == "":
            # OpenAI's own shape for an assistant turn that only calls tools.
            out["content"] = None
        out["tool_calls"] = [_chat_tool_call(call) for call in calls]
    return out


def to_openai_chat(
    request: ModelRequest, *, system_role: SystemRole = "developer"
) -> dict[str, Any]:
    """The ``messages`` and ``tools`` of a Chat Completions request.

    The system prompt is the first ``system`` message (left out when empty); a neutral
    ``system`` message later in the conversation (an envelope on the system channel) is a
    ``developer`` message in place (``system_role="system"`` for a server that wants
    ``system``); a tool call is
    ``{"id", "type": "function", "function": {"name", "arguments": <JSON string>}}``, a tool
    result ``{"role": "tool", "tool_call_id", "content"}``, and an assistant turn that only
    calls tools has ``"content": None``. ``directive_ids`` is never sent. The ``tools`` list
    is empty when the request has none (the OpenAI API refuses ``"tools": []``: leave the
    key out of the call then).

    Example:
        >>> from agent_reminders import ModelRequest
        >>> body = to_openai_chat(ModelRequest(system="Be brief.",
        ...                                    messages=[{"role": "user", "content": "hi"}]))
        >>> body["messages"]
        [{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': 'hi'}]
    """
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    messages.extend(_chat_message(message, system_role) for message in request.messages)
    tools = [
        {
            "type": "function",
            "function": {"name": name, "description": description, "parameters": parameters},
        }
        for name, description, parameters in tool_specs(request.tools)
    ]
    return {"messages": messages, "tools": tools}


def _responses_content(content: Any, role: str) -> Any:
    if isinstance(content, str):
        return content
    kind = "output_text" if role == "assistant" else "input_text"
    return [
        {"type": kind, "text": block["text"]} if block.get("type") == "text" else dict(block)
        for block in plain_content(content)
    ]


def to_openai_responses(request: ModelRequest) -> dict[str, Any]:
    """The ``instructions``, ``input`` and ``tools`` of a Responses API request.

    Input items are ``{"type": "message", "role", "content"}`` (neutral text blocks become
    ``input_text`` — ``output_text`` for the assistant; a neutral ``system`` message in the
    conversation is a ``developer`` item in place), one ``{"type": "function_call",
    "call_id", "name", "arguments"}`` per tool call (after the assistant's text, which is left
    out when empty) and ``{"type": "function_call_output", "call_id", "output"}`` per tool
    result. Meant for stateless use: the whole input every turn, ``store=False``.

    Example:
        >>> from agent_reminders import ModelRequest
        >>> body = to_openai_responses(ModelRequest(system="Be brief.",
        ...                                         messages=[{"role": "user", "content": "hi"}]))
        >>> body["instructions"], body["input"]
        ('Be brief.', [{'type': 'message', 'role': 'user', 'content': 'hi'}])
    """
    items: list[dict[str, Any]] = []
    for message in request.messages:
        role = message["role"]
        if role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.get("tool_call_id", ""),
                    "output": _responses_content(message["content"], "tool"),
                }
            )
            continue
        calls = (message.get("tool_calls") or []) if role == "assistant" else []
        if not (calls and message["content"] in ("", [])):
            items.append(
                {
                    "type": "message",
                    "role": "developer" if role == "system" else role,
                    "content": _responses_content(text_only(message["content"]), role),
                }
            )
        items.extend(
            {
                "type": "function_call",
                "call_id": call["id"],
                "name": call["name"],
                "arguments": arguments_json(call["arguments"]),
            }
            for call in calls
        )
    tools = [
        {"type": "function", "name": name, "description": description, "parameters": parameters}
        for name, description, parameters in tool_specs(request.tools)
    ]
    return {"instructions": request.system, "input": items, "tools": tools}


def _from_chat_message(
    raw: Any, where: str, names: Mapping[str, str]
) -> tuple[dict[str, Any], str]:
    if not isinstance(raw, Mapping):
        raise MessageError(f"{where}: must be a mapping, not {type(raw).__name__}")
    role = raw.get("role")
    content = raw.get("content")
    if role == "developer":
        role = "system"
    if role == "tool":
        call_id = raw.get("tool_call_id")
        out: dict[str, Any] = {"role": "tool", "tool_call_id": call_id}
        name = raw.get("name", names.get(call_id) if isinstance(call_id, str) else None)
        if name is not None:
            out["name"] = name
        out["content"] = "" if content is None else content
        return out, where
    if role not in ("system", "user", "assistant"):
        raise MessageError(
            f"{where}.role: must be one of assistant, developer, system, tool, user; got {role!r}"
        )
    out = {"role": role, "content": "" if content is None else content}
    if isinstance(raw.get("name"), str):
        out["name"] = raw["name"]
    calls = raw.get("tool_calls")
    if role == "assistant" and calls:
        if not isinstance(calls, list | tuple):
            raise MessageError(f"{where}.tool_calls: must be a list")
        out["tool_calls"] = [
            _from_chat_call(call, f"{where}.tool_calls[{i}]") for i, call in enumerate(calls)
        ]
    return out, where


def _from_chat_call(call: Any, where: str) -> dict[str, Any]:
    if not isinstance(call, Mapping):
        raise MessageError(f"{where}: must be a mapping")
    function = call.get("function")
    if not isinstance(function, Mapping):
        raise MessageError(
            f'{where}.function: must be a mapping {{"name", "arguments"}} '
            f'(a tool call is {{"id", "type": "function", "function": {{...}}}})'
        )
    return {
        "id": call.get("id"),
        "name": function.get("name"),
        "arguments": parse_arguments(function.get("arguments", ""), f"{where}.function.arguments"),
    }


def from_openai_chat(
    messages: Sequence[Mapping[str, Any]] | Mapping[str, Any],
) -> tuple[str, list[Message]]:
    """Read a Chat Completions history (a message list, or a body with ``messages``) back
    into ``(system, neutral messages)``.

    The leading ``system`` and ``developer`` messages become the system string (their texts
    joined by a blank line); a later one stays in place as a neutral ``system`` message.
    Tool-call arguments are parsed from their JSON string (``""`` means no arguments),
    ``null`` content becomes ``""``, content part lists are kept as lists, and a tool result
    gets the ``name`` of the call it answers. ``from_openai_chat(to_openai_chat(request))``
    gives back ``request.system`` and ``request.messages`` (see docs/wire-formats.md for the
    normalisations).

    Raises:
        MessageError: ``RMD-101`` naming the path of the bad value, e.g.
            ``messages[2].tool_calls[0].function.arguments`` for arguments that are not JSON.

    Example:
        >>> system, history = from_openai_chat([
        ...     {"role": "developer", "content": "Be brief."},
        ...     {"role": "assistant", "content": None, "tool_calls": [{"id": "c1",
        ...      "type": "function", "function": {"name": "ls", "arguments": '{"path":"."}'}}]},
        ...     {"role": "tool", "tool_call_id": "c1", "content": "a.py"}])
        >>> system, history[0]["tool_calls"], history[1]["name"]
        ('Be brief.', [{'id': 'c1', 'name': 'ls', 'arguments': {'path': '.'}}], 'ls')
    """
    raw = message_list(messages, "messages")
    lead = 0
    system_parts: list[str] = []
    while lead < len(raw):
        item = raw[lead]
        if not (isinstance(item, Mapping) and item.get("role") in ("system", "developer")):
            break
        text, _ = _from_chat_message(item, f"messages[{lead}]", {})
        system_parts.append(message_text(text))
        lead += 1
    built: list[tuple[dict[str, Any], str]] = []
    names: dict[str, str] = {}
    for index in range(lead, len(raw)):
        message, where = _from_chat_message(raw[index], f"messages[{index}]", names)
        names.update(call_names([message]) if message.get("tool_calls") else {})
        built.append((message, where))
    return "\n\n".join(system_parts), checked_messages(built)
