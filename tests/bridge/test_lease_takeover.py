"""A lease whose holder is a process of this machine that has ended is taken at once; any
other holder is waited for, and the refusal says how long the lease has left when the holder
stopped renewing it.

The first tests are real ``agent-reminders serve`` processes: one is SIGKILLed inside a
prompt (its scripted model takes two minutes to answer), a new one on the same store prompts
the same session at once — on SQLite, and on the test suite's own ``redis-server``. The rest
hold the lease from a real process (alive, killed, or one standing for an earlier process
with this process's pid) and prompt from this one, on one SQLite file.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from crashkit import ServeProcess

import agent_reminders
from agent_reminders import Session
from agent_reminders.bridge import SessionBusyError
from agent_reminders.bridge.lease import hold_lease, new_worker_id
from agent_reminders.storage import SQLiteStore, open_store

SRC = str(Path(agent_reminders.__file__).resolve().parents[1])
HOST = socket.gethostname()
HANGS = [{"content": "Working on it.", "delay_seconds": 120}]
ANSWERS = [{"content": "Done."}]


def write_script(folder: Path, name: str, script: list[dict[str, Any]]) -> Path:
    path = folder / f"{name}.jsonl"
    path.write_text("".join(json.dumps(step) + "\n" for step in script))
    return path


def start(store: str, folder: Path, name: str, script: list[dict[str, Any]]) -> ServeProcess:
    """``serve --store STORE`` with a scripted model and its request log in ``folder``."""
    return ServeProcess(
        "--store", store, "--model", f"scripted:{write_script(folder, name, script)}",
        "--request-log", str(folder / f"{name}-requests.jsonl"),
        cwd=folder,
    )  # fmt: skip


def wait_for_request(store: str, session_id: str) -> None:
    """Until the worker has saved the session's first turn, which it does just before its
    model call (the prompt is then inside the model; the request log shows a request only
    once it is answered)."""

    async def inside() -> None:
        async with await open_store(store) as opened:
            with anyio.fail_after(30):
                while True:
                    state = await opened.load_session(session_id)
                    if state is not None and state.turn >= 1:
                        return
                    await anyio.sleep(0.02)

    try:
        anyio.run(inside)
    except TimeoutError:
        raise AssertionError("the prompt never reached the model") from None


def prompt(session_id: str, text: str) -> dict[str, Any]:
    return {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}


def killed_mid_prompt_then_prompted_again(store: str, folder: Path) -> float:
    """Kill a worker inside a prompt, start another on ``store``; the seconds the next prompt
    took (it must succeed)."""
    first = start(store, folder, "first", HANGS)
    try:
        sid = first.call("session/new", {"cwd": str(folder), "mcpServers": []})["sessionId"]
        first.send("session/prompt", prompt(sid, "the prompt that dies"))
        wait_for_request(store, sid)
    finally:
        first.kill()
    second = start(store, folder, "second", ANSWERS)
    try:
        began = time.monotonic()
        reply = second.reply(second.send("session/prompt", prompt(sid, "carry on")))
        took = time.monotonic() - began
    finally:
        second.close()
    assert "result" in reply, reply
    assert reply["result"]["stopReason"] == "end_turn"
    return took


def test_a_worker_killed_mid_prompt_does_not_hold_its_session_sqlite(tmp_path: Path) -> None:
    took = killed_mid_prompt_then_prompted_again(f"sqlite:{tmp_path / 'state.db'}", tmp_path)
    assert took < 10  # at once, not after the dead worker's 30 s lease


def test_a_worker_killed_mid_prompt_does_not_hold_its_session_redis(
    fresh_redis_url: str, tmp_path: Path
) -> None:
    took = killed_mid_prompt_then_prompted_again(fresh_redis_url, tmp_path)
    assert took < 10


# -- holders that are real processes, taken over (or not) by a worker in this process ------

HOLD = """
import os, sys
import anyio
pid = sys.argv[2]
if pid != "own":  # this process stands for an earlier one that had that pid
    os.getpid = lambda: int(pid)
