"""The steps of one loop iteration, written once for every host that runs them.

``agent_loop`` runs them all in order; the driver every framework integration is built on
runs them at the framework's seams (the framework calls the model and the tools); the Claude
Code hook runs them at Claude Code's hook events. One iteration:

1. :meth:`Steps.start` — ``session_start``, once in a session's life (:meth:`Session.start`);
2. :meth:`Steps.before_call` — seam ``iteration_start`` drains the queue, then the envelope
   is committed and the request built (:meth:`Steps.commit` alone where no seam comes first);
3. the model call (the host's), then :meth:`Steps.after_call` — ``on_budget_threshold`` with
   that call's usage (and a ``cache_missed`` event when the provider said why its prompt
   cache missed);
4. :meth:`Steps.pre_dispatch` — seam ``pre_tool_dispatch``: an interrupt drained there
   skips the tool batch;
5. per tool: :meth:`Steps.before_tool` (``pre`` hooks), the tool (the host's),
   :meth:`Steps.finish_tool` (``post`` hooks, output through ``neutralize_untrusted``),
   :meth:`Steps.tool_used` (``post_tool_use``);
6. :meth:`Steps.post_dispatch` — seam ``post_tool_dispatch``; :meth:`Steps.post_step`;
   :meth:`Steps.iteration_end` — seam ``iteration_end``; :meth:`Steps.post_turn` ages the
   request's reminders; :meth:`Steps.agent_turn` — ``post_agent_turn`` when the model
   answered without tool calls;
7. :meth:`Steps.end` — seam ``loop_exit`` however the run ends.

Each provider event has an async form, which evaluates the event in a worker thread when one
of its providers is ``blocking``, and a synchronous form (``*_sync``) for synchronous hosts.
The payloads are those ``docs/session-loop.md`` lists.
"""

from __future__ import annotations

import functools
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any

from .._core.envelope import neutralize_untrusted
from .._core.events import Kind
from .._core.records import Message
from .._core.request import ModelRequest, ToolCall, ToolResult, Usage
from ..hooks import Hooks
from ..providers.base import command_of
from ..queue import InjectionQueue
from ..session import SeamResult, Session

__all__ = [
    "Steps",
    "blocked_result",
    "budget_payload",
    "cache_missed_payload",
    "fire_event",
    "fire_event_sync",
    "neutralized",
    "tool_event_payload",
]

Receipts = list[dict[str, Any]]
# What an async event step returns: the firing itself. Those steps are plain functions that
# hand back :meth:`Steps.fire`'s coroutine, so the loop awaits one coroutine per event.
Firing = Coroutine[Any, Any, None]


def tool_event_payload(call: ToolCall, result: ToolResult) -> dict[str, Any]:
    """The ``post_tool_use`` payload of a finished call."""
    return {
        "tool_name": call.name,
        "arguments": dict(call.arguments),
        "command": command_of(call.arguments),
        "result": result.to_dict(),
    }


def budget_payload(
    usage: Usage | None, context_window: int | None, model: str | None
) -> dict[str, Any]:
    """The ``on_budget_threshold`` payload: the usage of the model call that just ended, the
    context window (``None``: the provider's config decides) and the model name."""
    return {
        "usage": None if usage is None else usage.to_dict(),
        "context_window": context_window,
        "model": model,
    }


def cache_missed_payload(
    session: Session, usage: Usage, model: str | None
) -> dict[str, Any] | None:
    """The ``transcript.cache_missed`` payload of a model call whose provider said why its
    prompt cache missed (``usage.cache_miss_reason``), else ``None``: the session, the turn
    of the request answered, the model name, the reason and the call's token figures.

    Example:
        >>> from agent_reminders import Session
        >>> usage = Usage(input_tokens=900, output_tokens=5, cached_input_tokens=0,
        ...               cache_write_tokens=880, cache_miss_reason="system_changed")
        >>> cache_missed_payload(Session("s1"), usage, "anthropic:claude-opus-4-8")["reason"]
        'system_changed'
        >>> cache_missed_payload(Session("s1"), Usage(900, 5), None) is None
        True
    """
    if usage.cache_miss_reason is None:
        return None
    return {
        "session_id": session.id,
        # the request just answered: building it moved the session to the next turn
        "turn_number": max(session.turn - 1, 0),
        "model": model,
        "reason": usage.cache_miss_reason,
        "input_tokens": usage.input_tokens,
        "cached_input_tokens": usage.cached_input_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
    }


