"""A prompt's lease and wake-ups, in process (docs/many-workers.md; ``lease_seconds`` and
``-32006`` session busy in docs/protocol.md).

Two ``Bridge`` objects on one storage are two workers: a prompt holds the session's lease,
renews it, releases it however it ends, and stops when it loses it; what another worker
queues (or revokes) reaches the running prompt through the store's ``wait_for_items`` — the
same mechanism on every backend (pub/sub on Redis).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from agent_reminders import ConfigError, ModelRequest, StoreError
from agent_reminders.bridge import Bridge, BridgeClient, BridgeSettings, RpcError, load_settings
from agent_reminders.storage import MemoryData, MemoryStore, RedisStore, SQLiteStore, Store
from agent_reminders.testing import FunctionModel
from agent_reminders.testing.store_contract import queue_items

pytestmark = pytest.mark.anyio

TOOL_CALL = {"content": "", "tool_calls": [{"id": "c1", "name": "look", "arguments": {}}]}


@pytest.fixture(params=["memory", "sqlite", "redis"])
async def two_stores(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[Store, Store]]:
    """Two store objects on one storage: what two workers see."""
    if request.param == "memory":
        data = MemoryData()
        stores: tuple[Store, Store] = (MemoryStore(data=data), MemoryStore(data=data))
    elif request.param == "sqlite":
        path = tmp_path / "state.db"
        stores = (SQLiteStore(path), SQLiteStore(path))
    else:
        url = request.getfixturevalue("fresh_redis_url")
        stores = (RedisStore(url), RedisStore(url))
    yield stores
    for store in stores:
        await store.close()


@pytest.fixture
async def connect() -> AsyncIterator[Callable[[Bridge], BridgeClient]]:
    """``connect(bridge)``: a new in-process client (one runs one request at a time), all
    closed at the end."""
    made: list[BridgeClient] = []

    def make(bridge: Bridge) -> BridgeClient:
        made.append(BridgeClient.in_process(bridge))
        return made[-1]

    yield make
    for client in made:
        await client.aclose()


def _worker(store: Store, name: str, fn: Callable[[ModelRequest], Any], **settings: Any) -> Bridge:
    return Bridge(
        store, model=FunctionModel(fn), settings=BridgeSettings(**settings), worker_id=name
    )


async def _until(check: Callable[[], bool | Awaitable[bool]]) -> None:
    with anyio.fail_after(10):
        while True:
            result = check()
            if result if isinstance(result, bool) else await result:
                return
            await anyio.sleep(0.01)


def _carries(request: ModelRequest, text: str) -> bool:
    return text in json.dumps([dict(m) for m in request.messages], default=str)


async def test_a_second_worker_gets_32006_naming_the_owner_until_the_prompt_ends(
    two_stores: tuple[Store, Store], connect: Callable[[Bridge], BridgeClient]
) -> None:
    gate = anyio.Event()

    async def slow(request: ModelRequest) -> str:
        await gate.wait()
        return "Done."

    a = _worker(two_stores[0], "worker-a", slow)
    b = _worker(two_stores[1], "worker-b", lambda r: "Noted.")
    on_a, on_b = connect(a), connect(b)
    sid = await on_a.new_session()
    stops: list[str] = []

    async def prompt() -> None:
        stops.append(await on_a.prompt(sid, "go"))

    async with anyio.create_task_group() as tg:
        tg.start_soon(prompt)
        await _until(lambda: sid in a.live)
        await _until(lambda: len(a.model.requests) == 1)  # type: ignore[union-attr]
        for _ in range(2):  # the other worker, and this one (the in-process check)
            # (an in-process client runs one request at a time: a second one for this)
            for client in (on_b, connect(a)):
                with pytest.raises(RpcError) as busy:
                    await client.prompt(sid, "me too")
                assert busy.value.code == -32006
                assert busy.value.data == {"owner": "worker-a"}
        gate.set()
    assert stops == ["end_turn"]
    assert await on_b.prompt(sid, "now me") == "end_turn"  # released at the end


async def test_the_lease_is_released_on_error_and_on_cancel(
    connect: Callable[[Bridge], BridgeClient],
) -> None:
    store = MemoryStore()
    calls: list[int] = []
    cancelled = anyio.Event()

    async def model(request: ModelRequest) -> dict[str, Any]:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("the model backend fell over")
        await cancelled.wait()
        return TOOL_CALL

    a = _worker(store, "worker-a", model)
    client = connect(a)
    sid = await client.new_session()
    with pytest.raises(RpcError) as failed:
        await client.prompt(sid, "go")
    assert failed.value.code == -32603
    assert await store.claim(sid, "probe", 30) is None  # nobody holds it
    assert await store.release(sid, "probe") is True

    async def cancel() -> None:
        await _until(lambda: len(calls) == 2)
        await connect(a).cancel(sid)
        cancelled.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(cancel)
        assert await client.prompt(sid, "again") == "cancelled"
    assert await store.claim(sid, "probe", 30) is None


async def test_a_prompt_renews_its_lease_and_stops_when_it_loses_it(
    connect: Callable[[Bridge], BridgeClient],
) -> None:
    store = MemoryStore()
    lease = 0.6  # renewed every 0.2 s: room for a busy machine
    lost = anyio.Event()
    seen: list[bool] = []

    async def model(request: ModelRequest) -> dict[str, Any]:
        # held well past its first expiry: only renewals keep it
        await anyio.sleep(lease * 2)
        seen.append(await store.claim(request.session_id, "thief", lease) == "worker-a")
        # a stall long enough to lose it: the lease is taken from us
        assert await store.release(request.session_id, "worker-a") is True
        assert await store.claim(request.session_id, "thief", 30) is None
        with anyio.fail_after(10):
            await lost.wait()
        return TOOL_CALL

    a = _worker(store, "worker-a", model, lease_seconds=lease)
    client = connect(a)
    sid = await client.new_session()

    async def watch_cancel() -> None:
        await _until(lambda: sid in a.live)
        await a.live[sid].cancel.wait()
        lost.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch_cancel)
        assert await client.prompt(sid, "go") == "cancelled"  # stopped at its next seam
    assert seen == [True]
    assert await store.claim(sid, "worker-b", 30) == "thief"  # the end released nobody else's


async def test_an_item_queued_through_another_worker_wakes_the_running_prompt(
    two_stores: tuple[Store, Store], connect: Callable[[Bridge], BridgeClient]
) -> None:
    a_store, b_store = two_stores
    pushed, withdrawn = queue_items("CI is red on main", "never mind")
    sid_box: list[str] = []

    async def model(request: ModelRequest) -> Any:
        if request.turn > 0:
            return "Done."
        sid = sid_box[0]
        live = a.live[sid]
        await b_store.enqueue(sid, pushed)
        await b_store.enqueue(sid, withdrawn)
        # still inside the model call: only the watcher (woken by the store) can bring them
        await _until(lambda: pushed.id in live and withdrawn.id in live)
        assert await b_store.revoke(sid, withdrawn.id) == "revoked"
        return TOOL_CALL

    a = _worker(a_store, "worker-a", model)
    client = connect(a)
    sid = await client.new_session()
    sid_box.append(sid)
    assert await client.prompt(sid, "go") == "end_turn"
    first, second = a.model.requests  # type: ignore[union-attr]
    assert not _carries(first, "CI is red on main")
    assert _carries(second, "CI is red on main")
    # revoked through the other worker after the prompt held it: dropped, never delivered
    assert not _carries(second, "never mind")
    state = await b_store.load_session(sid)
    assert state is not None
    assert pushed.id in state.queue.delivered_ids
    assert withdrawn.id in state.queue.revoked_ids


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("0", "got 0"),
        ("-1", "got -1"),
        ("0.05", "got 0.05"),
        ("inf", "got inf"),
        ("nan", "got nan"),
        ('"30"', "got '30'"),
        ("true", "got True"),
    ],
)
def test_lease_seconds_is_validated(tmp_path: Path, value: str, fragment: str) -> None:
    path = tmp_path / "serve.toml"
    path.write_text(f"[server]\nlease_seconds = {value}\n")
    with pytest.raises(ConfigError) as bad:
        load_settings(path)
    assert "server.lease_seconds" in str(bad.value)
    assert fragment in str(bad.value)
    with pytest.raises(ConfigError):
        BridgeSettings(lease_seconds=-1)


def test_lease_seconds_comes_from_the_config(tmp_path: Path) -> None:
    path = tmp_path / "serve.toml"
    path.write_text("[server]\nlease_seconds = 2.5\n")
    assert load_settings(path).lease_seconds == 2.5
    assert load_settings(None).lease_seconds == 30


class FlakyStore(MemoryStore):
    """A store whose lease renewals, lease release and waits fail the first time each."""

    def __init__(self) -> None:
        super().__init__()
        self.failed: list[str] = []
        self.renewed = 0

    def _fail_once(self, what: str) -> None:
        if what not in self.failed:
            self.failed.append(what)
            raise StoreError(f"the store fell over ({what})")

    async def renew(self, session_id: str, owner: str, ttl_seconds: float) -> bool:
        self._fail_once("renew")
        held = await super().renew(session_id, owner, ttl_seconds)
        self.renewed += held
        return held

    async def release(self, session_id: str, owner: str) -> bool:
        self._fail_once("release")
        return await super().release(session_id, owner)

    async def wait_for_items(self, session_id: str, timeout: float, **kw: Any) -> bool:
        self._fail_once("wait_for_items")
        return await super().wait_for_items(session_id, timeout, **kw)


async def test_store_failures_under_the_lease_and_the_watcher_do_not_end_the_prompt(
    connect: Callable[[Bridge], BridgeClient], caplog: pytest.LogCaptureFixture
) -> None:
    store = FlakyStore()
    lease = 1.0  # renewed every third of a second: room for a busy machine

    async def model(request: ModelRequest) -> str:
        # a failed renewal, two good ones after it (past the first term), the watcher's retry
        await _until(lambda: store.renewed >= 2 and "wait_for_items" in store.failed)
        assert "renew" in store.failed
        assert await store.claim(request.session_id, "other", 30) == "worker-a"
        return "Done."

    a = _worker(store, "worker-a", model, lease_seconds=lease)
    client = connect(a)
    sid = await client.new_session()
    with caplog.at_level("WARNING", logger="agent_reminders.bridge"):
        assert await client.prompt(sid, "go") == "end_turn"
    assert sorted(store.failed) == ["release", "renew", "wait_for_items"]
    said = caplog.text
    assert "renewing the lease of worker-a failed" in said
    assert "watching the store failed" in said
    assert "releasing worker-a's lease failed" in said
    # the release failed: the lease runs out by itself, then the session is free
    await _until(lambda: _free(store, sid))


async def _free(store: Store, session_id: str) -> bool:
    if await store.claim(session_id, "probe", 30) is None:
        return await store.release(session_id, "probe")
    return False
