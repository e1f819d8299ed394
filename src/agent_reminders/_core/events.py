"""The in-memory event log and the lifecycle record helpers."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["LIFECYCLE_TOPIC", "EventLog", "EventRecord", "Kind", "check_log"]

LIFECYCLE_TOPIC = "transcript.reminder.lifecycle"


class Kind:
    """The lifecycle record kinds (wire strings)."""

    INJECTED = "transcript.reminder.injected"
    DEDUPED = "transcript.reminder.deduped"
    EXPIRED = "transcript.reminder.expired"
    FIRED = "transcript.reminder.fired"
    ITERATION_SUMMARY = "transcript.reminder.iteration_summary"
    DROPPED = "transcript.reminder.dropped"
    INHERITED = "transcript.reminder.inherited"
    PROVIDER_EVALUATED = "transcript.reminder.provider_evaluated"


@dataclass(frozen=True, slots=True)
class EventRecord:
    """One record of an :class:`EventLog`: ``seq`` (1, 2, …), ``topic``, ``kind``, ``payload``."""

    seq: int
    topic: str
    kind: str
    payload: dict[str, Any]


Subscriber = Callable[[EventRecord], None]


class _Shared:
    """Records and subscribers, shared by a log and every view bound from it."""

    __slots__ = ("lock", "records", "subscribers")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.records: list[EventRecord] = []
        self.subscribers: list[tuple[str, Subscriber]] = []


class EventLog:
    """An in-memory, ordered log of lifecycle records.

    A log may carry the ids that lifecycle payloads need (``session_id``, ``task_id``,
    ``agent_id``). :meth:`bind` returns a view that shares the records and subscribers but
    stamps other ids — so a parent session and its sub-agents can write to one log.

    Example:
        >>> log = EventLog()
        >>> seen = []
        >>> stop = log.subscribe(seen.append, kind_prefix="transcript.reminder.")
        >>> _ = log.emit("transcript.reminder.fired", {"reminder_id": "r1"})
        >>> [r.kind for r in seen]
        ['transcript.reminder.fired']
        >>> stop()
    """

    def __init__(
        self,
        *,
        session_id: str | None = None,
        task_id: str | None = None,
        agent_id: str | None = None,
    ) -> None:
        self._shared = _Shared()
        self.session_id = session_id
        self.task_id = task_id
        self.agent_id = agent_id

    def bind(
        self,
        *,
        session_id: str | None = None,
        task_id: str | None = None,
        agent_id: str | None = None,
    ) -> EventLog:
        """Return a view of this log that stamps the given ids on lifecycle records."""
        view = EventLog.__new__(EventLog)
        view._shared = self._shared
        view.session_id = session_id
        view.task_id = task_id
        view.agent_id = agent_id
        return view

    @property
    def records(self) -> list[EventRecord]:
        """A snapshot list of every record, in emission order."""
        with self._shared.lock:
            return list(self._shared.records)

    def __iter__(self) -> Iterator[EventRecord]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self._shared.records)

    def kinds(self, prefix: str = "") -> list[str]:
        """The kinds of the records so far (optionally only those starting with ``prefix``)."""
        return [r.kind for r in self.records if r.kind.startswith(prefix)]

    def emit(
        self, kind: str, payload: Mapping[str, Any] | None = None, *, topic: str | None = None
    ) -> EventRecord:
        """Append a record and call the matching subscribers; returns the record.

        ``topic`` defaults to the lifecycle topic for ``transcript.reminder.*`` kinds and to
        the kind's first dotted segment otherwise (``loop.checkpoint`` → ``loop``).
        """
        if not isinstance(kind, str) or not kind:
            raise TypeError("kind must be a non-empty string")
        if payload is not None and not isinstance(payload, Mapping):
            raise TypeError(f"payload must be a mapping, not {type(payload).__name__}")
        if topic is None:
            topic = (
                LIFECYCLE_TOPIC if kind.startswith("transcript.reminder.") else kind.split(".")[0]
            )
        shared = self._shared
        with shared.lock:
            record = EventRecord(
                seq=len(shared.records) + 1, topic=topic, kind=kind, payload=dict(payload or {})
            )
            shared.records.append(record)
            subscribers = [fn for prefix, fn in shared.subscribers if kind.startswith(prefix)]
        for fn in subscribers:
            fn(record)
        return record

    def lifecycle(self, kind: str, fallback_session_id: str, payload: dict[str, Any]) -> None:
        """Emit a lifecycle record whose payload starts with the three ids.

        ``session_id`` is the log's own, else ``fallback_session_id`` (the transcript id);
        ``agent_id`` defaults to the session id.
        """
        session_id = self.session_id or fallback_session_id
        full = {
            "session_id": session_id,
            "task_id": self.task_id,
            "agent_id": self.agent_id or session_id,
        }
        full.update(payload)
        self.emit(kind, full, topic=LIFECYCLE_TOPIC)

    def subscribe(self, callback: Subscriber, *, kind_prefix: str = "") -> Callable[[], None]:
        """Call ``callback(record)`` for every later record whose kind starts with the prefix.

        Returns a function that unsubscribes (calling it twice is harmless).
        """
        if not callable(callback):
            raise TypeError("callback must be callable")
        if not isinstance(kind_prefix, str):
            raise TypeError("kind_prefix must be a string")
        entry = (kind_prefix, callback)
        shared = self._shared
        with shared.lock:
            shared.subscribers.append(entry)

        def unsubscribe() -> None:
            # By identity: the same callback subscribed twice gives two equal tuples, and
            # a second call of one unsubscribe must not remove the other subscription.
            with shared.lock:
                for index, item in enumerate(shared.subscribers):
                    if item is entry:
                        del shared.subscribers[index]
                        break

        return unsubscribe


def check_log(value: object) -> EventLog | None:
    """Validate an optional ``event_log`` argument."""
    if value is not None and not isinstance(value, EventLog):
        raise TypeError(f"event_log must be an EventLog or None, not {type(value).__name__}")
    return value
