"""What ``RedisStore`` adds to the contract: many workers (store objects with their own
connections) on one real ``redis-server`` — exactly-once FIFO drains, shared ids, hash-tagged
keys, pub/sub wake-ups, the event stream, atomic turns and leases as Redis keys."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
import redis.asyncio as aioredis
from redis.crc import key_slot

from agent_reminders import (
    ConfigError,
    EventRecord,
    QueueError,
    QueueItem,
    Reminder,
    ReminderError,
    Session,
    StoreError,
)
from agent_reminders.storage import RedisStore
from agent_reminders.testing.builders import assistant, user
from agent_reminders.testing.store_contract import conversation, queue_items

pytestmark = pytest.mark.anyio

SLOW = os.environ.get("AGENT_REMINDERS_SLOW") == "1"
NOW = ["interrupt_immediate"]


@pytest.fixture
async def raw(fresh_redis_url: str) -> AsyncIterator[aioredis.Redis]:
    """A plain redis-py client on the suite's own server, to look at what the store wrote."""
    client = aioredis.Redis.from_url(fresh_redis_url, decode_responses=True)
    yield client
    await client.aclose()


@pytest.fixture
async def workers(fresh_redis_url: str) -> AsyncIterator[tuple[RedisStore, RedisStore]]:
    """Two workers: two store objects, two connection pools, one server."""
    a, b = RedisStore(fresh_redis_url), RedisStore(fresh_redis_url)
    yield a, b
    await a.close()
    await b.close()


async def test_two_workers_draining_deliver_each_item_once_in_fifo_order(
    workers: tuple[RedisStore, RedisStore],
) -> None:
    a, b = workers
    await a.create_session(Session(session_id="s1").state())
    rounds, size = (100, 60) if SLOW else (15, 40)
    for round_no in range(rounds):
        items = queue_items(*(f"r{round_no}-{i}" for i in range(size)), mode="interrupt")
        order = {item.id: i for i, item in enumerate(items)}
        drained: dict[str, list[list[str]]] = {"a": [], "b": []}
        done = anyio.Event()

        async def produce(items: list[QueueItem], done: anyio.Event) -> None:
            for i, item in enumerate(items):
                await (a if i % 2 else b).enqueue("s1", item)  # both workers take reminders
            done.set()

        async def consume(batches: list[list[str]], store: RedisStore, done: anyio.Event) -> None:
            while True:
                finished = done.is_set()
                got = [i.id for i in await store.drain("s1", NOW)]
                if got:
                    batches.append(got)
                if finished:
                    return
                await anyio.sleep(0)

        async with anyio.create_task_group() as tg:
            tg.start_soon(produce, items, done)
            tg.start_soon(consume, drained["a"], a, done)
            tg.start_soon(consume, drained["b"], b, done)
        every = [i for batches in drained.values() for batch in batches for i in batch]
        assert sorted(every, key=order.__getitem__) == [item.id for item in items]
        assert len(every) == len(set(every)) == size
        for batches in drained.values():
            flat = [order[i] for batch in batches for i in batch]
            assert flat == sorted(flat)  # each worker sees the items in queue order
    assert await a.pending("s1") == []


async def test_fifo_across_workers(workers: tuple[RedisStore, RedisStore]) -> None:
    a, b = workers
    await a.create_session(Session(session_id="s1").state())
    items = queue_items(*(f"r{i}" for i in range(12)), mode="steer")
    taken: list[str] = []
    for step, item in enumerate(items):
        await (a, b)[step % 2].enqueue("s1", item)
        if step % 5 == 4:
            taken += [i.id for i in await (b, a)[step % 2].drain("s1", ["steer"])]
    assert [r["id"] for r in await a.pending("s1")] == [i.id for i in items[len(taken) :]]
    taken += [i.id for i in await b.drain("s1", ["finish_step"])]
    assert taken == [i.id for i in items]


async def test_ids_are_shared_between_workers(workers: tuple[RedisStore, RedisStore]) -> None:
    a, b = workers
    await a.create_session(Session(session_id="s1").state())
    keep, gone = queue_items("keep", "gone")
    await b.enqueue("s1", keep)
    await b.enqueue("s1", gone)
    assert [r["reminderId"] for r in await a.pending("s1")] == [keep.id, gone.id]
    assert await a.revoke("s1", gone.id) == "revoked"
    assert await b.revoke("s1", gone.id) == "already_revoked"
    assert [i.id for i in await a.drain("s1", ["finish_step"])] == [keep.id]
    with pytest.raises(QueueError) as caught:
        await b.revoke("s1", keep.id)
    assert caught.value.reason == "already_delivered"
    for item in (keep, gone):
        with pytest.raises(ReminderError):
            await b.enqueue("s1", item)
    loaded = await b.load_session("s1")
    assert loaded is not None
    assert (loaded.queue.delivered_ids, loaded.queue.revoked_ids) == ({keep.id}, {gone.id})  # type: ignore[comparison-overlap]


