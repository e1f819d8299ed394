"""Run the demo: the real ``agent_loop`` on the scenario, with every producer of the library.

Offline it plays the built-in script on :class:`~agent_reminders.testing.ScriptedModel`
(same bytes on every run: fixed ids, no clock, no randomness); with ``model=`` a real backend
gets the same tasks, tools, host and compaction.
"""

from __future__ import annotations

import itertools
import json
import math
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from .._core.events import EventLog, EventRecord
from .._core.request import Model, ModelRequest, ModelResponse, Tool, ToolCall, ToolResult, Usage
from ..audit.nag import NagReport, nag_from_events
from ..facts import FactStore
from ..generators import GeneratorRegistry, create_announced_delta
from ..hooks import Hooks
from ..loop.run import LoopResult, LoopStatus, agent_loop
from ..session import Session
from .sandbox import Sandbox
from .scenario import (
    BASE_TOOLS,
    COMPACT_KEEP_LAST,
    CONTEXT_WINDOW,
    DEFAULT_TURNS,
    DEMO_NONCE,
    FACTS,
    HOST_PUSHES,
    IDLE_MS,
    MAX_TOOL_OUTPUT,
    NEW_TOOLS,
    QUOTED_TEST,
    RECAP,
    REVIEWER_BEATS,
    SESSION_ID,
    SYSTEM,
    TASKS,
    WORKSPACE,
    Beat,
    HostPush,
    task_beats,
)
from .timeline import Delivery, Recorder, Row

__all__ = ["DemoResult", "demo_script", "run_demo"]

REVIEWER_ID = f"{SESSION_ID}-reviewer"


@dataclass(frozen=True, slots=True)
class DemoResult:
    """What a demo run produced.

    Attributes:
        requests: The parent session's requests, in order (what ``demo-requests.jsonl`` holds).
        compaction_request: The index of the first request after the compaction.
        rows: The timeline (see :mod:`agent_reminders.demo.timeline`).
        statuses: The ``agent_loop`` status of ``task 1``, ``reviewer`` and ``task 2``.
        session: The parent session at the end.
        events: Every event-log record of the run, in order.
        model: The ``name`` of the model that answered (``"scripted"`` offline).
        usages: The usage of the answer to each of ``requests``, in order: the model's own,
            else (the built-in script) one token per 4 bytes of compact JSON; ``None`` for
            a request that got no answer.
        nag: The parent session's nag rate (docs/audit.md, "Nag rate"), from ``events``: per
            ``requests``, its share of the last request's input tokens.
        deliveries: Each reminder each request carried (the parent's and the sub-agent's),
            in order, and the items that went to the audit trail only (``request`` ``None``).
    """

    requests: tuple[ModelRequest, ...]
    compaction_request: int
    rows: tuple[Row, ...]
    statuses: Mapping[str, LoopStatus]
    session: Session
    events: tuple[EventRecord, ...]
    model: str
    usages: tuple[Usage | None, ...]
    nag: NagReport
    deliveries: tuple[Delivery, ...] = ()


def _responses(beats: Sequence[Beat], prefix: str, start: int = 0) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for n, beat in enumerate(beats, start):
        message: dict[str, Any] = {"role": "assistant", "content": beat.say}
        if beat.tool is not None:
            message["tool_calls"] = [
                {"id": f"{prefix}{n}", "name": beat.tool, "arguments": dict(beat.arguments)}
            ]
        out.append({"message": message})
    return out


