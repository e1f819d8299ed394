"""Claude Code hooks: the library's reminders in a Claude Code session (``docs/claude-code.md``).

``agent-reminders hook claude-code`` is a Claude Code hook command. Each run reads one hook
input (a JSON object) on stdin, loads the library session of that Claude Code ``session_id``
from a store, maps the event, saves the session and prints what Claude Code should add:

- ``SessionStart``: ``session_start`` (facts, workspace anchor); with ``source: "compact"``
  also a compaction of the library session, so the preserved reminders (and a recap) are
  stated again — Claude Code's compaction removed them from its context.
- ``UserPromptSubmit``: drains the session's queue (reminders pushed with
  ``agent-reminders remind`` or through a bridge).
- ``PostToolUse`` / ``PostToolUseFailure``: ``post_tool_use`` (for ``Bash`` the command and
  its stdout + stderr, or the failure's ``error`` text: ``grounded_review``; an output that
  Claude Code cut to a preview: ``tool_output_truncated``), then drains the queue.
- ``PreCompact``: plain text for the summarizer, naming the reminders to preserve.
- ``SubagentStart``: the handoff, the reminders the sub-agent inherits.
- anything else: nothing.

Each ``UserPromptSubmit`` and ``PostToolUse`` precedes a model call and counts as one turn
for TTLs. When something is new the run prints one JSON object,
``{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": <envelope>}}`` (plain
text at ``PreCompact``), else nothing. Every run holds the session's lease in the store while
it loads and saves, so two runs of one session at once never lose each other's writes. An
error prints one line on stderr and exits 1 — never 2, which would block Claude Code — and
leaves the store as it was.

:func:`answer_hook` is the event mapping for the Claude Agent SDK hooks
(:mod:`agent_reminders.integrations.claude_agent_sdk`); what every coding agent's hook shares
(the stored session, its lease, the delivery) is :mod:`._agent_hook`. The module imports only
what a hook run needs: it runs before every prompt and after every tool call.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from .._core.envelope import check_style
from .._core.request import ToolResult
from . import _agent_hook, _agent_settings, _hook_store, agents
from ._agent_hook import DEFAULT_STORE, AgentHooks, HookEvent, HookInputError
from ._agent_settings import SettingsChange, SettingsFile

if TYPE_CHECKING:
    from ..session import Session
    from ..storage import Store

__all__ = [
    "AGENT",
    "DEFAULT_STORE",
    "HOOK_EVENTS",
    "HookInputError",
    "HookReply",
    "HookResult",
    "SCOPES",
    "SETTINGS",
    "SettingsChange",
    "answer_hook",
    "check_hook_input",
    "hook_command",
    "hook_main",
    "install",
    "project_dir",
    "run_hook",
    "settings_path",
    "uninstall",
]

_COMPACTED = (
    "Claude Code summarized the earlier conversation; its summary stands in for it. The "
    "standing directives that survive compaction are restated here."
)
# The fields each event needs besides session_id and hook_event_name (the rest is optional).
_REQUIRED: dict[str, tuple[str, ...]] = {
    "UserPromptSubmit": ("prompt",),
    "PostToolUse": ("tool_name", "tool_response"),
    "PostToolUseFailure": ("tool_name",),
    "PreCompact": ("trigger",),
    "SubagentStart": ("agent_id",),
}
_ACTIONS: dict[str, _agent_hook.Action] = {
    "SessionStart": "start",
    "UserPromptSubmit": "prompt",
    "PostToolUse": "tool",
    "PostToolUseFailure": "tool",
    "PreCompact": "pre_compact",
    "SubagentStart": "subagent",
}


@dataclass(frozen=True, slots=True)
class HookResult:
    """What one hook run prints on stdout (``""``: nothing) and whether it saved the session."""

    stdout: str
    saved: bool


@dataclass(frozen=True, slots=True)
class HookReply:
    """What one hook event gives Claude Code, before it is printed or returned.

    Attributes:
        event: The input's ``hook_event_name``.
        text: The envelope for ``additionalContext`` or, at ``PreCompact``, the plain
            instruction for the summarizer; ``""`` when there is nothing new.
    """

    event: str
    text: str

    def hook_output(self) -> dict[str, Any] | None:
        """``{"hookSpecificOutput": {hookEventName, additionalContext}}``, or ``None`` when
        there is nothing to add or the event takes plain text (``PreCompact``)."""
        if not self.text or self.event == "PreCompact":
            return None
        return _agent_hook.specific_output(self.event, self.text)

    def stdout(self) -> str:
        """What the hook command prints: the JSON output, the plain text, or ``""``."""
        output = self.hook_output()
        if output is not None:
            return json.dumps(output, ensure_ascii=False)
        return self.text


def check_hook_input(value: object) -> dict[str, Any]:
    """``value`` if it is a hook input this module can map, else one clear error.

    Raises:
        HookInputError: not a JSON object, no ``session_id`` / ``hook_event_name``, or a
            field the event needs is missing (``prompt``, ``tool_name``, ...).
    """
    return _agent_hook.checked_input(value, _REQUIRED)


def _tool_result(event: str, response: object) -> ToolResult:
    """A tool response as the tool's result (its output is neutralized as the loop's is).

    A ``Bash`` response gives its stdout and stderr; when Claude Code kept a large output in
    a file and showed the model only a preview (``persistedOutputPath``), the result is
    truncated at ``persistedOutputSize``. ``PostToolUseFailure`` carries the ``error`` text.
    """
    truncated, size = False, None
    if isinstance(response, str):
        text = response
    elif isinstance(response, Mapping) and ("stdout" in response or "stderr" in response):
        parts = [str(response.get(k) or "") for k in ("stdout", "stderr")]
        text = "\n".join(p for p in parts if p)
        if response.get("persistedOutputPath"):
            truncated = True
            given = response.get("persistedOutputSize")
            size = given if type(given) is int and given >= 0 else None
    else:
        text = json.dumps(response, ensure_ascii=False, sort_keys=True)
    ok = event != "PostToolUseFailure"
    if isinstance(response, Mapping):
        if response.get("interrupted") is True or response.get("is_error") is True:
            ok = False
        code = response.get("exit_code", response.get("returncode"))
        if type(code) is int and code != 0:
            ok = False
    return ToolResult(content=text, ok=ok, truncated=truncated, original_size=size)


def _result(data: Mapping[str, Any], event: str) -> ToolResult:
    return _tool_result(event, data.get("tool_response", data.get("error")))


def _read(hook_input: object) -> HookEvent:
    data = check_hook_input(hook_input)
    return _agent_hook.read_event(data, data["session_id"], _ACTIONS, _result)


def _archived_messages(transcript_path: str | None) -> int:
    """How many user and assistant messages Claude Code's compaction summarized, read from
    its transcript (JSON lines): those since the last ``compact_boundary`` — or, once the
    new boundary and summary are written, those between the last two boundaries. 0 when
    the transcript cannot be read (then no recap states a count)."""
    if not transcript_path:
        return 0
    counts, summarized = [0], False
    try:
        with open(transcript_path, encoding="utf-8") as lines:
            for line in lines:
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                kind = entry.get("type") if isinstance(entry, dict) else None
                if kind == "system" and entry.get("subtype") == "compact_boundary":
                    counts.append(0)
                    summarized = False
                elif kind == "user" and entry.get("isCompactSummary"):
                    summarized = True
                elif kind in ("user", "assistant") and not entry.get("isMeta"):
                    counts[-1] += 1
    except OSError:
        return 0
    return counts[-2] if summarized and len(counts) > 1 else counts[-1]


def _write(event: str, text: str) -> str:
    return HookReply(event=event, text=text).stdout()


AGENT = AgentHooks(
    name="claude-code",
    read=_read,
    write=_write,
    project_env=("CLAUDE_PROJECT_DIR",),
    pre_compact="instruct",
    implicit_start=False,
    compacted=_COMPACTED,
    archived=_archived_messages,
)
# The Python Claude Agent SDK sends no SessionStart: the start's work comes with the first turn.
_SDK_AGENT = dataclasses.replace(AGENT, implicit_start=True)


def project_dir(hook_input: Mapping[str, Any], env: Mapping[str, str]) -> Path:
    """``$CLAUDE_PROJECT_DIR``, else the input's ``cwd``, else the current directory."""
    return _agent_hook.project_dir(AGENT, hook_input, env)


