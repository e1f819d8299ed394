"""The agent loop: model calls, tools, seams, provider events and hooks.

``agent_loop`` runs every step of :mod:`agent_reminders.loop.steps` in order, calling the
model and the tools itself; ``docs/session-loop.md`` describes the loop.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import CoroutineType
from typing import Any, Literal, Protocol

from .._core.errors import ConfigError
from .._core.records import Message
from .._core.request import (
    Model,
    ModelInfo,
    ModelRequest,
    ModelResponse,
    Tool,
    ToolCall,
    ToolReceipt,
    ToolResult,
)
from ..hooks import Hooks
from ..queue import InjectionQueue
from ..session import ReminderOptions, Session
from .steps import (
    Steps,
    blocked_result,
    budget_payload,
    fire_event,
    fire_event_sync,
    neutralized,
    tool_event_payload,
)

__all__ = [
    "Cancel",
    "LoopResult",
    "LoopStatus",
    "Tool",
    "ToolReceipt",
    "ToolResult",
    "agent_loop",
    "blocked_result",
    "budget_payload",
    "fire_event",
    "fire_event_sync",
    "neutralized",
    "tool_event_payload",
]

LoopStatus = Literal["completed", "max_iterations", "cancelled"]
SKIPPED_FOR_INTERRUPT = (
    "Tool call skipped: a host interrupt arrived before dispatch. Read the new message or "
    "directive first, then call the tool again if it is still needed."
)
SKIPPED_FOR_CANCEL = "Tool call not run: the run was cancelled before dispatch."


class Cancel(Protocol):
    """Anything with ``is_set()`` (an ``anyio.Event``, a ``threading.Event`` …)."""

    def is_set(self) -> bool: ...


@dataclass(frozen=True, slots=True, repr=False)
class LoopResult:
    """The outcome of :func:`agent_loop`."""

    session: Session
    final_message: Message | None
    iterations: int
    requests: list[ModelRequest]
    status: LoopStatus
    receipts: list[ToolReceipt]

    def __repr__(self) -> str:
        # A summary: the full form would print every request's history — O(n^2) text for a
        # long run, and CPython 3.11's asyncio.Runner reprs the main task's result on exit.
        return (
            f"LoopResult(status={self.status!r}, iterations={self.iterations}, "
            f"requests={len(self.requests)}, receipts={len(self.receipts)}, "
            f"session={self.session!r})"
        )


class _CancelledError(Exception):
    """Raised at a seam when ``cancel`` is set; never leaves :func:`agent_loop`."""


def _as_result(value: object) -> ToolResult:
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult(content=value)
    raise TypeError(f"a tool must return a str or a ToolResult, not {type(value).__name__}")


def _truncate(result: ToolResult, limit: int | None) -> ToolResult:
    if limit is None or len(result.content) <= limit:
        return result
    return ToolResult(
        content=result.content[:limit],
        ok=result.ok,
        truncated=True,
        original_size=result.original_size or len(result.content),
    )


def _calls(message: Message) -> list[ToolCall]:
    return [
        ToolCall(id=c["id"], name=c["name"], arguments=dict(c["arguments"]))
        for c in message.get("tool_calls") or []
    ]


class _Run(Steps):
    """The state of one ``agent_loop`` call, and the steps it runs on its session."""

    __slots__ = ("cancel", "max_tool_output", "model", "receipts", "requests", "session")

    def __init__(
        self,
        session: Session,
        model: Model,
        tools: Sequence[Tool],
        hooks: Hooks | None,
        queue: InjectionQueue,
        context_window: int | None,
        max_tool_output: int | None,
        cancel: Cancel | None,
    ) -> None:
        super().__init__(hooks, queue=queue, context_window=context_window)
        self.session = session
        self.model = model
        if tools:  # the loop's tools are what the session offers; else the session's own
            session.sync_tools(tools)
        self.max_tool_output = max_tool_output
        self.cancel = cancel
        self.requests: list[ModelRequest] = []
        self.receipts: list[ToolReceipt] = []

    def go_on(self) -> None:
        """Before every seam but ``loop_exit``: stop the run when ``cancel`` is set."""
        if self.cancel is not None and self.cancel.is_set():
            raise _CancelledError

    def tool_message(self, call: ToolCall, content: str) -> None:
        self.session.append(
            {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": content}
        )

    async def run_tool(self, call: ToolCall) -> None:
        session = self.session
        call, blocked, receipts = self.before_tool(session, call)
        tool = session.tool(call.name)
        if blocked is not None:
            result = blocked_result(blocked)
        elif tool is None:
            known = ", ".join(sorted(t.name for t in session.tools)) or "none"
            result = ToolResult(
                content=f"Unknown tool {call.name!r}; available: {known}.", ok=False
            )
        else:
            try:
                result = _as_result(await tool.call(call.arguments))
            except Exception as exc:  # a failing tool is a result the model can act on
                result = ToolResult(
                    content=f"Tool {call.name!r} failed: {type(exc).__name__}: {exc}", ok=False
                )
        result, more = self.finish_tool(session, call, _truncate(result, self.max_tool_output))
        receipts.extend(more)
        self.tool_message(call, result.content)
        await self.tool_used(session, call, result)
        self.receipts.append(
            ToolReceipt(tool_call_id=call.id, tool_name=call.name, ok=result.ok, reminders=receipts)
        )

    async def iterate(self, turn: int) -> Message | None:
        """One iteration; returns the final message when the model made no tool call."""
        session = self.session
        self.go_on()
        request = self.before_call(session, turn)
        self.requests.append(request)
        called = self.model(request)
        if type(called) is not CoroutineType and not inspect.isawaitable(called):
            raise TypeError(
                f"the model returned {type(called).__name__} without anything to await: a model "
                "is an async callable, `async def model(request) -> ModelResponse`; wrap a plain "
                "function in agent_reminders.testing.FunctionModel(fn)"
            )
        response = await called
        if not isinstance(response, ModelResponse):
            raise TypeError(f"the model returned {type(response).__name__}, not a ModelResponse")
        message = response.message
        session.append(message)
        await self.after_call(
            session,
            response.usage,
            getattr(self.model, "name", None) or type(self.model).__name__,
        )
        calls = _calls(message)
        try:
            self.go_on()
        except _CancelledError:
            for call in calls:
                self.tool_message(call, SKIPPED_FOR_CANCEL)
            raise
        skipped = self.pre_dispatch(session, turn, bool(calls))
        for call in calls:
            if skipped:
                self.tool_message(call, SKIPPED_FOR_INTERRUPT)
                self.receipts.append(
                    ToolReceipt(tool_call_id=call.id, tool_name=call.name, ok=False)
                )
            else:
                await self.run_tool(call)
        self.go_on()
        self.post_dispatch(session, turn)
        await self.post_step(session, turn, calls, skipped)
        self.go_on()
        self.iteration_end(session, turn)
        self.post_turn(session, turn)
        if calls:
            return None
        await self.agent_turn(session, turn, message)
        return message


# The arguments agent_loop only uses to make a session, with their defaults.
_SESSION_ARGUMENTS: tuple[tuple[str, object], ...] = (
    ("system", ""),
    ("reminders", True),
    ("event_log", None),
)


def _check_session_arguments(**given: object) -> None:
    """With ``session=``, the session already has these: a second value would be ignored."""
    for name, default in _SESSION_ARGUMENTS:
        value = given[name]
        if value is default or (type(value) is type(default) and value == default):
            continue
        raise ConfigError(
            f"agent_loop(session=..., {name}={value!r:.80}): the session already has its "
            f"{name}, so this argument would be ignored; set it when making the Session "
            f"(Session({name}=...)) and leave it out here"
        )


async def agent_loop(
    model: Model,
    task: str | list[dict[str, Any]] | None,
    *,
    system: str = "",
    tools: Iterable[Tool] = (),
    session: Session | None = None,
    reminders: bool | Mapping[str, Any] | ReminderOptions = True,
    hooks: Hooks | None = None,
    queue: InjectionQueue | None = None,
    max_iterations: int = 25,
    context_window: int | None = None,
    max_tool_output: int | None = None,
    event_log: Any = None,
    cancel: Cancel | None = None,
) -> LoopResult:
    """Run the model until it answers without tool calls, with reminders at every seam.

    ``task`` is appended as a user message (``None`` continues the session as it is). One
    iteration: seam ``iteration_start`` → request → model → ``on_budget_threshold`` → seam
    ``pre_tool_dispatch`` (an interrupt skips the tool batch) → tools with hooks and
    ``post_tool_use`` → seam ``post_tool_dispatch`` → ``post_step`` → seam ``iteration_end`` →
    ``post_turn`` → (no tool calls) ``post_agent_turn`` and stop. ``session_start`` fires once
    per session; seam ``loop_exit`` runs however the loop ends.

    ``system``, ``reminders`` and ``event_log`` make the session when ``session`` is not
    given; with ``session`` they must keep their defaults (the session already has them).

    Raises:
        ConfigError: ``session`` is given together with ``system``, ``reminders`` or
            ``event_log`` other than their defaults (a ``ValueError``, naming the argument).

    Example:
        >>> import anyio
        >>> from agent_reminders.testing import ScriptedModel
        >>> model = ScriptedModel([{"content": "done"}])
        >>> result = anyio.run(agent_loop, model, "hi")
        >>> result.status, result.final_message["content"]
        ('completed', 'done')
    """
    if type(max_iterations) is not int or max_iterations < 1:
        raise ValueError(f"max_iterations must be an int >= 1; got {max_iterations!r}")
    for name, value in (("context_window", context_window), ("max_tool_output", max_tool_output)):
        if value is not None and (type(value) is not int or value <= 0):
            raise ValueError(f"{name} must be a positive int or None; got {value!r}")
    if session is None:
        session = Session(system=system, reminders=reminders, event_log=event_log)
    elif not isinstance(session, Session):
        raise TypeError(f"session must be a Session, not {type(session).__name__}")
    else:
        _check_session_arguments(system=system, reminders=reminders, event_log=event_log)
    tool_list = list(tools)
    for tool in tool_list:
        if not isinstance(tool, Tool):
            raise TypeError(f"tools must be Tool values, not {type(tool).__name__}")
    if len({t.name for t in tool_list}) != len(tool_list):
        raise ValueError("tool names must be unique")
    run = _Run(
        session,
        model,
        tool_list,
        hooks,
        session.queue if queue is None else queue,
        context_window,
        max_tool_output,
        cancel,
    )
    info = getattr(model, "model_info", None)
    if isinstance(info, ModelInfo):  # the model says which one it is: "auto" follows it
        session.model = info
    if task is not None:
        session.append({"role": "user", "content": task if isinstance(task, str) else list(task)})
    await run.start(session, task if isinstance(task, str) else None)
    status: LoopStatus = "completed"
    final: Message | None = None
    iterations = 0
    try:
        while True:
            if iterations >= max_iterations:
                status = "max_iterations"
                break
            iterations += 1
            final = await run.iterate(session.turn)
            if final is not None:
                break
    except _CancelledError:
        status = "cancelled"
    finally:
        run.end(session, session.turn)
    return LoopResult(
        session=session,
        final_message=final,
        iterations=len(run.requests),
        requests=run.requests,
        status=status,
        receipts=run.receipts,
    )
