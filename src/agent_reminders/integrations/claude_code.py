"""Claude Code hooks (spec 05 §4): the library's reminders in a Claude Code session.

``agent-reminders hook claude-code`` is a Claude Code hook command. Each run reads one hook
input (a JSON object) on stdin, loads the library session of that Claude Code ``session_id``
from a store, maps the event, saves the session and prints what Claude Code should add:

============================  =========================================================
hook event                    what the run does
============================  =========================================================
``SessionStart``              ``session_start`` (facts, workspace anchor); with
                              ``source: "compact"`` also a compaction of the library
                              session, so the preserved reminders (and a recap) are stated
                              again — Claude Code's compaction removed them from its context
``UserPromptSubmit``          drains the session's queue (reminders pushed with
                              ``agent-reminders remind`` or through a bridge)
``PostToolUse`` / ``…Failure``  ``post_tool_use`` (for ``Bash`` the command and its
                              stdout + stderr: ``grounded_review``,
                              ``tool_output_truncated``), then drains the queue
``PreCompact``                plain text for the summarizer: the reminders to preserve
``SubagentStart``             the handoff: the reminders the sub-agent inherits
anything else                 nothing
============================  =========================================================

Each ``UserPromptSubmit`` and ``PostToolUse`` precedes a model call and counts as one turn
for TTLs. When something is new the run prints one JSON object,
``{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": <envelope>}}`` (plain
text at ``PreCompact``), else nothing. Every run holds the session's lease in the store while
it loads and saves, so two runs of one session at once never lose each other's writes. An
error prints one line on stderr and exits 1 — never 2, which would block Claude Code — and
leaves the store as it was.

The module imports only what a hook run needs: it runs before every prompt and after every
tool call.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from .._core.envelope import EnvelopeStyle, check_style, render_envelope
from .._core.errors import AgentRemindersError, ConfigError
from .._core.records import Reminder
from .._core.request import ToolCall, ToolResult
from ..loop.run import fire_event_sync, neutralized, tool_event_payload
from ..session import Session

if TYPE_CHECKING:
    from ..storage import Store

__all__ = [
    "DEFAULT_STORE",
    "HOOK_EVENTS",
    "HookInputError",
    "HookResult",
    "SCOPES",
    "SettingsChange",
    "hook_command",
    "hook_main",
    "install",
    "project_dir",
    "run_hook",
    "settings_path",
    "uninstall",
]

DEFAULT_STORE = ".agent-reminders/state.db"  # under the project directory
LEASE_SECONDS = 30.0
_COMPACTED = (
    "Claude Code summarized the earlier conversation; its summary stands in for it. The "
    "standing directives that survive compaction are restated here."
)
LEASE_WAIT_SECONDS = 20.0


class HookInputError(ConfigError):
    """A hook input that is not a JSON object or lacks a field its event needs."""


# The fields each event needs besides session_id and hook_event_name (05 §4).
_REQUIRED: dict[str, tuple[str, ...]] = {
    "UserPromptSubmit": ("prompt",),
    "PostToolUse": ("tool_name", "tool_response"),
    "PostToolUseFailure": ("tool_name",),
    "PreCompact": ("trigger",),
    "SubagentStart": ("agent_id",),
}


@dataclass(frozen=True, slots=True)
class HookResult:
    """What one hook run prints on stdout (``""``: nothing) and whether it saved the session."""

    stdout: str
    saved: bool


def project_dir(hook_input: Mapping[str, Any], env: Mapping[str, str]) -> Path:
    """``$CLAUDE_PROJECT_DIR``, else the input's ``cwd``, else the current directory."""
    given = env.get("CLAUDE_PROJECT_DIR") or hook_input.get("cwd")
    return Path(given) if isinstance(given, str) and given else Path.cwd()


