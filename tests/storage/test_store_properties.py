"""Property: any sequence of enqueue / drain / revoke on a store (memory, SQLite, Redis) gives
exactly what the in-memory ``InjectionQueue`` gives — rows, drained items, statuses, errors —
and a store reopened afterwards still agrees."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_reminders import AgentRemindersError, InjectionQueue, Session
from agent_reminders.loop import SEAMS
from agent_reminders.storage import MemoryData, MemoryStore, RedisStore, SQLiteStore, Store

MODES = ["interrupt_immediate", "interrupt", "finish_step", "steer", "audit_only", "queue"]

op = st.one_of(
    st.tuples(st.just("remind"), st.sampled_from(MODES), st.booleans()),
    st.tuples(st.just("inject"), st.sampled_from(MODES), st.booleans()),
    st.tuples(st.just("drain"), st.sampled_from(sorted(SEAMS)), st.booleans()),
    st.tuples(st.just("revoke"), st.integers(0, 30), st.booleans()),
    st.tuples(st.just("revoke_unknown"), st.just(""), st.booleans()),
    st.tuples(st.just("reopen"), st.just(""), st.booleans()),
)

_files = itertools.count()


def _memory(folder: Path) -> Callable[[], Store]:
    data = MemoryData()
    return lambda: MemoryStore(data=data)


def _sqlite(folder: Path) -> Callable[[], Store]:
    path = folder / f"p{next(_files)}.db"
    return lambda: SQLiteStore(path)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder for every example's file (a function-scoped tmp_path would be shared
    by all the examples of one test anyway)."""
    return tmp_path_factory.mktemp("properties")


def outcome(call: Callable[[], Any]) -> Any:
    try:
        return ("ok", call())
    except AgentRemindersError as exc:
        return ("error", type(exc).__name__, exc.code, getattr(exc, "reason", None))


async def aoutcome(call: Callable[[], Any]) -> Any:
    try:
        return ("ok", await call())
    except AgentRemindersError as exc:
        return ("error", type(exc).__name__, exc.code, getattr(exc, "reason", None))


async def run(factory: Callable[[], Store], ops: list[tuple[str, Any, bool]]) -> None:
    model = InjectionQueue()
    store = factory()
    await store.create_session(Session(session_id="s").state())
    used: list[str] = []
    counter = itertools.count()
    for name, arg, flag in ops:
        if name in ("remind", "inject"):
            n = next(counter)
            if name == "remind":
                payload = {"body": f"b{n}", "tags": ["t"] if flag else []}
                rid = model.remind(payload, mode=arg)
            else:
                rid = model.inject(f"u{n}", mode=arg)
            item = model.state().items[-1]
            assert item.id == rid
            assert await store.enqueue("s", item) == rid
            used.append(rid)
            if flag:  # re-sending an id is always refused, as the queue refuses it
                again = await aoutcome(partial(store.enqueue, "s", item))
                assert again == ("error", "ReminderError", "RMD-002", None)
        elif name == "drain":
            expected = model.drain(arg)
            assert await store.drain("s", SEAMS[arg]) == expected
        elif name in ("revoke", "revoke_unknown"):
            rid = used[arg % len(used)] if name == "revoke" and used else "never-used"
            want = outcome(partial(model.revoke, rid))
            got = await aoutcome(partial(store.revoke, "s", rid))
            assert got == want
        else:
            await store.close()
            store = factory()
        assert await store.pending("s") == model.pending()
    state = await store.load_session("s")
    assert state is not None
    assert state.queue == model.state()
    await store.close()


@pytest.mark.parametrize("backend", [_memory, _sqlite], ids=["memory", "sqlite"])
@settings(max_examples=100, deadline=None)
@given(ops=st.lists(op, max_size=25))
def test_a_store_behaves_like_the_injection_queue(
    backend: Callable[[Path], Callable[[], Store]],
    folder: Path,
    ops: list[tuple[str, Any, bool]],
) -> None:
    anyio.run(run, backend(folder), ops)


@settings(max_examples=60, deadline=None)
@given(ops=st.lists(op, max_size=25))
def test_a_redis_store_behaves_like_the_injection_queue(
    redis_url: str, ops: list[tuple[str, Any, bool]]
) -> None:
    prefix = f"property-{next(_files)}"  # each example on keys of its own
    anyio.run(run, lambda: RedisStore(redis_url, prefix=prefix), ops)