def _scripts(turns: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    first, second = task_beats(turns)
    return _responses(first + second, "call_"), _responses(REVIEWER_BEATS, "review_")


def demo_script(turns: int = DEFAULT_TURNS) -> list[dict[str, Any]]:
    """The scripted answers in the order a model is asked for them (the reviewer's inside the
    parent's ``delegate`` turn) — e.g. for a recording model server replaying the demo.

    Example:
        >>> script = demo_script()
        >>> len(script), script[0]["message"]["tool_calls"][0]["name"]
        (32, 'read_file')
    """
    parent, reviewer = _scripts(turns)
    at = next(
        i
        for i, step in enumerate(parent)
        if any(c["name"] == "delegate" for c in step["message"].get("tool_calls", ()))
    )
    return parent[: at + 1] + reviewer + parent[at + 1 :]


def _estimate(value: Any) -> int:
    # What the recording model server reports too: one token per 4 bytes of compact JSON.
    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    return math.ceil(size / 4)


class _Observed:
    """A model that reports usage when its backend does not (the scripted one) and tells the
    recorder about every answer."""

    def __init__(
        self,
        inner: Model,
        recorder: Recorder,
        sessions: Mapping[str, Session],
        usages: dict[tuple[str, int], Usage],
    ) -> None:
        self.inner = inner
        self.recorder = recorder
        self.sessions = sessions
        self.usages = usages  # (session id, turn) -> the usage of the answer
        self.name = str(getattr(inner, "name", None) or type(inner).__name__)

    async def __call__(self, request: ModelRequest) -> ModelResponse:
        response = await self.inner(request)
        usage = response.usage
        if usage is None:
            prompt = [request.tools, request.system, list(request.messages)]
            usage = Usage(input_tokens=_estimate(prompt), output_tokens=_estimate(response.message))
            response = ModelResponse(message=response.message, usage=usage)
        self.usages[(request.session_id, request.turn)] = usage
        self.recorder.on_model(
            self.sessions[request.session_id],
            request.turn,
            response.message,
            len(request.messages),
            usage.input_tokens,
        )
        return response


class _Host:
    """The host: pushes its reminders into the session's queue when the loop passes a seam."""

    def __init__(self, session: Session, pushes: Sequence[HostPush], recorder: Recorder) -> None:
        self.session = session
        self.pending = list(pushes)
        self.recorder = recorder

    def on_checkpoint(self, record: EventRecord) -> None:
        p = record.payload
        if p.get("session_id") != self.session.id:
            return
        for push in [x for x in self.pending if (x.turn, x.seam) == (p["iteration"], p["seam"])]:
            self.pending.remove(push)
            rid = self.session.queue.remind(push.reminder, mode=push.mode)
            self.recorder.on_push(self.session, rid, push)


def _hooks(session: Session, recorder: Recorder) -> Hooks:
    """The demo's hooks: read-only roots are never written; edited code asks for a test run."""
    read_only = [
        str(r["path"]).rstrip("/") + "/"
        for r in WORKSPACE.get("roots", ())
        if r.get("mount_mode") == "ro"
    ]

    def guard(call: ToolCall) -> Mapping[str, Any] | None:
        path = str(call.arguments.get("path", ""))
        for root in read_only:
            if path.startswith(root):
                return {"action": "block", "reason": f"{root.rstrip('/')} is mounted read-only"}
        return None

    def run_tests(call: ToolCall, result: ToolResult) -> Mapping[str, Any] | None:
        path = str(call.arguments.get("path", ""))
        if not result.ok or not path.endswith(".py"):
            return None
        return {
            "body": f"You changed {path}: run `pytest -q` before you report back.",
            "ttl_turns": 2,
            "dedupe_key": "hook:run_tests",
            "tags": ["run_tests"],
            "authority": "corrective",
            "propagate": "none",
        }

    def observe(call: ToolCall, result: ToolResult) -> None:
        recorder.on_tool(session, call, result)

    hooks = Hooks()
    hooks.tool("edit_file", pre=guard, post=run_tests)
    hooks.tool("*", post=observe)
    return hooks


def _announce(names: Sequence[str]) -> str:
    what = {"delegate": "hand a sub-task to a sub-agent and get its answer back"}
    listed = "; ".join(f"{n} ({what[n]})" if n in what else n for n in names)
    return f"New tool{'s' if len(names) > 1 else ''} available: {listed}."


def _ids() -> Callable[[], str]:
    counter: Iterator[int] = itertools.count(1)
    return lambda: f"r{next(counter)}"


class _Demo:
    """One run: the session, its host, models and tools, and the two tasks."""

    def __init__(
        self,
        turns: int,
        model: Model | None,
        facts: FactStore,
        recorder: Recorder,
        log: EventLog,
        restraint: bool = True,
    ) -> None:
        self.beats = task_beats(turns)
        self.recorder = recorder
        self.sandbox = Sandbox()
        self.tools_now = list(BASE_TOOLS)
        generators = GeneratorRegistry()
        generators.register(
            create_announced_delta(
                id="tools",
                get_current=lambda: list(self.tools_now),
                get_baseline=lambda: list(BASE_TOOLS),
                render_added=_announce,
                render_removed=lambda names: f"Tools no longer available: {', '.join(names)}.",
            )
        )
        self.session = Session(
            SESSION_ID,
            system=SYSTEM,
            event_log=log,
            reminders={"config": {"project_facts": {"store": facts}}, "restraint": restraint},
            generators=generators,
            workspace=WORKSPACE,
            id_factory=_ids(),
            # every envelope carries the session's nonce, so text in a file cannot pass for
            # one; a fixed value here keeps the demo's bytes the same on every run
            nonce=DEMO_NONCE,
        )
        self.sessions: dict[str, Session] = {self.session.id: self.session}
        self.usages: dict[tuple[str, int], Usage] = {}
        recorder.watch(self.session, "agent")
        host = _Host(self.session, HOST_PUSHES, recorder)
        log.subscribe(host.on_checkpoint, kind_prefix="loop.checkpoint")
        if model is None:
            from ..testing.scripted import ScriptedModel  # testing pulls in http.server

            parent, reviewer = _scripts(turns)
            self.parent = _Observed(ScriptedModel(parent), recorder, self.sessions, self.usages)
            self.reviewer = _Observed(ScriptedModel(reviewer), recorder, self.sessions, self.usages)
        else:
            self.parent = self.reviewer = _Observed(model, recorder, self.sessions, self.usages)
        self.statuses: dict[str, LoopStatus] = {}

    async def loop(
        self, name: str, model: Model, task: str, session: Session, tools: list[Tool], limit: int
    ) -> LoopResult:
        done = await agent_loop(
            model,
            task,
            session=session,
            tools=tools,
            hooks=_hooks(session, self.recorder),
            max_iterations=limit,
            context_window=CONTEXT_WINDOW,
            max_tool_output=MAX_TOOL_OUTPUT,
        )
        self.statuses[name] = done.status
        return done

    async def delegate(self, task: str) -> str:
        """The ``delegate`` tool: a reviewer sub-agent seeded with the parent's handoff."""
        self.recorder.expect(REVIEWER_ID, "reviewer")
        self.recorder.note(REVIEWER_ID, "reviewer", f"sub-agent {REVIEWER_ID}: {task}", kind="user")
        child = Session.child(self.session, session_id=REVIEWER_ID)
        self.sessions[child.id] = child
        self.recorder.watch(child, "reviewer")
        tools = self.sandbox.tools(read_only=True)
        limit = len(REVIEWER_BEATS) + 2  # a real model may take a step or two more
        done = await self.loop("reviewer", self.reviewer, task, child, tools, limit)
        content = done.final_message.get("content") if done.final_message else None
        return content if isinstance(content, str) and content else "(no answer)"

    def between_tasks(self) -> int:
        """Compact, let the person be away, change the repository and the tools; returns the
        number of the next request (the one prefix break)."""
        session, note = self.session, self.recorder.note
        note(session, "compaction", "the host compacts the conversation between the tasks")
        before = {r.id for r in session.transcript.reminders}
        done = session.compact(keep_last=COMPACT_KEEP_LAST, summary=RECAP)
        kept = ", ".join(r.id for r in session.transcript.reminders if r.id in before) or "none"
        note(
            session,
            "compaction",
            f"{done.archived_messages} messages archived; kept (preserve_on_compact): {kept}; "
            f"request {session.turn} will be the one prefix break",
        )
        note(session, "idle", f"the person is away for {IDLE_MS // 60_000} minutes")
        session.fire("session_idle", {"wake_interval_ms": IDLE_MS})
        self.sandbox.add_quoted_test(QUOTED_TEST)
        self.tools_now.extend(NEW_TOOLS)
        return session.turn

    async def run(self) -> DemoResult:
        first, second = self.beats
        session, sandbox = self.session, self.sandbox
        self.recorder.note(session, "task 1", TASKS[0], kind="user")
        one = await self.loop("task 1", self.parent, TASKS[0], session, sandbox.tools(), len(first))
        compaction_request = self.between_tasks()
        self.recorder.note(session, "task 2", TASKS[1], kind="user")
        tools = sandbox.tools(self.delegate)
        two = await self.loop("task 2", self.parent, TASKS[1], session, tools, len(second))
        requests = (*one.requests, *two.requests)
        usages = tuple(self.usages.get((r.session_id, r.turn)) for r in requests)
        events = tuple(session.event_log.records)
        last = usages[-1] if usages else None
        nag = nag_from_events(
            events,
            model_calls=len(requests),
            prompt_tokens=None if last is None else last.input_tokens,
            session_id=session.id,  # the reviewer's requests are not among ``requests``
        )
        return DemoResult(
            requests=requests,
            compaction_request=compaction_request,
            rows=tuple(self.recorder.rows()),
            statuses=self.statuses,
            session=session,
            events=events,
            model=self.parent.name,
            usages=usages,
            nag=nag,
            deliveries=tuple(self.recorder.deliveries()),
        )


def run_demo(
    *, turns: int = DEFAULT_TURNS, model: Model | None = None, restraint: bool = True
) -> DemoResult:
    """Run the demo and return what it produced.

    Args:
        turns: Parent requests of the scripted run (``MIN_TURNS``..``MAX_TURNS``); with a
            real ``model`` it bounds each task the same way, and the model decides the rest.
        model: A real backend (``parse_model_spec(...)``); ``None`` plays the built-in script.
        restraint: The session's ``reminders.restraint`` (docs/restraint.md); ``False`` shows
            what the same run sends without it (``bench/nag.py`` runs both).

    Raises:
        ValueError: ``turns`` out of range.
    """
    task_beats(turns)  # check before anything is made
    recorder = Recorder()
    log = EventLog()
    log.subscribe(recorder.on_event)
    with tempfile.TemporaryDirectory(prefix="agent-reminders-demo-") as folder:
        facts = FactStore(Path(folder) / "facts.db")
        try:
            facts.store_facts(FACTS)
            demo = _Demo(turns, model, facts, recorder, log, restraint)
            return anyio.run(demo.run)
        finally:
            facts.close()