async def test_revoke_racing_a_drain_settles_each_item_once(
    workers: tuple[RedisStore, RedisStore],
) -> None:
    a, b = workers
    await a.create_session(Session(session_id="s1").state())
    items = queue_items(*(f"r{i}" for i in range(80)), mode="interrupt")
    for item in items:
        await a.enqueue("s1", item)
    revoked: list[str] = []
    drained: list[str] = []
    refusals: list[str] = []

    async def revoke_all() -> None:
        for item in reversed(items):
            try:
                if await b.revoke("s1", item.id) == "revoked":
                    revoked.append(item.id)
            except QueueError as exc:
                refusals.append(exc.reason)

    async def drain_some() -> None:
        for _ in range(40):
            drained.extend(i.id for i in await a.drain("s1", NOW))
            await anyio.sleep(0)

    async with anyio.create_task_group() as tg:
        tg.start_soon(revoke_all)
        tg.start_soon(drain_some)
    drained.extend(i.id for i in await a.drain("s1", NOW))
    assert sorted(revoked + drained) == sorted(i.id for i in items)
    assert not set(revoked) & set(drained)
    assert set(refusals) <= {"already_delivered"}
    loaded = await a.load_session("s1")
    assert loaded is not None
    assert loaded.queue.revoked_ids == set(revoked)
    assert loaded.queue.delivered_ids == set(drained)


async def test_every_key_of_a_session_is_hash_tagged(
    workers: tuple[RedisStore, RedisStore], raw: aioredis.Redis
) -> None:
    a, _ = workers
    sessions = ["s1", "3f2a9c0e4b7d4e1f8a6b5c4d3e2f1a0b", "with:colons and spaces"]
    for sid in sessions:
        await a.create_session(conversation(sid).state())
        [item] = queue_items(f"for {sid}", mode="interrupt")
        await a.enqueue(sid, item)
        await a.append_messages(sid, [user("more")])  # type: ignore[list-item]
        await a.append_events(
            sid, [EventRecord(seq=1, topic="loop", kind="loop.checkpoint", payload={})]
        )
        assert await a.claim(sid, "worker-a", 30) is None
    keys = {k async for k in raw.scan_iter(match="*")}
    index = set(a.index_keys())
    assert index <= keys
    by_session = {sid: set(a.session_keys(sid).values()) for sid in sessions}
    assert keys - index == set().union(*by_session.values())
    for sid, own in by_session.items():
        assert all(f"{{{sid}}}" in key for key in own)
        assert len({key_slot(key.encode()) for key in own}) == 1  # one Cluster slot
        types = {key.rsplit(":", 1)[1]: await raw.type(key) for key in own}
        assert types == {
            "session": "hash",
            "messages": "list",
            "queue": "list",
            "items": "hash",
            "modes": "hash",
            "ids": "hash",
            "events": "stream",
            "lease": "string",
            "audit": "list",  # conversation() has an audit entry
        }


async def test_a_waiting_worker_is_woken_by_pubsub(
    fresh_redis_url: str, raw: aioredis.Redis
) -> None:
    """The waiter's safety poll and timeout are an hour: only the message published by the
    other worker's enqueue can end its wait (the guard below only keeps a broken build from
    hanging the suite)."""
    waiter = RedisStore(fresh_redis_url, poll_interval=3600)
    other = RedisStore(fresh_redis_url)
    await other.create_session(Session(session_id="s1").state())
    channel = waiter.wake_channel("s1")
    woke = anyio.Event()
    result: list[bool] = []

    async def wait() -> None:
        result.append(await waiter.wait_for_items("s1", 3600, modes=NOW))
        woke.set()

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            tg.start_soon(wait)
            while (await raw.pubsub_numsub(channel))[0][1] < 1:
                await anyio.sleep(0.01)
            assert not woke.is_set()  # subscribed and waiting: nothing is queued yet
            [item] = queue_items("wake up", mode="interrupt")
            await other.enqueue("s1", item)
            await woke.wait()
    assert result == [True]
    assert (await raw.pubsub_numsub(channel))[0][1] == 0  # the waiter unsubscribed
    await waiter.close()
    await other.close()


