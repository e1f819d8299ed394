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

:func:`answer_hook` is the event mapping itself, shared with the Claude Agent SDK hooks
(:mod:`agent_reminders.integrations.claude_agent_sdk`). The module imports only what a hook
run needs: it runs before every prompt and after every tool call.
"""

from __future__ import annotations

import itertools
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
from ..loop.steps import Steps
from ..session import Session

if TYPE_CHECKING:
    from ..storage import Store

__all__ = [
    "DEFAULT_STORE",
    "HOOK_EVENTS",
    "HookInputError",
    "HookReply",
    "HookResult",
    "SCOPES",
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

DEFAULT_STORE = ".agent-reminders/state.db"  # under the project directory
LEASE_SECONDS = 30.0
LEASE_WAIT_SECONDS = 20.0
_COMPACTED = (
    "Claude Code summarized the earlier conversation; its summary stands in for it. The "
    "standing directives that survive compaction are restated here."
)
_owners = itertools.count(1)  # lease owners of this process: one per hook run


class HookInputError(ConfigError):
    """A hook input that is not a JSON object or lacks a field its event needs."""


# The fields each event needs besides session_id and hook_event_name (the rest is optional).
_REQUIRED: dict[str, tuple[str, ...]] = {
    "UserPromptSubmit": ("prompt",),
    "PostToolUse": ("tool_name", "tool_response"),
    "PostToolUseFailure": ("tool_name",),
    "PreCompact": ("trigger",),
    "SubagentStart": ("agent_id",),
}
# The events that precede a model call: each counts as one turn for TTLs.
_TURN_EVENTS = frozenset({"UserPromptSubmit", "PostToolUse", "PostToolUseFailure"})
# The loop's steps, as a hook runs them: no hooks, the session's own queue.
_STEPS = Steps()


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
        return {"hookSpecificOutput": {"hookEventName": self.event, "additionalContext": self.text}}

    def stdout(self) -> str:
        """What the hook command prints: the JSON output, the plain text, or ``""``."""
        output = self.hook_output()
        if output is not None:
            return json.dumps(output, ensure_ascii=False)
        return self.text


def project_dir(hook_input: Mapping[str, Any], env: Mapping[str, str]) -> Path:
    """``$CLAUDE_PROJECT_DIR``, else the input's ``cwd``, else the current directory."""
    given = env.get("CLAUDE_PROJECT_DIR") or hook_input.get("cwd")
    return Path(given) if isinstance(given, str) and given else Path.cwd()


def check_hook_input(value: object) -> dict[str, Any]:
    """``value`` if it is a hook input this module can map, else one clear error.

    Raises:
        HookInputError: not a JSON object, no ``session_id`` / ``hook_event_name``, or a
            field the event needs is missing (``prompt``, ``tool_name``, ...).
    """
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


def _deliver(session: Session, seam: str | None) -> str:
    """The loop's steps before a model call that Claude Code is about to make: drain at
    ``seam`` (``iteration_start`` before a prompt, ``post_tool_dispatch`` after a tool), commit
    the envelope and age its reminders at once (each such event is one turn: Claude Code
    calls the model once after it). Without a seam (a session's start), only the commit,
    which counts as no turn. The text of what is new for the model."""
    before = len(session.transcript)
    if seam is None:
        request = _STEPS.commit(session)
    else:
        if seam == "iteration_start":
            request = _STEPS.before_call(session)
        else:
            _STEPS.post_dispatch(session)
            request = _STEPS.commit(session)
        _STEPS.post_turn(session, request.turn)
    new = list(request.messages[before:])
    return "\n\n".join(str(m["content"]) for m in new if isinstance(m["content"], str))


def _archived_messages(transcript_path: object) -> int:
    """How many user and assistant messages Claude Code's compaction summarized, read from
    its transcript (JSON lines): those since the last ``compact_boundary`` — or, once the
    new boundary and summary are written, those between the last two boundaries. 0 when
    the transcript cannot be read (then no recap states a count)."""
    if not isinstance(transcript_path, str) or not transcript_path:
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


