"""What every coding agent's hook command shares (``docs/coding-agents.md``).

A coding agent (Claude Code, Codex CLI, Gemini CLI, Cursor) runs a hook command at fixed
events with one JSON object on stdin. Each agent's module reads that input into a
:class:`HookEvent` — one of six library actions — and writes what the agent reads back; this
module does the rest, once for every agent:

- ``start``: ``session_start`` (facts, workspace anchor); with ``source="compact"`` first a
  compaction of the library session, so the preserved reminders are stated again.
- ``prompt``: drain the session's queue and commit the envelope (one turn).
- ``tool``: ``post_tool_use`` with the command and its output (``grounded_review``,
  ``tool_output_truncated``), then drain and commit (one turn).
- ``subagent``: the handoff, the reminders the sub-agent inherits.
- ``pre_compact``: where the agent takes an instruction for its summarizer, that
  instruction (the reminders to preserve); where it does not, a compaction of the library
  session, so the restatement goes out with the next delivery.
- ``none``: nothing.

The session lives in a store (default ``sqlite:<project>/.agent-reminders/state.db``) under
the session's lease, loaded and saved in one write: two runs of one session never lose each
other's writes, and a run that fails leaves the store as it was. The path is synchronous —
no event loop, no async stack — because a hook runs before every prompt and after every tool
call, as a fresh process each time (``docs/coding-agents.md``, "What a hook run costs").
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import time
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TextIO

from .._core.envelope import EnvelopeStyle, check_style, render_envelope
from .._core.errors import AgentRemindersError, ConfigError
from .._core.records import Reminder
from .._core.request import ToolCall, ToolResult
from ..loop.steps import Steps
from ..session import Session

if TYPE_CHECKING:
    from ..state import SessionState

__all__ = [
    "DEFAULT_STORE",
    "Action",
    "AgentHooks",
    "HookEvent",
    "HookInputError",
    "SessionStore",
    "answer",
    "checked_input",
    "field",
    "hook_main",
    "project_dir",
    "read_event",
    "require",
    "specific_output",
    "write_specific",
]

DEFAULT_STORE = ".agent-reminders/state.db"  # under the project directory
LEASE_SECONDS = 30.0
LEASE_WAIT_SECONDS = 20.0
_owners = itertools.count(1)  # lease owners of this process: one per hook run
# The loop's steps, as a hook runs them: no hooks, the session's own queue.
_STEPS = Steps()

Action = Literal["start", "prompt", "tool", "subagent", "pre_compact", "none"]


class HookInputError(ConfigError):
    """A hook input that is not a JSON object or lacks a field its event needs."""


@dataclass(frozen=True, slots=True)
class HookEvent:
    """One hook input, read into what the library does with it.

    Attributes:
        name: The agent's own event name (what the output names).
        action: The library action (see the module's docstring).
        session_id: The agent's session (conversation) id: the library session's id.
        source: For ``start``: ``startup``, ``resume``, ``clear`` or ``compact``.
        call: For ``tool``: the tool call (name, arguments with the shell ``command``).
        result: For ``tool``: its result (output text, ``ok``, truncation).
        transcript_path: The agent's transcript, when it gives one.
    """

    name: str
    action: Action
    session_id: str
    source: str | None = None
    call: ToolCall | None = None
    result: ToolResult | None = None
    transcript_path: str | None = None


@dataclass(frozen=True, slots=True)
class AgentHooks:
    """One coding agent's hook protocol, as the shared run needs it.

    Attributes:
        name: The agent's name on the command line (``hook codex``) and in ``sessions``.
        read: The hook input (a JSON object) as a :class:`HookEvent`; raises
            :class:`HookInputError` for a missing or malformed field.
        write: ``(event, text)`` → what the command prints (``text`` may be ``""``).
        project_env: Environment variables naming the project folder, first set wins.
        pre_compact: ``"instruct"``: the agent adds the hook's text to its compaction
            instructions; ``"restate"``: it takes none, so the library session is compacted
            and the next delivery states the preserved reminders again.
        implicit_start: Do the session start's work at the first turn of a session that has
            not started (an agent that may not send its start event).
        compacted: The summary line of a compaction, in the agent's name.
        archived: Reads how many messages a compaction summarized from the agent's
            transcript (``None``: unknown, 0).
        project_of: The project folder named by the input itself (Cursor's
            ``workspace_roots``), before ``cwd``.
    """

    name: str
    read: Callable[[object], HookEvent]
    write: Callable[[str, str], str]
    project_env: tuple[str, ...]
    implicit_start: bool
    compacted: str
    pre_compact: Literal["instruct", "restate"] = "restate"
    archived: Callable[[str | None], int] | None = None
    project_of: Callable[[Mapping[str, Any]], str | None] | None = None


# -- reading inputs --------------------------------------------------------------------------


def require(hook_input: object, *keys: str) -> dict[str, Any]:
    """``hook_input`` if it is a JSON object with a non-empty string at each of ``keys``."""
    if not isinstance(hook_input, dict):
        raise HookInputError(f"hook input must be a JSON object, not {type(hook_input).__name__}")
    for key in keys:
        if not isinstance(hook_input.get(key), str) or not hook_input[key]:
            raise HookInputError(f"hook input has no {key!r} (a non-empty string)")
    return hook_input


def checked_input(hook_input: object, required: Mapping[str, tuple[str, ...]]) -> dict[str, Any]:
    """``hook_input`` if it is a JSON object with ``session_id`` and ``hook_event_name`` (non-
    empty strings) and each field ``required`` names for its event."""
    data = require(hook_input, "session_id", "hook_event_name")
    for key in required.get(data["hook_event_name"], ()):
        field(data, data["hook_event_name"], key)
    return data


def field(hook_input: Mapping[str, Any], event: str, key: str) -> Any:
    """The value at ``key``, which ``event`` needs: present (any JSON value)."""
    if key not in hook_input:
        raise HookInputError(f"{event} hook input has no {key!r}")
    return hook_input[key]


def tool_call(hook_input: Mapping[str, Any], event: str, name_key: str = "tool_name") -> ToolCall:
    """The tool call of a tool event: its name and its arguments (``tool_input``)."""
    name = field(hook_input, event, name_key)
    if not isinstance(name, str) or not name:
        raise HookInputError(f"{event} hook input's {name_key!r} must be a non-empty string")
    arguments = hook_input.get("tool_input")
    return ToolCall(
        id=str(hook_input.get("tool_use_id") or "tool"),
        name=name,
        arguments=dict(arguments) if isinstance(arguments, Mapping) else {},
    )


def read_event(
    data: Mapping[str, Any],
    session_id: str,
    actions: Mapping[str, Action],
    result_of: Callable[[Mapping[str, Any], str], ToolResult],
) -> HookEvent:
    """The event of an input whose fields its agent checked: the action of its
    ``hook_event_name`` in ``actions`` (``none`` for any other); for a tool action, the call
    and ``result_of(data, event)``; the ``source`` and ``transcript_path`` it gives."""
    name = data["hook_event_name"]
    action = actions.get(name, "none")
    call = result = None
    if action == "tool":
        call = tool_call(data, name)
        result = result_of(data, name)
    source, path = data.get("source"), data.get("transcript_path")
    return HookEvent(
        name=name,
        action=action,
        session_id=session_id,
        source=source if isinstance(source, str) else None,
        call=call,
        result=result,
        transcript_path=path if isinstance(path, str) and path else None,
    )


def specific_output(event: str, text: str) -> dict[str, Any]:
    """``{"hookSpecificOutput": {"hookEventName", "additionalContext"}}``: how Claude Code,
    Codex and Gemini CLI take a hook's context."""
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}


