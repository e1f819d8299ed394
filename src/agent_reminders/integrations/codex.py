"""Codex CLI hooks: the library's reminders in an OpenAI Codex CLI session
(``docs/codex.md``).

``agent-reminders hook codex`` is a Codex command hook. Codex sends one JSON object on stdin
(``session_id``, ``hook_event_name``, ``cwd``, ``transcript_path``, ``model`` and the event's
own fields) and reads ``{"hookSpecificOutput": {"hookEventName", "additionalContext"}}`` back,
context it adds to the conversation and keeps there. Events:

- ``SessionStart`` (``source`` ``startup`` / ``resume`` / ``clear`` / ``compact``):
  ``session_start``; after a compaction (``compact``) also the restatement of the preserved
  reminders — Codex's compaction removed them, and Codex has no ``PreCompact`` output that
  reaches its summarizer.
- ``UserPromptSubmit``: the queue is drained (reminders pushed with ``agent-reminders
  remind`` or through a bridge).
- ``PostToolUse``: ``post_tool_use`` with the ``Bash`` command (``tool_input.command``) and
  its output (``tool_response``, a string; Codex gives no exit code), then the queue.
- ``SubagentStart``: the handoff (``session_id`` is the parent's): the inherited reminders
  are the sub-agent's context.

Read from Codex CLI 0.139 to 0.171's hook schemas (``codex-rs/hooks/schema``). An error exits 1
with one line on stderr — a failed, non-blocking hook for Codex; never 2, which blocks a
prompt — and leaves the store as it was.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .._core.request import ToolResult
from . import _agent_hook
from ._agent_hook import AgentHooks, HookEvent
from ._agent_settings import SettingsFile

__all__ = ["AGENT", "HOOK_EVENTS", "SETTINGS"]

_ACTIONS: dict[str, _agent_hook.Action] = {
    "SessionStart": "start",
    "UserPromptSubmit": "prompt",
    "PostToolUse": "tool",
    "SubagentStart": "subagent",
}
_REQUIRED = {
    "UserPromptSubmit": ("prompt",),
    "PostToolUse": ("tool_response",),
    "SubagentStart": ("agent_id",),
}
HOOK_EVENTS = tuple(_ACTIONS)


def _output_text(response: object) -> str:
    """A tool's output as Codex reports it: a string for a shell command, else JSON."""
    if isinstance(response, str):
        return response
    return json.dumps(response, ensure_ascii=False, sort_keys=True)


def _result(data: Mapping[str, Any], event: str) -> ToolResult:
    return ToolResult(content=_output_text(data["tool_response"]), ok=True)


def _read(hook_input: object) -> HookEvent:
    data = _agent_hook.checked_input(hook_input, _REQUIRED)
    return _agent_hook.read_event(data, data["session_id"], _ACTIONS, _result)


def _write(event: str, text: str) -> str:
    return _agent_hook.write_specific(event, text, _ACTIONS, "")


AGENT = AgentHooks(
    name="codex",
    read=_read,
    write=_write,
    project_env=(),
    implicit_start=True,
    compacted=(
        "Codex summarized the earlier conversation; its summary stands in for it. The "
        "standing directives that survive compaction are restated here."
    ),
)
# Codex runs every matching hook of every config layer; a SessionStart matcher must let
# "compact" through for the restatement, so none is set (all sources, all tools).
SETTINGS = SettingsFile(agent="codex", events=HOOK_EVENTS, format="toml", extra=(("timeout", 30),))
