"""Session: the stateful owner of one conversation and its reminders."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ._budget import keep_to_budget
from ._core.cadence import Cadence, admit
from ._core.channels import Channel, ChannelSetting, check_channel, placement
from ._core.commit import commit_directives
from ._core.envelope import (
    EnvelopeStyle,
    InstructionsMode,
    check_instructions,
    check_nonce,
    check_style,
    message_text,
    neutralize_content,
)
from ._core.errors import ConfigError, ReminderOptionError
from ._core.events import EventLog, Kind
from ._core.fields import OPTION_KEYS, ParsedOptions, coerce_enum, parse_reminder_options
from ._core.frozen import fast_init
from ._core.ids import IdFactory, new_id
from ._core.lifecycle import (
    Cleared,
    Compacted,
    Injected,
    PostTurn,
    clear_reminders,
    compact,
    handoff_reminders,
    insert_checked,
    post_turn,
    reminder_from_options,
    resolve_reminders,
    seed_inherited,
)
from ._core.messages import validate_message
from ._core.records import Message, Reminder, Source, check_turn
from ._core.request import ModelInfo, ModelRequest, Tool
from ._core.seams import SEAMS
from ._core.transcript import Transcript, message_event, reminder_event
from .capabilities import ModelCapabilities, capabilities_for
from .config import ReminderOptions, Workspace, parse_reminder_config, parse_workspace
from .generators import Emission, GeneratorClock, GeneratorRegistry
from .providers.base import FireResult, ProviderContext, ProviderSpec, normalize_event
from .providers.fire import FirePolicy, is_blocking
from .providers.registry import ProviderRegistry, Resolution
from .queue import InjectionQueue, QueueItem
from .state import SessionState
from .toolset import ToolSet

__all__ = [
    "ReminderOptions",
    "SeamResult",
    "Session",
    "SessionState",
    "Workspace",
]

CHECKPOINT = "loop.checkpoint"
_T = TypeVar("_T")


@fast_init
@dataclass(frozen=True, slots=True)
class SeamResult:
    """What one seam delivered; ``dispatch_skipped`` is true when an interrupt drained at
    ``pre_tool_dispatch`` skips the pending tool batch."""

    seam: str
    delivered: tuple[QueueItem, ...]
    dispatch_skipped: bool


# What a seam that delivered nothing returns (a value: one per seam serves every call).
_NOTHING_AT: dict[str, SeamResult] = {
    seam: SeamResult(seam=seam, delivered=(), dispatch_skipped=False) for seam in SEAMS
}


def _nonce(value: bool | str | None) -> str | None:
    """A session's nonce from its setting: ``True`` makes one (64 random bits, hex), a string
    is kept as given (a restored session's), ``None``/``False`` means none."""
    if value is True:
        import secrets  # here: a process that makes no nonce (a hook's) does not load it

        return secrets.token_hex(8)
    if value is None or value is False:
        return None
    return check_nonce(value)


class Session:
    """The stateful owner of one conversation: transcript, queue, providers and event log.

    Every request goes through ``commit_directives``, so request N+1 begins with request N;
    the system prompt never changes. Everything that creates a reminder through the session
    stamps ``fired_at_turn = session.turn`` (the request that will first show it).

    **State and configuration.** :meth:`state` returns a :class:`SessionState`: everything the
    session *is* — ids (session, agent), the system prompt, the envelope style and
    instructions mode, the transcript (messages, pending reminders, audit entries), ``turn``,
    ``started``, held user messages and open tool calls, the injection queue with its
    delivered and revoked ids, generator clocks and announced sets, and what the firing
    policy remembers (the bodies last sent in full, for short repeats).
    Configuration is *not* state, because it holds code and live resources: the event log,
    ``reminders`` options (``config`` may hold a ``FactStore``), the workspace anchor, the
    generator registry (its objects), user providers (their callables), the queue's limits
    and ``id_factory``. :meth:`from_state` takes the state and the configuration again as
    keywords; a session saved and restored mid-conversation then sends exactly the requests
    it would have sent had it never stopped.

    ``store`` is reserved and must be ``None``: stores persist ``session.state()`` through
    their own API (docs/storage.md), so a session never writes to one behind the caller's back.

    ``id_factory`` (default: time-ordered UUIDv7) makes the ids of everything the session
    creates — reminders, queue items and, when ``session_id`` is not given, its own id.

    Example:
        >>> s = Session(system="You are terse.")
        >>> s.append({"role": "user", "content": "hi"})
        >>> _ = s.inject({"body": "Answer in one line.", "ttl_turns": 1})
        >>> req = s.prepare_request()
        >>> (req.turn, s.turn, len(req.messages))
        (0, 1, 2)
        >>> restored = Session.from_state(SessionState.from_json(s.state().to_json()))
        >>> restored.state() == s.state()
        True
    """

    def __init__(
        self,
        session_id: str | None = None,
        *,
        system: str = "",
        agent_id: str | None = None,
        event_log: EventLog | None = None,
        reminders: bool | Mapping[str, Any] | ReminderOptions = True,
        store: None = None,
        generators: GeneratorRegistry | None = None,
        workspace: Mapping[str, Any] | None = None,
        envelope_style: EnvelopeStyle = "context_directives",
        envelope_instructions: InstructionsMode = "auto",
        id_factory: IdFactory | None = None,
        channel: ChannelSetting = "auto",
        nonce: bool | str | None = None,
        model: ModelInfo | None = None,
    ) -> None:
        if session_id is not None and (not isinstance(session_id, str) or not session_id.strip()):
            raise ReminderOptionError(f"session_id must be a non-blank string; got {session_id!r}")
        if not isinstance(system, str):
            raise TypeError(f"system must be a str, not {type(system).__name__}")
        if agent_id is not None and (not isinstance(agent_id, str) or not agent_id.strip()):
            raise ReminderOptionError(f"agent_id must be a non-blank string; got {agent_id!r}")
        if event_log is not None and not isinstance(event_log, EventLog):
            raise TypeError(f"event_log must be an EventLog, not {type(event_log).__name__}")
        if generators is not None and not isinstance(generators, GeneratorRegistry):
            raise TypeError(
                f"generators must be a GeneratorRegistry or None, not {type(generators).__name__}"
            )
        if store is not None:
            raise ConfigError(
                "store= must be None: a session does not write to a store itself; save "
                "session.state() with the store's own API (see docs/storage.md) and restore it "
                "with Session.from_state"
            )
        if id_factory is not None and not callable(id_factory):
            raise TypeError("id_factory must be callable")
        self.id_factory: IdFactory = id_factory or new_id
        self.id: str = session_id or self.id_factory()
        self.agent_id: str = agent_id or self.id
        self._system = system
        base = event_log if event_log is not None else EventLog()
        self.event_log: EventLog = base.bind(
            session_id=self.id, task_id=base.task_id, agent_id=self.agent_id
        )
        self.reminder_options: ReminderOptions = parse_reminder_config(reminders)
        self.workspace: Workspace | None = parse_workspace(workspace)
        self.envelope_style: EnvelopeStyle = check_style(envelope_style)
        self.envelope_instructions: InstructionsMode = check_instructions(
            envelope_instructions, "envelope_instructions"
        )
        self.channel: ChannelSetting = check_channel(channel)
        self.nonce: str | None = _nonce(nonce)
        self.model = model
        self._sent = 0  # messages in the last request: where a downgrade can first show
        self._tools = ToolSet()
        self.generators: GeneratorRegistry | None = generators
        self.providers = ProviderRegistry()
        self.queue = InjectionQueue(id_factory=self.id_factory)
        self.turn = 0
        self.started = False
        self._transcript = Transcript(id=self.id)
        self._policy = FirePolicy()
        self._cadence = Cadence()
        self._open_calls: set[str] = set()  # tool calls still waiting for their results
        self._held: list[Message] = []  # drained user messages waiting for those results
        self._clock: GeneratorClock | None = None
        if generators is not None:
            self._clock = GeneratorClock(generators, event_log=self.event_log)
            self._clock.on_session_start()

    # -- state ------------------------------------------------------------------------------

    @property
    def system(self) -> str:
        """The system prompt; byte-stable for the life of the session."""
        return self._system

    @property
    def transcript(self) -> Transcript:
        """The current transcript value."""
        return self._transcript

    @property
    def model(self) -> ModelInfo | None:
        """The model the next request goes to, as its backend or integration reported it
        (``None``: unknown). ``channel="auto"`` asks the capability table about it."""
        return self._model

    @model.setter
    def model(self, value: ModelInfo | None) -> None:
        self.use_model(value)

    def use_model(
        self,
        model: ModelInfo | None,
        *,
        capabilities: ModelCapabilities | None = None,
        own_history: bool = True,
    ) -> None:
        """Say which model the next requests go to: :attr:`model`, and :attr:`capabilities`
        from the capability table — or ``capabilities`` as given, for a caller that knows
        better what reaches the model (a framework that would move a late system message
        into the leading system prompt must say ``system_messages=False``).
        ``own_history=False``: the conversation the model sees is not this session's
        transcript (a framework keeps it; the transcript holds only the envelopes), so the
        session records no ``channel_downgraded`` of its own — the caller judges placement
        on the real history."""
        if model is not None and not isinstance(model, ModelInfo):
            raise TypeError(f"model must be a ModelInfo or None, not {type(model).__name__}")
        if capabilities is not None and not isinstance(capabilities, ModelCapabilities):
            raise TypeError(
                f"capabilities must be ModelCapabilities or None, not {type(capabilities).__name__}"
            )
        self._model = model
        self._own_history = own_history
        self.capabilities: ModelCapabilities = (
            capabilities if capabilities is not None else capabilities_for(model)
        )

    def envelope_channel(self) -> Channel:
        """The channel the next envelope is committed on: the ``channel`` setting, with
        ``"auto"`` resolved through the capability table for :attr:`model` (``"system"``
        where the model takes a mid-conversation system entry, else ``"user"``)."""
        setting = self.channel
        if setting == "auto":
            return "system" if self.capabilities.system_messages else "user"
        return setting

    def __repr__(self) -> str:
        return f"Session(id={self.id!r}, turn={self.turn}, messages={len(self._transcript)})"

    def append(self, message: Message) -> None:
        """Append a message (validated and copied) to the conversation.

        While tool calls of the last assistant message still wait for their results, drained
        user messages are held back and follow the last tool result, so no message ever sits
        between a tool call and its result.
        """
        self._transcript = self._transcript.append(message)
        self._track(self._transcript.last_message())

    def _track(self, message: Message) -> None:
        if message["role"] == "assistant":
            self._open_calls = {c["id"] for c in message.get("tool_calls") or ()}
        elif message["role"] == "tool":
            self._open_calls.discard(message.get("tool_call_id", ""))
        if not self._open_calls and self._held:
            held, self._held = self._held, []
            for item in held:
                self.append(item)

    def _insert(
        self, reminder: Reminder, *, lint: bool = False, key: str | None = None
    ) -> Injected:
        # every producer's reminder comes through here: the one place its cadence is kept
        log, transcript = self.event_log, self._transcript
        self._cadence, refused = admit(self._cadence, reminder, log, transcript, key)
        if refused is not None:
            return Injected(self._transcript, reminder.id, 0, dropped=refused)
        done = insert_checked(self._transcript, reminder, self.event_log, lint=lint)
        self._transcript = done.transcript
        return done

    def _from_parsed(
        self, parsed: ParsedOptions, source: Source, body: str | None = None
    ) -> Reminder:
        return reminder_from_options(
            parsed, source=source, fired_at_turn=self.turn, id=self.id_factory(), body=body
        )

    def inject(self, options: Mapping[str, Any]) -> Injected:
        """Queue a reminder from strict options, source ``in_pipeline`` (:meth:`inject_from`)."""
        return self.inject_from(options, source=Source.IN_PIPELINE)

    def inject_from(self, options: Mapping[str, Any], *, source: Source | str) -> Injected:
        """Queue a reminder from strict options with another producer's ``source`` (hooks). A body
        :func:`~agent_reminders.lint_body` flags is queued all the same, then evented ``linted``."""
        parsed = parse_reminder_options(options)
        reminder = self._from_parsed(parsed, coerce_enum(Source, source, "source"))
        return self._insert(reminder, lint=True)

    def clear(self, selector: Mapping[str, Any]) -> Cleared:
        """Remove pending reminders matching ``selector`` (``id``, ``tag``, ``dedupe_key``)."""
        done = clear_reminders(self._transcript, selector, event_log=self.event_log)
        self._transcript = done.transcript
        return done

    # -- requests ---------------------------------------------------------------------------

    @property
    def tools(self) -> tuple[Tool, ...]:
        """The tools the session offers now (:meth:`add_tools`, ``agent_loop``'s ``tools``)."""
        return tuple(self._tools.tools.values())

    def add_tools(self, *tools: Tool) -> None:
        """Offer ``tools`` from the next request on. On a model that takes tool changes in a
        system entry, the change rides the next envelope and the request's ``tools`` stay as
        first declared; elsewhere ``tools`` change (an announced-delta generator can tell the
        model). Either way a ``tools_changed`` event records it.

        Raises:
            TypeError: not a ``Tool``.
            ValueError: another tool of the same name is offered already.
        """
        self._tools.add(*tools)

    def remove_tools(self, *names: str) -> None:
        """Stop offering the named tools from the next request on (told as for
        :meth:`add_tools`).

        Raises:
            ValueError: a name that is not offered.
        """
        self._tools.remove(*names)

    def sync_tools(self, tools: Iterable[Tool]) -> None:
        """Offer exactly ``tools`` (``agent_loop`` does this with its ``tools``)."""
        self._tools.sync(tools)

    def tool(self, name: str) -> Tool | None:
        """The offered tool of that name, or ``None``."""
        return self._tools.tools.get(name)

    def prepare_request(
        self, *, turn: int | None = None, tools: Iterable[Mapping[str, Any]] | None = None
    ) -> ModelRequest:
        """Commit the envelope for ``turn`` (default ``session.turn``) and build the request.

        Its ``tools`` are the session's own (:attr:`tools`, told as :meth:`add_tools` says),
        or the specs given as ``tools``, sent as they are. Sets ``session.turn = turn + 1``.
        """
        turn = self.turn if turn is None else check_turn(turn)
        generated = self._run_generators(turn)
        channel = self.envelope_channel()
        blocks: tuple[dict[str, Any], ...] = ()
        if tools is None:
            plan = self._tools.plan(
                tool_changes=channel == "system" and self.capabilities.tool_changes
            )
            specs, blocks = plan.specs, plan.blocks
            plan.record(self.event_log, turn)
        else:
            specs = tuple(dict(t) for t in tools)
        self._transcript, self._cadence = keep_to_budget(
            self._transcript, self._cadence, self.reminder_options, turn, self.event_log
        )
        committed = commit_directives(
            self._transcript,
            turn=turn,
            style=self.envelope_style,
            instructions=self.envelope_instructions,
            event_log=self.event_log,
            channel=channel,
            nonce=self.nonce,
            extra_blocks=blocks,
            clear_at=self.capabilities.clear_at,
        )
        self._transcript = committed.transcript
        if self._model is not None and self._model.provider == "anthropic" and self._own_history:
            self._note_downgrades()
        if self._clock is not None:
            self._clock.delivered(generated[rid] for rid in committed.fired if rid in generated)
        self.turn = turn + 1
        return ModelRequest(
            system=self._system,
            messages=self._transcript.request_messages(),
            tools=[dict(t) for t in specs],
            session_id=self.id,
            turn=turn,
        )

    def _note_downgrades(self) -> None:
        """Record ``channel_downgraded`` for each system message that Anthropic's placement
        rules make a user entry in this request and that the last request sent otherwise (or
        that this request shows first): only the last request's last message and what came
        after it can change (the rules look at neighbours only)."""
        messages = self._transcript.request_messages()
        sent, self._sent = self._sent, len(messages)
        start = max(0, sent - 1)
        if not any(messages[i]["role"] == "system" for i in range(start, len(messages))):
            return
        before = placement(messages[:sent], start) if sent else {}
        for index, reason in placement(messages, start).items():
            if index not in before:
                self.event_log.keep(
                    Kind.CHANNEL_DOWNGRADED,
                    "transcript.channel",
                    {"message_index": index, "reason": reason, "turn_number": self.turn},
                )

    def _run_generators(self, turn: int) -> dict[str, Emission]:
        """Turn what the generators say now into ttl-1 reminders for request ``turn``."""
        if self._clock is None:
            return {}
        made: dict[str, Emission] = {}
        for emission in self._clock.collect():
            done = self._insert(emission.reminder(self.id_factory(), turn))
            made[done.reminder_id] = emission
        return made

    def post_turn(self, turn: int) -> PostTurn:
        """Age pending reminders after assistant turn ``turn``."""
        done = post_turn(self._transcript, turn, event_log=self.event_log)
        self._transcript = done.transcript
        return done

    def compact(self, *, archived_messages: int | None = None, **kwargs: Any) -> Compacted:
        """Compact the transcript (see ``agent_reminders.compact``), then fire ``post_compact``
        with ``{archived_messages, summary, preserved_count, expired_count, deduped_count}``.

        ``archived_messages`` is the count to report when the history that was compacted is
        kept elsewhere (a framework's own history); by default it is the number of this
        transcript's messages the compaction archived.
        """
        if archived_messages is not None and (
            type(archived_messages) is not int or archived_messages < 0
        ):
            raise ReminderOptionError(
                f"archived_messages must be an int >= 0; got {archived_messages!r}"
            )
        done = compact(self._transcript, event_log=self.event_log, **kwargs)
        self._transcript = done.transcript
        self.fire(
            "post_compact",
            {
                "archived_messages": done.archived_messages
                if archived_messages is None
                else archived_messages,
                "summary": done.summary,
                "preserved_count": done.preserved_count,
                "expired_count": done.expired_count,
                "deduped_count": done.deduped_count,
            },
        )
        return done

    # -- providers --------------------------------------------------------------------------

    def fire(self, event: str, payload: Mapping[str, Any] | None = None) -> FireResult:
        """Evaluate the enabled providers subscribed to ``event`` and inject what they return.

        The rules (order, budget, unchanged durable reminders, short repeats) are those of
        :class:`~agent_reminders.providers.fire.FirePolicy`. A provider that raises
        ``ProviderSkippedError`` is reported in its ``provider_evaluated`` event and skipped.

        Raises:
            ValueError: unknown event.
            ReminderError: a provider returned a malformed reminder (``RMD-001``/``005``/``006``).
            Exception: whatever else a provider's ``evaluate`` raised (after it is evented).
        """
        name = normalize_event(event)
        if payload is not None and type(payload) is not dict and not isinstance(payload, Mapping):
            raise TypeError(f"payload must be a mapping, not {type(payload).__name__}")
        data: Mapping[str, Any] = payload or {}
        options = self.reminder_options
        if name == "on_budget_threshold":
            self._cadence = self._cadence.seen(data)
        return self._policy.fire(
            name,
            data,
            providers=self.providers.subscribed(options, name),
            context=self._context(name, data),
            transcript=self._current_transcript,
            inject=self._inject_provided,
            resolve=self._resolve,
            budget=options.max_iteration_bytes,
            event_log=self.event_log,
            session_id=self.id,
        )

    def _current_transcript(self) -> Transcript:
        return self._transcript

    def _inject_provided(self, parsed: ParsedOptions, body: str, key: str | None) -> Injected:
        """Apply one decision of the firing policy: a provider's reminder, with ``body``."""
        return self._insert(self._from_parsed(parsed, Source.STDLIB_PROVIDER, body), key=key)

    def _resolve(self, resolution: Resolution) -> Injected | None:
        """Apply a provider's resolution: withdraw its key's reminders, refuse the key for the
        rest of the turn, and close what the model was told of with the one-line note."""
        self._transcript, told = resolve_reminders(
            self._transcript, resolution.key, event_log=self.event_log
        )
        self._cadence = self._cadence.resolve(resolution.key, self.turn)
        if told is None or resolution.body is None:
            return None
        note = parse_reminder_options(resolution.note(told))
        return self._insert(self._from_parsed(note, Source.STDLIB_PROVIDER))

    def _context(
        self, name: str, data: Mapping[str, Any]
    ) -> Callable[[ProviderSpec], ProviderContext]:
        """The context each provider is evaluated with for event ``name`` and ``data``."""
        options, turn, transcript = self.reminder_options, self.turn, self._transcript
        full = self._policy.full_bodies
        base = ProviderContext(
            name, self.id, data, options, None, turn, self.workspace, transcript, full
        )
        return base.for_provider

    def fires_blocking(self, event: str, payload: Mapping[str, Any] | None = None) -> bool:
        """Whether an enabled provider subscribed to ``event`` is marked ``blocking``.

        With ``payload``, a blocking provider's ``blocks_when`` is asked too, so an event
        whose evaluation would do no I/O (``project_facts`` below its refresh ratio) is not
        counted. ``False`` for events no provider can subscribe to (worker lifecycle, persona).
        """
        try:
            name = normalize_event(event)
        except ValueError:  # hook-only events evaluate no provider
            return False
        if payload is not None and type(payload) is not dict and not isinstance(payload, Mapping):
            payload = None  # fire() reports the bad payload
        blocking = self.providers.subscribed_blocking(self.reminder_options, name)
        if not blocking:
            return False
        context = None if payload is None else self._context(name, payload)
        return is_blocking(blocking, name, context)

    async def afire(self, event: str, payload: Mapping[str, Any] | None = None) -> FireResult:
        """:meth:`fire` for async code: in a worker thread when a provider of ``event`` is
        ``blocking`` (file or SQLite I/O never runs on the event loop), inline otherwise.

        While it runs, other tasks should change the session only through ``session.queue``
        (which is thread-safe): the worker thread updates the transcript.
        """
        if not self.fires_blocking(event, payload or {}):
            return self.fire(event, payload)
        return await self.offload(self.fire, event, payload)

    async def offload(self, fire: Callable[..., _T], *args: Any) -> _T:
        """``fire(*args)`` in a worker thread: how every async caller evaluates an event that
        :meth:`fires_blocking` says is blocking (with hooks, their whole dispatch), so a
        provider's file or SQLite I/O never stalls the event loop. Callers ask
        :meth:`fires_blocking` first and fire inline otherwise, without this coroutine."""
        import anyio.to_thread

        return await anyio.to_thread.run_sync(fire, *args)

    # -- the session's start ----------------------------------------------------------------

    def start(
        self,
        task: str | None = None,
        *,
        again: bool = False,
        fire: Callable[[str, Mapping[str, Any]], object] | None = None,
    ) -> bool:
        """Fire ``session_start`` with ``{"task": task}`` if the session has not started, and
        mark it :attr:`started`; returns whether it fired.

        A session starts once in its life: ``started`` is part of its saved state, so a
        restored session (a new run, another process) does not start again. It is marked
        before the event fires, so a provider that fails does not make the next run fire it
        a second time. ``again=True`` fires it on a started session too, for a host whose
        context was cleared or replaced by a summary (it lost what the start told it).
        ``fire`` fires the event in place of :meth:`fire` (``agent_loop`` and the
        integrations go through their hooks).
        """
        if self.started and not again:
            return False
        self.started = True
        (self.fire if fire is None else fire)("session_start", {"task": task})
        return True

    async def astart(
        self,
        task: str | None = None,
        *,
        again: bool = False,
        fire: Callable[[str, Mapping[str, Any]], Awaitable[object]] | None = None,
    ) -> bool:
        """:meth:`start` for async code: ``fire`` is awaited (default :meth:`afire`, which
        runs blocking providers in a worker thread)."""
        if self.started and not again:
            return False
        self.started = True
        await (self.afire if fire is None else fire)("session_start", {"task": task})
        return True

    # -- seams ------------------------------------------------------------------------------

    def run_seam(
        self,
        seam: str,
        *,
        queue: InjectionQueue | None = None,
        iteration: int | None = None,
        pending_tools: bool = False,
    ) -> SeamResult:
        """Drain the queue at ``seam`` into the session and emit ``loop.checkpoint``.

        Reminders are injected with source ``bridge`` (stamped with ``session.turn``); user
        messages are appended after ``neutralize_untrusted`` (after the pending tool results,
        when tool calls are still open). At ``loop_exit`` the drained
        ``audit_only`` items land in ``transcript.audit`` and never reach the model.
        """
        if seam not in SEAMS:
            raise ValueError(f"unknown seam {seam!r}; expected one of {', '.join(SEAMS)}")
        items = (self.queue if queue is None else queue).drain(seam)
        for item in items:
            if seam == "loop_exit":
                self._record_audit(item)
            elif item.kind == "reminder":
                self._insert(self._queued_reminder(item))
            else:
                content = neutralize_content(item.payload["content"])
                user = validate_message({"role": "user", "content": content})
                if self._open_calls:
                    self._held.append(user)
                else:
                    self.append(user)
        skipped = seam == "pre_tool_dispatch" and pending_tools and bool(items)
        self.event_log.keep(
            CHECKPOINT,
            "loop",
            {
                "session_id": self.id,
                "iteration": self.turn if iteration is None else iteration,
                "seam": seam,
                "delivered": len(items),
                "delivered_ids": [i.id for i in items],
                "dispatch_skipped": skipped,
            },
        )
        if not items:
            return _NOTHING_AT[seam]
        return SeamResult(seam=seam, delivered=tuple(items), dispatch_skipped=skipped)

    def _queued_reminder(self, item: QueueItem) -> Reminder:
        # the payload's option fields as validated; the session sets id, source and turn
        fields = {key: item.payload[key] for key in OPTION_KEYS}
        return Reminder(**fields, id=item.id, source=Source.BRIDGE, fired_at_turn=self.turn)

    def _record_audit(self, item: QueueItem) -> None:
        if item.kind == "reminder":
            event = reminder_event(self._queued_reminder(item).to_dict())
        else:
            user = validate_message({"role": "user", "content": item.payload["content"]})
            event = message_event(user, f"evt-{item.id}")
        event["visibility"] = "audit"
        event["mode"] = item.mode.value
        self._transcript = self._transcript.with_audit(event)

    # -- sub-agents -------------------------------------------------------------------------

    def handoff(self) -> tuple[Reminder, ...]:
        """The reminders a sub-agent of this session inherits."""
        return handoff_reminders(self._transcript, parent_agent_id=self.agent_id)

    @classmethod
    def child(cls, parent: Session, *, session_id: str | None = None, **kwargs: Any) -> Session:
        """Create a sub-agent session seeded with ``parent.handoff()``.

        The child shares the parent's event log (stamped with its own ids) and, unless given,
        its system prompt, reminder options, workspace and envelope settings.
        """
        if not isinstance(parent, Session):
            raise TypeError(f"parent must be a Session, not {type(parent).__name__}")
        kwargs.setdefault("system", parent.system)
        kwargs.setdefault("event_log", parent.event_log)
        kwargs.setdefault("reminders", parent.reminder_options)
        kwargs.setdefault("workspace", parent.workspace)
        kwargs.setdefault("envelope_style", parent.envelope_style)
        kwargs.setdefault("envelope_instructions", parent.envelope_instructions)
        kwargs.setdefault("id_factory", parent.id_factory)
        kwargs.setdefault("channel", parent.channel)
        kwargs.setdefault("nonce", parent.nonce is not None)
        kwargs.setdefault("model", parent.model)
        child = cls(session_id, **kwargs)
        child._transcript = seed_inherited(
            child._transcript,
            parent.handoff(),
            sub_agent_id=child.agent_id,
            event_log=child.event_log,
            fired_at_turn=child.turn,
        )
        return child

    # -- saved state ------------------------------------------------------------------------

    def state(self) -> SessionState:
        """Everything this session is, as one frozen record (see the class docstring)."""
        return SessionState(
            session_id=self.id,
            agent_id=self.agent_id,
            system=self._system,
            envelope_style=self.envelope_style,
            envelope_instructions=self.envelope_instructions,
            channel=self.channel,
            nonce=self.nonce,
            declared_tools=self._tools.declared,
            announced_tools=self._tools.announced,
            transcript=self._transcript,
            turn=self.turn,
            started=self.started,
            held_messages=tuple(self._held),
            open_tool_calls=frozenset(self._open_calls),
            queue=self.queue.state(),
            generators=None if self._clock is None else self._clock.state(),
            providers=self._policy.state(),
            cadence=self._cadence,
        )

    @classmethod
    def from_state(
        cls,
        state: SessionState,
        *,
        event_log: EventLog | None = None,
        reminders: bool | Mapping[str, Any] | ReminderOptions = True,
        generators: GeneratorRegistry | None = None,
        workspace: Mapping[str, Any] | None = None,
        providers: ProviderRegistry | None = None,
        id_factory: IdFactory | None = None,
        model: ModelInfo | None = None,
    ) -> Session:
        """Continue a session from ``state``, given its configuration again.

        ``generators`` should hold the same generators (fresh objects are fine: their
        announced sets are restored); ``providers`` is the registry of user providers (or
        register them on ``session.providers`` afterwards). Generator state is dropped when
        no registry is given.

        Example:
            >>> s = Session(session_id="s1")
            >>> _ = s.queue.remind({"body": "CI is red"})
            >>> saved = s.state().to_json()
            >>> Session.from_state(SessionState.from_json(saved)).queue.pending()[0]["body"]
            'CI is red'
        """
        if not isinstance(state, SessionState):
            raise TypeError(f"state must be a SessionState, not {type(state).__name__}")
        if providers is not None and not isinstance(providers, ProviderRegistry):
            raise TypeError(
                f"providers must be a ProviderRegistry or None, not {type(providers).__name__}"
            )
        new = cls(
            state.session_id,
            system=state.system,
            agent_id=state.agent_id,
            event_log=event_log,
            reminders=reminders,
            generators=generators,
            workspace=workspace,
            envelope_style=state.envelope_style,
            envelope_instructions=state.envelope_instructions,
            id_factory=id_factory,
            channel=state.channel,
            nonce=state.nonce,
            model=model,
        )
        if providers is not None:
            new.providers = providers
        new._transcript = state.transcript
        new.turn = state.turn
        new.started = state.started
        new._held = list(state.held_messages)
        new._open_calls = set(state.open_tool_calls)
        new.queue = InjectionQueue.from_state(state.queue, id_factory=new.id_factory)
        if new._clock is not None and state.generators is not None:
            new._clock.restore(state.generators)
        new._policy = FirePolicy(state.providers)
        new._cadence = state.cadence
        new._tools = ToolSet(state.declared_tools, state.announced_tools)
        return new

    @classmethod
    def from_messages(
        cls, messages: Iterable[Mapping[str, Any]], *, system: str | None = None, **kwargs: Any
    ) -> Session:
        """Start a session from an existing neutral history.

        Without ``system``, the leading ``system`` message(s) become the system prompt (their
        texts joined by a blank line) and leave the history. Envelopes already committed in
        the history are recognised by their text, so they are not issued again; tool calls
        still waiting for results stay open. Other keywords are those of :class:`Session`.

        Example:
            >>> s = Session.from_messages([{"role": "system", "content": "Be brief."},
            ...                            {"role": "user", "content": "hi"}])
            >>> s.system, len(s.transcript)
            ('Be brief.', 1)
        """
        checked = [validate_message(m, f"messages[{i}]") for i, m in enumerate(messages)]
        if system is None:
            lead = 0
            while lead < len(checked) and checked[lead]["role"] == "system":
                lead += 1
            system = "\n\n".join(message_text(m) for m in checked[:lead])
            checked = checked[lead:]
        new = cls(system=system, **kwargs)
        new._transcript = new._transcript.with_messages(checked)
        for message in checked:
            if message["role"] == "assistant":
                new._open_calls = {c["id"] for c in message.get("tool_calls") or ()}
            elif message["role"] == "tool":
                new._open_calls.discard(message.get("tool_call_id", ""))
        return new