async def test_the_event_log_is_a_stream(
    workers: tuple[RedisStore, RedisStore], raw: aioredis.Redis
) -> None:
    a, b = workers
    await a.create_session(Session(session_id="s1").state())
    records = [
        EventRecord(seq=0, topic="loop", kind="loop.checkpoint", payload={"n": i}) for i in range(3)
    ]
    await a.append_events("s1", records[:2])
    await b.append_events("s1", records[2:])  # another worker continues the numbering
    entries = await raw.xrange(a.session_keys("s1")["events"])
    assert entries is not None
    assert [entry_id for entry_id, _ in entries] == ["1-0", "2-0", "3-0"]
    assert entries[2][1] == {"topic": "loop", "kind": "loop.checkpoint", "payload": '{"n":2}'}
    assert [r.seq for r in await b.read_events("s1", after_seq=1)] == [2, 3]


async def test_a_turn_is_saved_atomically(workers: tuple[RedisStore, RedisStore]) -> None:
    """A reader on another worker sees either the turn before or the turn after a save —
    never the new messages with the old head, or half a queue."""
    a, b = workers
    s = Session(session_id="s1", system="sys")
    await a.create_session(s.state())
    saved = {s.state().to_json()}
    seen: list[str] = []
    done = anyio.Event()

    async def write() -> None:
        for turn in range(40 if SLOW else 15):
            s.append(user(f"q{turn}"))  # type: ignore[arg-type]
            s.queue.remind({"body": f"note {turn}"}, mode="queue")
            s.prepare_request()
            s.append(assistant(f"a{turn}"))  # type: ignore[arg-type]
            s.post_turn(turn)
            saved.add(s.state().to_json())
            await a.save_session(s.state())
            await anyio.sleep(0)
        done.set()

    async def read() -> None:
        while not done.is_set():
            state = await b.load_session("s1")
            assert state is not None
            seen.append(state.to_json())
            await anyio.sleep(0)

    async with anyio.create_task_group() as tg:
        tg.start_soon(write)
        tg.start_soon(read)
    assert seen
    assert set(seen) <= saved
    final = await b.load_session("s1")
    assert final is not None
    assert final.to_json() == s.state().to_json()


async def test_two_workers_saving_one_session_lose_no_queued_item(
    workers: tuple[RedisStore, RedisStore],
) -> None:
    a, b = workers
    base = Session(session_id="s1")
    await a.create_session(base.state())
    left, right = Session.from_state(base.state()), Session.from_state(base.state())
    ids = []
    for n in range(10):
        ids.append(left.queue.remind({"body": f"left {n}"}))
        ids.append(right.queue.remind({"body": f"right {n}"}))

    async def save(store: RedisStore, session: Session) -> None:
        for _ in range(5):
            await store.save_session(session.state())
            await anyio.sleep(0)

    async with anyio.create_task_group() as tg:
        tg.start_soon(save, a, left)
        tg.start_soon(save, b, right)
    pending = {r["id"] for r in await a.pending("s1")}
    assert pending == set(ids)


async def test_a_lease_is_a_key_that_expires_in_redis(
    workers: tuple[RedisStore, RedisStore], raw: aioredis.Redis
) -> None:
    a, b = workers
    await a.create_session(Session(session_id="s1").state())
    key = a.session_keys("s1")["lease"]
    assert await a.claim("s1", "worker-a", 30) is None
    assert await raw.get(key) == "worker-a"
    assert 0 < await raw.pttl(key) <= 30_000
    assert await a.renew("s1", "worker-a", 120) is True
    assert 30_000 < await raw.pttl(key) <= 120_000
    assert await b.claim("s1", "worker-b", 30) == "worker-a"
    assert await a.release("s1", "worker-a") is True
    assert await raw.exists(key) == 0


async def test_writers_racing_on_one_session_keep_every_write(
    workers: tuple[RedisStore, RedisStore],
) -> None:
    """Appends and reminder saves read, then write: a write that lost the race reads again
    (the script checks that what it read is unchanged), so none is lost or half applied."""
    a, b = workers
    await a.create_session(Session(session_id="s1").state())
    per_worker = 15

    async def append(store: RedisStore, name: str) -> None:
        for n in range(per_worker):
            await store.append_messages("s1", [user(f"{name}{n}")])  # type: ignore[list-item]

    async def remind(store: RedisStore, name: str) -> None:
        for n in range(per_worker):
            await store.save_reminders("s1", [Reminder(id=f"{name}{n}", body=f"{name} {n}")])

    async with anyio.create_task_group() as tg:
        for store, name in ((a, "a"), (b, "b")):
            tg.start_soon(append, store, name)
            tg.start_soon(remind, store, name)
    loaded = await a.load_session("s1")
    assert loaded is not None
    texts = [m["content"] for m in loaded.transcript.messages]
    assert sorted(texts) == sorted(f"{w}{n}" for w in "ab" for n in range(per_worker))
    assert [t for t in texts if t[0] == "a"] == [f"a{n}" for n in range(per_worker)]
    [info] = await b.list_sessions()
    assert info.message_count == 2 * per_worker
    assert [r.id for r in loaded.transcript.reminders] in (
        [f"a{per_worker - 1}"],
        [f"b{per_worker - 1}"],
    )