def write_specific(event: str, text: str, events: Container[str], empty: str) -> str:
    """What a hook prints for an agent that reads :func:`specific_output`: that, as JSON, at
    one of ``events`` with something to say; ``empty`` otherwise."""
    if not text or event not in events:
        return empty
    return json.dumps(specific_output(event, text), ensure_ascii=False)


def project_dir(
    agent: AgentHooks,
    hook_input: Mapping[str, Any],
    env: Mapping[str, str],
    cwd: Path | None = None,
) -> Path:
    """The project folder: the first of ``agent.project_env`` set, else what the input names
    (``agent.project_of``), else the input's ``cwd``, else ``cwd`` (default: the current
    directory)."""
    for name in agent.project_env:
        if env.get(name):
            return Path(env[name])
    given = agent.project_of(hook_input) if agent.project_of is not None else None
    given = given or hook_input.get("cwd")
    if isinstance(given, str) and given:
        return Path(given)
    return Path.cwd() if cwd is None else cwd


def session_config(project: Path) -> dict[str, Any]:
    """The configuration of a hook's session: the project as the workspace, its fact store."""
    return {
        "workspace": {"primary": str(project), "roots": []},
        "reminders": {
            "config": {"project_facts": {"path": str(project / ".agent-reminders" / "facts.db")}}
        },
    }


