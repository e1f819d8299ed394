"""Cursor hooks: the library's reminders in a Cursor agent conversation
(``docs/cursor.md``).

``agent-reminders hook cursor`` is a Cursor command hook. Cursor sends one JSON object on
stdin (``conversation_id``, ``generation_id``, ``hook_event_name``, ``workspace_roots``,
``transcript_path`` and the event's own fields) and reads a JSON object back; context goes in
the top-level ``additional_context``. Events:

- ``sessionStart`` (a new conversation): ``session_start``; Cursor adds the context to the
  conversation's initial context.
- ``postToolUse``: ``post_tool_use`` with a ``Shell`` call's command and output
  (``tool_output``, a JSON string with ``exitCode`` and ``stdout``), then the queue; Cursor
  adds the context after the tool's result. This is the only event at which a reminder
  pushed during a conversation can reach it: ``beforeSubmitPrompt`` takes no context.
- ``preCompact``: Cursor's compaction takes no instruction and is followed by no event, so
  the library session is compacted here and the next delivery states the preserved
  reminders again.

A user-level hook runs in ``~/.cursor/``, so the project is ``$CURSOR_PROJECT_DIR``, else the
first of ``workspace_roots``, else ``cwd``. Read from Cursor's hooks documentation (2026;
Cursor's source is not public). An error exits 1 with one line on stderr — a failed hook
Cursor lets through (fail-open); never 2, which denies the action — and leaves the store as it
was. With nothing to add the hook prints ``{}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .._core.request import ToolResult
from . import _agent_hook
from ._agent_hook import AgentHooks, HookEvent, HookInputError, require
from ._agent_settings import SettingsFile

__all__ = ["AGENT", "HOOK_EVENTS", "SETTINGS"]

_ACTIONS: dict[str, _agent_hook.Action] = {
    "sessionStart": "start",
    "postToolUse": "tool",
    "preCompact": "pre_compact",
}
_CONTEXT_EVENTS = frozenset({"sessionStart", "postToolUse"})
HOOK_EVENTS = tuple(_ACTIONS)


def _tool_result(output: object) -> ToolResult:
    """``tool_output`` (a JSON string of the tool's result, ``{"exitCode", "stdout",
    "stderr"?}`` for ``Shell``) as a result: its output, failed on a non-zero exit code."""
    payload: object = output
    if isinstance(output, str):
        try:
            payload = json.loads(output)
        except ValueError:
            return ToolResult(content=output, ok=True)
    if not isinstance(payload, Mapping):
        return ToolResult(content=json.dumps(payload, ensure_ascii=False), ok=True)
    if "stdout" in payload or "stderr" in payload:
        parts = [str(payload.get(k) or "") for k in ("stdout", "stderr")]
        text = "\n".join(p for p in parts if p)
    else:
        text = json.dumps(payload, ensure_ascii=False, sort_keys=True)
    code = payload.get("exitCode", payload.get("exit_code"))
    return ToolResult(content=text, ok=not (type(code) is int and code != 0))


def _session_id(data: Mapping[str, Any]) -> str:
    for key in ("conversation_id", "session_id"):
        value = data.get(key)
        if isinstance(value, str) and value:
            return value
    raise HookInputError("hook input has no 'conversation_id' (a non-empty string)")


def _result(data: Mapping[str, Any], event: str) -> ToolResult:
    return _tool_result(_agent_hook.field(data, event, "tool_output"))


def _read(hook_input: object) -> HookEvent:
    data = require(hook_input, "hook_event_name")
    return _agent_hook.read_event(data, _session_id(data), _ACTIONS, _result)


def _write(event: str, text: str) -> str:
    if not text or event not in _CONTEXT_EVENTS:
        return "{}"
    return json.dumps({"additional_context": text}, ensure_ascii=False)


def _workspace(hook_input: Mapping[str, Any]) -> str | None:
    roots = hook_input.get("workspace_roots")
    if isinstance(roots, list) and roots and isinstance(roots[0], str):
        return roots[0]
    return None


AGENT = AgentHooks(
    name="cursor",
    read=_read,
    write=_write,
    project_env=("CURSOR_PROJECT_DIR",),
    implicit_start=True,
    compacted=(
        "Cursor summarized the earlier conversation; its summary stands in for it. The "
        "standing directives that survive compaction are restated here."
    ),
    project_of=_workspace,
)
SETTINGS = SettingsFile(
    agent="cursor",
    events=HOOK_EVENTS,
    nested=False,
    top=(("version", 1),),
    extra=(("timeout", 30),),
)
