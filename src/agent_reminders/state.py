"""``SessionState``: everything a session is, as one frozen record with a versioned JSON form.

``Session.state()`` makes one, ``Session.from_state(state, ...)`` continues from one; stores
(docs/storage.md) persist ``state.to_json()``. The JSON document is deterministic — the same state
always gives the same bytes: keys of the document's own records are sorted and sets are
written as sorted lists, while messages keep their key order, because a message is sent to a
model as it was stored and a reordered key would break a provider's prompt cache.
:meth:`SessionState.from_json` is strict: anything this library would not have written is a
:class:`StateError` (``RMD-106``) naming the field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._core.cadence import Cadence
from ._core.channels import ChannelSetting, check_channel
from ._core.envelope import (
    EnvelopeStyle,
    InstructionsMode,
    check_instructions,
    check_nonce,
    check_style,
)
from ._core.errors import AgentRemindersError, StateError
from ._core.messages import copy_json, validate_message
from ._core.records import Message, Reminder, check_turn
from ._core.transcript import Transcript, read_document
from .generators import GeneratorState
from .providers.fire import ProviderState
from .queue import QueueItem, QueueState, check_queue_item

__all__ = [
    "FORMAT",
    "SessionState",
]

FORMAT = "agent-reminders.session-state.v1"
_KEYS = frozenset(
    {
        "agent_id",
        "envelope_instructions",
        "envelope_style",
        "format",
        "generators",
        "held_messages",
        "open_tool_calls",
        "providers",
        "queue",
        "session_id",
        "started",
        "system",
        "transcript",
        "turn",
    }
)
# Written only when not at their defaults ("auto", no nonce): a state without them reads as
# it always did, and a session on the defaults keeps the bytes of its saved document.
_OPTIONAL_KEYS = frozenset({"cadence", "channel", "nonce", "tools"})


@dataclass(frozen=True, kw_only=True)
class SessionState:
    """Everything a session is (see ``Session`` for what is configuration instead).

    Attributes:
        session_id: The session's id (also its transcript's id by default).
        agent_id: The agent id stamped on lifecycle events and handoffs.
        system: The byte-stable system prompt.
        envelope_style: ``"context_directives"`` or ``"system_reminder"``.
        envelope_instructions: ``"auto"``, ``"always"`` or ``"never"``.
        channel: The channel setting of new envelopes: ``"auto"``, ``"user"`` or
            ``"system"`` (each committed envelope keeps the role it was committed with).
        nonce: The session's nonce on every envelope's opening tag, or ``None``.
        declared_tools: The tool specs the tool-change path declared in its first request
            (sent byte for byte after), or ``None``.
        announced_tools: The tool names the model was last told of, or ``None``.
        transcript: Messages, pending reminders and audit entries.
        turn: The number of the next request.
        started: Whether ``session_start`` has fired.
        held_messages: Drained user messages waiting for open tool calls' results.
        open_tool_calls: Ids of tool calls of the last assistant message without a result.
        queue: The injection queue: pending items, delivered and revoked ids.
        generators: Generator clocks and announced sets (``None`` without generators).
        providers: What the firing policy remembers (bodies last sent in full).
        cadence: Per reminder key under a cadence, how many times it fired and when last
            (written only when there is any).

    Example:
        >>> from agent_reminders import Session
        >>> s = Session(session_id="s1", system="Be brief.")
        >>> state = s.state()
        >>> SessionState.from_json(state.to_json()) == state
        True
    """

    session_id: str
    agent_id: str
    system: str = ""
    envelope_style: EnvelopeStyle = "context_directives"
    envelope_instructions: InstructionsMode = "auto"
    channel: ChannelSetting = "auto"
    nonce: str | None = None
    declared_tools: tuple[dict[str, Any], ...] | None = None
    announced_tools: tuple[str, ...] | None = None
    transcript: Transcript = field(default_factory=Transcript)
    turn: int = 0
    started: bool = False
    held_messages: tuple[Message, ...] = ()
    open_tool_calls: frozenset[str] = frozenset()
    queue: QueueState = field(default_factory=QueueState)
    generators: GeneratorState | None = None
    providers: ProviderState = field(default_factory=ProviderState)
    cadence: Cadence = field(default_factory=Cadence)

    def __post_init__(self) -> None:
        object.__setattr__(self, "held_messages", tuple(self.held_messages))
        object.__setattr__(self, "open_tool_calls", frozenset(self.open_tool_calls))
        for name in ("session_id", "agent_id"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{name} must be a non-blank string; got {value!r}")
        check_turn(self.turn)
        check_channel(self.channel)
        check_nonce(self.nonce)
        if type(self.started) is not bool:
            raise TypeError(f"started must be a bool, not {type(self.started).__name__}")
        for name, kind in (
            ("transcript", Transcript),
            ("queue", QueueState),
            ("providers", ProviderState),
            ("cadence", Cadence),
        ):
            value = getattr(self, name)
            if not isinstance(value, kind):
                raise TypeError(f"{name} must be a {kind.__name__}, not {type(value).__name__}")
        if self.generators is not None and not isinstance(self.generators, GeneratorState):
            raise TypeError(
                f"generators must be a GeneratorState or None, not {type(self.generators).__name__}"
            )

    def to_json(self) -> str:
        """The versioned JSON document (``"format": "agent-reminders.session-state.v1"``).

        Raises:
            TypeError: a value (e.g. a queued reminder's ``_meta``) is not JSON-serializable.
        """
        return json.dumps(self.to_document(), ensure_ascii=False, separators=(",", ":"))

    def to_document(self, *, history: bool = True, queue: bool = True) -> dict[str, Any]:
        """The document :meth:`to_json` writes, as a new dict (not yet checked to be JSON).

        ``history=False`` leaves the transcript's message and audit events out (see
        ``Transcript.to_document``) and ``queue=False`` the ``queue`` key: a store keeps those
        parts — the ones that grow with the session — as rows of their own, so that saving a
        turn costs what the turn changed. Without them the document is no saved state
        (:meth:`from_json` refuses it) until they are put back.
        """
        generators = self.generators
        doc: dict[str, Any] = {
            "agent_id": self.agent_id,
            "envelope_instructions": self.envelope_instructions,
            "envelope_style": self.envelope_style,
            "format": FORMAT,
            "generators": None
            if generators is None
            else {
                "announced": {
                    k: list(generators.announced[k]) for k in sorted(generators.announced)
                },
                "call_count": generators.call_count,
                "last_emitted_at": {
                    k: generators.last_emitted_at[k] for k in sorted(generators.last_emitted_at)
                },
            },
            "held_messages": [copy_json(m) for m in self.held_messages],
            "open_tool_calls": sorted(self.open_tool_calls),
            "providers": _providers_document(self.providers),
            "queue": None,
            "session_id": self.session_id,
            "started": self.started,
            "system": self.system,
            "transcript": self.transcript.to_document(history=history),
            "turn": self.turn,
        }
        if self.channel != "auto":
            doc["channel"] = self.channel
        if self.nonce is not None:
            doc["nonce"] = self.nonce
        if not self.cadence.is_empty:
            doc["cadence"] = self.cadence.to_document()
        if self.declared_tools is not None or self.announced_tools is not None:
            doc["tools"] = {
                "announced": None if self.announced_tools is None else list(self.announced_tools),
                "declared": None
                if self.declared_tools is None
                else [copy_json(t) for t in self.declared_tools],
            }
        if queue:
            doc["queue"] = {
                "delivered_ids": sorted(self.queue.delivered_ids),
                "items": [
                    {
                        "id": i.id,
                        "kind": i.kind,
                        "mode": i.mode.value,
                        "payload": copy_json(i.payload),
                    }
                    for i in self.queue.items
                ],
                "revoked_ids": sorted(self.queue.revoked_ids),
            }
        else:
            del doc["queue"]
        return {key: doc[key] for key in sorted(doc)}  # the optional keys in their place

    @classmethod
    def from_json(cls, text: str | bytes) -> SessionState:
        """Read a document written by :meth:`to_json`, strictly.

        Raises:
            StateError: ``RMD-106`` naming the field for anything malformed — not JSON, another
                format or version, a missing or unknown key, a value of the wrong type, a stored
                reminder or queue item that is invalid or not in the library's own form.
        """
        data = read_document(text, FORMAT, "session state")
        doc = _object(data, "session state", _KEYS, _OPTIONAL_KEYS)
        held = tuple(
            _message(m, f"held_messages[{i}]") for i, m in enumerate(_list(doc, "held_messages"))
        )
        open_calls = _id_set(doc["open_tool_calls"], "open_tool_calls")
        if held and not open_calls:
            raise StateError(
                "held_messages: messages are only held while tool calls are open, and "
                "open_tool_calls is empty"
            )
        for i, message in enumerate(held):
            if message["role"] != "user":
                raise StateError(f"held_messages[{i}].role must be 'user'; got {message['role']!r}")
        try:
            style = check_style(doc["envelope_style"])
        except AgentRemindersError as exc:
            raise StateError(f"envelope_style: {exc.message}") from None
        try:
            instructions = check_instructions(doc["envelope_instructions"], "envelope_instructions")
            channel = check_channel(doc.get("channel", "auto"))
            nonce = check_nonce(doc.get("nonce"))
        except AgentRemindersError as exc:
            raise StateError(exc.message) from None
        declared, announced = _tools(doc.get("tools"))
        return cls(
            session_id=_str(doc["session_id"], "session_id"),
            agent_id=_str(doc["agent_id"], "agent_id"),
            system=_str(doc["system"], "system", blank=True),
            envelope_style=style,
            envelope_instructions=instructions,
            channel=channel,
            nonce=nonce,
            declared_tools=declared,
            announced_tools=announced,
            transcript=_transcript(doc["transcript"]),
            turn=_int(doc["turn"], "turn"),
            started=_bool(doc["started"], "started"),
            held_messages=held,
            open_tool_calls=open_calls,
            queue=_queue(doc["queue"]),
            generators=None if doc["generators"] is None else _generators(doc["generators"]),
            providers=_providers(doc["providers"]),
            cadence=_cadence(doc.get("cadence", {})),
        )


# -- strict readers: each names the path of the bad value -------------------------------------


def _tools(
    value: object,
) -> tuple[tuple[dict[str, Any], ...] | None, tuple[str, ...] | None]:
    if value is None:
        return None, None
    doc = _object(value, "tools", frozenset({"announced", "declared"}))
    announced = doc["announced"]
    if announced is not None and not (
        isinstance(announced, list) and all(isinstance(n, str) for n in announced)
    ):
        raise StateError("tools.announced must be a list of tool names or null")
    declared = doc["declared"]
    if declared is not None and not (
        isinstance(declared, list)
        and all(isinstance(t, dict) and isinstance(t.get("name"), str) for t in declared)
    ):
        raise StateError("tools.declared must be a list of tool specs (objects with a name)")
    return (
        None if declared is None else tuple(dict(t) for t in declared),
        None if announced is None else tuple(announced),
    )


def _object(
    value: object, where: str, keys: frozenset[str], optional: frozenset[str] = frozenset()
) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise StateError(f"{where} must be an object; got {type(value).__name__}")
    missing = sorted(keys - value.keys())
    if missing:
        raise StateError(f"{where}: missing key(s) {', '.join(missing)}")
    unknown = sorted(str(k) for k in value if k not in keys and k not in optional)
    if unknown:
        raise StateError(f"{where}: unknown key(s) {', '.join(unknown)}")
    return value


def _list(doc: Mapping[str, Any], key: str, where: str | None = None) -> list[Any]:
    value = doc[key]
    if not isinstance(value, list):
        raise StateError(f"{where or key} must be a list; got {type(value).__name__}")
    return value


def _str(value: object, where: str, *, blank: bool = False) -> str:
    if not isinstance(value, str) or (not blank and not value.strip()):
        raise StateError(f"{where} must be a {'' if blank else 'non-blank '}string; got {value!r}")
    return value


def _int(value: object, where: str) -> int:
    if type(value) is not int or value < 0:
        raise StateError(f"{where} must be an integer >= 0; got {value!r}")
    return value


def _bool(value: object, where: str) -> bool:
    if type(value) is not bool:
        raise StateError(f"{where} must be true or false; got {value!r}")
    return value


def _names(value: object, where: str) -> list[str]:
    if not isinstance(value, list):
        raise StateError(f"{where} must be a list; got {type(value).__name__}")
    names = [_str(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if len(set(names)) != len(names):
        raise StateError(f"{where} has duplicate entries")
    return names


def _id_set(value: object, where: str) -> frozenset[str]:
    return frozenset(_names(value, where))


def _message(value: object, where: str) -> Message:
    try:
        return validate_message(value, where)
    except AgentRemindersError as exc:
        raise StateError(exc.message) from None
    except TypeError as exc:
        raise StateError(str(exc)) from None


def _transcript(value: object) -> Transcript:
    doc = _object(value, "transcript", frozenset({"events", "format", "id"}))
    events = _list(doc, "events", "transcript.events")
    for i, event in enumerate(events):
        where = f"transcript.events[{i}]"
        if not isinstance(event, dict):
            raise StateError(f"{where} must be an object; got {type(event).__name__}")
        if event.get("kind") == "system_reminder" and event.get("visibility") != "audit":
            # Transcript.from_events reads foreign events leniently; saved state is strict
            payload = event.get("reminder")
            if not isinstance(payload, dict):
                raise StateError(f"{where}.reminder must be an object")
            try:
                reminder = Reminder.from_dict(payload)
            except AgentRemindersError as exc:
                raise StateError(f"{where}.reminder: {exc.message}") from None
            if reminder.to_dict() != payload:
                raise StateError(f"{where}.reminder: not in the form this library writes")
    try:
        return Transcript.from_document(doc)
    except AgentRemindersError as exc:
        raise StateError(f"transcript: {exc.message}") from None
    except TypeError as exc:
        raise StateError(f"transcript: {exc}") from None


def _queue(value: object) -> QueueState:
    doc = _object(value, "queue", frozenset({"delivered_ids", "items", "revoked_ids"}))
    items: list[QueueItem] = []
    for i, raw in enumerate(_list(doc, "items", "queue.items")):
        where = f"queue.items[{i}]"
        item = _object(raw, where, frozenset({"id", "kind", "mode", "payload"}))
        try:
            items.append(check_queue_item(item["kind"], item["id"], item["mode"], item["payload"]))
        except AgentRemindersError as exc:
            raise StateError(f"{where}: {exc.message}") from None
    try:
        return QueueState(
            items=tuple(items),
            delivered_ids=_id_set(doc["delivered_ids"], "queue.delivered_ids"),
            revoked_ids=_id_set(doc["revoked_ids"], "queue.revoked_ids"),
        )
    except ValueError as exc:
        raise StateError(str(exc)) from None


def _generators(value: object) -> GeneratorState:
    doc = _object(value, "generators", frozenset({"announced", "call_count", "last_emitted_at"}))
    calls = _int(doc["call_count"], "generators.call_count")
    last = doc["last_emitted_at"]
    if not isinstance(last, dict):
        raise StateError("generators.last_emitted_at must be an object")
    for gid, at in last.items():
        where = f"generators.last_emitted_at[{gid!r}]"
        if _int(at, where) > calls:
            raise StateError(f"{where} is {at}, after call_count {calls}")
    announced = doc["announced"]
    if not isinstance(announced, dict):
        raise StateError("generators.announced must be an object")
    return GeneratorState(
        call_count=calls,
        last_emitted_at=dict(last),
        announced={
            gid: tuple(_names(names, f"generators.announced[{gid!r}]"))
            for gid, names in announced.items()
        },
    )


def _cadence(value: object) -> Cadence:
    optional = frozenset({"keys", "spent", "context_window", "resolved"})
    doc = _object(value, "cadence", frozenset(), optional)
    keys = doc.get("keys", {})
    if not isinstance(keys, dict):
        raise StateError("cadence.keys must be an object")
    fires: dict[str, tuple[int, int]] = {}
    for key, pair in keys.items():
        where = f"cadence.keys[{key!r}]"
        if not (isinstance(pair, list) and len(pair) == 2):
            raise StateError(f"{where} must be [times fired, last turn]")
        fires[key] = (_int(pair[0], f"{where}[0]"), _int(pair[1], f"{where}[1]"))
    spent = doc.get("spent", [])
    if not isinstance(spent, list) or not all(isinstance(e, list) and len(e) == 2 for e in spent):
        raise StateError("cadence.spent must be a list of [turn, tokens]")
    window = doc.get("context_window")
    resolved = doc.get("resolved", [0, []])
    if not (isinstance(resolved, list) and len(resolved) == 2 and isinstance(resolved[1], list)):
        raise StateError("cadence.resolved must be [turn, [dedupe keys]]")
    return Cadence(
        fires,
        tuple((_int(t, "cadence.spent turn"), _int(n, "cadence.spent tokens")) for t, n in spent),
        None if window is None else _int(window, "cadence.context_window"),
        frozenset(_str(k, "cadence.resolved key") for k in resolved[1]),
        _int(resolved[0], "cadence.resolved turn"),
    )


def _providers(value: object) -> ProviderState:
    doc = _object(value, "providers", frozenset({"full_bodies"}), frozenset({"fired_turns"}))
    bodies, turns = doc["full_bodies"], doc.get("fired_turns", {})
    if not isinstance(bodies, dict) or not isinstance(turns, dict):
        raise StateError("providers.full_bodies and providers.fired_turns must be objects")
    for key, body in bodies.items():
        _str(body, f"providers.full_bodies[{key!r}]")
    return ProviderState(
        full_bodies=dict(bodies),
        fired_turns={k: _int(t, f"providers.fired_turns[{k!r}]") for k, t in turns.items()},
    )


def _providers_document(state: ProviderState) -> dict[str, Any]:
    """The ``providers`` part of a saved state (``fired_turns`` only when there is one, so a
    session without intervals saves the bytes it always did)."""
    doc: dict[str, Any] = {
        "full_bodies": {k: state.full_bodies[k] for k in sorted(state.full_bodies)}
    }
    if state.fired_turns:
        doc["fired_turns"] = {k: state.fired_turns[k] for k in sorted(state.fired_turns)}
    return doc
