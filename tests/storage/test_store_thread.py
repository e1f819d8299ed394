"""The store's own thread (``storage.thread.StoreThread``): call order, group commits,
cancellation, its idle end, and ``SQLiteStore`` on anyio's other backend (trio)."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from agent_reminders import Session
from agent_reminders.storage import SQLiteStore, StoreThread
from agent_reminders.storage import thread as store_thread
from agent_reminders.storage.thread import Call
from agent_reminders.testing.store_contract import queue_items

pytestmark = pytest.mark.anyio


async def until_taken(thread: StoreThread) -> None:
    """Wait until the tasks started so far have made their calls and the thread has taken
    every one."""
    await anyio.wait_all_tasks_blocked()
    with anyio.fail_after(10):
        while thread.waiting():
            await anyio.sleep(0.001)


async def test_calls_run_on_one_thread_in_call_order() -> None:
    thread = StoreThread("one")
    seen: list[tuple[int, str]] = []

    def note(i: int) -> int:
        seen.append((i, threading.current_thread().name))
        return i * 10

    async def call(i: int, into: dict[int, int]) -> None:
        into[i] = await thread.run(lambda: note(i))

    got: dict[int, int] = {}
    async with anyio.create_task_group() as tg:
        for i in range(20):
            tg.start_soon(call, i, got)
            await anyio.wait_all_tasks_blocked()  # each call is made before the next
    assert got == {i: i * 10 for i in range(20)}
    assert seen == [(i, "one") for i in range(20)]


async def test_an_exception_reaches_its_caller_and_the_thread_goes_on() -> None:
    thread = StoreThread("errors")

    def fail() -> None:
        raise LookupError("nothing here")

    with pytest.raises(LookupError, match="nothing here"):
        await thread.run(fail)
    assert await thread.run(lambda: 7) == 7


async def test_grouped_calls_gather_while_the_thread_is_busy() -> None:
    """Calls of one group function made while the thread works on something else run as
    one call of it; a call the group fails alone raises alone; the others succeed."""
    thread = StoreThread("groups")
    release = threading.Event()
    groups: list[list[Any]] = []

    def group(calls: Sequence[Call[Any]]) -> None:
        groups.append([c.arg for c in calls])
        for c in calls:
            if c.arg == "bad":
                c.error = ValueError("bad item")

    outcomes: dict[str, object] = {}

    async def grouped(arg: str) -> None:
        try:
            await thread.run_grouped(group, arg)
            outcomes[arg] = "ok"
        except ValueError as exc:
            outcomes[arg] = exc

    async with anyio.create_task_group() as tg:
        tg.start_soon(thread.run, lambda: release.wait(10))  # holds the thread
        await until_taken(thread)
        for arg in ("a", "bad", "b", "c"):
            tg.start_soon(grouped, arg)
            await anyio.wait_all_tasks_blocked()
        release.set()
    assert groups == [["a", "bad", "b", "c"]]
    assert outcomes["a"] == outcomes["b"] == outcomes["c"] == "ok"
    assert isinstance(outcomes["bad"], ValueError)


async def test_a_group_function_that_raises_fails_every_call_of_the_group() -> None:
    thread = StoreThread("whole group")

    def group(calls: Sequence[Call[Any]]) -> None:
        raise OSError("disk gone")

    with pytest.raises(OSError, match="disk gone"):
        await thread.run_grouped(group, 1)


async def test_a_cancelled_call_is_skipped_unless_the_thread_took_it() -> None:
    """A call cancelled while it waits for the thread is never run; one the thread has
    taken runs to its end, and its caller leaves only then."""
    thread = StoreThread("cancel")
    release = threading.Event()
    ran: list[str] = []

    def slow() -> None:
        release.wait(10)
        ran.append("taken")

    taken, waiting = anyio.CancelScope(), anyio.CancelScope()
    left: list[str] = []

    async def call(scope: anyio.CancelScope, fn: Any, name: str) -> None:
        with scope:
            await thread.run(fn)
        left.append(name)

    async with anyio.create_task_group() as tg:
        tg.start_soon(call, taken, slow, "taken")
        await until_taken(thread)
        tg.start_soon(call, waiting, lambda: ran.append("waiting"), "waiting")
        await anyio.wait_all_tasks_blocked()
        taken.cancel()
        waiting.cancel()
        await anyio.wait_all_tasks_blocked()
        assert left == []  # the taken call is still running; the waiting one waits for it
        release.set()
    assert ran == ["taken"]
    assert sorted(left) == ["taken", "waiting"]
    assert taken.cancelled_caught
    assert waiting.cancelled_caught


async def test_the_thread_ends_when_idle_and_a_later_call_starts_another(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(store_thread, "IDLE_SECONDS", 0.05)
    thread = StoreThread("idle")
    first = await thread.run(threading.get_ident)
    with anyio.fail_after(10):
        while any(t.ident == first for t in threading.enumerate()):
            await anyio.sleep(0.01)
    assert await thread.run(lambda: threading.current_thread().name) == "idle"


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_the_sqlite_store_runs_on_trio(tmp_path: Path) -> None:
    """On a backend other than asyncio the thread hands results back through anyio's
    portal: the store works the same, concurrent enqueues included."""
    items = queue_items(*(f"r{i}" for i in range(20)))
    async with SQLiteStore(tmp_path / "state.db") as store:
        await store.create_session(Session(session_id="s1").state())
        async with anyio.create_task_group() as tg:
            for item in items:
                tg.start_soon(store.enqueue, "s1", item)
        assert {r["id"] for r in await store.pending("s1")} == {i.id for i in items}
        drained = await store.drain("s1", ["finish_step"])
        assert {i.id for i in drained} == {i.id for i in items}
        assert await store.pending("s1") == []


def test_a_forked_child_gets_a_thread_of_its_own() -> None:
    """The parent's thread is not in a forked child: the child's first call starts one
    (instead of queueing behind a thread that does not exist there)."""
    thread = StoreThread("forked")
    assert anyio.run(thread.run, lambda: 1) == 1  # the parent's thread is running
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: one call on the same object, then leave at once
        os.close(read)
        signal.alarm(20)  # a call that never returns ends the child, and the test fails
        try:
            answer = anyio.run(thread.run, lambda: b"child ran")
        except BaseException as exc:  # reported to the parent
            answer = repr(exc).encode()
        os.write(write, answer)
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        got = pipe.read()  # the child writes, then exits: the pipe ends either way
    os.waitpid(pid, 0)
    assert got == b"child ran"