async def test_damaged_stored_data_is_one_store_error(
    workers: tuple[RedisStore, RedisStore], raw: aioredis.Redis
) -> None:
    a, _ = workers
    await a.create_session(Session(session_id="s1").state())
    [item] = queue_items("x")
    await a.enqueue("s1", item)
    keys = a.session_keys("s1")
    await raw.hset(keys["items"], item.id, '{"kind":"reminder","mode":"finish_step","payload":{}}')
    with pytest.raises(StoreError) as caught:
        await a.pending("s1")
    assert item.id in str(caught.value)
    assert a.url in str(caught.value)
    await raw.hset(keys["session"], "head", "{not json")
    with pytest.raises(StoreError) as caught:
        await a.load_session("s1")
    assert "'s1' cannot be read" in str(caught.value)


@pytest.mark.parametrize(
    "url", ["", "  ", "http://127.0.0.1:6390", "127.0.0.1:6390", "redis://[::1/0"]
)
def test_a_url_that_is_not_redis_is_a_config_error(url: str) -> None:
    with pytest.raises(ConfigError):
        RedisStore(url)


@pytest.mark.parametrize("poll", [0, -1.0])
def test_the_safety_poll_must_be_positive(poll: float) -> None:
    with pytest.raises(ConfigError):
        RedisStore("redis://127.0.0.1:6390/0", poll_interval=poll)


def test_the_password_never_shows() -> None:
    store = RedisStore("redis://user:s3cret@127.0.0.1:6390/2")
    assert store.url == "redis://user:***@127.0.0.1:6390/2"
    assert "s3cret" not in repr(store)
    assert RedisStore("unix:///tmp/redis.sock?db=1").url == "unix:///tmp/redis.sock?db=1"


async def test_a_wait_with_nothing_queued_ends_at_its_timeout(
    fresh_redis_url: str, raw: aioredis.Redis
) -> None:
    store = RedisStore(fresh_redis_url, poll_interval=0.05)
    await store.create_session(Session(session_id="s1").state())
    [item] = queue_items("audit", mode="audit_only")
    await store.enqueue("s1", item)
    # only an audit item: a wait for interrupts looks, waits, looks again, and gives up
    assert await store.wait_for_items("s1", 0.2, modes=NOW) is False
    assert await store.wait_for_items("s1", 0, modes=NOW) is False
    assert await store.wait_for_items("s1", 0.2) is True
    assert (await raw.pubsub_numsub(store.wake_channel("s1")))[0][1] == 0
    await store.close()
    with pytest.raises(StoreError):
        await store.wait_for_items("s1", 1)


def test_without_a_redis_server_binary_the_redis_tests_skip_saying_why() -> None:
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}  # no redis-server on it
    env["PYTHONPATH"] = os.pathsep.join([str(root / "src"), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", "--no-header",
         f"{Path(__file__).resolve()}::test_fifo_across_workers"],
        capture_output=True, text=True, timeout=300, check=False, cwd=root, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 skipped" in proc.stdout
    assert "no redis-server binary on PATH" in proc.stdout


async def test_a_save_sends_only_the_rows_a_turn_added(
    workers: tuple[RedisStore, RedisStore], raw: aioredis.Redis
) -> None:
    """The commands a turn's save runs (counted by the server, inside scripts too): one
    RPUSH per new message and audit entry, no DEL — the stored history is not sent again."""
    a, _ = workers
    s = Session(session_id="s1")
    for n in range(200):
        s.append(user(f"q{n}"))  # type: ignore[arg-type]
        s.append(assistant(f"a{n}"))  # type: ignore[arg-type]
    await a.create_session(s.state())
    loaded = await a.load_session("s1")
    assert loaded is not None
    s = Session.from_state(loaded)
    s.queue.remind({"body": "for the record"}, mode="audit_only")
    s.run_seam("loop_exit")
    s.append(user("one more"))  # type: ignore[arg-type]
    s.append(assistant("done"))  # type: ignore[arg-type]
    await raw.config_resetstat()
    await a.save_session(s.state())
    stats = await raw.info("commandstats")
    assert stats["cmdstat_rpush"]["calls"] == 2 + 1  # two messages, one audit entry
    assert "cmdstat_del" not in stats
    assert (await a.load_session("s1")) == s.state()
