"""Waking a task that waits at a seam when something is queued for its session.

A store wakes waiters of its own thread at once; anything else — another thread, another
process writing the same SQLite file — is seen by polling. (``RedisStore`` is woken by pub/sub
instead and uses only :func:`check_timeout` from here.)
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable

import anyio


def check_timeout(timeout: object) -> float:
    """A ``wait_for_items`` timeout: a number of seconds >= 0."""
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout < 0:
        raise TypeError(f"timeout must be a number of seconds >= 0; got {timeout!r}")
    return float(timeout)


class Waiters:
    """Tasks waiting for items, per session."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.waiting: dict[str, list[tuple[int, anyio.Event]]] = {}

    def notify(self, session_id: str) -> None:
        """Wake the waiters of ``session_id`` that run in this thread (an ``anyio.Event``
        must not be set from another thread; those waiters poll)."""
        if not self.waiting:  # nobody waits: the usual case (a waiter of this thread
            return  # cannot be registering meanwhile; one of another thread polls)
        me = threading.get_ident()
        with self.lock:
            entries = list(self.waiting.get(session_id, ()))
        for thread, event in entries:
            if thread == me:
                event.set()

    async def wait(
        self,
        session_id: str,
        timeout: float,
        check: Callable[[], Awaitable[bool]],
        *,
        poll: float,
    ) -> bool:
        """``True`` once ``check()`` is true, ``False`` after ``timeout`` seconds."""
        deadline = anyio.current_time() + check_timeout(timeout)
        while True:
            event = anyio.Event()
            entry = (threading.get_ident(), event)
            with self.lock:
                self.waiting.setdefault(session_id, []).append(entry)
            try:
                # registered before the check, so an item queued in between still wakes us
                if await check():
                    return True
                remaining = deadline - anyio.current_time()
                if remaining <= 0:
                    return False
                with anyio.move_on_after(min(remaining, poll)):
                    await event.wait()
            finally:
                with self.lock:
                    entries = self.waiting.get(session_id, [])
                    if entry in entries:
                        entries.remove(entry)
                    if not entries:
                        self.waiting.pop(session_id, None)
