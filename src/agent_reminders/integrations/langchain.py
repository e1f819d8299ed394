"""LangChain v1: the library's reminders in a ``create_agent`` agent, as one middleware.

:class:`ReminderMiddleware` is an ``AgentMiddleware``. Before each model call it returns the
envelope as ``{"messages": [HumanMessage(envelope)]}`` — or ``SystemMessage(envelope)`` on the
system channel — which LangGraph's ``add_messages`` appends to the agent's state (and a
checkpointer keeps), so every later request sends it again, byte for byte, at the same place.
After each model call it fires ``on_budget_threshold`` with that call's ``usage_metadata``;
around each tool call it runs the tool hooks, neutralizes the tool output and fires
``post_tool_use``; when a ``SummarizationMiddleware`` placed before it has replaced the history
by a summary, it fires ``post_compact``; at the end of a run, seam ``loop_exit`` puts
``audit_only`` items into ``session.transcript.audit``.

The channel. ``wrap_model_call`` sees the chat model of each request and tells the session
which model it is (``ModelInfo`` from the class and its model name) and whether a
``SystemMessage`` after the first turn reaches that model where it stands: yes when the model's
profile sets ``mid_conversation_system_messages`` (``ChatAnthropic`` on the Claude models that
take it), and for ``ChatOpenAI`` and its family unless the profile says no (they send every
``SystemMessage`` in place; on OpenAI's endpoint the middleware marks it ``developer``);
otherwise the class may move it into the leading system prompt, which would rewrite the cached
prefix, so the envelope stays a ``HumanMessage``. With ``channel="auto"`` the capability table
decides the rest (an OpenAI-compatible ``base_url`` takes no system message unless registered).
The model of a thread's previous call decides its next envelope, so the envelopes before the
first call go on the user channel unless ``model=`` names the chat model. A system envelope that
a request could only send out of place (a model call failed and the thread went on with a user
message; a switch to a model that takes none) is sent as a ``HumanMessage`` from that request
on, and ``channel_downgraded`` is recorded once.

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
import sys
import threading
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio

from .._core.channels import placement
from .._core.records import Message
from .._core.request import ModelInfo, ToolCall, ToolResult, Usage
from ..hooks import Hooks
from ..session import Session
from .driver import NOT_SUPPORTED, Driver, extra_missing

try:
    from langchain.agents.middleware import (
        AgentMiddleware,
        AgentState,
        ModelCallResult,
        ModelRequest,
        ModelResponse,
    )
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import (
        AIMessage,
        AnyMessage,
        BaseMessage,
        HumanMessage,
        SystemMessage,
        ToolMessage,
    )
    from langgraph.config import get_config
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.runtime import Runtime
    from langgraph.types import Command
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without LangChain
    raise extra_missing("langchain", "LangChain") from exc

if TYPE_CHECKING:
    from langchain_openai.chat_models.base import BaseChatOpenAI

__all__ = ["ENVELOPE_SOURCE", "ReminderMiddleware"]

ENVELOPE_SOURCE = "agent_reminders"
"""``additional_kwargs["lc_source"]`` of the messages the middleware adds to the state
(LangChain's own marker key, as on the summary message; ``ChatOpenAI`` and ``ChatAnthropic``
do not send it to the provider)."""

_OPENAI_ROLE = "__openai_role__"
"""``additional_kwargs`` key ``ChatOpenAI`` reads a ``SystemMessage``'s role from."""

_SUMMARY_SOURCE = "summarization"
"""``additional_kwargs["lc_source"]`` of ``SummarizationMiddleware``'s summary message."""

# How SummarizationMiddleware introduces the summary it wrote; post_compact gets the summary.
_SUMMARY_PREFIX = "Here is a summary of the conversation to date:\n\n"

_ToolOutcome = ToolMessage | Command[Any]


@dataclasses.dataclass(frozen=True, slots=True)
class _Target:
    """The chat model of a request, as far as the channel of an envelope is concerned."""

    info: ModelInfo
    #: a non-leading SystemMessage reaches the model where it stands (not hoisted)
    in_place: bool
    #: ...at any position (OpenAI); otherwise only where Anthropic's placement rules allow
    anywhere: bool
    #: sent as OpenAI's ``developer`` role (ChatOpenAI on OpenAI's own endpoint)
    developer: bool


