"""The demo's timeline: what fired and why, what each request carried, what expired.

A :class:`Recorder` listens to the session's event log (and is told about model answers, tool
results, host pushes and notes); :meth:`Recorder.rows` turns what it heard into one
:class:`Row` per turn, each a list of :class:`Entry` lines. The command line renders them
(``agent_reminders.cli.demo``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .._core.events import EventRecord, Kind
from .._core.records import Message
from .._core.request import ToolCall, ToolResult
from ..providers.fire import short_repeat_text
from ..session import Session
from .scenario import HostPush

__all__ = ["Delivery", "ENTRY_KINDS", "Entry", "EntryKind", "Recorder", "Row", "excerpt"]

EntryKind = Literal["note", "user", "sent", "model", "fired", "host", "expired", "audit"]
ENTRY_KINDS: tuple[EntryKind, ...] = (
    "note",
    "user",
    "sent",
    "model",
    "fired",
    "host",
    "expired",
    "audit",
)
"""What a timeline line says: a note between turns, the person's task, what a request
carried (``sent``), what the model did, a reminder that fired (and why), a host push, a
reminder that expired, an item that went to the audit trail only."""
_EXCERPT = 72
_CHECKPOINT = "loop.checkpoint"


@dataclass(frozen=True, slots=True)
class Entry:
    """One line of a row: its ``kind`` and its text."""

    kind: EntryKind
    text: str


@dataclass(frozen=True, slots=True)
class Row:
    """One turn of one agent, or a note between turns.

    ``who`` is ``"agent"`` or ``"reviewer"`` (``""`` for a note); ``turn`` is the request number
    of that agent (``None`` for a note); ``title`` is what the timeline calls the row
    (``"turn 3"``, ``"reviewer 0"``, ``"task 1"``, ``"compaction"``).
    """

    title: str
    who: str
    turn: int | None
    entries: tuple[Entry, ...]


@dataclass(frozen=True, slots=True)
class Delivery:
    """A reminder that reached a request (or, ``request`` ``None``, the audit trail only).

    ``who`` is ``"agent"`` or ``"reviewer"``; ``label`` and ``why`` are what the timeline
    says (``"grounded_review"``, ``"post_tool_use"``); ``repeat`` marks a short repeat.
    """

    who: str
    request: int | None
    reminder_id: str
    label: str
    why: str
    body: str
    repeat: bool = False


@dataclass(frozen=True, slots=True)
class _Event:
    session_id: str
    record: EventRecord


@dataclass(frozen=True, slots=True)
class _Model:
    session_id: str
    turn: int
    message: Message
    messages: int
    tokens: int | None


@dataclass(frozen=True, slots=True)
class _Tool:
    session_id: str
    call: ToolCall
    result: ToolResult


@dataclass(frozen=True, slots=True)
class _Note:
    session_id: str
    title: str
    kind: EntryKind
    text: str


@dataclass(frozen=True, slots=True)
class _Push:
    session_id: str
    reminder_id: str
    push: HostPush


_Item = _Event | _Model | _Tool | _Note | _Push


def excerpt(text: str, limit: int = _EXCERPT) -> str:
    """``text`` on one line, cut to ``limit`` characters (with an ellipsis).

    A body of several lines under a header line (``"…:"``) is shown by its first item.
    """
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    more = ""
    if len(lines) >= 2 and lines[0].endswith(":"):
        more = f" (+{len(lines) - 2} more)" if len(lines) > 2 else ""
        lines = [lines[1]]
    flat = " ".join(" ".join(lines).split())
    if len(flat) + len(more) > limit:
        flat = flat[: max(0, limit - len(more) - 1)].rstrip() + "…"
    return flat + more


def _call_text(call: Mapping[str, Any]) -> str:
    arguments: Mapping[str, Any] = call.get("arguments") or {}
    shown = [str(arguments[k]) for k in ("path", "command", "task") if k in arguments]
    if "offset" in arguments:
        shown.append(f"from {arguments['offset']}")
    return excerpt(f"{call['name']} {' '.join(shown)}".strip(), 60)


def _result_text(call: ToolCall, result: ToolResult) -> str:
    lines = [line for line in result.content.splitlines() if line.strip()]
    if result.truncated:
        return f"{result.original_size:,} chars, cut to {len(result.content):,}"
    if not result.ok and len(lines) <= 1:
        text = lines[0] if lines else "failed"
        return excerpt(text.replace("Tool call blocked:", "blocked by a hook:", 1), 70)
    if call.name == "read_file":
        return f"{len(result.content):,} chars"
    if call.name == "edit_file":
        return "edited"
    if call.name == "delegate":
        return "the reviewer's answer"
    if len(lines) > 1 and lines[-1].startswith("="):
        return lines[-1].strip("= ")  # pytest's summary line
    if len(lines) > 1:
        return f"{len(lines)} lines"
    return excerpt(lines[0] if lines else "(no output)", 60)


_Key = tuple[str, int | None, str]


@dataclass
class _Builder:
    """The state of one pass over the recorded items."""

    who: Mapping[str, str]
    bodies: Mapping[str, str]
    repeats: frozenset[str]
    delivered: Mapping[str, str]
    rows: dict[_Key, list[Entry]] = field(default_factory=dict)
    current: dict[str, _Key] = field(default_factory=dict)
    labels: dict[tuple[str, str], str] = field(default_factory=dict)
    sent: dict[str, list[str]] = field(default_factory=dict)
    provider: dict[str, tuple[str, str]] = field(default_factory=dict)
    replaced: dict[str, list[str]] = field(default_factory=dict)
    pushes: dict[str, HostPush] = field(default_factory=dict)
    calls: dict[str, tuple[str, _Key, int]] = field(default_factory=dict)  # id -> session, line
    why: dict[tuple[str, str], str] = field(default_factory=dict)
    deliveries: list[Delivery] = field(default_factory=list)

    def deliver(self, session_id: str, request: int | None, rid: str) -> None:
        self.deliveries.append(
            Delivery(
                who=self.who.get(session_id, session_id),
                request=request,
                reminder_id=rid,
                label=self.labels.get((session_id, rid), "?"),
                why=self.why.get((session_id, rid), "?"),
                body=self.bodies.get(rid, ""),
                repeat=self.repeat(rid),
            )
        )

    def open(self, key: _Key, *sessions: str) -> None:
        self.rows.setdefault(key, [])
        for session_id in sessions:
            self.current[session_id] = key

    def add(self, session_id: str, kind: EntryKind, text: str) -> None:
        key = self.current.get(session_id)
        if key is None:
            key = (self.who.get(session_id, session_id), None, "start")
            self.open(key, session_id)
        self.rows[key].append(Entry(kind, text))

    def repeat(self, rid: str) -> bool:
        return rid in self.repeats

    def name(self, session_id: str, rid: str) -> str:
        label = self.labels.get((session_id, rid), "?")
        return f"{rid} {label}{'*' if self.repeat(rid) else ''}"

    # -- items ------------------------------------------------------------------------------

    def item(self, item: _Item) -> None:
        match item:
            case _Note():
                key = ("", None, item.title)
                self.open(key, item.session_id)
                self.add(item.session_id, item.kind, item.text)
            case _Push():
                self.pushes[item.reminder_id] = item.push
                self.add(
                    item.session_id,
                    "host",
                    f"{item.push.who} pushes {item.reminder_id} into the queue ({item.push.mode})",
                )
            case _Model():
                self.model(item)
            case _Tool():
                self.patch(item.call.id, _result_text(item.call, item.result), item.result.ok)
            case _Event():
                self.event(item.session_id, item.record)

    def model(self, item: _Model) -> None:
        who = self.who.get(item.session_id, "agent")
        sent = self.sent.pop(item.session_id, [])
        size = f"{item.messages} messages" + (
            f", {item.tokens:,} tokens" if item.tokens is not None else ""
        )
        carried = ", ".join(self.name(item.session_id, r) for r in sent) or "no new directive"
        request = "request" if who == "agent" else f"{who} request"
        for rid in sent:
            self.deliver(item.session_id, item.turn, rid)
        self.add(item.session_id, "sent", f"{request} {item.turn} ({size}): {carried}")
        calls = item.message.get("tool_calls") or []
        if not calls:
            content = item.message.get("content")
            text = content if isinstance(content, str) else ""
            self.add(item.session_id, "model", f'answers "{excerpt(text, 90)}"')
            return
        key = self.current[item.session_id]
        for call in calls:
            self.add(item.session_id, "model", _call_text(call))
            self.calls[call["id"]] = (item.session_id, key, len(self.rows[key]) - 1)

    def patch(self, call_id: str, outcome: str, ok: bool) -> None:
        where = self.calls.pop(call_id, None)
        if where is None:
            return
        _, key, index = where
        entry = self.rows[key][index]
        mark = "" if ok else "  [failed]"
        self.rows[key][index] = Entry(entry.kind, f"{entry.text} -> {outcome}{mark}")

    def event(self, session_id: str, record: EventRecord) -> None:
        p = record.payload
        kind = record.kind
        if kind == _CHECKPOINT:
            self.checkpoint(session_id, p)
        elif kind == Kind.PROVIDER_EVALUATED and p.get("fired"):
            self.provider[session_id] = (str(p.get("provider_id")), str(p.get("event")))
        elif kind == Kind.DEDUPED and p.get("boundary") is None:
            self.replaced[str(p["replacing_id"])] = [str(r) for r in p.get("replaced_ids", [])]
        elif kind == Kind.DEDUPED:
            for rid in map(str, p.get("replaced_ids", [])):
                if not self.repeat(rid):
                    self.add(session_id, "expired", f"{self.name(session_id, rid)} (deduped)")
        elif kind == Kind.INJECTED:
            self.injected(session_id, p)
        elif kind == Kind.FIRED:
            self.sent.setdefault(session_id, []).append(str(p["reminder_id"]))
        elif kind == Kind.EXPIRED and not self.repeat(str(p["reminder_id"])):
            rid = str(p["reminder_id"])
            self.add(session_id, "expired", f"{self.name(session_id, rid)} ({p.get('reason')})")

    def checkpoint(self, session_id: str, p: Mapping[str, Any]) -> None:
        seam, iteration = str(p.get("seam")), p.get("iteration")
        if seam == "iteration_start" and isinstance(iteration, int):
            who = self.who.get(session_id, session_id)
            title = f"turn {iteration}" if who == "agent" else f"{who} {iteration}"
            self.open((who, iteration, title), session_id)
        for rid in map(str, p.get("delivered_ids") or []):
            push = self.pushes.get(rid)
            if seam == "loop_exit" and push is not None:
                self.labels[(session_id, rid)] = f"host:{push.who}"
                self.why[(session_id, rid)] = push.mode
                self.deliver(session_id, None, rid)
                self.add(
                    session_id,
                    "audit",
                    f"{rid} host:{push.who} lands in the audit trail at loop_exit, never in a "
                    f'request: "{excerpt(self.bodies.get(rid, ""), 60)}"',
                )
        if p.get("dispatch_skipped"):
            for call_id in [c for c, (sid, _, _) in self.calls.items() if sid == session_id]:
                self.patch(call_id, "skipped: a host interrupt came first", True)

    def injected(self, session_id: str, p: Mapping[str, Any]) -> None:
        rid = str(p["reminder_id"])
        source = p.get("source")
        tags = [str(t) for t in p.get("tags") or []]
        if source == "stdlib_provider":
            provider, why = self.provider.get(session_id, ("?", "?"))
            label = f"generator:{tags[1]}" if tags[:1] == ["generator"] and tags[1:] else provider
        elif source == "hook":
            label, why = f"hook:{tags[0] if tags else 'hook'}", "tool hook"
        elif source == "bridge":
            push = self.pushes.get(rid)
            label = f"host:{push.who}" if push else "host"
            mode = push.mode if push else "queue"
            why = f"{mode}, delivered at {self.delivered.get(rid, '?')}"
        elif source == "inherited":
            parent = next((v for (s, r), v in self.labels.items() if r == rid), "?")
            label, why = f"inherited {parent.removeprefix('inherited ')}", "handoff"
        else:
            label, why = "inject", "session.inject"
        self.labels[(session_id, rid)] = label
        self.why[(session_id, rid)] = why
        replaced = [r for r in self.replaced.pop(rid, []) if not self.repeat(r)]
        if self.repeat(rid):
            return  # shown in the request that carries it, marked *
        also = f", replaces {', '.join(replaced)}" if replaced else ""
        body = self.bodies.get(rid)
        text = f' "{excerpt(body)}"' if body else ""
        self.add(session_id, "fired", f"{self.name(session_id, rid)}  <- {why}{also}{text}")


class Recorder:
    """Collects what the demo needs for its timeline, in the order it happens.

    Subscribe :meth:`on_event` to the event log; call :meth:`watch` for each session (or
    :meth:`expect` for one about to be made), :meth:`on_model` after each model answer,
    :meth:`on_tool` after each tool call, :meth:`on_push` for each host push and :meth:`note`
    for what happens between turns.
    """

    def __init__(self) -> None:
        self.items: list[_Item] = []
        self.who: dict[str, str] = {}
        self.sessions: dict[str, Session] = {}
        self.bodies: dict[str, str] = {}
        self.repeats: set[str] = set()  # ids of short repeats (see FirePolicy)

    def expect(self, session_id: str, who: str) -> None:
        """Record the events of ``session_id`` (a session about to be made) as ``who``."""
        self.who[session_id] = who

    def watch(self, session: Session, who: str) -> None:
        """Follow ``session`` under the name ``who`` (``agent``, ``reviewer``)."""
        self.who[session.id] = who
        self.sessions[session.id] = session
        self.sweep(session)

    def sweep(self, session: Session) -> None:
        """Remember the bodies of ``session``'s pending reminders (they leave the transcript
        when they expire)."""
        for reminder in session.transcript.reminders:
            self.bodies.setdefault(reminder.id, reminder.body)
            key = reminder.dedupe_key
            if key is not None and reminder.body == short_repeat_text(key):
                self.repeats.add(reminder.id)

    def on_event(self, record: EventRecord) -> None:
        """The event log subscriber."""
        session_id = str(record.payload.get("session_id", ""))
        if session_id not in self.who:
            return
        session = self.sessions.get(session_id)
        if record.kind == _CHECKPOINT and session is not None:
            self.sweep(session)
        self.items.append(_Event(session_id, record))

    def on_model(
        self, session: Session, turn: int, message: Message, messages: int, tokens: int | None
    ) -> None:
        """A model answer to request ``turn`` (of ``messages`` messages, ``tokens`` tokens)."""
        self.sweep(session)
        self.items.append(_Model(session.id, turn, message, messages, tokens))

    def on_tool(self, session: Session, call: ToolCall, result: ToolResult) -> None:
        """A finished tool call, as the model will see it."""
        self.items.append(_Tool(session.id, call, result))

    def on_push(self, session: Session, reminder_id: str, push: HostPush) -> None:
        """A reminder the host pushed into ``session.queue``."""
        self.bodies.setdefault(reminder_id, str(push.reminder["body"]))
        self.items.append(_Push(session.id, reminder_id, push))

    def note(
        self, session: Session | str, title: str, text: str, *, kind: EntryKind = "note"
    ) -> None:
        """Something that happens to ``session`` (or the session of that id) between turns:
        a task, a compaction, an idle pause."""
        for watched in self.sessions.values():
            self.sweep(watched)
        session_id = session if isinstance(session, str) else session.id
        self.items.append(_Note(session_id, title, kind, text))

    def rows(self) -> list[Row]:
        """The timeline, one row per turn (and per note), in the order things happened."""
        return [
            Row(title=title, who=who, turn=turn, entries=tuple(entries))
            for (who, turn, title), entries in self._build().rows.items()
            if entries
        ]

    def deliveries(self) -> list[Delivery]:
        """Each reminder each request carried, in order (and the audit-only items)."""
        return list(self._build().deliveries)

    def _build(self) -> _Builder:
        """One pass over everything recorded: the rows and the deliveries."""
        for session in self.sessions.values():
            self.sweep(session)
        delivered: dict[str, str] = {}
        for item in self.items:
            if isinstance(item, _Event) and item.record.kind == _CHECKPOINT:
                for rid in item.record.payload.get("delivered_ids") or []:
                    delivered.setdefault(str(rid), str(item.record.payload["seam"]))
        builder = _Builder(
            who=self.who,
            bodies=self.bodies,
            repeats=frozenset(self.repeats),
            delivered=delivered,
        )
        for item in self.items:
            builder.item(item)
        return builder
