"""Reminders inside pydantic-ai agents: :class:`ReminderCapability`.

A pydantic-ai capability (``AbstractCapability``, pydantic-ai 2.x) that gives an existing
``Agent`` the library's reminders — the canonical providers, the session's own providers,
hooks, generators and host pushes through the session's queue — over a
:class:`~agent_reminders.integrations.driver.Driver`:

- ``before_model_request``: the driver's step before a model call; what it returns (drained
  user messages, then the envelope) is handed to pydantic-ai through its own persisted path,
  ``ctx.enqueue(ModelRequest(parts=[UserPromptPart(text)]))``, so each is a ``ModelRequest`` of
  its own in ``result.all_messages()`` and a next run given ``message_history=`` sends it again
  at the same place (a model may receive it merged into the request before it, as a user part
  after the tool returns — pydantic-ai merges adjacent requests on the wire);
- ``after_model_request``: ``on_budget_threshold`` with that response's own usage;
- ``before_tool_execute`` / ``after_tool_execute`` / ``wrap_tool_execute``: the ``pre`` and
  ``post`` tool hooks, the output through ``neutralize_untrusted``, ``post_tool_use`` (also for a
  call that ends in ``ModelRetry`` or ``ToolFailed``, with ``ok=False``);
- ``after_run`` / ``on_run_error``: the end of the run (``audit_only`` items into
  ``session.transcript.audit``).

The system prompt, the instructions and the tools are never touched.

The channel. Before each request the capability tells the session which model it goes to
(``ModelInfo`` from the model's ``system``, name and ``base_url``) and whether pydantic-ai sends
a ``SystemPromptPart`` of a later request where it stands: its ``Model.prepare_messages`` does
so only where the model's profile sets ``supports_inline_system_prompts`` (OpenAI's models, the
Claude models that take a mid-conversation system entry on Anthropic's own API…); elsewhere it
rewrites the part as ``<system>``-tagged user text and may explain the tag in the system prompt,
which changes the cached prefix. A system-channel envelope is therefore
``ModelRequest(parts=[SystemPromptPart(envelope)])`` only where the profile says so, and the
user part above everywhere else; with ``channel="auto"`` the capability table decides the rest
(an OpenAI-compatible ``base_url`` takes no system message unless registered).

Example:
    >>> import asyncio
    >>> from pydantic_ai import Agent
    >>> from pydantic_ai.models.test import TestModel
    >>> reminders = ReminderCapability()
    >>> _ = reminders.session.inject({"body": "Answer in one line.", "ttl_turns": 1})
    >>> agent = Agent(TestModel(), capabilities=[reminders])
    >>> result = asyncio.run(agent.run("hello"))
    >>> [type(m).__name__ for m in result.all_messages()]
    ['ModelRequest', 'ModelRequest', 'ModelResponse']
    >>> "Answer in one line." in str(result.all_messages()[1].parts[0].content)
    True
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from .driver import Driver, extra_missing

try:
    from pydantic_ai.capabilities import AbstractCapability, WrapToolExecuteHandler
    from pydantic_ai.exceptions import (
        ModelRetry,
        ToolFailed,
        ToolFailedError,
        ToolRetryError,
    )
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        SystemPromptPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_ai.models import Model, ModelRequestContext
    from pydantic_ai.run import AgentRunResult
    from pydantic_ai.tools import RunContext, ToolDefinition
    from pydantic_ai.usage import RequestUsage
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without pydantic-ai
    raise extra_missing("pydantic-ai", "pydantic-ai") from exc

from .._core.envelope import message_text, neutralize_content, neutralize_untrusted
from .._core.records import Message
from .._core.request import ModelInfo, ToolCall, ToolResult, Usage
from ..hooks import Hooks
from ..loop.steps import blocked_result
from ..session import Session

# pydantic-ai's advice (2.78 and later) to a capability that enqueues a SystemPromptPart itself
_BARE_PART_ADVICE = r"Capability .* enqueued a bare `SystemPromptPart`"

__all__ = ["ReminderCapability"]


class ReminderCapability(AbstractCapability[Any]):
    """The library's reminders for a pydantic-ai ``Agent``, as one capability.

    Args:
        session: The :class:`~agent_reminders.Session` to use for every conversation; when
            ``None``, sessions are made from ``session_options``.
        context_window: The window size put into every ``on_budget_threshold`` payload
            (``None``: ``reminders.config.token_pressure.context_window`` decides).
        hooks: :class:`~agent_reminders.Hooks` run for provider events and around tools.
        **session_options: Keyword arguments of :class:`~agent_reminders.Session` (``system``,
            ``reminders``, ``generators``, ``workspace``, ``envelope_style`` …).

    Sessions and pydantic-ai conversations: every run has a ``conversation_id`` (given to
    ``Agent.run``, else the one on ``message_history``, else a new one), and a conversation
    continued with ``message_history=`` keeps it. With ``session=``, that session serves every
    conversation. Otherwise :attr:`session` serves the first conversation the capability runs
    (unless :meth:`session_for` already gave that id a session of its own), and every other
    conversation gets its own session from ``session_options`` on first use, its
    ``session_id`` being the conversation id. One session per conversation matters: a session
    knows which envelopes its conversation's history already holds.

    Example:
        >>> import asyncio
        >>> from pydantic_ai import Agent
        >>> from pydantic_ai.models.test import TestModel
        >>> reminders = ReminderCapability(context_window=200_000)
        >>> agent = Agent(TestModel(), capabilities=[reminders])
        >>> first = asyncio.run(agent.run("hi", conversation_id="c1"))
        >>> reminders.session_for("c1") is reminders.session
        True
        >>> reminders.session_for("c2") is reminders.session
        False
    """

    def __init__(
        self,
        session: Session | None = None,
        *,
        context_window: int | None = None,
        hooks: Hooks | None = None,
        **session_options: Any,
    ) -> None:
        self._driver = Driver(
            session,
            session_options,
            context_window=context_window,
            hooks=hooks,
            owner="ReminderCapability",
        )
        self._bound: str | None = None  # the conversation the default session serves
        self._named: set[str] = set()  # conversations with a session of their own

    # A capability is one object with its sessions: identity, not field equality.
    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"ReminderCapability(session={self.session!r})"

    @classmethod
    def get_serialization_name(cls) -> str | None:
        """``None``: built in code (it holds live sessions), not from an agent spec."""
        return None

    @property
    def session(self) -> Session:
        """The session given to the constructor, or the one made from the options (it
        serves the first conversation)."""
        return self._driver.session

    @property
    def context_window(self) -> int | None:
        """The ``context_window=`` option."""
        return self._driver.context_window

    def session_for(self, conversation_id: str | None) -> Session:
        """The session of a pydantic-ai ``conversation_id`` (``None``: :attr:`session`).

        With ``session=`` given, that session for every id. Otherwise the default session for
        the conversation it serves, and for any other id its own session, made from the
        options on first use.
        """
        if conversation_id is None or conversation_id == self._bound:
            return self._driver.session
        session = self._driver.session_for(conversation_id)
        self._named.add(conversation_id)
        return session

    def _session(self, ctx: RunContext[Any]) -> Session:
        conversation = ctx.conversation_id
        if conversation is not None and self._bound is None and conversation not in self._named:
            self._bound = conversation
        return self.session_for(conversation)

    # -- model requests -----------------------------------------------------------------------

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        """Commit the envelope and enqueue what the driver adds, each as its own request (the
        envelope a ``SystemPromptPart`` on the system channel, where the model takes it)."""
        session = self._session(ctx)
        in_place = _in_place(request_context.model)
        self._driver.use_model(session, _model_info(request_context.model), in_place=in_place)
        added = await self._driver.abefore_model(session, task=_text(ctx.prompt))
        if added:
            # From a before_model_request hook, pydantic-ai delivers this into the request being
            # prepared and into the run's persisted history. pydantic-ai 2.78 and later ask a
            # capability to say what it says through a part the framework renders; the envelope
            # is rendered here, byte for byte the session's (what keeps the prefix the same), so
            # it stays a SystemPromptPart and that advice is not for it.
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", _BARE_PART_ADVICE, UserWarning)
                ctx.enqueue(*(ModelRequest(parts=[_part(m, in_place)]) for m in added))
        return request_context

    async def after_model_request(
        self,
        ctx: RunContext[Any],
        *,
        request_context: ModelRequestContext,
        response: ModelResponse,
    ) -> ModelResponse:
        """``on_budget_threshold`` with the usage of this response (not the run's total)."""
        await self._driver.aafter_model(
            self._session(ctx), _usage(response.usage), model=response.model_name
        )
        return response

    # -- tools --------------------------------------------------------------------------------

    async def before_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
    ) -> dict[str, Any]:
        """The ``pre`` tool hooks: modified arguments, or a blocked call (``ToolFailed``)."""
        checked, blocked = self._driver.before_tool(self._session(ctx), _call(call, args))
        if blocked is not None:
            raise ToolFailed(blocked_result(blocked).content)
        return dict(checked.arguments)

    async def after_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        result: Any,
    ) -> Any:
        """The ``post`` tool hooks, the output neutralized, then ``post_tool_use``."""
        text = _result_text(call, result)
        final = await self._driver.aafter_tool(
            self._session(ctx), _call(call, args), ToolResult(content=text)
        )
        if isinstance(result, str) or final.content != neutralize_untrusted(text):
            return final.content  # text, or what a post hook made of the result
        return neutralize_content(result)

    async def wrap_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        handler: WrapToolExecuteHandler,
    ) -> Any:
        """A call that ends in a retry or a failure the model sees fires ``post_tool_use``
        with ``ok=False`` (what the model is told is the content)."""
        try:
            return await handler(args)
        except (ModelRetry, ToolFailed) as error:
            await self._failed(ctx, call, args, error.message)
            raise
        except (ToolRetryError, ToolFailedError) as error:
            await self._failed(ctx, call, args, str(error))
            raise

    async def _failed(
        self, ctx: RunContext[Any], call: ToolCallPart, args: dict[str, Any], text: str
    ) -> None:
        result = ToolResult(content=text, ok=False)
        await self._driver.aafter_tool(self._session(ctx), _call(call, args), result)

    # -- the end of a run ---------------------------------------------------------------------

    async def after_run(
        self, ctx: RunContext[Any], *, result: AgentRunResult[Any]
    ) -> AgentRunResult[Any]:
        """The run ended: the last request's reminders age, ``audit_only`` items are drained."""
        self._driver.end_run(self._session(ctx))
        return result

    async def on_run_error(
        self, ctx: RunContext[Any], *, error: BaseException
    ) -> AgentRunResult[Any]:
        """A failed run ends too (then the error goes on)."""
        self._driver.end_run(self._session(ctx))
        raise error


