"""Validation and copying of provider-neutral messages."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from .errors import MessageError
from .fields import lone_surrogate
from .records import Message

__all__ = ["ROLES", "FrozenDict", "FrozenList", "check_text", "copy_json", "validate_message"]

ROLES: frozenset[str] = frozenset({"system", "user", "assistant", "tool"})


def _read_only(self: object, *args: object, **kwargs: object) -> Any:
    raise TypeError(
        "stored messages are read-only: they are part of the history a provider has cached; "
        "copy one first (dict(m), copy.deepcopy(m)) to build a new message"
    )


class FrozenDict(dict[str, Any]):
    """A read-only ``dict``: JSON-serializable and equal to a plain dict with the same items.

    Stored messages are handed out as these, so no caller can edit history the provider has
    already cached. ``dict(d)``, ``copy.copy`` and ``copy.deepcopy`` give mutable copies.
    """

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (dict(self),))


class FrozenList(list[Any]):
    """A read-only ``list`` (see :class:`FrozenDict`)."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _read_only
    append = clear = extend = insert = pop = remove = reverse = sort = _read_only

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (list(self),))


def copy_json(value: Any) -> Any:
    """Deep-copy JSON-like data (dicts, lists, tuples, scalars); tuples become lists."""
    # Exact types first (what parsed JSON holds): an ABC isinstance check costs several
    # times a type comparison, and a stored session's audit entries are copied on every load.
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    if kind is dict:
        return {k: copy_json(v) for k, v in value.items()}
    if kind is list:
        return [copy_json(v) for v in value]
    if isinstance(value, Mapping):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [copy_json(v) for v in value]
    return value


def _bad(where: str, problem: str) -> MessageError:
    return MessageError(f"{where}: {problem}")


class _SurrogateFoundError(Exception):
    """A lone surrogate found while copying; ``path`` is built while unwinding."""

    def __init__(self, text: str, at: int) -> None:
        self.text, self.at, self.path = text, at, ""


def _copy_checked(value: Any) -> Any:
    """A read-only deep copy (:class:`FrozenDict` / :class:`FrozenList`) that refuses text
    with a lone surrogate (it cannot be sent)."""
    # Exact types first: an ABC isinstance check costs several times a type comparison, and
    # this runs on every value of every message.
    kind = type(value)
    if kind is str or (kind not in _PLAIN and isinstance(value, str)):
        if value.isascii():
            return value
        at = lone_surrogate(value)
        if at is not None:
            raise _SurrogateFoundError(value, at)
        return value
    if kind in _SCALARS:
        return value
    if kind is dict or kind is FrozenDict or isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            try:
                out[key] = _copy_checked(item)
            except _SurrogateFoundError as found:
                found.path = f".{key}{found.path}"
                raise
        return FrozenDict(out)
    if kind is list or kind is FrozenList or isinstance(value, list | tuple):
        items = []
        for index, item in enumerate(value):
            try:
                items.append(_copy_checked(item))
            except _SurrogateFoundError as found:
                found.path = f"[{index}]{found.path}"
                raise
        return FrozenList(items)
    return value


_SCALARS: frozenset[type] = frozenset({int, float, bool, type(None)})
_PLAIN: frozenset[type] = _SCALARS | {dict, list, tuple, FrozenDict, FrozenList}


def _surrogate_error(where: str, found: _SurrogateFoundError) -> MessageError:
    return _bad(
        f"{where}{found.path}",
        f"contains a lone surrogate {found.text[found.at]!r} at index {found.at}; "
        "text must be valid Unicode (encodable as UTF-8)",
    )


def check_text(value: Any, where: str) -> None:
    """Refuse a lone surrogate anywhere in JSON-like ``value`` (message text, tool output).

    Raises:
        MessageError: ``RMD-101`` naming the path (``content[0].text``).
    """
    try:
        _copy_checked(value)
    except _SurrogateFoundError as found:
        raise _surrogate_error(where, found) from None


def validate_message(message: object, where: str = "message") -> Message:
    """Check a neutral chat message and return a read-only deep copy of it.

    Raises:
        TypeError: the message is not a mapping.
        MessageError: ``RMD-101`` naming the path of the bad value (e.g. ``message.role``),
            also for text with a lone surrogate.
    """
    if type(message) is not dict and not isinstance(message, Mapping):
        raise TypeError(f"{where} must be a mapping, not {type(message).__name__}")
    role = message.get("role")
    if role not in ROLES:
        raise _bad(f"{where}.role", f"must be one of assistant, system, tool, user; got {role!r}")
    content = message.get("content")
    if type(content) is not str and not isinstance(content, str | list):
        raise _bad(f"{where}.content", f"must be a string or a list of blocks; got {content!r}")
    if type(content) is not str and isinstance(content, list):
        for i, block in enumerate(content):
            if (type(block) is not dict and not isinstance(block, Mapping)) or not isinstance(
                block.get("type"), str
            ):
                raise _bad(f"{where}.content[{i}]", "must be a mapping with a string 'type'")
    calls = message.get("tool_calls")
    if calls is not None:
        if not isinstance(calls, list | tuple):
            raise _bad(f"{where}.tool_calls", "must be a list")
        for i, call in enumerate(calls):
            if type(call) is not dict and not isinstance(call, Mapping):
                raise _bad(f"{where}.tool_calls[{i}]", "must be a mapping")
            for key in ("id", "name"):
                if not isinstance(call.get(key), str) or not call[key]:
                    raise _bad(f"{where}.tool_calls[{i}].{key}", "must be a non-empty string")
            arguments = call.get("arguments")
            if type(arguments) is not dict and not isinstance(arguments, Mapping):
                raise _bad(f"{where}.tool_calls[{i}].arguments", "must be a mapping")
    for key in ("tool_call_id", "name"):
        if key in message and not isinstance(message[key], str):
            raise _bad(f"{where}.{key}", f"must be a string; got {message[key]!r}")
    ids = message.get("directive_ids")
    if ids is not None and (
        not isinstance(ids, list | tuple) or not all(isinstance(i, str) for i in ids)
    ):
        raise _bad(f"{where}.directive_ids", "must be a list of strings")
    try:
        return cast(Message, _copy_checked(message))
    except _SurrogateFoundError as found:
        raise _surrogate_error(where, found) from None
