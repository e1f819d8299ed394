"""LangChain v1: the library's reminders in a ``create_agent`` agent, as one middleware
(spec 05 §3).

:class:`ReminderMiddleware` is an ``AgentMiddleware``. Before each model call it returns the
envelope as ``{"messages": [HumanMessage(envelope)]}``, which LangGraph's ``add_messages``
appends to the agent's state (and a checkpointer keeps), so every later request sends it again,
byte for byte, at the same place. After each model call it fires ``on_budget_threshold`` with
that call's ``usage_metadata``; around each tool call it runs the tool hooks, neutralizes the
tool output and fires ``post_tool_use``; when a ``SummarizationMiddleware`` placed before it has
replaced the history by a summary, it fires ``post_compact``; at the end of a run, seam
``loop_exit`` puts ``audit_only`` items into ``session.transcript.audit``.

The steps themselves live in :class:`~agent_reminders.integrations.driver.Driver`; this module
only converts between LangChain's messages and the driver's.

Example:
    >>> from langchain.agents import create_agent
    >>> from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    >>> middleware = ReminderMiddleware()
    >>> _ = middleware.session.inject({"body": "Run the tests before answering.", "ttl_turns": 2})
    >>> model = GenericFakeChatModel(messages=iter(["Done."]))
    >>> agent = create_agent(model, middleware=[middleware])
    >>> state = agent.invoke({"messages": [{"role": "user", "content": "Fix the bug."}]})
    >>> [m.type for m in state["messages"]]
    ['human', 'human', 'ai']
    >>> "Run the tests before answering." in state["messages"][1].text
    True
"""

from __future__ import annotations

import dataclasses
import threading
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import anyio

from .._core.records import Message
from .._core.request import ToolCall, ToolResult, Usage
from ..hooks import Hooks
from ..session import Session
from .driver import Driver, extra_missing

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState
    from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
    from langgraph.config import get_config
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.runtime import Runtime
    from langgraph.types import Command
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without LangChain
    raise extra_missing("langchain", "LangChain") from exc

__all__ = ["ENVELOPE_SOURCE", "ReminderMiddleware"]

ENVELOPE_SOURCE = "agent_reminders"
"""``additional_kwargs["lc_source"]`` of the messages the middleware adds to the state
(LangChain's own marker key, as on the summary message; ``ChatOpenAI`` and ``ChatAnthropic``
do not send it to the provider)."""

_SUMMARY_SOURCE = "summarization"
"""``additional_kwargs["lc_source"]`` of ``SummarizationMiddleware``'s summary message."""

# How SummarizationMiddleware introduces the summary it wrote; post_compact gets the summary.
_SUMMARY_PREFIX = "Here is a summary of the conversation to date:\n\n"

_ToolOutcome = ToolMessage | Command[Any]


@dataclasses.dataclass
class _Thread:
    """What the middleware saw of one thread's history, to count what a summary replaced."""

    #: ids of the history's messages seen so far
    known: set[str] = dataclasses.field(default_factory=set)
    #: the AIMessage whose usage was reported last
    last_ai: str | None = None


class ReminderMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Reminders for a LangChain ``create_agent`` agent.

    Args:
        session: The :class:`~agent_reminders.Session` to use for every thread; when omitted,
            each thread (the ``thread_id`` of the run's config; runs without one share
            :attr:`session`) gets its own ``Session(**session_options)``.
        context_window: The window ``token_pressure`` measures against (else
            ``reminders.config.token_pressure.context_window``).
        hooks: :class:`~agent_reminders.Hooks` run around tools and on provider events, as in
            ``agent_loop``.
        **session_options: ``Session`` keyword arguments (``reminders=``, ``generators=``,
            ``workspace=``, ``envelope_style=`` …); not together with ``session``.

    Put it after a ``SummarizationMiddleware`` in ``middleware=[...]`` so that the summary
    is seen (and ``post_compact`` fired) in the request it starts.
    """

    def __init__(
        self,
        session: Session | None = None,
        *,
        context_window: int | None = None,
        hooks: Hooks | None = None,
        **session_options: Any,
    ) -> None:
        super().__init__()
        self._driver = Driver(
            session,
            session_options,
            context_window=context_window,
            hooks=hooks,
            owner="ReminderMiddleware",
        )
        self._threads: dict[str | None, _Thread] = {}
        # ToolNode runs a batch's calls in threads (sync) or concurrently (async); the
        # session's state changes one call at a time.
        self._lock = threading.Lock()
        self._alock = anyio.Lock()

    @property
    def session(self) -> Session:
        """The given session, or the one made from the options (runs without a thread id)."""
        return self._driver.session

    def session_for(self, thread_id: str | None) -> Session:
        """The session of a LangGraph ``thread_id`` (made from the options on first use), or
        the given session for every id when one was given; ``None`` gives :attr:`session`."""
        return self._driver.session_for(thread_id)

    def _thread(self, thread_id: str | None) -> _Thread:
        found = self._threads.get(thread_id)
        if found is None:
            found = self._threads[thread_id] = _Thread()
        return found

    # -- the run's start and end --------------------------------------------------------------

    def before_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Note the history the run starts from (a summary in it is an old one)."""
        self._thread(_node_thread()).known.update(_ids(state["messages"]))
        return None

    async def abefore_agent(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """:meth:`before_agent` for ``ainvoke`` / ``astream``."""
        return self.before_agent(state, runtime)

    def after_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """The run ended: age the last request's reminders, run seam ``loop_exit``."""
        self._driver.end_run(self.session_for(_node_thread()))
        return None

    async def aafter_agent(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """:meth:`after_agent` for ``ainvoke`` / ``astream``."""
        return self.after_agent(state, runtime)

    # -- before and after each model call -----------------------------------------------------

    def _compaction(
        self, session: Session, thread: _Thread, messages: Sequence[AnyMessage]
    ) -> None:
        """A summary not seen before at the head of the history: fire ``post_compact``."""
        head = messages[0] if messages else None
        if not isinstance(head, HumanMessage) or head.id is None or head.id in thread.known:
            return
        if head.additional_kwargs.get("lc_source") != _SUMMARY_SOURCE:
            return
        now = set(_ids(messages))
        archived = len(thread.known - now)
        thread.known = now
        summary = str(head.text).removeprefix(_SUMMARY_PREFIX)
        self._driver.compacted(session, archived_messages=archived, summary=summary)

    def _added(self, thread: _Thread, messages: list[Message]) -> dict[str, Any] | None:
        if not messages:
            return None
        added = [_human(m) for m in messages]
        thread.known.update(_ids(added))
        return {"messages": added}

    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Add the drained user messages and the envelope, each a ``HumanMessage``."""
        thread_id = _node_thread()
        session, thread = self.session_for(thread_id), self._thread(thread_id)
        messages = state["messages"]
        self._compaction(session, thread, messages)
        task = None if session.started else _task(messages)
        return self._added(thread, self._driver.before_model(session, task=task))

    async def abefore_model(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """:meth:`before_model` for ``ainvoke`` / ``astream``."""
        thread_id = _node_thread()
        session, thread = self.session_for(thread_id), self._thread(thread_id)
        messages = state["messages"]
        self._compaction(session, thread, messages)
        task = None if session.started else _task(messages)
        return self._added(thread, await self._driver.abefore_model(session, task=task))

    def _answer(self, thread: _Thread, messages: Sequence[AnyMessage]) -> AIMessage | None:
        """The model's new answer (``None`` when there is none since the last call)."""
        answer = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
        if answer is None or (answer.id is not None and answer.id == thread.last_ai):
            return None
        thread.last_ai = answer.id
        if answer.id is not None:
            thread.known.add(answer.id)
        return answer

    def after_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Fire ``on_budget_threshold`` with the answer's own ``usage_metadata``."""
        thread_id = _node_thread()
        answer = self._answer(self._thread(thread_id), state["messages"])
        if answer is not None:
            session = self.session_for(thread_id)
            self._driver.after_model(session, _usage(answer), model=_model_name(answer))
        return None

    async def aafter_model(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """:meth:`after_model` for ``ainvoke`` / ``astream``."""
        thread_id = _node_thread()
        answer = self._answer(self._thread(thread_id), state["messages"])
        if answer is not None:
            session = self.session_for(thread_id)
            await self._driver.aafter_model(session, _usage(answer), model=_model_name(answer))
        return None

    # -- tools --------------------------------------------------------------------------------

    def _before_tool(
        self, request: ToolCallRequest
    ) -> tuple[Session, _Thread, ToolCall, ToolCallRequest, ToolMessage | None]:
        """The call after the ``pre`` hooks, and the result to use instead when one blocked it."""
        thread_id = _tool_thread(request)
        session, thread = self.session_for(thread_id), self._thread(thread_id)
        raw = request.tool_call
        call = ToolCall(id=str(raw.get("id") or ""), name=raw["name"], arguments=raw["args"])
        with self._lock:
            ran, blocked = self._driver.before_tool(session, call)
        if blocked is not None:
            stop = ToolMessage(
                content=f"Tool call blocked: {blocked}",
                tool_call_id=call.id,
                name=call.name,
                status="error",
            )
            return session, thread, ran, request, stop
        if ran is not call:
            request = request.override(tool_call={**raw, "args": dict(ran.arguments)})
        return session, thread, ran, request, None

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], _ToolOutcome],
    ) -> _ToolOutcome:
        """Run the tool between its hooks; the model sees the neutralized output."""
        session, thread, call, request, stop = self._before_tool(request)
        outcome = stop if stop is not None else handler(request)
        found = _tool_message(outcome, call.id)
        if found is None:
            return outcome
        with self._lock:
            final = self._driver.after_tool(session, call, _result(found))
        return _replaced(thread, outcome, found, final)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[_ToolOutcome]],
    ) -> _ToolOutcome:
        """:meth:`wrap_tool_call` for ``ainvoke`` / ``astream``."""
        session, thread, call, request, stop = self._before_tool(request)
        outcome = stop if stop is not None else await handler(request)
        found = _tool_message(outcome, call.id)
        if found is None:
            return outcome
        async with self._alock:
            final = await self._driver.aafter_tool(session, call, _result(found))
        return _replaced(thread, outcome, found, final)