# -- the event mapping -----------------------------------------------------------------------


def _deliver(session: Session, seam: str | None) -> str:
    """The loop's steps before the model call the agent is about to make: drain at ``seam``
    (``iteration_start`` before a prompt, ``post_tool_dispatch`` after a tool), commit the
    envelope and age its reminders at once (each such event is one turn: the agent calls the
    model once after it). Without a seam (a session's start), only the commit, which counts
    as no turn. The text of what is new for the model."""
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


def preserve_text(reminders: Sequence[Reminder]) -> str:
    """The instruction for a summarizer: keep the reminders marked ``preserve_on_compact``."""
    kept = [r for r in reminders if r.preserve_on_compact]
    if not kept:
        return ""
    lines = [
        "When you summarize this conversation, keep these standing instructions word for "
        "word in the summary; they stay in force after the compaction:"
    ]
    lines.extend(f"- [{r.authority}] {' '.join(r.body.split())}" for r in kept)
    return "\n".join(lines)


def _compact(agent: AgentHooks, session: Session, transcript_path: str | None) -> None:
    archived = agent.archived(transcript_path) if agent.archived is not None else 0
    session.compact(keep_last=0, summary=agent.compacted, archived_messages=archived)


def map_event(agent: AgentHooks, session: Session, event: HookEvent) -> str:
    """Do what ``event`` asks of ``session``; the text for the agent (or ``""``)."""
    action = event.action
    if agent.implicit_start and action in ("prompt", "tool"):
        _STEPS.start_sync(session, None)
    if action == "start":
        if event.source == "compact":  # the agent's context is now its summary: restate
            _compact(agent, session, event.transcript_path)
        # A resumed session keeps what it was told (the agent reloads its transcript); a
        # new, cleared or compacted context gets the session start's facts again.
        again = event.source in ("clear", "compact")
        _STEPS.start_sync(session, None, again=again)
        return _deliver(session, None)
    if action == "prompt":
        return _deliver(session, "iteration_start")
    if action == "tool":
        if event.call is None or event.result is None:  # pragma: no cover - readers set both
            raise HookInputError(f"{event.name} hook input has no tool call")
        result, _ = _STEPS.finish_tool(session, event.call, event.result)
        _STEPS.tool_used_sync(session, event.call, result)
        return _deliver(session, "post_tool_dispatch")
    if action == "pre_compact":
        if agent.pre_compact == "instruct":
            return preserve_text(session.transcript.reminders)
        _compact(agent, session, event.transcript_path)
        return ""
    if action == "subagent":
        inherited = session.handoff()
        return render_envelope(inherited, style=session.envelope_style) if inherited else ""
    return ""


# -- the stored session ----------------------------------------------------------------------


class SessionStore(Protocol):
    """What a hook run needs of a store, synchronously (the SQLite store's blocking API, or
    an async store called from a worker thread)."""

    def create_session(self, state: SessionState) -> None: ...
    def load_session(self, session_id: str) -> SessionState | None: ...
    def save_session(self, state: SessionState) -> None: ...
    def claim(self, session_id: str, owner: str, ttl_seconds: float) -> str | None: ...
    def release(self, session_id: str, owner: str) -> bool: ...