def _check_input(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise HookInputError(f"hook input must be a JSON object, not {type(value).__name__}")
    for key in ("session_id", "hook_event_name"):
        if not isinstance(value.get(key), str) or not value[key]:
            raise HookInputError(f"hook input has no {key!r} (a non-empty string)")
    for key in _REQUIRED.get(value["hook_event_name"], ()):
        if key not in value:
            raise HookInputError(f"{value['hook_event_name']} hook input has no {key!r}")
    return value


def _session_config(project: Path) -> dict[str, Any]:
    return {
        "workspace": {"primary": str(project), "roots": []},
        "reminders": {
            "config": {"project_facts": {"path": str(project / ".agent-reminders" / "facts.db")}}
        },
    }


def _tool_text(response: object) -> str:
    """A tool response as the text the providers read: a ``Bash`` response's stdout and
    stderr, a string as is, anything else as JSON."""
    if isinstance(response, str):
        return response
    if isinstance(response, Mapping) and ("stdout" in response or "stderr" in response):
        parts = [str(response.get(k) or "") for k in ("stdout", "stderr")]
        return "\n".join(p for p in parts if p)
    return json.dumps(response, ensure_ascii=False, sort_keys=True)


def _tool_ok(event: str, response: object) -> bool:
    if event == "PostToolUseFailure":
        return False
    if isinstance(response, Mapping):
        if response.get("interrupted") is True or response.get("is_error") is True:
            return False
        code = response.get("exit_code", response.get("returncode"))
        if type(code) is int and code != 0:
            return False
    return True


def _preserve_text(reminders: Sequence[Reminder]) -> str:
    kept = [r for r in reminders if r.preserve_on_compact]
    if not kept:
        return ""
    lines = [
        "When you summarize this conversation, keep these standing instructions word for "
        "word in the summary; they stay in force after the compaction:"
    ]
    lines.extend(f"- [{r.authority}] {' '.join(r.body.split())}" for r in kept)
    return "\n".join(lines)


def _deliver(session: Session, seam: str | None, *, counts_as_turn: bool) -> str:
    """Drain at ``seam``, commit the envelope; the text of what is new for the model."""
    before = len(session.transcript)
    if seam is not None:
        session.run_seam(seam)
    request = session.prepare_request()
    if counts_as_turn:
        session.post_turn(request.turn)
    new = list(request.messages[before:])
    return "\n\n".join(str(m["content"]) for m in new if isinstance(m["content"], str))


def _map_event(session: Session, hook_input: Mapping[str, Any], style: EnvelopeStyle) -> str:
    """Do what ``hook_input`` asks of ``session``; returns the stdout text."""
    event = hook_input["hook_event_name"]
    context = ""
    if event == "SessionStart":
        session.started = True
        fire_event_sync(session, None, "session_start", {"task": None})
        if hook_input.get("source") == "compact":
            session.compact(keep_last=0, summary=_COMPACTED)
        context = _deliver(session, "iteration_start", counts_as_turn=False)
    elif event == "UserPromptSubmit":
        context = _deliver(session, "iteration_start", counts_as_turn=True)
    elif event in ("PostToolUse", "PostToolUseFailure"):
        arguments = hook_input.get("tool_input")
        call = ToolCall(
            id=str(hook_input.get("tool_use_id") or "tool"),
            name=str(hook_input["tool_name"]),
            arguments=dict(arguments) if isinstance(arguments, Mapping) else {},
        )
        response = hook_input.get("tool_response", hook_input.get("error"))
        text = _tool_text(response)
        result = neutralized(ToolResult(content=text, ok=_tool_ok(event, response)))
        fire_event_sync(session, None, "post_tool_use", tool_event_payload(call, result))
        context = _deliver(session, "post_tool_dispatch", counts_as_turn=True)
    elif event == "PreCompact":
        return _preserve_text(session.transcript.reminders)
    elif event == "SubagentStart":
        inherited = session.handoff()
        if inherited:
            context = render_envelope(inherited, style=style)
    if not context:
        return ""
    output = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}}
    return json.dumps(output, ensure_ascii=False)


