"""What the model APIs refuse, as the recording server answers it: Anthropic's rules for a
``system`` entry inside ``messages`` and its betas, OpenAI's roles.

The rules are checked here on the wire body, on their own, not through
:func:`agent_reminders.placement`: the server is the judge the wire formats are tested
against, so it must not share the code it judges (a slip in one place would pass in both),
and it reads what only the wire has (``server_tool_use`` blocks, ``clear_at``, the beta
header).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from .._core.channels import TOOL_CHANGE_BLOCKS
from .._core.request import ModelInfo
from ..capabilities import capabilities_for
from ..integrations.anthropic import CLEAR_AT_BETA, TOOL_CHANGES_BETA

__all__ = ["anthropic_refusal", "openai_role_refusal"]

_ROLES = ("user", "assistant", "system")
_CLEAR_AT_VALUES = ("next_user_message", "never")
_CHAT_ROLES = ("system", "developer", "user", "assistant", "tool", "function")
_INPUT_ROLES = ("user", "assistant", "system", "developer")


def _role_of(entry: object) -> object:
    return entry.get("role") if isinstance(entry, Mapping) else None


def _ends_in_server_tool_use(entry: Mapping[str, Any]) -> bool:
    content = entry.get("content")
    return (
        isinstance(content, list)
        and bool(content)
        and isinstance(content[-1], Mapping)
        and content[-1].get("type") == "server_tool_use"
    )


def _placement_refusal(messages: list[Any], i: int) -> str | None:
    """Why system entry ``i`` cannot stand where it is, or ``None``."""
    where = f"messages.{i}: invalid placement of a system message"
    if i == 0:
        return f"{where}: it cannot be the first message (use the top-level system parameter)"
    before = messages[i - 1]
    after = messages[i + 1] if i + 1 < len(messages) else None
    if _role_of(before) == "system" or _role_of(after) == "system":
        return f"{where}: it cannot be next to another system message"
    if _role_of(before) != "user" and not (
        _role_of(before) == "assistant" and _ends_in_server_tool_use(before)
    ):
        return (
            f"{where}: it must follow a user message (or an assistant message that ends in a "
            f"server tool use), not a {_role_of(before)} message"
        )
    if after is not None and _role_of(after) != "assistant":
        return (
            f"{where}: it must be the last message or be followed by an assistant message, "
            f"not a {_role_of(after)} message"
        )
    return None


def _content_refusal(content: object, i: int) -> str | None:
    """Why a system entry's content is not text (or tool-change blocks), or ``None``."""
    if isinstance(content, str):
        return None if content else f"messages.{i}.content: a system message must not be empty"
    if not isinstance(content, list):
        return f"messages.{i}.content: a system message needs a string or a list of blocks"
    # an empty block list is accepted: the Claude Code CLI 2.1.332 (as the tests pin it) sends
    # such entries on the models that take mid-conversation system messages
    for k, block in enumerate(content):
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind in TOOL_CHANGE_BLOCKS:
            continue  # judged with the beta header
        if kind != "text":
            return (
                f"messages.{i}.content.{k}: a system message may hold text blocks only, "
                f"not {kind!r}"
            )
        text = block.get("text")
        if not isinstance(text, str) or not text:
            return f"messages.{i}.content.{k}.text: text content blocks must be non-empty strings"
    return None


def anthropic_refusal(body: Mapping[str, Any], headers: Mapping[str, str]) -> str | None:
    """The message of the 400 Anthropic's Messages API answers ``body`` with for the system
    entries of ``messages`` — or ``None`` when those are valid.

    Checked per entry, in order: the role is ``user``, ``assistant`` or ``system``;
    ``tool_addition`` / ``tool_removal`` blocks stand in a system entry only, with the
    tool-change beta header, on a model that takes them; a ``system`` entry needs a model
    that takes one (the capability table), may not be first, follows a ``user`` entry (or an
    ``assistant`` one that ends in a ``server_tool_use`` block), is last or followed by an
    ``assistant`` entry, is never next to another ``system`` entry, and holds text only (a
    non-empty string or ``text`` blocks; ``cache_control`` allowed); ``clear_at``
    (``"next_user_message"`` or ``"never"``) stands on a system entry only, with the
    ``clear_at`` beta header, on a model that takes it. ``headers`` have lower-case names.

    Example:
        >>> body = {"model": "claude-opus-4-8", "messages": [
        ...     {"role": "user", "content": "hi"}, {"role": "system", "content": "be brief"},
        ...     {"role": "user", "content": "and?"}]}
        >>> print(anthropic_refusal(body, {}))
        messages.1: invalid placement of a system message: it must be the last message or be followed by an assistant message, not a user message
        >>> anthropic_refusal({**body, "messages": body["messages"][:2]}, {}) is None
        True
    """  # noqa: E501
    messages = body.get("messages")
    if not isinstance(messages, list):
        return None
    model = str(body.get("model") or "")
    can = capabilities_for(ModelInfo(provider="anthropic", name=model))
    betas = {b.strip() for b in headers.get("anthropic-beta", "").split(",")}
    for i, entry in enumerate(messages):
        role = _role_of(entry)
        if not isinstance(entry, Mapping) or role not in _ROLES:
            return f"messages.{i}.role: Input should be 'user', 'assistant' or 'system'"
        content = entry.get("content")
        for k, block in enumerate(content if isinstance(content, list) else ()):
            kind = block.get("type") if isinstance(block, Mapping) else None
            if kind not in TOOL_CHANGE_BLOCKS:
                continue
            where = f"messages.{i}.content.{k}: {kind} blocks"
            if role != "system":
                return f"{where} are only permitted in system messages"
            if TOOL_CHANGES_BETA not in betas:
                return f"{where} need the anthropic-beta header {TOOL_CHANGES_BETA}"
            if not can.tool_changes:
                return f"{where} are not supported by the model {model!r}"
        if "clear_at" in entry and role != "system":
            return f"messages.{i}.clear_at: only permitted on system messages"
        if role != "system":
            continue
        if not can.system_messages:
            return (
                f"messages.{i}: system messages inside messages are not supported by the "
                f"model {model!r}; use the top-level system parameter or a user message"
            )
        refusal = _placement_refusal(messages, i) or _content_refusal(content, i)
        if refusal is not None:
            return refusal
        if "clear_at" in entry:
            if entry["clear_at"] not in _CLEAR_AT_VALUES:
                return f"messages.{i}.clear_at: Input should be 'next_user_message' or 'never'"
            if CLEAR_AT_BETA not in betas:
                return f"messages.{i}.clear_at: needs the anthropic-beta header {CLEAR_AT_BETA}"
            if not can.clear_at:
                return f"messages.{i}.clear_at: not supported by the model {model!r}"
    return None


def openai_role_refusal(
    api: Literal["chat", "responses"], body: Mapping[str, Any]
) -> tuple[str, str] | None:
    """(message, param) of OpenAI's 400 for an unknown role; any position of a known one —
    ``developer`` and ``system`` included — is accepted, as the API does."""
    key, roles = ("messages", _CHAT_ROLES) if api == "chat" else ("input", _INPUT_ROLES)
    for i, item in enumerate(body.get(key) or ()):
        if not isinstance(item, Mapping) or (api == "responses" and "role" not in item):
            continue  # function calls and their outputs carry no role
        role = item.get("role")
        if role not in roles:
            names = ", ".join(repr(r) for r in roles)
            return f"Invalid value: {role!r}. Supported values are: {names}.", f"{key}[{i}].role"
    return None