@dataclasses.dataclass
class _Thread:
    """What the middleware saw of one thread's history, to count what a summary replaced."""

    #: ids of the history's messages seen so far
    known: set[str] = dataclasses.field(default_factory=set)
    #: the AIMessage whose usage was reported last
    last_ai: str | None = None
    #: the chat model of the thread's last model call
    target: _Target | None = None
    #: ids of the system envelopes already reported as downgraded
    downgraded: set[str] = dataclasses.field(default_factory=set)


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
        model: The agent's chat model, so that the envelopes before its first call already
            take the channel it allows (later ones follow the model each call used); a
            :class:`~agent_reminders.ModelInfo` is passed to the sessions instead.
        **session_options: ``Session`` keyword arguments (``reminders=``, ``generators=``,
            ``workspace=``, ``envelope_style=``, ``channel=`` …); not together with ``session``.

    Put it after a ``SummarizationMiddleware`` in ``middleware=[...]`` so that the summary
    is seen (and ``post_compact`` fired) in the request it starts.
    """

    def __init__(
        self,
        session: Session | None = None,
        *,
        context_window: int | None = None,
        hooks: Hooks | None = None,
        model: BaseChatModel | ModelInfo | None = None,
        **session_options: Any,
    ) -> None:
        super().__init__()
        self._declared: _Target | None = None
        if isinstance(model, BaseChatModel):
            self._declared = _target(model)
        elif model is not None:
            session_options["model"] = model  # a ModelInfo: Session checks it
        self._latest: _Target | None = None  # the model of the last call, on any thread
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

    def _aim(
        self, session: Session, thread: _Thread, messages: Sequence[AnyMessage]
    ) -> _Target | None:
        """Before a commit: the model the envelope goes to (the thread's last, else the last
        of any thread, else ``model=``; ``None``: unknown), with ``in_place`` saying whether a
        system envelope would reach it where it is about to stand, after the history's last
        message — and the session told so."""
        target = thread.target or self._latest or self._declared
        if target is None:
            return None
        last = messages[-1] if messages else None
        # Anthropic's rules: a system entry follows a user turn (tool results are one)
        fits = target.anywhere or isinstance(last, HumanMessage | ToolMessage)
        if target.in_place and not fits:
            target = dataclasses.replace(target, in_place=False)
        self._driver.use_model(session, target.info, in_place=target.in_place)
        return target

    def _added(
        self, thread: _Thread, messages: list[Message], target: _Target | None
    ) -> dict[str, Any] | None:
        if not messages:
            return None
        added = [_to_langchain(m, target) for m in messages]
        thread.known.update(_ids(added))
        return {"messages": added}

    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Add the drained user messages and the envelope, each a ``HumanMessage`` (the
        envelope a ``SystemMessage`` on the system channel)."""
        thread_id = _node_thread()
        session, thread = self.session_for(thread_id), self._thread(thread_id)
        messages = state["messages"]
        self._compaction(session, thread, messages)
        task = None if session.started else _task(messages)
        target = self._aim(session, thread, messages)
        return self._added(thread, self._driver.before_model(session, task=task), target)

    async def abefore_model(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """:meth:`before_model` for ``ainvoke`` / ``astream``."""
        thread_id = _node_thread()
        session, thread = self.session_for(thread_id), self._thread(thread_id)
        messages = state["messages"]
        self._compaction(session, thread, messages)
        task = None if session.started else _task(messages)
        target = self._aim(session, thread, messages)
        added = await self._driver.abefore_model(session, task=task)
        return self._added(thread, added, target)

    def _placed(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        """Note the request's chat model, and send each system envelope that it could not
        take where it stands as a ``HumanMessage`` (recording the downgrade once)."""
        thread_id = _node_thread()
        session, thread = self.session_for(thread_id), self._thread(thread_id)
        target = _target(request.model)
        thread.target = self._latest = target
        self._driver.use_model(session, target.info, in_place=target.in_place)
        messages = request.messages
        out_of_place = _out_of_place(messages, target)
        if not out_of_place:
            return request
        for index, reason in out_of_place.items():
            ident = messages[index].id or ""
            if ident not in thread.downgraded:
                thread.downgraded.add(ident)
                self._driver.downgraded(session, message_index=index, reason=reason)
        placed = [_as_human(m) if i in out_of_place else m for i, m in enumerate(messages)]
        return request.override(messages=placed)

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelCallResult[Any]:
        """Send the request with each envelope on a channel its chat model takes in place."""
        return handler(self._placed(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelCallResult[Any]:
        """:meth:`wrap_model_call` for ``ainvoke`` / ``astream``."""
        return await handler(self._placed(request))

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


def _to_langchain(message: Message, target: _Target | None) -> HumanMessage | SystemMessage:
    """A driver message as the state keeps it: a ``HumanMessage``, or for a system-channel
    envelope a ``SystemMessage`` — unless the model is known not to take it in place."""
    content: Any = message["content"]  # a str or text blocks: both are LangChain content
    marks: dict[str, Any] = {"lc_source": ENVELOPE_SOURCE}
    if message["role"] == "system" and (target is None or target.in_place):
        if target is not None and target.developer:
            marks[_OPENAI_ROLE] = "developer"
        return SystemMessage(content=content, id=str(uuid.uuid4()), additional_kwargs=marks)
    return HumanMessage(content=content, id=str(uuid.uuid4()), additional_kwargs=marks)


def _as_human(message: BaseMessage) -> HumanMessage:
    """A system envelope sent as a user message (the same id, text and marker)."""
    marks = {k: v for k, v in message.additional_kwargs.items() if k != _OPENAI_ROLE}
    return HumanMessage(content=message.content, id=message.id, additional_kwargs=marks)


def _is_envelope(message: BaseMessage) -> bool:
    return (
        isinstance(message, SystemMessage)
        and message.additional_kwargs.get("lc_source") == ENVELOPE_SOURCE
    )


def _side(message: BaseMessage) -> str:
    """A LangChain message's role in the neutral terms the placement rules read."""
    if isinstance(message, SystemMessage):
        return "system"
    if isinstance(message, AIMessage):
        return "assistant"
    return "tool" if isinstance(message, ToolMessage) else "user"


def _out_of_place(messages: Sequence[BaseMessage], target: _Target) -> dict[int, str]:
    """The system envelopes of a request that ``target`` could not take where they stand, by
    index, with the reason (the class would move them into the leading system prompt)."""
    ours = [i for i, m in enumerate(messages) if _is_envelope(m)]
    if not ours:
        return {}
    if not target.in_place:
        return dict.fromkeys(ours, NOT_SUPPORTED)
    if target.anywhere:
        return {}
    found = placement([{"role": _side(m), "content": m.content} for m in messages])
    return {i: str(found[i]) for i in ours if i in found}


def _chat_openai(model: BaseChatModel) -> BaseChatOpenAI | None:
    """``model`` when it is a ``ChatOpenAI`` (or another class of langchain-openai's family)."""
    if "langchain_openai" not in sys.modules:
        return None  # never imported: no model can be one of its classes
    from langchain_openai.chat_models.base import BaseChatOpenAI

    return model if isinstance(model, BaseChatOpenAI) else None


def _target(model: BaseChatModel) -> _Target:
    """What the channel of an envelope needs to know of a chat model (see the module)."""
    # the model's name as its class keeps it (langchain-anthropic: ``model``; langchain-openai
    # and most others: ``model_name``), read through public attributes only
    name = str(getattr(model, "model_name", None) or getattr(model, "model", None) or "")
    flag = (model.profile or {}).get("mid_conversation_system_messages")
    chat_openai = _chat_openai(model)
    if chat_openai is not None:
        client = chat_openai.root_async_client or chat_openai.root_client
        base_url = str(client.base_url) if client is not None else chat_openai.openai_api_base
        info = ModelInfo(provider="openai", name=name, base_url=base_url)
        own = info.key.startswith("openai:")
        # every SystemMessage goes out where it stands, unless the profile says otherwise
        return _Target(info=info, in_place=flag is not False, anywhere=True, developer=own)
    module = type(model).__module__
    provider = "anthropic" if module.startswith("langchain_anthropic") else type(model).__name__
    provider = provider.lower()
    info = ModelInfo(provider=provider, name=name)
    return _Target(info=info, in_place=flag is True, anywhere=False, developer=False)


def _usage(answer: AIMessage) -> Usage | None:
    meta = answer.usage_metadata
    if meta is None:
        return None
    details = meta.get("input_token_details") or {}
    cached = details.get("cache_read")
    written = details.get("cache_creation")
    return Usage(
        input_tokens=int(meta.get("input_tokens") or 0),
        output_tokens=int(meta.get("output_tokens") or 0),
        cached_input_tokens=None if cached is None else int(cached),
        cache_write_tokens=None if written is None else int(written),
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
