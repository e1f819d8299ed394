"""Many workers on one Redis (docs/many-workers.md): real ``redis-server`` (the suite's own, on a
free port) and two or more real ``agent-reminders serve --store redis://...`` processes over
stdio, driven by ``BridgeClient``.

Each worker logs its model requests (``--request-log``), so a test sees which worker sent what
to its model; ``session/reminder_emitted`` notifications say which worker delivered which
reminder.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

import agent_reminders
from agent_reminders import BridgeConnectionError
from agent_reminders.bridge import BridgeClient, RpcError
from agent_reminders.storage import RedisStore

pytestmark = pytest.mark.anyio

SRC = str(Path(agent_reminders.__file__).resolve().parents[1])
SLOW = os.environ.get("AGENT_REMINDERS_SLOW") == "1"
BUSY = -32006
NOTED: list[dict[str, Any]] = [{"content": "Noted."}]
# one prompt = two model requests, the first one slow: a prompt that stays busy for a while
SLOW_FIRST: list[dict[str, Any]] = [
    {"content": "", "tool_calls": [{"id": "c1", "name": "look", "arguments": {}}]},
    {"content": "Done."},
]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}


@dataclass
class Worker:
    """One ``serve`` process on the shared Redis, and a client speaking to it."""

    name: str
    client: BridgeClient
    request_log: Path
    stderr: Path
    id: str = ""
    emitted: list[str] = field(default_factory=list)

    def requests(self) -> list[dict[str, Any]]:
        """The model requests this worker sent, in order."""
        if not self.request_log.exists():
            return []
        # A worker killed with SIGKILL may leave its last line half written: only lines that
        # end with a newline were written whole.
        complete = self.request_log.read_text().split("\n")[:-1]
        return [json.loads(line) for line in complete]

    def take_emitted(self) -> list[str]:
        """The ids of the reminders this worker announced as committed, in order (so far)."""
        for note in self.client.take_notifications():
            if note.method == "_session/reminder_emitted":
                self.emitted.append(note.params["reminder"]["reminderId"])
        return self.emitted

    async def busy_owner(self, session_id: str, text: str = "go") -> str:
        """Prompt ``session_id`` expecting ``-32006``; returns ``data.owner``."""
        with pytest.raises(RpcError) as refused:
            await self.client.prompt(session_id, text)
        assert refused.value.code == BUSY, refused.value
        assert refused.value.data is not None
        owner: str = refused.value.data["owner"]
        return owner

    def kill(self) -> None:
        """SIGKILL: no release, no last save."""
        assert self.client.process is not None
        self.client.process.kill()

    def stall(self) -> None:
        """SIGSTOP: alive but renewing nothing, like a frozen machine."""
        assert self.client.process is not None
        self.client.process.send_signal(signal.SIGSTOP)


@asynccontextmanager
async def worker(
    url: str,
    folder: Path,
    name: str,
    script: list[dict[str, Any]],
    *,
    lease_seconds: float = 30,
    delay_first: float = 0,
) -> AsyncIterator[Worker]:
    """Start ``agent-reminders serve --store URL`` with a scripted model looping ``script``
    (its first entry delayed by ``delay_first`` seconds) and ``lease_seconds``."""
    folder.mkdir(parents=True, exist_ok=True)
    entries = [dict(e) for e in script]
    if delay_first:
        entries[0]["delay_seconds"] = delay_first
    script_path = folder / f"{name}.jsonl"
    script_path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    config = folder / f"{name}.toml"
    config.write_text(f"[server]\nlease_seconds = {lease_seconds}\n")
    log, err = folder / f"{name}-requests.jsonl", folder / f"{name}.stderr"
    argv = [
        sys.executable, "-m", "agent_reminders.cli", "serve", "--store", url,
        "--model", f"scripted:{script_path}", "--config", str(config),
        "--request-log", str(log),
    ]  # fmt: skip
    with err.open("wb") as stderr:
        client = await BridgeClient.connect_stdio(argv, env=_env(), stderr=stderr)
    try:
        await client.initialize()
        # serve names itself on stderr before it reads its first frame
        first = err.read_text().splitlines()[0]
        assert first.startswith("worker "), first
        assert first.endswith(" (RedisStore)"), first
        yield Worker(name, client, log, err, id=first.split()[1])
    finally:
        with anyio.CancelScope(shield=True):
            await client.aclose()


@pytest.fixture
async def pair(fresh_redis_url: str, tmp_path: Path) -> AsyncIterator[tuple[Worker, Worker]]:
    """Workers A and B on one Redis, both answering "Noted." to every request."""
    async with (
        worker(fresh_redis_url, tmp_path, "a", NOTED) as a,
        worker(fresh_redis_url, tmp_path, "b", NOTED) as b,
    ):
        yield a, b


async def inside_model_call(url: str, session_id: str) -> None:
    """Wait until a worker has saved the session's first request, which it does just before
    that model call (its prompt is then inside the call; the request log shows a request
    only once it is answered)."""
    async with RedisStore(url) as store:
        with anyio.fail_after(30):
            while True:
                state = await store.load_session(session_id)
                if state is not None and state.turn >= 1:
                    return
                await anyio.sleep(0.01)


def carries(request: dict[str, Any], text: str) -> int:
    """How many of the request's messages contain ``text``."""
    return sum(text in json.dumps(m) for m in request["messages"])