def _claim(store: SessionStore, session_id: str, owner: str) -> None:
    """Hold the session's lease, waiting (briefly) while another hook run holds it."""
    deadline = time.monotonic() + LEASE_WAIT_SECONDS
    delay = 0.005
    while True:
        holder = store.claim(session_id, owner, LEASE_SECONDS)
        if holder is None:
            return
        if time.monotonic() >= deadline:
            raise ConfigError(
                f"session {session_id!r} is held by {holder!r} for longer than "
                f"{LEASE_WAIT_SECONDS:.0f} s; is another hook run stuck?"
            )
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def answer(
    agent: AgentHooks,
    store: SessionStore,
    event: HookEvent,
    project: Path,
    style: EnvelopeStyle,
    fresh: Callable[[Session], None] | None = None,
) -> str:
    """Map ``event`` on its stored session, under the session's lease; the text for the
    agent. A session's first event is saved with the session's creation (made by this
    agent: its ``agent_id`` is the agent's name), so a failure leaves the store as it was.
    ``fresh`` prepares a session this run creates, before its first event (the project's
    standing reminders)."""
    from ..storage import SessionExistsError, UnknownSessionError

    session_id = event.session_id
    config = session_config(project)
    owner = f"hook-{os.getpid()}-{next(_owners)}"
    try:
        _claim(store, session_id, owner)
    except UnknownSessionError:  # the session's first hook run: create it with the result
        made = Session(session_id, agent_id=agent.name, envelope_style=style, **config)
        if fresh is not None:
            fresh(made)
        text = map_event(agent, made, event)
        try:
            store.create_session(made.state())
            return text
        except SessionExistsError:  # another run made it first: answer on the stored one
            _claim(store, session_id, owner)
    try:
        state = store.load_session(session_id)
        if state is None:  # pragma: no cover - a claimed session exists
            raise UnknownSessionError(session_id)
        session = Session.from_state(state, **config)
        session.envelope_style = style
        text = map_event(agent, session, event)
        store.save_session(session.state())
    finally:
        store.release(session_id, owner)
    return text


# -- the command -----------------------------------------------------------------------------

_STYLES = ("context_directives", "system_reminder")


def _usage(agent: AgentHooks) -> str:
    return f"usage: agent-reminders hook {agent.name} [--store URL] [--style STYLE] [--debug]"


def parse_options(agent: AgentHooks, argv: Sequence[str]) -> tuple[str | None, str, bool]:
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
                    raise ConfigError(f"{name} needs a value; {_usage(agent)}")
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
            raise ConfigError(f"unknown argument {arg!r}; {_usage(agent)}")
    return store, style, debug


def run_command(
    agent: AgentHooks,
    hook_input: object,
    *,
    store_url: str | None,
    style: str,
    env: Mapping[str, str],
    cwd: Path | None = None,
) -> str:
    """One run of ``hook <agent>``: read the input, answer it on its stored session; what
    to print (``agent.write``). ``env`` and ``cwd`` are the run's (a hook server answers
    runs of other processes)."""
    from . import _hook_store

    checked = check_style(style)
    if not isinstance(hook_input, dict):
        raise HookInputError(f"hook input must be a JSON object, not {type(hook_input).__name__}")
    event = agent.read(hook_input)
    if event.action == "none":
        return agent.write(event.name, "")
    project = project_dir(agent, hook_input, env, cwd)
    with _hook_store.opened(store_url, project) as store:
        text = answer(agent, store, event, project, checked, _hook_store.standing(store))
    return agent.write(event.name, text)


def hook_main(
    agent: AgentHooks,
    argv: Sequence[str],
    stdin: TextIO | None = None,
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> int:
    """``agent-reminders hook <agent> [--store URL] [--style S]``; returns the exit code.
    ``env`` and ``cwd`` default to this process's.

    Any failure prints one line on stderr and returns 1 — every agent's non-blocking error
    (the agent shows it and goes on); never 2, which would block the user's prompt or tool
    call. ``--debug`` lets the exception through instead.
    """
    if "--help" in argv or "-h" in argv:
        print(_usage(agent))
        return 0
    debug = "--debug" in argv
    try:
        store, style, debug = parse_options(agent, argv)
        source = sys.stdin if stdin is None else stdin
        try:
            hook_input = json.loads(source.read())
        except json.JSONDecodeError as exc:
            raise HookInputError(f"hook input is not JSON: {exc}") from None
        given = os.environ if env is None else env
        out = run_command(agent, hook_input, store_url=store, style=style, env=given, cwd=cwd)
    except Exception as exc:  # the process boundary: one line, exit 1, nothing on stdout
        if debug:
            raise
        said = " ".join(str(exc).split())
        kind = "" if isinstance(exc, AgentRemindersError | OSError) else f"{type(exc).__name__}: "
        print(f"agent-reminders hook: {kind}{said or type(exc).__name__}", file=sys.stderr)
        return 1
    if out:
        sys.stdout.write(out + "\n")
    return 0