async def answer_hook(
    hook_input: object,
    *,
    store: Store | None = None,
    store_url: str | None = None,
    session: Session | None = None,
    style: str = "context_directives",
    env: Mapping[str, str] | None = None,
    implicit_start: bool = False,
) -> HookReply:
    """Map one hook event in process: what the Claude Agent SDK hooks do.

    With ``session``, that in-process session answers every event (nothing is stored; its
    own envelope style applies). Otherwise the library session of the input's
    ``session_id`` is loaded from ``store`` (an open store, left open), or from the store at
    ``store_url`` (default: ``sqlite:<project>/.agent-reminders/state.db``, ``<project>``
    being ``$CLAUDE_PROJECT_DIR`` in ``env``, else the input's ``cwd``), under the session's
    lease, and saved in one write after the event. A session's first event is saved with
    the session's creation, so a failure leaves the store as it was. The mapping runs in a
    worker thread, so the SDK's event loop never waits on a provider's disk I/O.

    ``implicit_start=True`` (for hosts that never send ``SessionStart``, as the Python Claude
    Agent SDK) does the session start's work — facts, workspace anchor — at the first
    ``UserPromptSubmit`` or ``PostToolUse`` of a session that has not started.

    Raises:
        HookInputError: the input is not an object or lacks a field its event needs.
        ConfigError: the project folder (for the default store) does not exist.
        AgentRemindersError: the store cannot be opened (a SQLite file whose folder does not
            exist is not created), or a provider failed; the store is then unchanged.
    """
    import anyio.from_thread
    import anyio.to_thread

    data = check_hook_input(hook_input)
    checked = check_style(style)
    agent = _SDK_AGENT if implicit_start else AGENT
    event = agent.read(data)
    if session is not None:
        text = await anyio.to_thread.run_sync(_agent_hook.map_event, agent, session, event)
        return HookReply(event=event.name, text=text)
    project = project_dir(data, os.environ if env is None else env)
    opened = store
    if opened is None:
        from ..storage import open_store

        url, options = _hook_store.resolve(store_url, project)
        opened = await open_store(url, **options)
    try:
        sessions = _hook_store.FromAsync(opened, anyio.from_thread.run)
        fresh = _hook_store.standing(sessions)
        run = functools.partial(_agent_hook.answer, agent, sessions, event, project, checked, fresh)
        text = await anyio.to_thread.run_sync(run)
    finally:
        if store is None:
            await opened.close()
    return HookReply(event=event.name, text=text)