async def _map_event(
    session: Session, hook_input: Mapping[str, Any], *, implicit_start: bool
) -> str:
    """Do what ``hook_input`` asks of ``session``; the text for Claude Code (or ``""``).

    Provider I/O (the fact store) and reading Claude Code's transcript run in a worker
    thread, so the SDK's event loop is never blocked on disk."""
    event = hook_input["hook_event_name"]
    if implicit_start and event in _TURN_EVENTS:
        await _STEPS.start(session, None)
    if event == "SessionStart":
        source = hook_input.get("source")
        if source == "compact":  # Claude Code's context is now its summary: restate
            import anyio.to_thread

            path = hook_input.get("transcript_path")
            archived = await anyio.to_thread.run_sync(_archived_messages, path)
            session.compact(keep_last=0, summary=_COMPACTED, archived_messages=archived)
        # A resumed session keeps what it was told (Claude Code reloads its transcript);
        # a new, cleared or compacted context gets the session start's facts again.
        await _STEPS.start(session, None, again=source in ("clear", "compact"))
        return _deliver(session, None)
    if event == "UserPromptSubmit":
        return _deliver(session, "iteration_start")
    if event in ("PostToolUse", "PostToolUseFailure"):
        arguments = hook_input.get("tool_input")
        call = ToolCall(
            id=str(hook_input.get("tool_use_id") or "tool"),
            name=str(hook_input["tool_name"]),
            arguments=dict(arguments) if isinstance(arguments, Mapping) else {},
        )
        given = _tool_result(event, hook_input.get("tool_response", hook_input.get("error")))
        result, _ = _STEPS.finish_tool(session, call, given)
        await _STEPS.tool_used(session, call, result)
        return _deliver(session, "post_tool_dispatch")
    if event == "PreCompact":
        return _preserve_text(session.transcript.reminders)
    if event == "SubagentStart":
        inherited = session.handoff()
        return render_envelope(inherited, style=session.envelope_style) if inherited else ""
    return ""


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
    """Map one hook event: the part the hook command and the Claude Agent SDK hooks share.

    With ``session``, that in-process session answers every event (nothing is stored; its
    own envelope style applies). Otherwise the library session of the input's
    ``session_id`` is loaded from ``store`` (an open store, left open), or from the store at
    ``store_url`` (default: ``sqlite:<project>/.agent-reminders/state.db``, ``<project>``
    being ``$CLAUDE_PROJECT_DIR`` in ``env``, else the input's ``cwd``), under the session's
    lease, and saved in one write after the event. A session's first event is saved with
    the session's creation, so a failure leaves the store as it was.

    ``implicit_start=True`` (for hosts that never send ``SessionStart``, as the Python Claude
    Agent SDK) does the session start's work — facts, workspace anchor — at the first
    ``UserPromptSubmit`` or ``PostToolUse`` of a session that has not started.

    Raises:
        HookInputError: the input is not an object or lacks a field its event needs.
        ConfigError: the project folder (for the default store) does not exist.
        AgentRemindersError: the store cannot be opened (a SQLite file whose folder does not
            exist is not created), or a provider failed; the store is then unchanged.
    """
    data = check_hook_input(hook_input)
    checked = check_style(style)
    event = data["hook_event_name"]
    if session is not None:
        return HookReply(
            event=event, text=await _map_event(session, data, implicit_start=implicit_start)
        )
    project = project_dir(data, os.environ if env is None else env)
    if store is not None:
        return await _answer_stored(store, data, project, checked, implicit_start)
    opened = await _open_store(store_url, project)
    try:
        return await _answer_stored(opened, data, project, checked, implicit_start)
    finally:
        await opened.close()


async def _open_store(store_url: str | None, project: Path) -> Store:
    """The hook's store: ``store_url``, else the project's own. Only the project's store may
    be started in a fresh folder (its ``.agent-reminders``), and only in a project folder
    that exists: a folder that is gone (moved, mistyped) must not get a new, empty store that
    nothing else reads."""
    from ..storage import folder_options, open_store

    default = project / DEFAULT_STORE
    url = store_url or f"sqlite:{default}"
    options = folder_options(url, default)
    if not options.get("create_folders"):
        return await open_store(url, **options)
    if not project.is_dir():
        raise ConfigError(
            f"the project folder {project} ($CLAUDE_PROJECT_DIR, else the hook input's cwd) "
            "does not exist; nothing was created"
        )
    return await open_store(url)


