"""Gemini CLI hooks: the library's reminders in a Google Gemini CLI session
(``docs/gemini-cli.md``).

``agent-reminders hook gemini-cli`` is a Gemini CLI command hook. Gemini sends one JSON object
on stdin (``session_id``, ``hook_event_name``, ``cwd``, ``transcript_path``, ``timestamp`` and
the event's own fields) and reads exactly one JSON object back; context goes in
``hookSpecificOutput.additionalContext``. Two events carry the library's work:

- ``BeforeAgent`` (before each prompt): at a session's first, the session start's work (facts,
  workspace anchor); then the queue is drained. Gemini stores the context as a part of the
  prompt's message and sends it again in every later request, after a resume too.
- ``AfterTool``: ``post_tool_use`` with a ``run_shell_command``'s command and output (its
  exit code read from the tool's ``Exit Code: N`` line), then the queue; Gemini appends the
  context to the tool's result.

Not the others, as the real Gemini CLI 0.61 shows: a ``SessionStart`` context is glued in
front of the first prompt and dropped with that prompt on the next ``--resume``;
``PreCompress`` fires before every model turn, whether or not a compression follows, and
takes no context; no event follows a compression. Those events are answered with ``{}``.

Read from Gemini CLI 0.56 to 0.61 (``packages/core/src/hooks``) and tested against 0.61.0. An
error exits 1 with one line on stderr — Gemini's only non-blocking error code; 2 (and with
plain output any other code) blocks — and leaves the store as it was. With nothing to add the
hook prints ``{}``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from .._core.request import ToolResult
from . import _agent_hook
from ._agent_hook import AgentHooks, HookEvent
from ._agent_settings import SettingsFile

__all__ = ["AGENT", "HOOK_EVENTS", "SETTINGS"]

_ACTIONS: dict[str, _agent_hook.Action] = {"BeforeAgent": "prompt", "AfterTool": "tool"}
_REQUIRED = {"BeforeAgent": ("prompt",), "AfterTool": ("tool_response",)}
_EXIT_CODE = re.compile(r"^\[?Exit Code: (-?\d+)\]?$", re.MULTILINE)  # bracketed before 0.61
HOOK_EVENTS = tuple(_ACTIONS)


def _tool_result(response: object) -> ToolResult:
    """``{llmContent, returnDisplay, error?}`` as a result: the raw output
    (``returnDisplay``, else ``llmContent``), failed on an ``error`` or a non-zero
    ``Exit Code`` line."""
    if not isinstance(response, Mapping):
        return ToolResult(content=json.dumps(response, ensure_ascii=False), ok=True)
    model_text = response.get("llmContent")
    shown = response.get("returnDisplay")
    if isinstance(shown, str) and shown:
        text = shown
    elif isinstance(model_text, str):
        text = model_text
    else:
        text = json.dumps(model_text, ensure_ascii=False, sort_keys=True)
    code = _EXIT_CODE.search(model_text) if isinstance(model_text, str) else None
    ok = not response.get("error") and (code is None or code.group(1) == "0")
    return ToolResult(content=text, ok=ok)


def _result(data: Mapping[str, Any], event: str) -> ToolResult:
    return _tool_result(data["tool_response"])


def _read(hook_input: object) -> HookEvent:
    data = _agent_hook.checked_input(hook_input, _REQUIRED)
    return _agent_hook.read_event(data, data["session_id"], _ACTIONS, _result)


def _write(event: str, text: str) -> str:
    return _agent_hook.write_specific(event, text, _ACTIONS, "{}")


AGENT = AgentHooks(
    name="gemini-cli",
    read=_read,
    write=_write,
    project_env=("GEMINI_PROJECT_DIR",),
    implicit_start=True,
    compacted=(
        "Gemini CLI compressed the earlier conversation; its summary stands in for it. The "
        "standing directives that survive compaction are restated here."
    ),
)
SETTINGS = SettingsFile(agent="gemini-cli", events=HOOK_EVENTS, extra=(("timeout", 30000),))