# -- conversions --------------------------------------------------------------------------------


def _config_thread(config: Mapping[str, Any] | None) -> str | None:
    value = ((config or {}).get("configurable") or {}).get("thread_id")
    return None if value is None or value == "" else str(value)


def _node_thread() -> str | None:
    """The ``thread_id`` of the run this graph node belongs to (``None``: none given)."""
    try:
        return _config_thread(get_config())
    except RuntimeError:  # called outside a graph run
        return None


def _tool_thread(request: ToolCallRequest) -> str | None:
    runtime = request.runtime
    return _node_thread() if runtime is None else _config_thread(runtime.config)


def _ids(messages: Sequence[AnyMessage]) -> list[str]:
    return [m.id for m in messages if m.id is not None]


def _task(messages: Sequence[AnyMessage]) -> str | None:
    """The run's first user text, for ``session_start``."""
    first = next((m for m in messages if isinstance(m, HumanMessage)), None)
    return None if first is None else str(first.text)


def _human(message: Message) -> HumanMessage:
    content: Any = message["content"]  # a str or text blocks: both are LangChain content
    return HumanMessage(
        content=content,
        id=str(uuid.uuid4()),
        additional_kwargs={"lc_source": ENVELOPE_SOURCE},
    )


def _usage(answer: AIMessage) -> Usage | None:
    meta = answer.usage_metadata
    if meta is None:
        return None
    details = meta.get("input_token_details") or {}
    cached = details.get("cache_read")
    return Usage(
        input_tokens=int(meta.get("input_tokens") or 0),
        output_tokens=int(meta.get("output_tokens") or 0),
        cached_input_tokens=None if cached is None else int(cached),
    )


def _model_name(answer: AIMessage) -> str | None:
    name = answer.response_metadata.get("model_name") or answer.response_metadata.get("model")
    return None if name is None else str(name)


def _tool_message(outcome: _ToolOutcome, call_id: str) -> ToolMessage | None:
    """The tool's message: the outcome itself, or the one a ``Command`` adds for this call."""
    if isinstance(outcome, ToolMessage):
        return outcome
    update = outcome.update
    if not isinstance(update, Mapping):
        return None
    return next(
        (
            m
            for m in update.get("messages") or ()
            if isinstance(m, ToolMessage) and m.tool_call_id == call_id
        ),
        None,
    )


def _text(content: str | list[str | dict[str, Any]]) -> str:
    if isinstance(content, str):
        return content
    parts = [b if isinstance(b, str) else str(b.get("text", "")) for b in content if _is_text(b)]
    return "".join(parts)


def _is_text(block: str | dict[str, Any]) -> bool:
    return isinstance(block, str) or block.get("type") == "text"


def _result(message: ToolMessage) -> ToolResult:
    return ToolResult(content=_text(message.content), ok=message.status != "error")


def _replaced(
    thread: _Thread, outcome: _ToolOutcome, message: ToolMessage, final: ToolResult
) -> _ToolOutcome:
    """``outcome`` with the tool message's content and status as the model must see them."""
    content: str | list[str | dict[str, Any]] = message.content
    if final.content != _text(content):
        # the text (neutralized, or replaced by a post hook) as one block; others kept
        content = (
            final.content
            if isinstance(content, str)
            else [{"type": "text", "text": final.content}, *(b for b in content if not _is_text(b))]
        )
    status = "success" if final.ok else "error"
    ident = message.id or str(uuid.uuid4())
    thread.known.add(ident)
    new = message.model_copy(update={"content": content, "status": status, "id": ident})
    if isinstance(outcome, ToolMessage):
        return new
    if not isinstance(outcome.update, Mapping):  # never: the message was found in it
        return outcome
    update = dict(outcome.update)
    update["messages"] = [new if m is message else m for m in update["messages"]]
    return dataclasses.replace(outcome, update=update)