def blocked_result(reason: str) -> ToolResult:
    """The result of a tool call that a ``pre`` hook blocked: the model is told why."""
    return ToolResult(content=f"Tool call blocked: {reason}", ok=False)


def neutralized(result: ToolResult) -> ToolResult:
    """``result`` with its content through ``neutralize_untrusted`` (tool output is untrusted)."""
    content = neutralize_untrusted(result.content)
    if content is result.content:  # nothing to defang
        return result
    return ToolResult(
        content=content,
        ok=result.ok,
        truncated=result.truncated,
        original_size=result.original_size,
    )


class Steps:
    """The steps of a loop iteration with one run's settings; each step takes the session it
    acts on (a driver serves many sessions with one ``Steps``).

    ``hooks`` are dispatched for every provider event and run around tools (``None``: the
    session's providers alone); ``queue`` is drained at the seams (``None``: the session's
    own); ``context_window`` goes into every ``on_budget_threshold`` payload.
    """

    __slots__ = ("context_window", "hooks", "queue")

    def __init__(
        self,
        hooks: Hooks | None = None,
        *,
        queue: InjectionQueue | None = None,
        context_window: int | None = None,
    ) -> None:
        self.hooks = hooks
        self.queue = queue
        self.context_window = context_window

    # -- provider events ----------------------------------------------------------------------

    def fire_sync(self, session: Session, name: str, payload: Mapping[str, Any]) -> None:
        """Fire a provider event on ``session``, through the hooks when there are any (their
        session hooks, then the providers); blocking providers run in this thread."""
        if self.hooks is None:
            session.fire(name, payload)
        else:
            self.hooks.dispatch(name, payload, session=session)

    async def fire(self, session: Session, name: str, payload: Mapping[str, Any]) -> None:
        """:meth:`fire_sync` for async hosts: when a provider of the event is ``blocking``,
        the whole firing runs in a worker thread, so its I/O never stalls the event loop."""
        if session.fires_blocking(name, payload):
            await session.offload(self.fire_sync, session, name, payload)
        elif self.hooks is None:  # fire_sync, inline: every event of the loop comes here
            session.fire(name, payload)
        else:
            self.hooks.dispatch(name, payload, session=session)

    # -- 1. start -----------------------------------------------------------------------------

    def start_sync(self, session: Session, task: str | None, *, again: bool = False) -> bool:
        """``session_start`` with ``task`` unless the session has started (see
        :meth:`Session.start`, also for ``again``); returns whether it fired."""
        fire = functools.partial(self.fire_sync, session)
        return session.start(task, again=again, fire=fire)

    async def start(self, session: Session, task: str | None, *, again: bool = False) -> bool:
        """:meth:`start_sync` for async hosts (``again``: see :meth:`Session.start`)."""
        return await session.astart(task, again=again, fire=functools.partial(self.fire, session))

    # -- 2. before the model call -------------------------------------------------------------

    def commit(self, session: Session, turn: int | None = None) -> ModelRequest:
        """Commit the envelope for ``turn`` (default: the session's) and build the request."""
        return session.prepare_request(turn=turn)

    def before_call(self, session: Session, turn: int | None = None) -> ModelRequest:
        """Seam ``iteration_start`` (``finish_step`` and ``interrupt_immediate`` items), then
        :meth:`commit`: the request of this iteration."""
        session.run_seam("iteration_start", queue=self.queue, iteration=turn)
        return session.prepare_request(turn=turn)

    # -- 3. after the model call --------------------------------------------------------------

    @staticmethod
    def note_cache_miss(session: Session, usage: Usage | None, model: str | None) -> None:
        """Record ``transcript.cache_missed`` (:func:`cache_missed_payload`) when the provider
        said why its prompt cache missed on the call that just ended."""
        payload = None if usage is None else cache_missed_payload(session, usage, model)
        if payload is not None:
            session.event_log.keep(Kind.CACHE_MISSED, "transcript.cache", payload)

    def after_call_sync(self, session: Session, usage: Usage | None, model: str | None) -> None:
        """``on_budget_threshold`` with the usage of the call that just ended (after
        :meth:`note_cache_miss`)."""
        self.note_cache_miss(session, usage, model)
        payload = budget_payload(usage, self.context_window, model)
        self.fire_sync(session, "on_budget_threshold", payload)

    def after_call(self, session: Session, usage: Usage | None, model: str | None) -> Firing:
        """:meth:`after_call_sync` for async hosts."""
        self.note_cache_miss(session, usage, model)
        return self.fire(
            session, "on_budget_threshold", budget_payload(usage, self.context_window, model)
        )

    # -- 4.-5. tools ----------------------------------------------------------------------------

    def pre_dispatch(self, session: Session, iteration: int | None, pending: bool) -> bool:
        """Seam ``pre_tool_dispatch``; whether what it drained skips the pending tool batch
        (an interrupt arrived while ``pending`` tool calls wait)."""
        done = session.run_seam(
            "pre_tool_dispatch", queue=self.queue, iteration=iteration, pending_tools=pending
        )
        return done.dispatch_skipped

    def before_tool(
        self, session: Session, call: ToolCall
    ) -> tuple[ToolCall, str | None, Receipts]:
        """The ``pre`` tool hooks: the call (its arguments possibly modified), the reason when
        a hook blocked it (``None``: run it) and the receipts of the reminders they made."""
        if self.hooks is None:
            return call, None, []
        actions, receipts = self.hooks.run_pre(call, session)
        blocked: str | None = None
        for action in actions:
            if action["action"] in ("block", "deny"):
                blocked = str(action.get("reason") or "blocked by a hook")
            elif action["action"] == "modify":  # hooks checked: arguments is a mapping
                call = ToolCall(id=call.id, name=call.name, arguments=dict(action["arguments"]))
        return call, blocked, receipts

    def finish_tool(
        self, session: Session, call: ToolCall, result: ToolResult
    ) -> tuple[ToolResult, Receipts]:
        """The tool's result as the model must see it — the ``post`` hooks run (one may
        replace it), the output through ``neutralize_untrusted`` — and the hooks' receipts."""
        receipts: Receipts = []
        if self.hooks is not None:
            result, receipts = self.hooks.run_post(call, result, session)
        return neutralized(result), receipts

    def tool_used_sync(self, session: Session, call: ToolCall, result: ToolResult) -> None:
        """``post_tool_use`` with the call and its finished result."""
        self.fire_sync(session, "post_tool_use", tool_event_payload(call, result))

    def tool_used(self, session: Session, call: ToolCall, result: ToolResult) -> Firing:
        """:meth:`tool_used_sync` for async hosts."""
        return self.fire(session, "post_tool_use", tool_event_payload(call, result))

    # -- 6. after the tools ---------------------------------------------------------------------

    def post_dispatch(self, session: Session, iteration: int | None = None) -> SeamResult:
        """Seam ``post_tool_dispatch``."""
        return session.run_seam("post_tool_dispatch", queue=self.queue, iteration=iteration)

    def post_step(
        self, session: Session, iteration: int, calls: Sequence[ToolCall], skipped: bool
    ) -> Firing:
        """``post_step``: the iteration, its tool calls and whether the batch was skipped."""
        return self.fire(
            session,
            "post_step",
            {
                "iteration": iteration,
                "tool_calls": [
                    {
                        "tool_name": c.name,
                        "arguments": dict(c.arguments),
                        "command": command_of(c.arguments),
                    }
                    for c in calls
                ],
                "dispatch_skipped": skipped,
            },
        )

    def iteration_end(self, session: Session, iteration: int | None = None) -> SeamResult:
        """Seam ``iteration_end``."""
        return session.run_seam("iteration_end", queue=self.queue, iteration=iteration)

    def post_turn(self, session: Session, turn: int) -> None:
        """Age the reminders of request ``turn``: the model has answered it."""
        session.post_turn(turn)

    def agent_turn(self, session: Session, iteration: int, message: Message) -> Firing:
        """``post_agent_turn``: the model answered without tool calls."""
        return self.fire(
            session, "post_agent_turn", {"iteration": iteration, "final_message": message}
        )

    # -- 7. the end of a run --------------------------------------------------------------------

    def end(self, session: Session, iteration: int | None = None) -> SeamResult:
        """Seam ``loop_exit``: ``audit_only`` items into ``session.transcript.audit``."""
        return session.run_seam("loop_exit", queue=self.queue, iteration=iteration)


def fire_event_sync(
    session: Session, hooks: Hooks | None, name: str, payload: Mapping[str, Any]
) -> None:
    """Fire a provider event on ``session`` through ``hooks`` (see :meth:`Steps.fire_sync`)."""
    Steps(hooks).fire_sync(session, name, payload)


async def fire_event(
    session: Session, hooks: Hooks | None, name: str, payload: Mapping[str, Any]
) -> None:
    """Fire a provider event on ``session`` through ``hooks``, blocking providers in a worker
    thread (see :meth:`Steps.fire`)."""
    await Steps(hooks).fire(session, name, payload)
