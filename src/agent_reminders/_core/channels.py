"""The role an envelope travels in, and where a mid-conversation system entry may stand.

A committed envelope is a ``user`` message or a ``system`` message in the middle of the
conversation: its **channel**, chosen when it is committed and stored with it, so every later
request sends it the same way. ``system`` is the more trusted channel: a model reads it as an
instruction of the runtime, not as something the person wrote, and no text in a file or a
tool result can pass for it. Each API spells it its own way (a ``system`` entry in Anthropic's
``messages``, a ``developer`` message on OpenAI); one without such a role (Gemini) sends it as
a user turn.

Anthropic's Messages API accepts a ``system`` entry inside ``messages`` only where these rules
hold (a 400 otherwise), checked here once for the wire format and the session alike:

(a) it is not the first entry;
(b) the entry before it is a ``user`` one (tool results travel in a user entry);
(c) it is the last entry, or the next one is an ``assistant`` entry;
(d) it is not next to another ``system`` entry (rules (b) and (c) already say so);
(e) its content is text (a string or ``text`` blocks) — or, with the tool-change beta,
    ``tool_addition`` / ``tool_removal`` blocks.

An entry that breaks one is sent as a ``user`` entry instead: **downgraded**. The rules are
read left to right, a downgraded entry counting as a user entry for the ones after it, so the
same message list always gives the same answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from .errors import ReminderOptionError

__all__ = [
    "CHANNELS",
    "TOOL_CHANGE_BLOCKS",
    "Channel",
    "ChannelSetting",
    "DowngradeReason",
    "check_channel",
    "is_downgrade",
    "placement",
]

Channel = Literal["user", "system"]
ChannelSetting = Literal["auto", "user", "system"]
CHANNELS: tuple[ChannelSetting, ...] = ("auto", "user", "system")
DowngradeReason = Literal["first_entry", "not_after_user", "not_before_assistant", "not_text"]

# The content blocks a system entry may carry beside text (the tool-change beta).
TOOL_CHANGE_BLOCKS = frozenset({"tool_addition", "tool_removal"})
_SYSTEM_BLOCKS = TOOL_CHANGE_BLOCKS | {"text"}


def check_channel(value: object, name: str = "channel") -> ChannelSetting:
    """A channel setting: ``"auto"``, ``"user"`` or ``"system"``.

    Raises:
        ReminderError: ``RMD-001`` naming ``name`` and the allowed values.
    """
    if value == "auto" or value == "user" or value == "system":
        return value
    raise ReminderOptionError(f"{name} must be one of 'auto', 'user', 'system'; got {value!r}")


def _is_text(content: object) -> bool:
    if isinstance(content, str):
        return True
    return (
        isinstance(content, Sequence)
        and bool(content)
        and all(isinstance(b, Mapping) and b.get("type") in _SYSTEM_BLOCKS for b in content)
    )


def _side(role: object) -> str:
    # what a neutral message is on Anthropic's wire: tool results travel in a user entry
    return "user" if role == "tool" else str(role)


def placement(messages: Sequence[Mapping[str, Any]], start: int = 0) -> dict[int, DowngradeReason]:
    """The neutral ``system`` messages of ``messages`` that cannot be Anthropic ``system``
    entries where they stand, by index, with the rule each breaks; the others are sent in
    place. With ``start``, only messages from ``start`` on are judged (those before it are
    read for context as far back as needed): what a longer request changed at its end.

    Example:
        >>> u, s, a = {"role": "user"}, {"role": "system", "content": "x"}, {"role": "assistant"}
        >>> placement([s, u, s, a, u, s]), placement([u, s, u])
        ({0: 'first_entry'}, {1: 'not_before_assistant'})
    """
    # back to the nearest message that is not a system one: its side is known without rules
    begin = min(start, len(messages))
    while begin > 0 and messages[begin - 1]["role"] == "system":
        begin -= 1
    found: dict[int, DowngradeReason] = {}
    before = _side(messages[begin - 1]["role"]) if begin > 0 else None
    for index in range(begin, len(messages)):
        message = messages[index]
        if message["role"] != "system":
            before = _side(message["role"])
            continue
        after = messages[index + 1]["role"] if index + 1 < len(messages) else None
        reason: DowngradeReason | None = None
        if before is None:
            reason = "first_entry"
        elif before != "user":
            reason = "not_after_user"
        elif after is not None and after != "assistant":
            reason = "not_before_assistant"
        elif not _is_text(message.get("content")):
            reason = "not_text"
        if reason is None:
            before = "system"
        else:
            before = "user"  # sent as a user entry: the next one follows a user entry
            if index >= start:
                found[index] = reason
    return found


def _blocks_of(content: object) -> object:
    # a string and one text block holding it are the same content on the wire
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content


def is_downgrade(before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    """Whether ``after`` is ``before`` sent on the user channel instead of as a system entry:
    the same content, the role turned from ``system`` to ``user`` (a ``clear_at`` mark, which
    only a system entry carries, gone with it). How an audit tells a downgrade — a sanctioned
    break — from any other change to an earlier message.

    Example:
        >>> is_downgrade({"role": "system", "content": "x", "clear_at": "next_user_message"},
        ...              {"role": "user", "content": [{"type": "text", "text": "x"}]})
        True
    """
    if before.get("role") != "system" or after.get("role") != "user":
        return False
    rest = {k: v for k, v in before.items() if k not in ("role", "content", "clear_at")}
    other = {k: v for k, v in after.items() if k not in ("role", "content")}
    return rest == other and _blocks_of(before.get("content")) == _blocks_of(after.get("content"))