async def run_hook(
    hook_input: object,
    *,
    store_url: str | None = None,
    style: str = "context_directives",
    env: Mapping[str, str] | None = None,
) -> HookResult:
    """One hook run: load (or create) the session, map the event, save it atomically.

    Raises:
        HookInputError: the input is not an object or lacks a field its event needs.
        AgentRemindersError: the store cannot be opened, or a provider failed; the store is
            then unchanged.
    """
    from ..storage import SessionExistsError, UnknownSessionError, open_store

    data = _check_input(hook_input)
    checked_style = check_style(style)
    environ = os.environ if env is None else env
    project = project_dir(data, environ)
    url = store_url or f"sqlite:{project / DEFAULT_STORE}"
    session_id = data["session_id"]
    owner = f"hook-{os.getpid()}-{id(data):x}"
    store = await open_store(url)
    config = _session_config(project)
    try:
        try:
            await _claim(store, session_id, owner)
        except UnknownSessionError:  # the session's first hook run
            fresh = Session(session_id, envelope_style=checked_style, **config)
            # another hook run of this session may have made it first
            with contextlib.suppress(SessionExistsError):
                await store.create_session(fresh.state())
            await _claim(store, session_id, owner)
        try:
            state = await store.load_session(session_id)
            if state is None:  # pragma: no cover - claimed sessions exist
                raise UnknownSessionError(session_id)
            session = Session.from_state(state, **config)
            session.envelope_style = checked_style
            stdout = _map_event(session, data, checked_style)
            await store.save_session(session.state())
        finally:
            await store.release(session_id, owner)
    finally:
        await store.close()
    return HookResult(stdout=stdout, saved=True)


async def _claim(store: Store, session_id: str, owner: str) -> None:
    """Hold the session's lease, waiting (briefly) while another hook run holds it."""
    import anyio

    deadline = anyio.current_time() + LEASE_WAIT_SECONDS
    delay = 0.005
    while True:
        holder = await store.claim(session_id, owner, LEASE_SECONDS)
        if holder is None:
            return
        if anyio.current_time() >= deadline:
            raise ConfigError(
                f"session {session_id!r} is held by {holder!r} for longer than "
                f"{LEASE_WAIT_SECONDS:.0f} s; is another hook run stuck?"
            )
        await anyio.sleep(delay)
        delay = min(delay * 2, 0.1)


def hook_main(argv: Sequence[str], stdin: TextIO | None = None) -> int:
    """``agent-reminders hook claude-code [--store URL] [--style S]``; returns the exit code."""
    import argparse

    import anyio

    parser = argparse.ArgumentParser(prog="agent-reminders hook claude-code")
    parser.add_argument("--store", default=None, help="store URL (default: the project's)")
    parser.add_argument(
        "--style", default="context_directives", choices=("context_directives", "system_reminder")
    )
    parser.add_argument("--debug", action="store_true")
    try:
        args = parser.parse_args(list(argv))
    except SystemExit:
        return 1  # argparse printed its one line; exit 1, never 2 (2 blocks Claude Code)
    source = sys.stdin if stdin is None else stdin
    try:
        try:
            hook_input = json.loads(source.read())
        except json.JSONDecodeError as exc:
            raise HookInputError(f"hook input is not JSON: {exc}") from None
        result = anyio.run(lambda: run_hook(hook_input, store_url=args.store, style=args.style))
    except (AgentRemindersError, OSError, ValueError, TypeError) as exc:
        if args.debug:
            raise
        message = " ".join(str(exc).split()) or type(exc).__name__
        print(f"agent-reminders hook: {message}", file=sys.stderr)
        return 1
    if result.stdout:
        sys.stdout.write(result.stdout + "\n")
    return 0


# -- hook install / uninstall --------------------------------------------------------------

