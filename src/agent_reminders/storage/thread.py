"""The one thread that runs a store's blocking calls, so the event loop never waits on disk.

A store that owns one blocking connection hands every call to its own :class:`StoreThread`
(``SQLiteStore`` does; so can a backend of your own on a blocking driver): calls run one at a
time, in the order they were made, and the awaiting task is woken by one callback scheduled
into its event loop. On asyncio that callback is ``loop.call_soon_threadsafe`` resolving a
future — about two thirds of the CPU of a trip through ``anyio.to_thread``, which adds a
``concurrent.futures`` hand-off, a worker pool and a run-variable lookup per call; on any other
anyio backend it is ``anyio.from_thread.run_sync`` setting an ``anyio.Event``.

A call whose caller is cancelled before the thread takes it is not run; one the thread has
taken runs to its end, and the caller leaves once it has (as with ``anyio.to_thread``).

Calls made through :meth:`StoreThread.run_grouped` with the same group function that are
waiting together are run as one call of that function (a group commit: while the thread is
busy, such calls gather behind one job and are taken together), and each caller is woken once
the group has run.

The thread starts with the first call and ends after ``IDLE_SECONDS`` with nothing to do; a
later call starts a new one.
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar, cast

import anyio
import anyio.from_thread
import anyio.lowlevel

__all__ = ["IDLE_SECONDS", "Call", "GroupFn", "StoreThread"]

T = TypeVar("T")
log = logging.getLogger("agent_reminders.storage")

IDLE_SECONDS = 10.0

# how the thread hands a finished call back: ``handback(callback, arg)`` runs
# ``callback(arg)`` in the caller's event loop, soon
Handback = Callable[[Callable[[Any], object], Any], object]
GroupFn = Callable[[Sequence["Call[Any]"]], None]


class _FutureFlag:
    """Set once, awaited by one task, on asyncio: a future (what an ``anyio.Event`` wraps,
    without the event's waiter bookkeeping)."""

    __slots__ = ("future",)

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.future = loop.create_future()

    def set(self) -> None:
        if not self.future.done():  # a cancelled wait has cancelled its future
            self.future.set_result(None)

    async def wait(self) -> None:
        await self.future


def _flag(loop: asyncio.AbstractEventLoop | None) -> _FutureFlag | anyio.Event:
    """What a call's caller waits on: a future on asyncio, an ``anyio.Event`` elsewhere."""
    return anyio.Event() if loop is None else _FutureFlag(loop)


class Call(Generic[T]):
    """One call waiting for (or run by) the thread. A grouped call carries ``arg`` for its
    group function, which may set ``error`` to fail the call alone."""

    __slots__ = ("abandoned", "arg", "done", "error", "finished", "fn", "handback", "loop", "value")

    def __init__(self, fn: Callable[[], T] | None, arg: Any) -> None:
        self.fn = fn
        self.arg = arg
        try:
            self.loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # another anyio backend
            self.loop = None
            token = anyio.lowlevel.current_token()
            self.handback: Handback = lambda callback, arg: anyio.from_thread.run_sync(
                callback, arg, token=token
            )
        else:
            self.handback = self.loop.call_soon_threadsafe
        self.done = _flag(self.loop)
        self.finished = False  # handed back (set in the caller's event loop)
        self.value: T | None = None
        self.error: BaseException | None = None
        self.abandoned = False  # the caller was cancelled: skip it unless already taken

    async def result(self) -> T:
        """Wait until the thread ran (or skipped) the call: its value, or the exception it
        raised or its group set."""
        try:
            await self.done.wait()
        except BaseException:
            # cancelled: a call the thread has not taken yet is skipped; one it has taken
            # runs to its end, and the caller leaves once it has, so nothing outlives the
            # caller unseen
            self.abandoned = True
            if not self.finished:
                self.done = _flag(self.loop)  # the cancelled wait took the first one down
                with anyio.CancelScope(shield=True):
                    await self.done.wait()
            raise
        if self.error is not None:
            raise self.error
        return cast(T, self.value)


def _wake(calls: Sequence[Call[Any]]) -> None:
    for call in calls:
        call.finished = True
        call.done.set()


class StoreThread:
    """Runs blocking calls on one thread of its own, one at a time, in call order.

    Example:
        >>> import anyio
        >>> async def main():
        ...     thread = StoreThread("example")
        ...     return await thread.run(lambda: threading.current_thread().name)
        >>> anyio.run(main)
        'example'
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.after_fork()
        _THREADS.add(self)

    def after_fork(self) -> None:
        """Start over with no thread and nothing queued: what a forked child does (every
        ``StoreThread`` is registered with ``os.register_at_fork``), because the parent's
        thread and the callers of its queued calls are not in the child."""
        # a job is one call, or a group function whose calls wait in ``_grouped``
        self._jobs: queue.SimpleQueue[Call[Any] | GroupFn] = queue.SimpleQueue()
        self._grouped: dict[GroupFn, list[Call[Any]]] = {}
        self._lock = threading.Lock()
        self._running = False

    async def run(self, fn: Callable[[], T]) -> T:
        """``fn()`` on the thread; its result, or the exception it raised."""
        call: Call[T] = Call(fn, None)
        with self._lock:
            self._put(call)
        return await call.result()

    async def run_grouped(self, group: GroupFn, arg: Any) -> None:
        """Run ``group(calls)`` on the thread for this call and every other call of the same
        ``group`` made before the thread gets to it (each call's ``arg`` is its part);
        ``group`` sets ``call.error`` on a call that fails alone, and an exception it raises
        fails them all. The thread is woken once per group, not once per call."""
        call: Call[None] = Call(None, arg)
        with self._lock:
            waiting = self._grouped.get(group)
            if waiting is None:
                self._grouped[group] = [call]
                self._put(group)
            else:
                waiting.append(call)
        await call.result()

    def waiting(self) -> bool:
        """Whether a call was made that the thread has not taken yet (for tests and
        diagnostics)."""
        with self._lock:
            return bool(self._grouped) or not self._jobs.empty()

    def _put(self, job: Call[Any] | GroupFn) -> None:
        # under self._lock
        self._jobs.put(job)
        if not self._running:
            self._running = True
            threading.Thread(target=self._serve, name=self.name, daemon=True).start()

    def _next(self) -> Call[Any] | GroupFn | None:
        """The next job, or ``None`` once the thread should end (idle for a while)."""
        while True:
            try:
                return self._jobs.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    if self._jobs.empty():
                        self._running = False
                        return None

    def _serve(self) -> None:
        while (job := self._next()) is not None:
            if isinstance(job, Call):
                batch = [job]
                if not job.abandoned and job.fn is not None:
                    try:
                        job.value = job.fn()
                    except BaseException as exc:  # handed to the caller
                        job.error = exc
            else:
                with self._lock:
                    batch = self._grouped.pop(job)
                if taken := [call for call in batch if not call.abandoned]:
                    try:
                        job(taken)
                    except BaseException as exc:  # the whole group failed
                        for call in taken:
                            if call.error is None:
                                call.error = exc
            self._hand_back(batch)

    @staticmethod
    def _hand_back(batch: list[Call[Any]]) -> None:
        """Wake the callers: one callback per event loop (usually one for the batch)."""
        by_loop: dict[Any, list[Call[Any]]] = {}
        for call in batch:
            by_loop.setdefault(call.handback, []).append(call)
        for handback, calls in by_loop.items():
            try:
                handback(_wake, calls)
            except RuntimeError:  # the caller's event loop is closed: nobody is waiting
                log.debug("a store call finished after its event loop closed", exc_info=True)


_THREADS: weakref.WeakSet[StoreThread] = weakref.WeakSet()


def _forget_in_child() -> None:
    for thread in list(_THREADS):
        thread.after_fork()


os.register_at_fork(after_in_child=_forget_in_child)