def _text(prompt: str | Sequence[Any] | None) -> str | None:
    """The text of a run's user prompt (for ``session_start``)."""
    if prompt is None or isinstance(prompt, str):
        return prompt
    texts = [item for item in prompt if isinstance(item, str)]
    return "\n".join(texts) if texts else None


def _model_info(model: Model) -> ModelInfo:
    """The model a request goes to, as the capability table reads it (an OpenAI model at
    another ``base_url`` is an OpenAI-compatible server)."""
    return ModelInfo(provider=model.system, name=model.model_name, base_url=model.base_url)


def _in_place(model: Model) -> bool:
    """Whether pydantic-ai sends a ``SystemPromptPart`` of a later request where it stands
    (``Model.prepare_messages`` rewrites it as ``<system>``-tagged user text otherwise)."""
    return bool(model.profile.get("supports_inline_system_prompts", False))


def _part(message: Message, in_place: bool) -> SystemPromptPart | UserPromptPart:
    """A driver message as the part of its own request: a system-channel envelope is a
    ``SystemPromptPart`` where the model takes it in place, anything else a user part."""
    if message["role"] == "system" and in_place:
        return SystemPromptPart(message_text(message))
    return UserPromptPart(_content(message))


def _content(message: Message) -> str | list[str]:
    """A driver message's content as ``UserPromptPart`` content: text stays text; a block
    list becomes one string per block (text blocks their text, others their JSON)."""
    content = message["content"]
    if isinstance(content, str):
        return content
    return [
        str(block["text"])
        if isinstance(block, Mapping) and block.get("type") == "text"
        else json.dumps(block, ensure_ascii=False, sort_keys=True)
        for block in content
    ]


def _usage(usage: RequestUsage) -> Usage | None:
    """pydantic-ai's per-request usage (``input_tokens`` is the whole prompt, cached tokens
    included; its cache reads and writes kept as they are); ``None`` when the response
    carried none."""
    if usage.unmeasured_requests:
        return None
    return Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cached_input_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
    )


def _call(call: ToolCallPart, args: Mapping[str, Any]) -> ToolCall:
    return ToolCall(id=call.tool_call_id, name=call.tool_name, arguments=dict(args))


def _result_text(call: ToolCallPart, result: Any) -> str:
    """The tool's output as the model reads it (pydantic-ai's own rendering of a return)."""
    if isinstance(result, str):
        return result
    part = ToolReturnPart(tool_name=call.tool_name, content=result, tool_call_id=call.tool_call_id)
    return part.model_response_str()
