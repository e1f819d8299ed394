"""Capture event-log records in a test, like structlog's ``capture_logs``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from .._core.events import EventLog, EventRecord
from ..session import Session

__all__ = ["CapturedEvents", "capture_events"]


class CapturedEvents(list[EventRecord]):
    """The live list :func:`capture_events` yields: records in order, plus helpers.

    Attributes:
        event_log: The log being captured (hand it to a ``Session`` made inside the block).
    """

    event_log: EventLog

    def kinds(self) -> list[str]:
        """The kinds of the captured records, in order."""
        return [r.kind for r in self]

    def payloads(self, kind_suffix: str = "") -> list[dict[str, object]]:
        """The payloads of the records whose kind ends with ``kind_suffix``."""
        return [r.payload for r in self if r.kind.endswith(kind_suffix)]


@contextmanager
def capture_events(
    event_log: EventLog | Session | None = None, *, kind_prefix: str = ""
) -> Iterator[CapturedEvents]:
    """Collect every record emitted inside the block whose kind starts with ``kind_prefix``.

    ``event_log`` is the log to watch, or a session (its log), or ``None`` for a fresh log
    (``events.event_log``) to give to the code under test. The list fills up live; on exit the
    subscription ends, so later records are not added.

    Example:
        >>> from agent_reminders import Session
        >>> with capture_events(kind_prefix="transcript.reminder.") as events:
        ...     s = Session(event_log=events.event_log)
        ...     _ = s.inject({"body": "Answer briefly.", "ttl_turns": 1})
        >>> events.kinds()
        ['transcript.reminder.injected']
        >>> with capture_events(s) as more:
        ...     _ = s.inject({"body": "And politely.", "ttl_turns": 1})
        >>> _ = s.inject({"body": "Not captured.", "ttl_turns": 1})
        >>> [p["reminder_id"] is not None for p in more.payloads("injected")]
        [True]
    """
    if isinstance(event_log, Session):
        log = event_log.event_log
    elif event_log is None:
        log = EventLog()
    elif isinstance(event_log, EventLog):
        log = event_log
    else:
        raise TypeError(
            f"event_log must be an EventLog, a Session or None, not {type(event_log).__name__}"
        )
    captured = CapturedEvents()
    captured.event_log = log
    stop = log.subscribe(captured.append, kind_prefix=kind_prefix)
    try:
        yield captured
    finally:
        stop()
