"""A request that leaves out ``sessionId`` costs what it does: the store is asked for at most
two session ids (or only the token's own), never for every session it holds."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from agent_reminders import Session
from agent_reminders.bridge import Bridge
from agent_reminders.bridge.acp import Connection
from agent_reminders.bridge.auth import Scope
from agent_reminders.bridge.errors import RpcError
from agent_reminders.storage import MemoryStore, SQLiteStore, Store

pytestmark = pytest.mark.anyio


class Counting:
    """A store that counts what the bridge asks of it (everything else passes through)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.listed = 0
        self.asked: list[tuple[int, list[str] | None]] = []

    async def list_sessions(self) -> Any:
        self.listed += 1
        return await self.store.list_sessions()

    async def session_ids(self, *, limit: int, among: Iterable[str] | None = None) -> list[str]:
        self.asked.append((limit, None if among is None else list(among)))
        return await self.store.session_ids(limit=limit, among=among)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


async def _notify(method: str, params: dict[str, Any]) -> None:
    pass


async def _many(store: Store, count: int) -> None:
    for i in range(count):
        await store.create_session(Session(f"s{i:05d}").state())


async def test_a_request_without_session_id_never_lists_every_session() -> None:
    counting = Counting(MemoryStore())
    await _many(counting.store, 2_000)
    bridge = Bridge(counting)
    stdio = Connection(notify=_notify)
    for method in ("session/pending_injections", "session/remind"):
        with pytest.raises(RpcError) as refused:
            await bridge.methods[method]({"body": "x"}, stdio)
        assert refused.value.data is not None
        assert refused.value.data["reason"] == "session_id_required"
    assert counting.listed == 0
    assert counting.asked == [(3, None), (3, None)]  # two, and the reserved one


async def test_a_scoped_token_asks_only_about_its_own_sessions() -> None:
    counting = Counting(MemoryStore())
    await _many(counting.store, 500)
    bridge = Bridge(counting)
    watcher = Connection(
        notify=_notify,
        scope=Scope(token="w" * 20, sessions={"s00007", "gone"}),
        grant="advisory",  # type: ignore[arg-type]
    )
    reply = await bridge.methods["session/pending_injections"]({}, watcher)
    assert reply == {"pendingCount": 0, "injections": []}
    (asked,) = counting.asked
    assert asked[0] == 3
    assert sorted(asked[1] or []) == ["gone", "s00007"]
    await bridge.methods["session/remind"]({"body": "CI is red"}, watcher)
    assert (await counting.store.pending("s00007"))[0]["body"] == "CI is red"
    assert counting.listed == 0


async def test_one_session_among_thousands_on_sqlite_is_found_by_its_token(tmp_path: Any) -> None:
    async with SQLiteStore(tmp_path / "state.db") as store:
        await _many(store, 3_000)
        bridge = Bridge(store)
        admin = Connection(notify=_notify, scope=Scope(token="a" * 20, admin=True))
        with pytest.raises(RpcError):
            await bridge.methods["session/pending_injections"]({}, admin)
        mine = Connection(
            notify=_notify,
            scope=Scope(token="m" * 20, sessions={"s02999"}),
            grant="advisory",  # type: ignore[arg-type]
        )
        reply = await bridge.methods["session/pending_injections"]({}, mine)
        assert reply["pendingCount"] == 0
