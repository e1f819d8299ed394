"""A store that fails while a prompt runs: every committed directive is announced exactly once.

Before each model request the prompt saves the session (the directives just committed are then
delivered in the store) and announces them (``reminder_emitted``). When that save fails — Redis
going down, or its reply lost after the write landed — the prompt saves again until the store
answers, then announces them and goes on; a store that answers again only for the prompt's last
save still gets them announced before the reply. Checked with a store that fails once, with a
real Redis whose writes land but whose reply is an error, and with a real ``redis-server`` that
is stopped mid-prompt and started again on its own data.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from agent_reminders import ModelRequest, StoreError
from agent_reminders.bridge import Bridge, BridgeClient, RpcError
from agent_reminders.session import SessionState
from agent_reminders.storage import MemoryStore, RedisStore, Store
from agent_reminders.testing import FunctionModel

pytestmark = pytest.mark.anyio

TOOL_CALL = {"content": "", "tool_calls": [{"id": "c1", "name": "look", "arguments": {}}]}
BODY = "CI is red on main: test_login fails"


class FailingSaves(MemoryStore):
    """A memory store whose next ``failures`` saves fail, before or after writing."""

    def __init__(self, *, after_write: bool) -> None:
        super().__init__()
        self.after_write = after_write
        self.failures = 0
        self.failed = 0

    async def save_session(self, state: SessionState) -> None:
        if self.failures and not self.after_write:
            self.failures -= 1
            self.failed += 1
            raise StoreError("the store fell over before writing")
        await super().save_session(state)
        if self.failures:
            self.failures -= 1
            self.failed += 1
            raise StoreError("the store fell over after writing (the reply was lost)")


def _emitted(client: BridgeClient) -> list[str]:
    """The ids of the bridge's reminders announced so far; every announcement, the library's
    own providers' too (e.g. after a failed tool), names a different reminder."""
    announced = [
        n.params["reminder"]
        for n in client.take_notifications()
        if n.method == "_session/reminder_emitted"
    ]
    ids = [r["reminderId"] for r in announced]
    assert len(set(ids)) == len(ids), f"announced twice: {ids}"
    return [r["reminderId"] for r in announced if r["source"] == "bridge"]


def _carries(request: ModelRequest, text: str) -> int:
    return sum(text in json.dumps(dict(m), default=str) for m in request.messages)


async def _stored_count(store: Store, session_id: str, text: str) -> int:
    state = await store.load_session(session_id)
    assert state is not None
    return sum(text in json.dumps(dict(m), default=str) for m in state.transcript.messages)


@pytest.mark.parametrize("after_write", [False, True], ids=["before-write", "after-write"])
@pytest.mark.parametrize("failures", [1, 3])
async def test_a_failed_save_before_the_model_request_still_announces_once(
    after_write: bool, failures: int
) -> None:
    store = FailingSaves(after_write=after_write)
    model = FunctionModel(lambda request: "Done.")
    bridge = Bridge(store, model=model, worker_id="w")
    async with BridgeClient.in_process(bridge) as client:
        sid = await client.new_session()
        rid = await client.remind(BODY, session_id=sid)
        store.failures = failures  # the saves before the first model request fail
        with anyio.fail_after(30):
            assert await client.prompt(sid, "go") == "end_turn"
        assert store.failed == failures
        assert _emitted(client) == [rid]
    (request,) = model.requests
    assert _carries(request, BODY) == 1
    assert await _stored_count(store, sid, BODY) == 1


async def test_a_store_back_only_for_the_last_save_still_gets_the_directive_announced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # no time to try again: the save before the model request fails for good and the prompt
    # ends with an error, but its last save lands, and what it committed is announced first
    monkeypatch.setattr("agent_reminders.bridge.prompt.SAVE_RETRY_SECONDS", 0.0, raising=False)
    store = FailingSaves(after_write=False)
    model = FunctionModel(lambda request: "Done.")
    bridge = Bridge(store, model=model, worker_id="w")
    async with BridgeClient.in_process(bridge) as client:
        sid = await client.new_session()
        rid = await client.remind(BODY, session_id=sid)
        store.failures = 1
        with anyio.fail_after(30), pytest.raises(RpcError) as failed:
            await client.prompt(sid, "go")
        assert failed.value.code == -32603
        assert store.failed == 1
        assert _emitted(client) == [rid]
    assert model.requests == []
    assert await _stored_count(store, sid, BODY) == 1


