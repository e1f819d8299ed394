"""What every framework integration does with its sessions, in one place.

The LangChain, pydantic-ai and OpenAI Agents SDK integrations are built on it, and so can an
integration for any other framework with a hook before and after each model call.

A framework owns its history; an integration keeps one :class:`~agent_reminders.Session` per
conversation beside it and calls a :class:`Driver` at the framework's seams:

- :meth:`Driver.before_model` before each model call: ages the reminders of the previous call
  (``post_turn``), fires ``session_start`` once, drains the queue (seam ``iteration_start``:
  ``finish_step`` and ``interrupt_immediate`` items), commits the envelope, and returns the
  messages the framework must add to its own history — drained user messages, then the
  envelope — each a message of its own (a user message, or the envelope on the system
  channel), never merged into the framework's messages;
- :meth:`Driver.after_model` after it: ``on_budget_threshold`` with that call's usage;
- :meth:`Driver.after_tool` after each tool: the output through ``neutralize_untrusted``, then
  ``post_tool_use`` with the loop's payload;
- :meth:`Driver.compacted` when the framework summarized its history: the reminder lifecycle
  of a compaction and ``post_compact`` with the framework's count and summary;
- :meth:`Driver.end_run` when a run ends: the last ``post_turn`` and seam ``loop_exit``
  (``audit_only`` items into ``session.transcript.audit``);
- :meth:`Driver.use_model` when the integration knows which model the framework calls, and
  :meth:`Driver.downgraded` when it sends a system-channel envelope of the framework's history
  as a user message.

Each envelope is committed on a channel (``user``, or ``system``: a mid-conversation system
instruction). With ``channel="auto"`` it is ``system`` only where the model takes such a message
(the capability table) **and** the framework sends it where it stands: a framework that moves a
late system message into its leading system prompt would rewrite the cached prefix, so there
the envelope stays a user message.

The session's transcript holds what the integration added (drained user messages and
envelopes), which is all it needs to know what is committed; the framework's own messages
stay the framework's. Each step has a synchronous and an asynchronous form (frameworks call
either); they differ only in how provider events are fired (the async form runs blocking
providers in a worker thread).

The steps themselves are those of ``agent_loop`` (:class:`~agent_reminders.loop.steps.Steps`),
in the loop's order; the driver only decides when each runs: a request's reminders age when
the framework comes back for the next model call, or when the run ends.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._core.errors import ConfigError, did_you_mean, missing_extra
from .._core.events import Kind
from .._core.records import Message
from .._core.request import ModelInfo, ToolCall, ToolResult, Usage
from ..capabilities import ModelCapabilities, capabilities_for
from ..hooks import Hooks
from ..loop.steps import Steps
from ..session import Session

__all__ = ["Driver", "NOT_SUPPORTED", "extra_missing"]

NOT_SUPPORTED = "not_supported"
"""The ``reason`` of a ``channel_downgraded`` event for a model (or a framework's model class)
that takes no mid-conversation system message at all, e.g. after a switch of model: the other
reasons are Anthropic's placement rules (:func:`agent_reminders.placement`)."""


def extra_missing(extra: str, framework: str) -> ImportError:
    """The ``ImportError`` an integration module raises when its framework is missing."""
    module = f"agent_reminders.integrations.{extra.replace('-', '_')}"
    return missing_extra(framework, extra, module)


@dataclass
class _Run:
    """Where one session stands between the framework's calls."""

    sent: int = 0  # transcript messages already handed to the framework
    unaged: int | None = None  # the turn of the last request, not yet aged


# Session's keyword arguments, and what every integration takes beside them.
_SESSION_OPTIONS = frozenset(inspect.signature(Session.__init__).parameters) - {"self"}
_OWN_OPTIONS = frozenset({"session", "context_window", "hooks"})


def _check_session_options(options: Mapping[str, Any], owner: str) -> None:
    """Refuse an option ``Session`` does not take here, naming ``owner`` and the closest
    option (a misspelt ``context_window`` must not surface as ``Session.__init__``'s error)."""
    unknown = sorted(set(options) - _SESSION_OPTIONS)
    if unknown:
        hint = did_you_mean(unknown[0], _SESSION_OPTIONS | _OWN_OPTIONS)
        guess = f"; {hint}" if hint else ""
        # a TypeError, as for any unexpected keyword argument, but naming the caller and the fix
        raise TypeError(
            f"{owner}: unknown option(s) {', '.join(unknown)}{guess} (it takes "
            f"{', '.join(sorted(_OWN_OPTIONS))} and Session's options: "
            f"{', '.join(sorted(_SESSION_OPTIONS))})"
        )


class Driver:
    """One session per conversation, and the integration steps at the framework's seams.

    ``session`` is used for every conversation when given; otherwise each conversation id
    gets its own ``Session(**session_options)`` on first use (``session_id`` defaults to the
    conversation id). ``context_window`` goes into every ``on_budget_threshold`` payload
    (``None``: ``reminders.config.token_pressure.context_window`` decides). ``hooks`` are run
    for provider events and around tools as in ``agent_loop``.
    """

    def __init__(
        self,
        session: Session | None,
        session_options: Mapping[str, Any],
        *,
        context_window: int | None = None,
        hooks: Hooks | None = None,
        owner: str = "the integration",
    ) -> None:
        _check_session_options(session_options, owner)
        if session is not None and not isinstance(session, Session):
            raise TypeError(f"session must be a Session, not {type(session).__name__}")
        if session is not None and session_options:
            raise ConfigError(
                "give either session= or session options ("
                + ", ".join(sorted(session_options))
                + "), not both: the session already has its options"
            )
        if context_window is not None and (type(context_window) is not int or context_window <= 0):
            raise ConfigError(f"context_window must be a positive int; got {context_window!r}")
        if hooks is not None and not isinstance(hooks, Hooks):
            raise TypeError(f"hooks must be a Hooks, not {type(hooks).__name__}")
        self._steps = Steps(hooks, context_window=context_window)
        self._options = dict(session_options)
        self._given = session
        # The default session: made now, so bad options fail at construction.
        self._default = session if session is not None else Session(**self._options)
        self._sessions: dict[str, Session] = {}
        self._runs: dict[str, _Run] = {}

    @property
    def context_window(self) -> int | None:
        """What every ``on_budget_threshold`` payload gives as the context window."""
        return self._steps.context_window

    @property
    def hooks(self) -> Hooks | None:
        """The hooks run for provider events and around tools."""
        return self._steps.hooks

    @property
    def session(self) -> Session:
        """The given session, or the one made from the options for the default conversation."""
        return self._default

    def session_for(self, conversation_id: str | None) -> Session:
        """The session of a framework conversation (``None``: :attr:`session`)."""
        if conversation_id is None or self._given is not None:
            return self._default
        if not isinstance(conversation_id, str) or not conversation_id:
            raise TypeError(f"a conversation id must be a non-empty str; got {conversation_id!r}")
        found = self._sessions.get(conversation_id)
        if found is None:
            options = {"session_id": conversation_id, **self._options}
            found = self._sessions[conversation_id] = Session(**options)
        return found

    def _run(self, session: Session) -> _Run:
        run = self._runs.get(session.id)
        if run is None:
            run = self._runs[session.id] = _Run(sent=len(session.transcript))
        return run

    # -- before the model call ----------------------------------------------------------------

    def _age(self, session: Session) -> None:
        run = self._run(session)
        if run.unaged is not None:
            self._steps.post_turn(session, run.unaged)
            run.unaged = None

    def _commit(self, session: Session) -> list[Message]:
        run = self._run(session)
        request = self._steps.before_call(session)
        run.unaged = request.turn
        added = list(request.messages[run.sent :])
        run.sent = len(request.messages)
        return added

    def before_model(self, session: Session, *, task: str | None = None) -> list[Message]:
        """The messages to add to the framework's history before this model call (drained
        user messages, then the envelope, when there is one); ``task`` is the run's first user
        text, for ``session_start``."""
        self._age(session)
        self._steps.start_sync(session, task)
        return self._commit(session)

    async def abefore_model(self, session: Session, *, task: str | None = None) -> list[Message]:
        """:meth:`before_model` for async frameworks."""
        self._age(session)
        await self._steps.start(session, task)
        return self._commit(session)

    # -- after the model call -----------------------------------------------------------------

    def after_model(
        self,
        session: Session,
        usage: Usage | Mapping[str, Any] | None,
        *,
        model: str | None = None,
    ) -> None:
        """``on_budget_threshold`` with the usage of the call that just ended (not a run's
        running total): a :class:`~agent_reminders.Usage` or a mapping with
        ``input_tokens`` / ``output_tokens`` (and optionally ``cached_input_tokens``,
        ``cache_write_tokens``, ``cache_miss_reason``: the keys of ``Usage.to_dict()``)."""
        self._steps.after_call_sync(session, _usage(usage), model)

    async def aafter_model(
        self,
        session: Session,
        usage: Usage | Mapping[str, Any] | None,
        *,
        model: str | None = None,
    ) -> None:
        """:meth:`after_model` for async frameworks."""
        await self._steps.after_call(session, _usage(usage), model)

    # -- tools --------------------------------------------------------------------------------

    def before_tool(self, session: Session, call: ToolCall) -> tuple[ToolCall, str | None]:
        """Run the ``pre`` tool hooks: the call (arguments possibly modified) and the reason
        when a hook blocked it (``None``: run it)."""
        call, blocked, _ = self._steps.before_tool(session, call)
        return call, blocked

    def after_tool(self, session: Session, call: ToolCall, result: ToolResult) -> ToolResult:
        """The tool's result as the model must see it (post hooks run, output neutralized),
        after firing ``post_tool_use``."""
        final, _ = self._steps.finish_tool(session, call, result)
        self._steps.tool_used_sync(session, call, final)
        return final

    async def aafter_tool(self, session: Session, call: ToolCall, result: ToolResult) -> ToolResult:
        """:meth:`after_tool` for async frameworks."""
        final, _ = self._steps.finish_tool(session, call, result)
        await self._steps.tool_used(session, call, final)
        return final

    # -- the model and the channel ------------------------------------------------------------

    def use_model(self, session: Session, model: ModelInfo | None, *, in_place: bool) -> None:
        """Tell ``session`` which model the next request goes to (``None``: unknown) and
        whether the framework sends a mid-conversation system message where it stands
        (``in_place``). With ``channel="auto"`` the next envelope is then committed on the
        system channel only where both hold; the betas (``clear_at``, tool changes) are wire
        features no framework integration sends, so they stay off."""
        accepted = capabilities_for(model).system_messages
        session.use_model(
            model,
            capabilities=ModelCapabilities(system_messages=in_place and accepted),
            own_history=False,  # the framework holds the conversation: it judges placement
        )

    def downgraded(self, session: Session, *, message_index: int, reason: str) -> None:
        """Record ``channel_downgraded``: the system-channel envelope at ``message_index`` of
        the framework's request is sent as a user message from this request on (``reason``:
        the placement rule it breaks, or :data:`NOT_SUPPORTED`). The request that first shows
        it is a sanctioned prefix break; call this once per envelope."""
        turn = self._run(session).unaged
        payload = {
            "message_index": message_index,
            "reason": reason,
            "turn_number": session.turn if turn is None else turn,
        }
        session.event_log.keep(Kind.CHANNEL_DOWNGRADED, "transcript.channel", payload)

    # -- compaction and the end of a run ------------------------------------------------------

    def compacted(self, session: Session, *, archived_messages: int, summary: str | None) -> None:
        """The framework replaced ``archived_messages`` messages by ``summary``: expire what
        does not survive a compaction, restate what does (its ids left the history) and fire
        ``post_compact`` with the framework's figures."""
        session.compact(keep_last=0, summary=summary, archived_messages=archived_messages)
        # The session's recap message is its own record; the framework has its summary.
        self._run(session).sent = len(session.transcript)

    def end_run(self, session: Session) -> None:
        """The run ended: age the last request's reminders and run seam ``loop_exit``."""
        self._age(session)
        self._steps.end(session)


def _usage(value: Usage | Mapping[str, Any] | None) -> Usage | None:
    if value is None or isinstance(value, Usage):
        return value
    if not isinstance(value, Mapping):
        raise TypeError(f"usage must be a Usage, a mapping or None, not {type(value).__name__}")
    cached = value.get("cached_input_tokens")
    written = value.get("cache_write_tokens")
    reason = value.get("cache_miss_reason")
    return Usage(
        input_tokens=int(value.get("input_tokens") or 0),
        output_tokens=int(value.get("output_tokens") or 0),
        cached_input_tokens=None if cached is None else int(cached),
        cache_write_tokens=None if written is None else int(written),
        cache_miss_reason=None if reason is None else str(reason),
    )