async def test_a_reminder_sent_through_b_is_delivered_in_a_next_request_fifo(
    pair: tuple[Worker, Worker],
) -> None:
    a, b = pair
    sid = await a.client.new_session()
    sent = [
        await a.client.remind("one: through A", session_id=sid),
        await b.client.remind("two: through B", session_id=sid),
        await a.client.remind("three: through A", session_id=sid),
    ]
    # both workers read the one queue, in FIFO order whoever queued
    for w in pair:
        rows = await w.client.pending(sid)
        assert [r["reminderId"] for r in rows] == sent
        assert [r["position"] for r in rows] == [0, 1, 2]
    assert await a.client.prompt(sid, "go") == "end_turn"
    (request,) = a.requests()
    text = json.dumps(request["messages"])
    assert text.index("one: through A") < text.index("two: through B")
    assert text.index("two: through B") < text.index("three: through A")
    assert a.take_emitted() == sent
    assert await b.client.pending(sid) == []


async def test_a_revoke_on_one_worker_is_seen_by_the_other(pair: tuple[Worker, Worker]) -> None:
    a, b = pair
    sid = await a.client.new_session()
    dropped = await a.client.remind("dropped before delivery", session_id=sid)
    kept = await a.client.remind("kept", session_id=sid)
    assert await b.client.revoke(dropped, session_id=sid) == "revoked"
    assert [r["reminderId"] for r in await a.client.pending(sid)] == [kept]
    assert await a.client.revoke(dropped, session_id=sid) == "already_revoked"
    assert await b.client.prompt(sid, "go") == "end_turn"
    (request,) = b.requests()
    assert carries(request, "kept") == 1
    assert carries(request, "dropped before delivery") == 0
    with pytest.raises(RpcError) as late:  # delivered by B: A knows it too
        await a.client.revoke(kept, session_id=sid)
    assert late.value.code == -32602
    assert late.value.data is not None
    assert late.value.data["reason"] == "already_delivered"