# -- a real Redis ------------------------------------------------------------------------------


async def test_redis_writes_that_land_but_answer_with_an_error_announce_once(
    fresh_redis_url: str,
) -> None:
    """The save's script commits, then the store's next command (indexing the session's
    activity) fails on the server: the write landed, the caller sees an error."""
    import redis.asyncio as aioredis

    store = RedisStore(fresh_redis_url)
    raw = aioredis.Redis.from_url(fresh_redis_url)
    model = FunctionModel(lambda request: "Done.")
    bridge = Bridge(store, model=model, worker_id="w")
    _, clock = store.index_keys()
    try:
        async with BridgeClient.in_process(bridge) as client:
            sid = await client.new_session()
            rid = await client.remind(BODY, session_id=sid)
            await raw.set(clock, "not a number")  # INCR on it fails: every save now errs

            async def repair() -> None:
                await anyio.sleep(0.5)
                await raw.delete(clock)

            with anyio.fail_after(30):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(repair)
                    assert await client.prompt(sid, "go") == "end_turn"
            assert _emitted(client) == [rid]
        (request,) = model.requests
        assert _carries(request, BODY) == 1
        assert await _stored_count(store, sid, BODY) == 1
    finally:
        await raw.aclose()
        await store.close()


def _free_port() -> int:
    while True:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        if port != 6379:  # never the machine's own Redis
            return port


def _ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
            conn.sendall(b"*1\r\n$4\r\nPING\r\n")
            return conn.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class RedisProcess:
    """A ``redis-server`` of this test, persisting every write (AOF, fsync always) in its
    folder, so a restart finds the data again."""

    def __init__(self, binary: str, folder: Path) -> None:
        self.binary, self.folder, self.port = binary, folder, _free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = (self.folder / "redis.log").open("ab")
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "yes", "--appendfsync", "always", "--dir", str(self.folder)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        log.close()
        deadline = time.monotonic() + 20
        while not _ping(self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start; see {self.folder}")
            time.sleep(0.02)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisProcess]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("no redis-server binary on PATH (apt-get install redis-server)")
    server = RedisProcess(binary, tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def redis_store(own_redis: RedisProcess) -> AsyncIterator[RedisStore]:
    store = RedisStore(f"redis://127.0.0.1:{own_redis.port}/0")
    yield store
    await store.close()


async def test_redis_stopped_mid_prompt_and_started_again_announces_once(
    own_redis: RedisProcess, redis_store: RedisStore
) -> None:
    calls: list[int] = []
    restarted = anyio.Event()
    body = "CI is red again"
    holder: dict[str, Any] = {}

    async def model(request: ModelRequest) -> Any:
        calls.append(1)
        if len(calls) == 1:
            # queued while the model thinks: committed into the next request, whose save then
            # meets a stopped Redis (and the pick-up after this answer, too)
            other = holder["other"]
            holder["rid"] = await other.remind(body, session_id=request.session_id)
            await anyio.to_thread.run_sync(own_redis.stop)

            async def restart() -> None:
                await anyio.sleep(0.5)
                await anyio.to_thread.run_sync(own_redis.start)
                restarted.set()

            holder["tg"].start_soon(restart)
            return TOOL_CALL
        assert restarted.is_set()
        return "Done."

    fn_model = FunctionModel(model)
    bridge = Bridge(redis_store, model=fn_model, worker_id="w")
    async with (
        anyio.create_task_group() as tg,
        BridgeClient.in_process(bridge) as client,
        BridgeClient.in_process(bridge) as other,
    ):
        holder["tg"], holder["other"] = tg, other
        sid = await client.new_session()
        with anyio.fail_after(30):
            assert await client.prompt(sid, "go") == "end_turn"
        assert _emitted(client) == [holder["rid"]]
    first, second = fn_model.requests
    assert _carries(first, body) == 0
    assert _carries(second, body) == 1
    assert await _stored_count(redis_store, sid, body) == 1
    assert await redis_store.pending(sid) == []