HOOK_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PostToolUse",
    "PostToolUseFailure",
    "PreCompact",
    "SubagentStart",
)
SCOPES = ("project", "user", "local")
_MARK = "hook claude-code"  # every command this library installs contains it


def settings_path(scope: str, *, project: Path, home: Path) -> Path:
    """The Claude Code settings file of ``scope``: ``project`` → ``.claude/settings.json``,
    ``local`` → ``.claude/settings.local.json`` (both under ``project``), ``user`` →
    ``~/.claude/settings.json``."""
    if scope == "project":
        return project / ".claude" / "settings.json"
    if scope == "local":
        return project / ".claude" / "settings.local.json"
    if scope == "user":
        return home / ".claude" / "settings.json"
    raise ConfigError(f"scope must be one of {', '.join(SCOPES)}; got {scope!r}")


def hook_command() -> str:
    """The command line Claude Code should run: this installation's ``agent-reminders``."""
    import shlex
    import shutil

    found = shutil.which("agent-reminders")
    if found:
        return f"{shlex.quote(found)} {_MARK}"
    return f"{shlex.quote(sys.executable)} -m agent_reminders {_MARK}"


def _ours(entry: object) -> bool:
    return isinstance(entry, Mapping) and _MARK in str(entry.get("command", ""))


def _read_settings(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(
            f"{path}: not a readable JSON settings file ({exc}); left unchanged"
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the settings must be a JSON object; left unchanged")
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict) or not all(isinstance(v, list) for v in hooks.values()):
        raise ConfigError(
            f"{path}: 'hooks' must map event names to lists of matchers; left unchanged"
        )
    return data


def _write_settings(path: Path, data: dict[str, Any]) -> Path | None:
    """Write ``data`` to ``path`` (atomically), backing up the old file first."""
    backup = None
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        backup = path.with_name(path.name + ".agent-reminders.bak")
        backup.write_bytes(path.read_bytes())
    temporary = path.with_name(path.name + ".agent-reminders.tmp")
    temporary.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(temporary, path)
    return backup


@dataclass(frozen=True, slots=True)
class SettingsChange:
    """What ``install`` / ``uninstall`` did: the file, the events changed, the backup."""

    path: Path
    events: tuple[str, ...]
    backup: Path | None


def install(path: Path, command: str | None = None) -> SettingsChange:
    """Add the hook to every event of :data:`HOOK_EVENTS` in the settings file at ``path``,
    keeping every other setting and hook; an event that already has it is left alone."""
    data = _read_settings(path)
    hooks: dict[str, list[Any]] = data.setdefault("hooks", {})
    line = command or hook_command()
    added = []
    for event in HOOK_EVENTS:
        matchers = hooks.setdefault(event, [])
        present = any(
            isinstance(m, Mapping) and any(_ours(h) for h in m.get("hooks") or ()) for m in matchers
        )
        if not present:
            matchers.append({"hooks": [{"type": "command", "command": line}]})
            added.append(event)
    backup = _write_settings(path, data) if added else None
    return SettingsChange(path=path, events=tuple(added), backup=backup)


def uninstall(path: Path) -> SettingsChange:
    """Remove this library's hook entries (and matchers left empty by that) from ``path``."""
    data = _read_settings(path)
    hooks: dict[str, list[Any]] = data.get("hooks", {})
    removed = []
    for event, matchers in list(hooks.items()):
        kept = []
        for matcher in matchers:
            inner = matcher.get("hooks") if isinstance(matcher, Mapping) else None
            if isinstance(inner, list) and any(_ours(h) for h in inner):
                rest = [h for h in inner if not _ours(h)]
                if event not in removed:
                    removed.append(event)
                if rest:
                    kept.append({**matcher, "hooks": rest})
            else:
                kept.append(matcher)
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if "hooks" in data and not hooks:
        del data["hooks"]
    backup = _write_settings(path, data) if removed else None
    return SettingsChange(path=path, events=tuple(removed), backup=backup)