async def test_busy_elsewhere_is_32006_with_the_owner_and_a_push_reaches_the_next_request(
    fresh_redis_url: str, tmp_path: Path
) -> None:
    async with (
        worker(fresh_redis_url, tmp_path, "a", SLOW_FIRST, delay_first=3) as a,
        worker(fresh_redis_url, tmp_path, "b", NOTED) as b,
    ):
        sid = await a.client.new_session()
        results: list[str] = []

        async def prompt_on_a() -> None:
            results.append(await a.client.prompt(sid, "fix the build"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(prompt_on_a)
            await inside_model_call(fresh_redis_url, sid)  # A is inside its slow first call
            assert await b.busy_owner(sid) == a.id
            assert a.id.count(":") == 2  # HOST:PID:RANDOM
            pushed = await b.client.remind("CI is red on main", session_id=sid)
            withdrawn = await b.client.remind("never mind this one", session_id=sid)
            assert await b.client.revoke(withdrawn, session_id=sid) == "revoked"
        assert results == ["end_turn"]
        first, second = a.requests()
        assert carries(first, "CI is red on main") == 0
        assert carries(second, "CI is red on main") == 1
        assert "never mind this one" not in json.dumps(a.requests())
        # (the failed tool call may bring a provider's reminder too)
        assert [r for r in a.take_emitted() if r in (pushed, withdrawn)] == [pushed]
        # the prompt is over: its lease is released, B may prompt at once
        assert await b.client.prompt(sid, "and now?") == "end_turn"


async def test_a_conversation_continued_on_another_worker_starts_from_the_stored_transcript(
    pair: tuple[Worker, Worker],
) -> None:
    a, b = pair
    sid = await a.client.new_session()
    await a.client.remind("deploys go through staging first", session_id=sid)
    assert await a.client.prompt(sid, "plan the deploy") == "end_turn"
    assert await b.client.prompt(sid, "go on") == "end_turn"
    (on_a,) = a.requests()
    (on_b,) = b.requests()
    answered = [*on_a["messages"], {"role": "assistant", "content": "Noted."}]
    assert on_b["messages"][: len(answered)] == answered
    assert on_b["messages"][len(answered)] == {"role": "user", "content": "go on"}
    # the committed directive is history now: B neither re-issues nor re-announces it
    assert carries(on_b, "deploys go through staging first") == 1
    assert len(a.take_emitted()) == 1
    assert b.take_emitted() == []


async def test_two_workers_racing_to_prompt_deliver_every_reminder_once(
    pair: tuple[Worker, Worker], fresh_redis_url: str
) -> None:
    a, b = pair
    sid = await a.client.new_session()
    sent: list[str] = []
    outcomes: list[str] = []
    refusals: list[tuple[int, Any, str]] = []  # (code, data, the other worker's id)

    async def prompt(w: Worker, other: Worker, n: int) -> None:
        try:
            outcomes.append(await w.client.prompt(sid, f"round {n}"))
        except RpcError as exc:
            refusals.append((exc.code, exc.data, other.id))
            outcomes.append("busy")

    rounds = 12 if SLOW else 6
    for n in range(rounds):
        for i in range(4):
            via = (a, b)[(n + i) % 2]
            sent.append(await via.client.remind(f"r{n}.{i}", session_id=sid))
        async with anyio.create_task_group() as tg:  # both at once: one lease
            tg.start_soon(prompt, a, b, n)
            tg.start_soon(prompt, b, a, n)
    assert outcomes.count("end_turn") >= rounds  # at least one prompt per round ran
    assert all(code == BUSY and data == {"owner": other} for code, data, other in refusals)
    assert outcomes.count("busy") + outcomes.count("end_turn") == 2 * rounds
    delivered = a.take_emitted() + b.take_emitted()
    assert sorted(delivered) == sorted(sent)  # every one, none twice
    assert await b.client.pending(sid) == []
    async with RedisStore(fresh_redis_url) as store:
        state = await store.load_session(sid)
    assert state is not None
    directive_ids = [i for m in state.transcript.messages for i in dict(m).get("directive_ids", ())]  # type: ignore[attr-defined]
    assert sorted(directive_ids) == sorted(sent)
    await assert_keys_hash_tagged(fresh_redis_url, {sid})


async def test_a_stalled_owner_s_lease_expires_and_the_session_goes_on_elsewhere(
    fresh_redis_url: str, tmp_path: Path
) -> None:
    """A worker that stops renewing but whose process lives (stopped, as a frozen machine
    is; a killed one of this host is taken over at once, ``test_lease_takeover.py``) keeps
    its session until the lease expires by itself; then it is killed, mid-prompt."""
    lease = 3
    async with (
        worker(fresh_redis_url, tmp_path, "a", NOTED, delay_first=120, lease_seconds=lease) as a,
        worker(fresh_redis_url, tmp_path, "b", NOTED, lease_seconds=lease) as b,
    ):
        sid = await a.client.new_session()
        before = await a.client.remind("queued before the crash", session_id=sid)

        async def doomed_prompt() -> None:
            with pytest.raises(BridgeConnectionError):
                await a.client.prompt(sid, "the prompt that dies")

        async with anyio.create_task_group() as tg:
            tg.start_soon(doomed_prompt)
            await inside_model_call(fresh_redis_url, sid)
            assert await b.busy_owner(sid) == a.id
            a.stall()
            during = await b.client.remind("queued while nobody prompts", session_id=sid)
            # the stalled worker renews nothing: its claim stands until it expires by itself
            assert await b.busy_owner(sid) == a.id
            refusals: list[tuple[int, Any]] = []
            with anyio.fail_after(lease * 10):
                while True:
                    try:
                        stop = await b.client.prompt(sid, "carry on")
                        break
                    except RpcError as exc:
                        refusals.append((exc.code, exc.data))
                        await anyio.sleep(0.1)
            a.kill()
        assert stop == "end_turn"
        assert all(refusal == (BUSY, {"owner": a.id}) for refusal in refusals)
        (request,) = b.requests()
        # A saved its turn before its model call: the transcript and the delivery survive
        assert carries(request, "the prompt that dies") == 1
        assert carries(request, "queued before the crash") == 1
        assert carries(request, "queued while nobody prompts") == 1
        assert b.take_emitted() == [during]  # `before` was committed (and saved) by A
        assert before not in b.emitted


async def assert_keys_hash_tagged(url: str, sessions: set[str]) -> None:
    """Every key the library wrote is a session's (``{session_id}`` hash tag) or the index's."""
    client = aioredis.Redis.from_url(url, decode_responses=True)
    try:
        keys = [k async for k in client.scan_iter("*")]
    finally:
        await client.aclose()
    assert keys
    for key in keys:
        tag = key.split("{", 1)[1].split("}", 1)[0]
        assert tag in sessions | {"index"}, key
        assert key.startswith(f"agent-reminders:{'i' if tag == 'index' else 's'}:{{{tag}}}:"), key


# -- kill -9 rounds (the crash test, on Redis) ---------------------------------------------


@dataclass
class Tally:
    """What the kill rounds saw (the figures of the closing note)."""

    rounds: int = 0
    acknowledged: int = 0
    unacknowledged_present: int = 0
    delivered: int = 0
    pending: int = 0
    requests: int = 0


async def kill_round(url: str, folder: Path, n: int, rng: random.Random, tally: Tally) -> None:
    """A worker takes a steady stream of reminders while it prompts; it is SIGKILLed at a
    random moment; then the store must hold every acknowledged reminder exactly once."""
    acked: list[str] = []
    tried: list[str] = []
    async with worker(url, folder, f"k{n}", SLOW_FIRST, lease_seconds=1) as w:
        sid = await w.client.new_session()

        async def stream() -> None:
            for i in range(100_000):
                rid = f"k{n}-{i}"
                tried.append(rid)
                mode = ("finish_step", "interrupt_immediate", "audit_only")[i % 3]
                try:
                    await w.client.remind(f"reminder {rid}", session_id=sid, id=rid, mode=mode)
                except BridgeConnectionError:  # the kill
                    return
                acked.append(rid)

        async def prompts() -> None:
            for i in range(100_000):
                try:
                    await w.client.prompt(sid, f"prompt {i}")
                except BridgeConnectionError:
                    return

        async with anyio.create_task_group() as tg:
            tg.start_soon(stream)
            tg.start_soon(prompts)
            await anyio.sleep(rng.uniform(0.02, 0.4))
            w.kill()
        tally.requests += len(w.requests())
    async with RedisStore(url) as store:
        state = await store.load_session(sid)
    assert state is not None
    pending = [i.id for i in state.queue.items]
    committed = [  # the queue's reminders (a provider may add its own for the failed tool)
        i
        for m in state.transcript.messages
        for i in dict(m).get("directive_ids", ())  # type: ignore[attr-defined]
        if i in tried
    ]
    assert len(pending) == len(set(pending))
    assert len(committed) == len(set(committed))  # never committed twice
    assert not set(pending) & state.queue.delivered_ids
    for rid in acked:
        assert (rid in pending) != (rid in state.queue.delivered_ids), rid
    # delivered into the transcript (a model request) or, audit_only, into its audit entries
    assert set(committed) <= state.queue.delivered_ids
    extra = set(pending) | state.queue.delivered_ids
    assert extra <= set(tried)  # nothing that was never sent
    tally.rounds += 1
    tally.acknowledged += len(acked)
    tally.unacknowledged_present += len(extra - set(acked))
    tally.delivered += len(state.queue.delivered_ids & set(acked))
    tally.pending += len(set(pending) & set(acked))


async def test_kill_9_rounds_lose_no_acknowledged_reminder(
    fresh_redis_url: str, tmp_path: Path
) -> None:
    rounds = 100 if SLOW else 30
    rng = random.Random(1106)
    tally = Tally()
    for n in range(rounds):
        await kill_round(fresh_redis_url, tmp_path / f"round{n}", n, rng, tally)
    print(f"\nkill -9 rounds on Redis: {tally}")
    assert tally.rounds == rounds
    assert tally.acknowledged > rounds  # the stream was running when the kills came
    assert tally.acknowledged == tally.delivered + tally.pending
    assert tally.delivered > 0
