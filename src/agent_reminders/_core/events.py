"""The in-memory event log and the lifecycle record helpers."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

from .frozen import fast_init

__all__ = ["DEFAULT_MAX_RECORDS", "LIFECYCLE_TOPIC", "EventLog", "EventRecord", "Kind", "check_log"]

LIFECYCLE_TOPIC = "transcript.reminder.lifecycle"
_LIFECYCLE_PREFIX = "transcript.reminder."
DEFAULT_MAX_RECORDS = 100_000


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
    # contract directives the directive budget could not hold back took a turn over it
    OVER_BUDGET = "transcript.reminder.over_budget"
    # the wording lint flagged the body of a reminder injected from producer options (advisory:
    # the reminder is queued all the same)
    LINTED = "transcript.reminder.linted"
    # a system-channel envelope the wire must send as a user message from now on (its
    # placement broke a rule of the API): the one sanctioned prefix break besides compaction
    CHANNEL_DOWNGRADED = "transcript.channel_downgraded"
    # the tools a request offers changed (in its envelope, or in its tools list)
    TOOLS_CHANGED = "transcript.tools_changed"
    # the provider said why its prompt cache could not reuse the previous request's prefix
    # (Usage.cache_miss_reason: Anthropic's cache diagnostics)
    CACHE_MISSED = "transcript.cache_missed"


@fast_init
@dataclass(frozen=True, slots=True)
class EventRecord:
    """One record of an :class:`EventLog`: ``seq`` (1, 2, …), ``topic``, ``kind``, ``payload``."""

    seq: int
    topic: str
    kind: str
    payload: dict[str, Any]


Subscriber = Callable[[EventRecord], None]

# A record nobody has looked at yet, kept as its fields: (seq, topic, kind, payload).
_Raw = tuple[int, str, str, dict[str, Any]]


class _Shared:
    """Records and subscribers, shared by a log and every view bound from it.

    A record the library keeps (:meth:`EventLog.keep`: every lifecycle record, the loop's
    checkpoints) that no subscriber receives is held as a plain tuple of its fields and made
    into an :class:`EventRecord` when the records are first read: a turn writes a dozen, and
    most are never looked at one by one.
    """

    __slots__ = ("lock", "raw", "records", "seq", "subscribers")

    def __init__(self, max_records: int) -> None:
        self.lock = threading.Lock()
        # A deque with maxlen drops the oldest record in O(1) when a new one arrives.
        self.records: deque[EventRecord | _Raw] = deque(maxlen=max_records)
        self.raw = False  # whether some kept record is still a tuple
        self.seq = 0  # records ever emitted; keeps counting past the bound
        self.subscribers: list[tuple[str, Subscriber]] = []

    def snapshot(self) -> list[EventRecord]:
        """The records kept, in order, each an ``EventRecord`` (call it under the lock)."""
        if not self.raw:
            return cast("list[EventRecord]", list(self.records))  # no tuple is left
        made = [EventRecord(*r) if isinstance(r, tuple) else r for r in self.records]
        self.records.clear()
        self.records.extend(made)  # made once: later reads give the same records
        self.raw = False
        return made


class EventLog:
    """An in-memory, ordered log of lifecycle records, bounded to the latest ``max_records``.

    A log may carry the ids that lifecycle payloads need (``session_id``, ``task_id``,
    ``agent_id``). :meth:`bind` returns a view that shares the records, the bound and the
    subscribers but stamps other ids — so a parent session and its sub-agents can write to
    one log.

    The log keeps at most ``max_records`` records (default :data:`DEFAULT_MAX_RECORDS`): when
    a new one arrives beyond that, the oldest is dropped and counted in
    :attr:`dropped_count`; ``seq`` keeps counting, so ``records[0].seq - 1 == dropped_count``.
    Subscribers see every record. A full, durable log is a store's job (docs/storage.md): subscribe
    one to the log, or write each record to a sink as it is emitted.

    Example:
        >>> log = EventLog()
        >>> seen = []
        >>> stop = log.subscribe(seen.append, kind_prefix="transcript.reminder.")
        >>> _ = log.emit("transcript.reminder.fired", {"reminder_id": "r1"})
        >>> [r.kind for r in seen]
        ['transcript.reminder.fired']
        >>> stop()
        >>> small = EventLog(max_records=2)
        >>> for n in range(3):
        ...     _ = small.emit("demo.tick", {"n": n})
        >>> [r.seq for r in small.records], small.dropped_count
        ([2, 3], 1)
    """

    def __init__(
        self,
        *,
        session_id: str | None = None,
        task_id: str | None = None,
        agent_id: str | None = None,
        max_records: int = DEFAULT_MAX_RECORDS,
    ) -> None:
        if type(max_records) is not int or max_records < 1:
            raise ValueError(f"max_records must be an int >= 1; got {max_records!r}")
        self._shared = _Shared(max_records)
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
        """Return a view of this log that stamps the given ids on lifecycle records.

        The view shares the records, the ``max_records`` bound and the subscribers.
        """
        view = EventLog.__new__(EventLog)
        view._shared = self._shared
        view.session_id = session_id
        view.task_id = task_id
        view.agent_id = agent_id
        return view

    @property
    def records(self) -> list[EventRecord]:
        """A snapshot list of the records kept (the latest ``max_records``), in order."""
        shared = self._shared
        with shared.lock:
            return shared.snapshot()

    @property
    def max_records(self) -> int:
        """How many records the log keeps before it drops the oldest."""
        bound = self._shared.records.maxlen
        assert bound is not None  # always made with a bound
        return bound

    @property
    def dropped_count(self) -> int:
        """How many of the oldest records were dropped to keep the bound."""
        shared = self._shared
        with shared.lock:
            return shared.seq - len(shared.records)

    def __iter__(self) -> Iterator[EventRecord]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self._shared.records)

    def kinds(self, prefix: str = "") -> list[str]:
        """The kinds of the records kept (optionally only those starting with ``prefix``)."""
        return [r.kind for r in self.records if r.kind.startswith(prefix)]

    def emit(
        self, kind: str, payload: Mapping[str, Any] | None = None, *, topic: str | None = None
    ) -> EventRecord:
        """Append a record and call the matching subscribers; returns the record.

        ``topic`` defaults to the lifecycle topic for ``transcript.reminder.*`` kinds and to
        the kind's first dotted segment otherwise (``loop.checkpoint`` → ``loop``).
        """
        if not kind or (type(kind) is not str and not isinstance(kind, str)):
            raise TypeError("kind must be a non-empty string")
        if payload is None:
            data: dict[str, Any] = {}
        elif type(payload) is dict or isinstance(payload, Mapping):
            data = dict(payload)
        else:
            raise TypeError(f"payload must be a mapping, not {type(payload).__name__}")
        if topic is None:
            topic = LIFECYCLE_TOPIC if kind.startswith(_LIFECYCLE_PREFIX) else kind.split(".")[0]
        return self._append(kind, topic, data)

    def _append(self, kind: str, topic: str, payload: dict[str, Any]) -> EventRecord:
        """Record ``payload`` (owned by the log from now on) and notify the subscribers."""
        shared = self._shared
        with shared.lock:
            shared.seq += 1
            record = EventRecord(shared.seq, topic, kind, payload)
            shared.records.append(record)
            subscribers = (
                [fn for prefix, fn in shared.subscribers if kind.startswith(prefix)]
                if shared.subscribers
                else ()
            )
        for fn in subscribers:
            fn(record)
        return record

    def lifecycle(self, kind: str, fallback_session_id: str, payload: dict[str, Any]) -> None:
        """Emit a lifecycle record whose payload starts with the three ids.

        ``session_id`` is the log's own, else ``fallback_session_id`` (the transcript id);
        ``agent_id`` defaults to the session id. ``payload`` is copied.
        """
        session_id = self.session_id or fallback_session_id
        full = {
            "session_id": session_id,
            "task_id": self.task_id,
            "agent_id": self.agent_id or session_id,
            **payload,
        }
        self.keep(kind, LIFECYCLE_TOPIC, full)

    def keep(self, kind: str, topic: str, payload: dict[str, Any]) -> None:
        """:meth:`emit` for the library's own records: ``payload`` is a fresh ``dict`` the log
        owns from now on (not copied), and the record is not returned — so when no subscriber
        receives it, it is made into an :class:`EventRecord` only once the records are read."""
        shared = self._shared
        with shared.lock:
            if not shared.subscribers:  # nobody receives it now: keep its fields
                shared.seq += 1
                shared.records.append((shared.seq, topic, kind, payload))
                shared.raw = True
                return
        self._append(kind, topic, payload)

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