async def run_hook(
    hook_input: object,
    *,
    store_url: str | None = None,
    style: str = "context_directives",
    env: Mapping[str, str] | None = None,
) -> HookResult:
    """One run of the hook command, from async code (in a worker thread): load (or create)
    the session, map the event, save it atomically; what to print (see :func:`answer_hook`).

    Raises:
        HookInputError: the input is not an object or lacks a field its event needs.
        AgentRemindersError: the store cannot be opened, or a provider failed; the store is
            then unchanged.
    """
    import anyio.to_thread

    run = functools.partial(
        _agent_hook.run_command,
        AGENT,
        hook_input,
        store_url=store_url,
        style=style,
        env=os.environ if env is None else env,
    )
    return HookResult(stdout=await anyio.to_thread.run_sync(run), saved=True)


def hook_main(
    argv: Sequence[str],
    stdin: TextIO | None = None,
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> int:
    """``agent-reminders hook claude-code [--store URL] [--style S]``; returns the exit code.

    Any failure prints one line on stderr and returns 1 (Claude Code shows it and goes on);
    never 2, which would block the user's prompt or tool call. ``--debug`` lets the
    exception through instead.
    """
    return _agent_hook.hook_main(AGENT, argv, stdin, env=env, cwd=cwd)


# -- hook install / uninstall --------------------------------------------------------------

HOOK_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PostToolUse",
    "PostToolUseFailure",
    "PreCompact",
    "SubagentStart",
)
SCOPES = agents.SCOPES["claude-code"]
SETTINGS = SettingsFile(agent="claude-code", events=HOOK_EVENTS)


def settings_path(scope: str, *, project: Path, home: Path) -> Path:
    """The Claude Code settings file of ``scope``: ``project`` → ``.claude/settings.json``,
    ``local`` → ``.claude/settings.local.json`` (both under ``project``), ``user`` →
    ``~/.claude/settings.json``."""
    return agents.settings_path(AGENT.name, scope, project=project, env={"HOME": str(home)})


def hook_command() -> str:
    """The command line Claude Code should run (see :func:`._agent_settings.hook_command`)."""
    return _agent_settings.hook_command(AGENT.name)


def install(path: Path, command: str | None = None) -> SettingsChange:
    """Add the hook to every event of :data:`HOOK_EVENTS` in the settings file at ``path``,
    keeping every other setting and hook; an event that already has it is left alone."""
    return _agent_settings.install(path, SETTINGS, command)


def uninstall(path: Path) -> SettingsChange:
    """Remove this library's hook entries (and matchers left empty by that) from ``path``."""
    return _agent_settings.uninstall(path, SETTINGS)