async def _answer_stored(
    store: Store,
    data: Mapping[str, Any],
    project: Path,
    style: EnvelopeStyle,
    implicit_start: bool,
) -> HookReply:
    from ..storage import SessionExistsError, UnknownSessionError

    session_id, event = data["session_id"], data["hook_event_name"]
    config = _session_config(project)
    owner = f"hook-{os.getpid()}-{next(_owners)}"
    try:
        await _claim(store, session_id, owner)
    except UnknownSessionError:  # the session's first hook run: create it with the result
        fresh = Session(session_id, envelope_style=style, **config)
        text = await _map_event(fresh, data, implicit_start=implicit_start)
        try:
            await store.create_session(fresh.state())
            return HookReply(event=event, text=text)
        except SessionExistsError:  # another run made it first: answer on the stored one
            await _claim(store, session_id, owner)
    try:
        state = await store.load_session(session_id)
        if state is None:  # pragma: no cover - a claimed session exists
            raise UnknownSessionError(session_id)
        session = Session.from_state(state, **config)
        session.envelope_style = style
        text = await _map_event(session, data, implicit_start=implicit_start)
        await store.save_session(session.state())
    finally:
        await store.release(session_id, owner)
    return HookReply(event=event, text=text)


async def run_hook(
    hook_input: object,
    *,
    store_url: str | None = None,
    style: str = "context_directives",
    env: Mapping[str, str] | None = None,
) -> HookResult:
    """One run of the hook command: load (or create) the session, map the event, save it
    atomically; what to print (see :func:`answer_hook`).

    Raises:
        HookInputError: the input is not an object or lacks a field its event needs.
        AgentRemindersError: the store cannot be opened, or a provider failed; the store is
            then unchanged.
    """
    reply = await answer_hook(hook_input, store_url=store_url, style=style, env=env)
    return HookResult(stdout=reply.stdout(), saved=True)


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


_USAGE = "usage: agent-reminders hook claude-code [--store URL] [--style STYLE] [--debug]"
_STYLES = ("context_directives", "system_reminder")


def _parse(argv: Sequence[str]) -> tuple[str | None, str, bool]:
    """``(store, style, debug)`` from the command's options (no argparse: this runs before
    every prompt, and a usage error must stay one line and exit 1, never 2)."""
    store, style, debug = None, "context_directives", False
    args = list(argv)
    while args:
        arg = args.pop(0)
        name, eq, value = arg.partition("=")
        if name in ("--store", "--style"):
            if not eq:
                if not args:
                    raise ConfigError(f"{name} needs a value; {_USAGE}")
                value = args.pop(0)
            if name == "--store":
                store = value
            elif value in _STYLES:
                style = value
            else:
                raise ConfigError(f"--style must be one of {', '.join(_STYLES)}; got {value!r}")
        elif arg == "--debug":
            debug = True
        else:
            raise ConfigError(f"unknown argument {arg!r}; {_USAGE}")
    return store, style, debug


def hook_main(argv: Sequence[str], stdin: TextIO | None = None) -> int:
    """``agent-reminders hook claude-code [--store URL] [--style S]``; returns the exit code.

    Any failure prints one line on stderr and returns 1 (Claude Code shows it and goes on);
    never 2, which would block the user's prompt or tool call. ``--debug`` lets the
    exception through instead.
    """
    if "--help" in argv or "-h" in argv:
        print(_USAGE)
        return 0
    debug = "--debug" in argv
    try:
        store, style, debug = _parse(argv)
        source = sys.stdin if stdin is None else stdin
        try:
            hook_input = json.loads(source.read())
        except json.JSONDecodeError as exc:
            raise HookInputError(f"hook input is not JSON: {exc}") from None
        import anyio

        result = anyio.run(lambda: run_hook(hook_input, store_url=store, style=style))
    except Exception as exc:  # the process boundary: one line, exit 1, nothing on stdout
        if debug:
            raise
        said = " ".join(str(exc).split())
        kind = "" if isinstance(exc, AgentRemindersError | OSError) else f"{type(exc).__name__}: "
        print(f"agent-reminders hook: {kind}{said or type(exc).__name__}", file=sys.stderr)
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
    """The command line Claude Code should run: this installation's ``agent-reminders``
    (the script beside the running interpreter, as a virtual environment has it), else
    ``python -m agent_reminders`` with the running interpreter — never whichever
    ``agent-reminders`` happens to come first on ``PATH``."""
    import shlex

    script = Path(sys.executable).with_name("agent-reminders")
    if script.is_file() and os.access(script, os.X_OK):
        return f"{shlex.quote(str(script))} {_MARK}"
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
