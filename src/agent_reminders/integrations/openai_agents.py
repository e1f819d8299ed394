"""Reminders for agents built on the OpenAI Agents SDK.

Two pieces, on the SDK's own extension points:

- :class:`ReminderInputFilter` for ``RunConfig(call_model_input_filter=...)``: before each model
  call it adds the session's new envelope (and user messages a host queued) to the model input
  as ``{"role": "user", "content": ...}`` items — the envelope as ``{"role": "developer", ...}``
  on the system channel — and re-inserts every item it added before.
- :class:`ReminderRunHooks` (``hooks=`` of ``Runner.run`` / ``run_sync`` / ``run_streamed``):
  ``on_llm_end`` fires ``on_budget_threshold`` with the usage of the call that just ended (the
  response's own, not the running total in ``context.usage``), ``on_tool_end`` fires
  ``post_tool_use``, ``on_agent_end`` ends the run (``audit_only`` items into
  ``session.transcript.audit``).

The SDK forgets what a filter adds: neither the run's items, ``result.to_input_list()`` nor an
SDK ``Session`` (``SQLiteSession``, ...) keeps it. So the filter remembers each item it added
with its position — the number of input items before it, earlier added items included — and
puts all of them back at those positions on every call, also in later runs whose input comes
from ``to_input_list()`` or an SDK session. The provider sees every envelope again, byte for
byte, at the same place: the requests stay append-only.

The channel. The SDK's OpenAI models (``OpenAIResponsesModel``, ``OpenAIChatCompletionsModel``)
send a ``developer`` item where it stands (as a Responses input item, or a Chat Completions
``developer`` message); on OpenAI's own endpoint the capability table takes it, so with
``channel="auto"`` the envelope goes as ``{"role": "developer", "content": envelope}``. An agent
whose ``model`` is another ``Model`` (LiteLLM, a model of your own) gets user items: those
convert the input for other providers, which may move a late system message into the system
prompt. An agent whose ``model`` is a name (or ``None``) is resolved by the run's model
provider, which the filter cannot see: give ``model=ModelInfo("openai", "gpt-5")`` among the
session options to say where it goes (without it, ``"auto"`` means user). A remembered
``developer`` item re-inserted for a request to a model of another kind (a handoff to a LiteLLM
agent) goes as a user item from then on, and ``channel_downgraded`` is recorded once.

Example:
    >>> from agents import RunConfig
    >>> reminders = ReminderInputFilter(context_window=128_000)
    >>> config = RunConfig(call_model_input_filter=reminders)
    >>> hooks = ReminderRunHooks(reminders)
    >>> _ = reminders.session.queue.remind({"body": "The user is watching the build."})

(then ``Runner.run(agent, "Fix the build.", run_config=config, hooks=hooks)``.)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from .._core.envelope import message_text, neutralize_untrusted
from .._core.records import Message
from .._core.request import ModelInfo, ToolCall, ToolResult, Usage
from ..hooks import Hooks
from ..session import Session
from .driver import NOT_SUPPORTED, Driver, extra_missing

try:
    from agents import (
        Agent,
        Model,
        ModelResponse,
        OpenAIChatCompletionsModel,
        OpenAIResponsesModel,
        RunContextWrapper,
        RunHooks,
        Tool,
        default_tool_error_function,
    )
    from agents.run_config import CallModelData, ModelInputData
    from agents.tool_context import ToolContext
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without the SDK
    raise extra_missing("openai-agents", "the OpenAI Agents SDK (openai-agents)") from exc

__all__ = ["ReminderInputFilter", "ReminderRunHooks"]

ConversationOf = Callable[[Any], "str | None"]
"""Names the conversation of a run from its context (the ``context=`` of ``Runner.run``)."""


_Added = list[tuple[int, dict[str, Any]]]  # (position, item) in the order they were added


def _input_item(message: Message, developer: bool) -> dict[str, Any]:
    """A driver message as an SDK input item (text blocks as ``input_text``): a user item, or
    a ``developer`` one for a system-channel envelope where the model takes it in place."""
    role = "developer" if message["role"] == "system" and developer else "user"
    content = message["content"]
    if isinstance(content, str):
        return {"role": role, "content": content}
    blocks = [
        {"type": "input_text", "text": b["text"]} if b.get("type") == "text" else dict(b)
        for b in content
    ]
    return {"role": role, "content": blocks}


def _fresh(item: dict[str, Any], role: str | None = None) -> dict[str, Any]:
    """A copy of a remembered item to hand to the SDK (it never holds the filter's own),
    in ``role`` when given (a downgraded ``developer`` item)."""
    content = item["content"]
    return {
        "role": role or item["role"],
        "content": content if isinstance(content, str) else [dict(b) for b in content],
    }


def _in_place(agent: Agent[Any]) -> bool | None:
    """Whether the agent's model sends a ``developer`` item where it stands: ``True`` for the
    SDK's OpenAI models, ``False`` for any other ``Model``, ``None`` for a model given by name
    (the run's model provider resolves it; the filter cannot tell)."""
    model = agent.model
    if isinstance(model, OpenAIResponsesModel | OpenAIChatCompletionsModel):
        return True
    return False if isinstance(model, Model) else None


def _model_info(agent: Agent[Any]) -> ModelInfo | None:
    """The SDK OpenAI model of an agent, with its client's endpoint (``None``: another)."""
    model = agent.model
    if isinstance(model, OpenAIResponsesModel | OpenAIChatCompletionsModel):
        # the client the model was built with: OpenAI's endpoint or a compatible server (the
        # SDK, 0.24, keeps it only as an attribute of its own, ``_client``)
        client = getattr(model, "_client", None)
        base_url = str(getattr(client, "base_url", "") or "") or None
        return ModelInfo(provider="openai", name=str(model.model), base_url=base_url)
    return None


def _neutral_output(item: Any) -> Any:
    """A ``function_call_output`` item with its text through ``neutralize_untrusted``."""
    if not isinstance(item, Mapping) or item.get("type") != "function_call_output":
        return item
    output = item.get("output")
    if isinstance(output, str):
        if "<" not in output:  # nothing to defang: the common case, on every call
            return item
        clean = neutralize_untrusted(output)
        return item if clean == output else {**item, "output": clean}
    if isinstance(output, list):
        parts = [
            {**p, "text": neutralize_untrusted(p["text"])}
            if isinstance(p, Mapping)
            and p.get("type") == "input_text"
            and isinstance(p.get("text"), str)
            else p
            for p in output
        ]
        return item if parts == output else {**item, "output": parts}
    return item


def _first_user_text(items: list[Any]) -> str | None:
    users = (i for i in items if isinstance(i, Mapping) and i.get("role") == "user")
    return next((message_text(i) for i in users), None)


class ReminderInputFilter:
    """A ``call_model_input_filter`` that gives an Agents SDK agent the library's reminders.

    Args:
        session: The :class:`~agent_reminders.Session` of every conversation; ``None`` makes
            one from ``session_options`` (and one per conversation id, see ``conversation``).
        context_window: Goes into every ``on_budget_threshold`` payload (``None``:
            ``reminders.config.token_pressure.context_window`` decides).
        hooks: :class:`~agent_reminders.Hooks` run for provider events; their ``post`` tool
            hooks see each tool's result (the SDK lets no hook replace it).
        conversation: A function of the run's context object (``context=`` of
            ``Runner.run``) returning its conversation id — e.g. the SDK session id the host
            keeps there — so each conversation gets ``session_for(id)``; ``None`` (the
            default, or when it returns ``None``) means :attr:`session`. Give one when a
            filter serves several conversations: the remembered positions are per
            conversation.
        **session_options: Options of :class:`~agent_reminders.Session` for the sessions the
            filter makes.

    Pass the same instance to :class:`ReminderRunHooks` for the events after each model call
    and tool. The filter never touches the agent's instructions (the system prompt) or its
    tools; each item it adds is a message of its own (``user``, or ``developer`` for an
    envelope on the system channel).

    Raises:
        ConfigError: ``session`` and ``session_options`` both given, or a bad ``context_window``.
    """

    def __init__(
        self,
        session: Session | None = None,
        *,
        context_window: int | None = None,
        hooks: Hooks | None = None,
        conversation: ConversationOf | None = None,
        **session_options: Any,
    ) -> None:
        if conversation is not None and not callable(conversation):
            raise TypeError(f"conversation must be callable, not {type(conversation).__name__}")
        self.driver = Driver(
            session,
            session_options,
            context_window=context_window,
            hooks=hooks,
            owner="ReminderInputFilter",
        )
        self._conversation = conversation
        self._added: dict[str | None, _Added] = {}  # per conversation id
        # per conversation id, the positions of developer items already reported downgraded
        self._downgraded: dict[str | None, set[int]] = {}

    @property
    def session(self) -> Session:
        """The session given to the constructor, or the one made from the session options."""
        return self.driver.session

    def session_for(self, conversation_id: str | None) -> Session:
        """The session of a conversation id, made from the session options on first use (the
        given session, for every id, when one was given)."""
        return self.driver.session_for(conversation_id)

    def conversation_of(self, context: Any) -> str | None:
        """The conversation id of a run, from its context object (``None``: the default
        conversation, :attr:`session`; see ``conversation``)."""
        return None if self._conversation is None else self._conversation(context)

    def remembered(self, conversation_id: str | None = None) -> list[tuple[int, dict[str, Any]]]:
        """``(position, item)`` for every item the filter added to a conversation, in order."""
        return [(p, _fresh(i)) for p, i in self._added.get(conversation_id, ())]

    def _restore(
        self, session: Session, conversation_id: str | None, items: list[Any], developer: bool
    ) -> tuple[list[Any], _Added]:
        added = self._added.setdefault(conversation_id, [])
        out = [_neutral_output(item) for item in items]
        for position, item in added:
            at = min(position, len(out))  # a history cut short keeps every item, at its end
            role = None
            if item["role"] == "developer" and not developer:
                role = "user"  # this model would not keep it in place
                self._note_downgrade(session, conversation_id, position)
            if at < len(out) and out[at] in (item, _fresh(item, role)):
                continue  # the host's history kept this one
            out.insert(at, _fresh(item, role))
        return out, added

    def _note_downgrade(self, session: Session, conversation_id: str | None, position: int) -> None:
        done = self._downgraded.setdefault(conversation_id, set())
        if position not in done:
            done.add(position)
            self.driver.downgraded(session, message_index=position, reason=NOT_SUPPORTED)

    async def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        """Re-insert the remembered items, then add this call's envelope (the SDK calls it
        before every model call, on ``Runner.run``, ``run_sync`` and ``run_streamed``)."""
        conversation_id = self.conversation_of(data.context)
        session = self.session_for(conversation_id)
        in_place = _in_place(data.agent)
        # A model of another kind keeps the model the session was told of, but takes no
        # developer item; a name is taken to be that model (model= of the session options).
        info = _model_info(data.agent) or session.model
        self.driver.use_model(session, info, in_place=in_place is not False)
        developer = in_place is not False
        items, added = self._restore(
            session, conversation_id, list(data.model_data.input), developer
        )
        task = None if session.started else _first_user_text(items)
        new = await self.driver.abefore_model(session, task=task)
        for message in new:
            item = _input_item(message, developer)
            added.append((len(items), item))
            items.append(_fresh(item))
        return ModelInputData(input=items, instructions=data.model_data.instructions)


def _usage(response: ModelResponse) -> Usage | None:
    usage = response.usage
    if not (usage.input_tokens or usage.output_tokens or usage.total_tokens):
        return None  # the model reported none
    return Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cached_input_tokens=usage.input_tokens_details.cached_tokens,
    )


def _model_name(agent: Agent[Any]) -> str | None:
    model = agent.model
    if isinstance(model, str):
        return model
    if isinstance(model, OpenAIChatCompletionsModel | OpenAIResponsesModel):
        return str(model.model)
    return None


def _tool_call(context: RunContextWrapper[Any], tool: Tool) -> ToolCall:
    if not isinstance(context, ToolContext):
        return ToolCall(id="", name=tool.name, arguments={})
    try:
        arguments = json.loads(context.tool_arguments or "{}")
    except ValueError:
        arguments = {"arguments": context.tool_arguments}
    if not isinstance(arguments, dict):
        arguments = {"arguments": arguments}
    return ToolCall(id=context.tool_call_id, name=context.tool_name, arguments=arguments)


def _tool_result(context: RunContextWrapper[Any], result: object) -> ToolResult:
    content = result if isinstance(result, str) else str(result)
    # A tool that raised gets the SDK's default failure text as its output.
    failed = content == default_tool_error_function(context, Exception())
    return ToolResult(content=content, ok=not failed)


class ReminderRunHooks(RunHooks[Any]):
    """``RunHooks`` firing the filter's events after each model call and tool.

    ``on_llm_end`` fires ``on_budget_threshold`` with the response's own usage (per call);
    ``on_tool_end`` fires ``post_tool_use`` with ``{tool_name, arguments, command, result}``
    (the output through ``neutralize_untrusted``, as the filter sends it to the model);
    ``on_agent_end`` ends the run: the last request's reminders age and seam ``loop_exit``
    puts ``audit_only`` items into ``session.transcript.audit``.

    Args:
        filter: The :class:`ReminderInputFilter` of the same ``RunConfig``.
    """

    def __init__(self, filter: ReminderInputFilter) -> None:
        if not isinstance(filter, ReminderInputFilter):
            raise TypeError(f"filter must be a ReminderInputFilter, not {type(filter).__name__}")
        self.filter = filter

    def _session(self, context: RunContextWrapper[Any]) -> Session:
        return self.filter.session_for(self.filter.conversation_of(context.context))

    async def on_llm_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse
    ) -> None:
        """``on_budget_threshold`` with the usage of this model call."""
        session = self._session(context)
        await self.filter.driver.aafter_model(session, _usage(response), model=_model_name(agent))

    async def on_tool_end(
        self, context: RunContextWrapper[Any], agent: Any, tool: Tool, result: object
    ) -> None:
        """``post_tool_use`` with the call, its arguments and its neutralized output."""
        session = self._session(context)
        call = _tool_call(context, tool)
        await self.filter.driver.aafter_tool(session, call, _tool_result(context, result))

    async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
        """The run ended with a final output: age the last reminders, run seam ``loop_exit``."""
        self.filter.driver.end_run(self._session(context))