from agent_reminders.bridge.lease import hold_lease, new_worker_id
from agent_reminders.storage import SQLiteStore

async def main():
    store = SQLiteStore(sys.argv[1])
    owner = new_worker_id()
    async with hold_lease(store, "s1", owner, 30, lost=anyio.Event()):
        print(owner, flush=True)
        await anyio.sleep(120)

anyio.run(main)
"""


@pytest.fixture
def path(tmp_path: Path) -> Path:
    """A SQLite store with the session ``s1``."""
    made = tmp_path / "state.db"

    async def create() -> None:
        async with SQLiteStore(made) as store:
            await store.create_session(Session(session_id="s1").state())

    anyio.run(create)
    return made


class Holder:
    """A process holding ``s1``'s lease (through ``hold_lease``, as a prompt does)."""

    def __init__(self, path: Path, pid: str = "own") -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLD, str(path), pid],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")},
        )
        assert self.proc.stdout is not None
        self.owner = self.proc.stdout.readline().strip()
        assert self.owner.count(":") == 2, self.owner

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()
        assert self.proc.stdout is not None
        self.proc.stdout.close()


async def attempt(path: Path) -> SessionBusyError | None:
    """A new worker of this process prompting ``s1``: ``None`` when it gets the lease."""
    async with SQLiteStore(path) as store:
        try:
            async with hold_lease(store, "s1", new_worker_id(), 30, lost=anyio.Event()):
                return None
        except SessionBusyError as busy:
            return busy


def test_a_killed_worker_of_this_machine_is_taken_over(path: Path) -> None:
    holder = Holder(path)
    try:
        busy = anyio.run(attempt, path)  # alive: refused, named
        assert busy is not None
        assert busy.data == {"owner": holder.owner}
        assert "a prompt is already running on it" in busy.message
    finally:
        holder.kill()
    assert anyio.run(attempt, path) is None


def test_a_killed_worker_that_had_this_process_s_pid_is_taken_over(path: Path) -> None:
    """A restarted container's server often gets its predecessor's pid (pid 1): the holder
    has this process's pid but an id this process never made."""
    holder = Holder(path, pid=str(os.getpid()))
    assert holder.owner.split(":")[1] == str(os.getpid())
    holder.kill()
    assert anyio.run(attempt, path) is None


def test_a_holder_that_left_no_mark_here_is_waited_for(path: Path) -> None:
    """A worker of another machine — or of a container that shares this host's name (host
    networking) but not its pids — has a pid that is free here; without its mark on this
    machine it is not taken over."""

    async def held_by(owner: str) -> SessionBusyError | None:
        async with SQLiteStore(path) as store:
            assert await store.claim("s1", owner, 30) is None
        try:
            return await attempt(path)
        finally:
            async with SQLiteStore(path) as store:
                await store.release("s1", owner)

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    for owner in (
        f"{HOST}:{child.pid}:0badcafe",  # this host's name, a free pid, no mark
        f"not-{HOST}:{child.pid}:0badcafe",  # another host
        "worker-a",  # not a worker id this library makes
    ):
        busy = anyio.run(held_by, owner)
        assert busy is not None, owner
        assert busy.owner == owner


def test_a_holder_that_stopped_renewing_is_named_with_the_time_left(path: Path) -> None:
    holder = f"not-{HOST}:4242:0badcafe"

    async def run() -> tuple[SessionBusyError | None, SessionBusyError | None]:
        async with SQLiteStore(path) as store:
            assert await store.claim("s1", holder, 7) is None  # a renewing one holds >= 20 s
        stalled = await attempt(path)
        async with SQLiteStore(path) as store:
            await store.release("s1", holder)
            assert await store.claim("s1", holder, 30) is None
        running = await attempt(path)
        return stalled, running

    stalled, running = anyio.run(run)
    assert stalled is not None
    assert holder in stalled.message
    assert "stopped renewing" in stalled.message
    assert "free in 7 s" in stalled.message or "free in 6 s" in stalled.message
    assert stalled.data == {"owner": holder}
    assert running is not None
    assert "a prompt is already running on it" in running.message
