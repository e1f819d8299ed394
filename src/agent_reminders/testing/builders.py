"""Builders for the messages, tool calls and sessions that tests keep writing by hand."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast

from .._core.records import Message
from ..session import Session

__all__ = [
    "assistant",
    "make_session",
    "text_of",
    "tool_call",
    "tool_result",
    "user",
]


def user(text: str | list[dict[str, Any]]) -> dict[str, Any]:
    """A user message.

    Example:
        >>> user("hi")
        {'role': 'user', 'content': 'hi'}
    """
    return {"role": "user", "content": text}


def tool_call(id: str, name: str, **arguments: Any) -> dict[str, Any]:
    """A tool call ``{id, name, arguments}`` (for an assistant message or a script entry).

    Example:
        >>> tool_call("c1", "shell", command="ls")
        {'id': 'c1', 'name': 'shell', 'arguments': {'command': 'ls'}}
    """
    return {"id": id, "name": name, "arguments": arguments}


def assistant(
    text: str = "", *, tool_calls: Iterable[Mapping[str, Any]] | None = None
) -> dict[str, Any]:
    """An assistant message, optionally with tool calls.

    Example:
        >>> assistant("On it.", tool_calls=[tool_call("c1", "ls")])
        {'role': 'assistant', 'content': 'On it.', 'tool_calls': [{'id': 'c1', 'name': 'ls', 'arguments': {}}]}
    """  # noqa: E501
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls is not None:
        message["tool_calls"] = [dict(c) for c in tool_calls]
    return message


def tool_result(
    call: str | Mapping[str, Any], content: str, *, name: str | None = None
) -> dict[str, Any]:
    """A tool message answering a call (given as its id or as the call mapping).

    Example:
        >>> tool_result(tool_call("c1", "ls"), "a.txt")
        {'role': 'tool', 'tool_call_id': 'c1', 'name': 'ls', 'content': 'a.txt'}
    """
    call_name: str | None = name
    if isinstance(call, Mapping):
        call_id, call_name = str(call["id"]), name or str(call["name"])
    else:
        call_id = call
    message: dict[str, Any] = {"role": "tool", "tool_call_id": call_id}
    if call_name is not None:
        message["name"] = call_name
    message["content"] = content
    return message


def make_session(*messages: Mapping[str, Any] | str, **options: Any) -> Session:
    """A :class:`Session` (``options`` as ``Session`` takes them) with ``messages`` appended;
    a ``str`` is a user message.

    Example:
        >>> s = make_session("hi", assistant("hello"), system="Be terse.", session_id="s-1")
        >>> s.id, [m["role"] for m in s.transcript.messages]
        ('s-1', ['user', 'assistant'])
    """
    session_id = options.pop("session_id", None)
    session = Session(session_id, **options)
    for message in messages:
        session.append(cast(Message, user(message) if isinstance(message, str) else dict(message)))
    return session


def text_of(messages: Iterable[Mapping[str, Any] | Message]) -> str:
    """All text of some messages (string contents and text blocks), one part per line.

    Example:
        >>> text_of([user("a"), {"role": "user", "content": [{"type": "text", "text": "b"}]}])
        'a\\nb'
    """
    parts: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(
                b["text"]
                for b in content
                if isinstance(b, Mapping) and isinstance(b.get("text"), str)
            )
    return "\n".join(parts)
