"""The one contract test suite every ``Store`` backend passes, unchanged (docs/storage.md,
"Testing a backend").

Subclass :class:`StoreContract` in a test module, name the subclass ``Test…`` and give it a
``store_factory`` fixture: a callable that opens a *new* store object on the *same* storage
each time it is called (the same file, the same server, the same ``MemoryData``) and may be
called from any thread. The suite uses it to restart a store (close, then open again) and to
run two store objects at once. Needs ``pytest`` and ``anyio`` (the async tests run with
anyio's pytest plugin).

Example (``tests/storage/test_my_store.py``)::

    import pytest
    from agent_reminders.testing.store_contract import StoreContract, StoreFactory

    class TestMyStore(StoreContract):
        @pytest.fixture
        def store_factory(self, tmp_path) -> StoreFactory:
            return lambda: MyStore(tmp_path / "state.db")
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, cast

import anyio
import pytest

from .._core.errors import ConfigError, QueueError, ReminderError, StoreError
from .._core.events import EventRecord
from .._core.records import DeliveryMode, Message, Reminder
from ..queue import InjectionQueue, QueueItem
from ..session import Session, SessionState
from ..storage import SessionExistsError, Store, UnknownSessionError
from .builders import assistant, tool_call, tool_result, user
from .queue_contract import StoreQueueContract

__all__ = ["StoreContract", "StoreFactory", "conversation", "queue_items"]

StoreFactory = Callable[[], "Store | Awaitable[Store]"]

NOW = frozenset({DeliveryMode.INTERRUPT_IMMEDIATE})
STEP = frozenset({DeliveryMode.INTERRUPT_IMMEDIATE, DeliveryMode.FINISH_STEP})
AUDIT = frozenset({DeliveryMode.AUDIT_ONLY})


def _user(text: str) -> Message:
    return cast(Message, user(text))


def _assistant(text: str, *, tool_calls: list[dict[str, Any]] | None = None) -> Message:
    return cast(Message, assistant(text, tool_calls=tool_calls))


def _tool_result(call_id: str, content: str) -> Message:
    return cast(Message, tool_result(call_id, content))


def conversation(session_id: str = "s1") -> Session:
    """A session in the middle of a conversation, generators off: several turns, a committed
    envelope, a pending reminder, queued items of every mode, a delivered id, a revoked id,
    an audit entry and an open tool call.

    Example:
        >>> s = conversation()
        >>> s.turn, len(s.queue.pending()) > 0, bool(s.transcript.reminders)
        (2, True, True)
    """
    s = Session(session_id=session_id, system="You are terse.")
    s.append(_user("fix the failing test"))
    s.inject({"body": "Run the tests before you answer.", "ttl_turns": 3, "tags": ["ci"]})
    s.prepare_request()
    s.append(_assistant("Looking.", tool_calls=[tool_call("c1", "pytest", path="tests")]))
    s.append(_tool_result("c1", "1 failed"))
    s.queue.remind({"body": "CI is red on main", "tags": ["ci"]}, mode="interrupt")
    s.run_seam("iteration_start")  # delivers the interrupt
    s.queue.remind({"body": "audit me", "_meta": {"from": "editor"}}, mode="audit_only")
    s.run_seam("loop_exit")  # an audit entry
    gone = s.queue.remind({"body": "never mind"}, mode="steer")
    s.queue.revoke(gone)
    s.prepare_request()
    s.append(_assistant("Patching.", tool_calls=[tool_call("c2", "edit", file="a.py")]))
    s.queue.inject("also update the changelog", mode="steer")
    s.queue.remind({"body": "the user is back", "ttl_turns": 1}, mode="finish_step")
    s.queue.remind({"body": "final audit"}, mode="queue")
    return s


def queue_items(
    *bodies: str, mode: str = "finish_step", user_text: bool = False
) -> list[QueueItem]:
    """Queue items made by ``InjectionQueue`` itself (reminders, or user messages).

    Example:
        >>> [i.payload["body"] for i in queue_items("a", "b")]
        ['a', 'b']
    """
    q = InjectionQueue()
    for body in bodies:
        if user_text:
            q.inject(body, mode=mode)
        else:
            q.remind({"body": body}, mode=mode)
    return list(q.state().items)


def _ids(items: Iterable[QueueItem]) -> list[str]:
    return [i.id for i in items]


class StoreContract(StoreQueueContract):
    """The contract suite (with the queue's case table of ``queue_contract``); subclass it
    with a ``store_factory`` fixture (see the module)."""

    @pytest.fixture
    def store_factory(self) -> StoreFactory:
        """Override: open a new store object on the same storage at each call."""
        raise NotImplementedError("define a store_factory fixture in the subclass")

    async def open(self, factory: StoreFactory) -> Store:
        """Call the factory (it may return a store or an awaitable of one)."""
        made = factory()
        store = await made if isinstance(made, Awaitable) else made
        assert isinstance(store, Store), f"{type(store).__name__} does not implement Store"
        return store

    async def reopen(self, store: Store, factory: StoreFactory) -> Store:
        """A restart: close ``store`` and open the storage again."""
        await store.close()
        return await self.open(factory)

    async def fresh(self, factory: StoreFactory, session_id: str = "s1") -> Store:
        """A store holding one empty session ``session_id``."""
        store = await self.open(factory)
        await store.create_session(Session(session_id=session_id).state())
        return store

    # -- session records --------------------------------------------------------------------

    async def test_create_and_load_round_trip_mid_conversation(
        self, store_factory: StoreFactory
    ) -> None:
        state = conversation().state()
        assert state.queue.items
        assert state.queue.delivered_ids
        assert state.queue.revoked_ids
        store = await self.open(store_factory)
        await store.create_session(state)
        assert await store.load_session("s1") == state
        store = await self.reopen(store, store_factory)
        loaded = await store.load_session("s1")
        assert loaded == state
        assert loaded is not None
        assert loaded.to_json() == state.to_json()
        restored = Session.from_state(loaded)
        assert restored.prepare_request() == Session.from_state(state).prepare_request()
        await store.close()

    async def test_unknown_session(self, store_factory: StoreFactory) -> None:
        store = await self.fresh(store_factory)
        assert await store.load_session("nope") is None
        item = queue_items("x")[0]
        calls: list[Callable[[], Awaitable[object]]] = [
            lambda: store.enqueue("nope", item),
            lambda: store.pending("nope"),
            lambda: store.drain("nope", STEP),
            lambda: store.revoke("nope", item.id),
            lambda: store.append_events("nope", []),
            lambda: store.read_events("nope"),
            lambda: store.save_session(Session(session_id="nope").state()),
            lambda: store.append_messages("nope", [_user("hi")]),
            lambda: store.save_reminders("nope", []),
            lambda: store.wait_for_items("nope", 0),
            lambda: store.claim("nope", "w1", 30),
            lambda: store.renew("nope", "w1", 30),
            lambda: store.release("nope", "w1"),
            lambda: store.lease("nope"),
        ]
        for call in calls:
            with pytest.raises(UnknownSessionError) as caught:
                await call()
            assert caught.value.reason == "unknown_session"
            assert isinstance(caught.value, QueueError)
        await store.close()

    async def test_create_twice_is_refused(self, store_factory: StoreFactory) -> None:
        store = await self.fresh(store_factory)
        with pytest.raises(SessionExistsError):
            await store.create_session(Session(session_id="s1", system="other").state())
        loaded = await store.load_session("s1")
        assert loaded is not None
        assert loaded.system == ""
        await store.close()

    async def test_each_turn_saved_keeps_the_earlier_messages(
        self, store_factory: StoreFactory
    ) -> None:
        s = Session(session_id="s1", system="sys")
        store = await self.open(store_factory)
        await store.create_session(s.state())
        for turn in range(4):
            s.append(_user(f"question {turn}"))
            s.prepare_request()
            s.append(_assistant(f"answer {turn}"))
            s.post_turn(turn)
            await store.save_session(s.state())
            assert await store.load_session("s1") == s.state()
        [info] = await store.list_sessions()
        assert (info.message_count, info.turn) == (len(s.transcript), s.turn) == (8, 4)
        store = await self.reopen(store, store_factory)
        loaded = await store.load_session("s1")
        assert loaded is not None
        assert [m["content"] for m in loaded.transcript.messages][:2] == [
            "question 0",
            "answer 0",
        ]
        await store.close()

    async def test_a_compacted_history_replaces_the_stored_one(
        self, store_factory: StoreFactory
    ) -> None:
        s = Session(session_id="s1")
        for turn in range(3):
            s.append(_user(f"q{turn}"))
            s.append(_assistant(f"a{turn}"))
        store = await self.open(store_factory)
        await store.create_session(s.state())
        s.compact(keep_last=2)
        s.append(_user("after"))
        s.append(_user("and more"))
        s.append(_user("longer than before"))
        await store.save_session(s.state())
        assert await store.load_session("s1") == s.state()
        store = await self.reopen(store, store_factory)
        assert await store.load_session("s1") == s.state()
        await store.close()

    async def test_save_merges_the_queue(self, store_factory: StoreFactory) -> None:
        s = conversation()
        store = await self.open(store_factory)
        await store.create_session(s.state())
        # another process queues something while this one works on its copy
        [late] = queue_items("queued meanwhile", mode="interrupt")
        await store.enqueue("s1", late)
        s.run_seam("iteration_start")  # the local copy delivers its own items
        local = s.queue.remind({"body": "queued in process"})
        await store.save_session(s.state())
        loaded = await store.load_session("s1")
        assert loaded is not None
        assert _ids(loaded.queue.items) == [
            *_ids(s.state().queue.items[:-1]),
            late.id,
            local,
        ]
        assert s.queue.delivered_ids <= loaded.queue.delivered_ids
        assert loaded.queue.revoked_ids == s.queue.revoked_ids
        # a saved state never brings back what the store already delivered
        drained = await store.drain("s1", NOW)
        assert _ids(drained) == [late.id]
        await store.save_session(s.state())
        loaded = await store.load_session("s1")
        assert loaded is not None
        assert late.id in loaded.queue.delivered_ids
        assert late.id not in _ids(loaded.queue.items)
        await store.close()

    async def test_every_save_stores_the_state_whatever_happened_since(
        self, store_factory: StoreFactory
    ) -> None:
        """A save writes only what a turn added when the store object knows the stored rows
        are those it last wrote or read; after a load, another writer, compaction or a
        restart it still stores exactly the state."""
        store, other = await self.open(store_factory), await self.open(store_factory)
        s = conversation()
        await store.create_session(s.state())
        s.append(_tool_result("c2", "edited"))

        async def turn(n: int, who: Store) -> None:
            s.queue.remind({"body": f"for the record {n}"}, mode="audit_only")
            s.run_seam("loop_exit")  # an audit entry every turn
            s.append(_user(f"question {n}"))
            s.prepare_request()
            s.append(_assistant(f"answer {n}"))
            s.post_turn(s.turn)
            await who.save_session(s.state())
            for reader in (store, other):
                loaded = await reader.load_session("s1")
                assert loaded is not None
                # the queue is merged (another writer's deliveries are kept); the rest is s
                assert loaded.to_document(queue=False) == s.state().to_document(queue=False)
                assert s.queue.delivered_ids <= loaded.queue.delivered_ids

        for n in range(3):
            await turn(n, store)
        # another store object writes the session in between
        await other.append_messages("s1", [_user("from another process")])
        await turn(3, store)  # that message is not in the state: the history is replaced
        await other.save_reminders("s1", [Reminder(id="r-other", body="Elsewhere.")])
        await turn(4, store)
        # another writer saves a state with as many audit entries, but other ones
        elsewhere = await other.load_session("s1")
        assert elsewhere is not None
        t = Session.from_state(elsewhere)
        t.queue.remind({"body": "not in this process"}, mode="audit_only")
        t.run_seam("loop_exit")
        await other.save_session(t.state())
        await turn(5, store)
        assert all(e["reminder"]["body"] != "not in this process" for e in s.transcript.audit)
        s.compact(keep_last=2)
        await turn(6, store)
        # a restart: the state loaded by a store object that remembers nothing goes on
        store = await self.reopen(store, store_factory)
        loaded = await store.load_session("s1")
        assert loaded is not None
        assert loaded.to_document(queue=False) == s.state().to_document(queue=False)
        s = Session.from_state(loaded)
        for n in range(7, 9):
            await turn(n, store)
        await turn(9, other)  # the other object's first save of this state
        [info] = await store.list_sessions()
        assert (info.message_count, info.turn) == (len(s.transcript), s.turn)
        await store.close()
        await other.close()

    async def test_append_messages_and_save_reminders(self, store_factory: StoreFactory) -> None:
        s = conversation()
        store = await self.open(store_factory)
        await store.create_session(s.state())
        await store.append_messages("s1", [_tool_result("c2", "edited"), _user("thanks")])
        reminder = Reminder(id="r-new", body="Keep the diff small.", ttl_turns=2)
        await store.save_reminders("s1", [reminder])
        loaded = await store.load_session("s1")
        assert loaded is not None
        assert [m["role"] for m in loaded.transcript.messages[-2:]] == ["tool", "user"]
        assert loaded.transcript.messages[:-2] == s.transcript.messages
        assert loaded.transcript.reminders == (reminder,)
        assert loaded.transcript.audit == s.transcript.audit
        with pytest.raises(TypeError):
            await store.append_messages("s1", "not a list")  # type: ignore[arg-type]
        store = await self.reopen(store, store_factory)
        assert await store.load_session("s1") == loaded
        await store.close()

    async def test_latest_session_and_list(self, store_factory: StoreFactory) -> None:
        store = await self.open(store_factory)
        assert await store.latest_session() is None
        assert await store.list_sessions() == []
        for sid in ("a", "b", "c"):
            await store.create_session(Session(session_id=sid).state())
        assert await store.latest_session() == "c"
        await store.enqueue("a", queue_items("wake a")[0])
        assert await store.latest_session() == "a"
        infos = await store.list_sessions()
        assert [i.session_id for i in infos] == ["a", "c", "b"]
        assert all(i.created_at <= i.updated_at for i in infos)
        store = await self.reopen(store, store_factory)
        assert await store.latest_session() == "a"
        await store.close()

    async def test_session_ids_returns_at_most_limit(self, store_factory: StoreFactory) -> None:
        store = await self.open(store_factory)
        assert await store.session_ids(limit=2) == []
        await store.create_session(Session(session_id="a").state())
        assert await store.session_ids(limit=2) == ["a"]
        for sid in ("b", "c", "d"):
            await store.create_session(Session(session_id=sid).state())
        some = await store.session_ids(limit=2)
        assert len(some) == 2
        assert set(some) <= {"a", "b", "c", "d"}
        assert await store.session_ids(limit=0) == []
        assert sorted(await store.session_ids(limit=10)) == ["a", "b", "c", "d"]
        # among: only stored ids of the given ones, still at most limit
        assert await store.session_ids(limit=2, among=["x", "c", "y"]) == ["c"]
        assert await store.session_ids(limit=2, among=[]) == []
        among = [f"missing-{i}" for i in range(1200)] + ["b", "d", "a"]
        found = await store.session_ids(limit=2, among=among)
        assert len(found) == 2
        assert set(found) <= {"a", "b", "d"}
        await store.close()

    # -- the injection queue ----------------------------------------------------------------

    async def test_pending_rows_are_the_queues_rows(self, store_factory: StoreFactory) -> None:
        store = await self.fresh(store_factory)
        model = InjectionQueue()
        model.remind({"body": "one", "tags": ["a"], "dedupe_key": "k"}, mode="steer")
        model.inject("a user line", mode="interrupt")
        model.remind({"body": "three", "ttl_turns": 2, "_meta": {"x": [1]}}, mode="queue")
        for item in model.state().items:
            assert await store.enqueue("s1", item) == item.id
        rows = await store.pending("s1")
        assert rows == model.pending()
        assert [r["position"] for r in rows] == [0, 1, 2]
        assert [r["mode"] for r in rows] == ["finish_step", "interrupt_immediate", "audit_only"]
        await store.close()

    async def test_drain_takes_its_modes_in_fifo_order(self, store_factory: StoreFactory) -> None:
        store = await self.fresh(store_factory)
        model = InjectionQueue()
        for i, mode in enumerate(["steer", "interrupt", "queue", "steer", "interrupt", "queue"]):
            model.remind({"body": f"r{i}"}, mode=mode)
        for item in model.state().items:
            await store.enqueue("s1", item)
        now = await store.drain("s1", NOW)
        assert _ids(now) == _ids(model.drain("pre_tool_dispatch"))
        assert await store.pending("s1") == model.pending()
        assert await store.drain("s1", []) == []
        step = await store.drain("s1", ["finish_step", "interrupt"])
        assert _ids(step) == _ids(model.drain("iteration_start"))
        audit = await store.drain("s1", AUDIT)
        assert audit == model.drain("loop_exit")
        assert await store.pending("s1") == []
        with pytest.raises(ReminderError):
            await store.drain("s1", ["sideways"])
        await store.close()

    async def test_an_id_is_used_once_per_session(self, store_factory: StoreFactory) -> None:
        store = await self.fresh(store_factory)
        await store.create_session(Session(session_id="s2").state())
        [a] = queue_items("a", mode="steer")
        [b] = queue_items("b", mode="interrupt")
        [c] = queue_items("c", mode="queue")
        for item in (a, b, c):
            await store.enqueue("s1", item)
        assert _ids(await store.drain("s1", NOW)) == [b.id]
        assert await store.revoke("s1", a.id) == "revoked"
        # c pending, b delivered, a revoked: all three are taken
        for item in (a, b, c):
            with pytest.raises(ReminderError) as caught:
                await store.enqueue("s1", item)
            assert caught.value.code == "RMD-002"
        assert await store.enqueue("s2", a) == a.id  # ids are per session
        await store.close()

    async def test_enqueue_checks_the_item_and_the_limit(self, store_factory: StoreFactory) -> None:
        store = await self.fresh(store_factory)
        a, b = queue_items("a", "b")
        with pytest.raises(TypeError):
            await store.enqueue("s1", {"body": "raw"})  # type: ignore[arg-type]
        forged = QueueItem(kind="reminder", id="f1", mode=a.mode, payload={"body": "raw"})
        with pytest.raises(ReminderError):
            await store.enqueue("s1", forged)
        await store.enqueue("s1", a, max_pending=1)
        with pytest.raises(QueueError) as caught:
            await store.enqueue("s1", b, max_pending=1)
        assert caught.value.reason == "queue_full"
        assert _ids(await store.drain("s1", STEP)) == [a.id]
        await store.close()

    async def test_an_item_changed_after_it_was_made_is_checked_again(
        self, store_factory: StoreFactory
    ) -> None:
        store = await self.fresh(store_factory)
        queue = InjectionQueue()
        fresh = queue.reminder_item({"body": "as made"})
        assert await store.enqueue("s1", fresh) == fresh.id
        changed = queue.reminder_item({"body": "then changed", "ttl_turns": 2})
        changed.payload["ttl_turns"] = 2.0  # equal, but not the queue's form
        with pytest.raises(ReminderError):
            await store.enqueue("s1", changed)
        extra = queue.reminder_item({"body": "then given a key"})
        extra.payload["colour"] = "red"
        with pytest.raises(ReminderError):
            await store.enqueue("s1", extra)
        assert [row["id"] for row in await store.pending("s1")] == [fresh.id]
        await store.close()

    async def test_revoke_states(self, store_factory: StoreFactory) -> None:
        store = await self.fresh(store_factory)
        a, b = queue_items("a", "b", mode="steer")
        [u] = queue_items("user words", user_text=True)
        for item in (a, b, u):
            await store.enqueue("s1", item)
        assert await store.revoke("s1", a.id) == "revoked"
        assert await store.revoke("s1", a.id) == "already_revoked"
        await store.drain("s1", STEP)
        reasons = {}
        for rid in (b.id, "never-queued", u.id, "", "  "):
            with pytest.raises(QueueError) as caught:
                await store.revoke("s1", rid)
            reasons[rid] = caught.value.reason
        assert reasons == {
            b.id: "already_delivered",
            "never-queued": "unknown_reminder_id",
            u.id: "already_delivered",
            "": "missing_reminder_id",
            "  ": "missing_reminder_id",
        }
        [u2] = queue_items("pending user words", user_text=True)
        await store.enqueue("s1", u2)
        with pytest.raises(QueueError) as caught:
            await store.revoke("s1", u2.id)  # a queued user message is not a reminder
        assert caught.value.reason == "unknown_reminder_id"
        await store.close()

    async def test_delivered_and_revoked_ids_survive_a_restart(
        self, store_factory: StoreFactory
    ) -> None:
        store = await self.fresh(store_factory)
        a, b, c = queue_items("a", "b", "c")
        for item in (a, b, c):
            await store.enqueue("s1", item)
        await store.revoke("s1", a.id)
        delivered = await store.drain("s1", STEP)
        assert _ids(delivered) == [b.id, c.id]
        store = await self.reopen(store, store_factory)
        loaded = await store.load_session("s1")
        assert loaded is not None
        assert loaded.queue.delivered_ids == {b.id, c.id}
        assert loaded.queue.revoked_ids == {a.id}
        assert await store.revoke("s1", a.id) == "already_revoked"
        with pytest.raises(QueueError) as caught:
            await store.revoke("s1", b.id)
        assert caught.value.reason == "already_delivered"
        with pytest.raises(ReminderError):
            await store.enqueue("s1", c)
        await store.close()

    async def test_concurrent_drainers_deliver_each_item_once(
        self, store_factory: StoreFactory
    ) -> None:
        store = await self.fresh(store_factory)
        items = queue_items(*(f"r{i}" for i in range(120)), mode="interrupt")
        seen: list[str] = []
        done = anyio.Event()

        async def produce() -> None:
            for item in items:
                await store.enqueue("s1", item)
                await anyio.sleep(0)
            done.set()

        async def consume() -> None:
            while True:
                finished = done.is_set()
                seen.extend(_ids(await store.drain("s1", NOW)))
                if finished:
                    return
                await anyio.sleep(0)

        async with anyio.create_task_group() as tg:
            tg.start_soon(produce)
            for _ in range(4):
                tg.start_soon(consume)
        assert sorted(seen) == sorted(_ids(items))
        assert len(seen) == len(set(seen))
        await store.close()

    async def test_two_stores_in_two_threads_deliver_each_item_once(
        self, store_factory: StoreFactory
    ) -> None:
        store = await self.fresh(store_factory)
        items = queue_items(*(f"r{i}" for i in range(150)), mode="steer")
        seen: dict[int, list[str]] = {0: [], 1: []}
        stop = threading.Event()
        errors: list[BaseException] = []

        def drain_in_thread(index: int) -> None:
            async def run() -> None:
                other = await self.open(store_factory)
                try:
                    while True:
                        finished = stop.is_set()
                        seen[index].extend(_ids(await other.drain("s1", STEP)))
                        if finished:
                            return
                finally:
                    await other.close()

            try:
                anyio.run(run)
            except BaseException as exc:  # reported below, in the test's own thread
                errors.append(exc)

        threads = [threading.Thread(target=drain_in_thread, args=(i,)) for i in (0, 1)]
        for thread in threads:
            thread.start()
        try:
            for item in items:
                await store.enqueue("s1", item)
        finally:
            stop.set()
            for thread in threads:
                await anyio.to_thread.run_sync(thread.join)
        assert errors == []
        every = seen[0] + seen[1]
        assert sorted(every) == sorted(_ids(items))
        assert len(every) == len(set(every))
        assert await store.pending("s1") == []
        await store.close()

    async def test_wait_for_items(self, store_factory: StoreFactory) -> None:
        store = await self.fresh(store_factory)
        assert await store.wait_for_items("s1", 0.01) is False
        [item] = queue_items("wake up", mode="audit_only")

        async def later() -> None:
            await anyio.sleep(0.05)
            await store.enqueue("s1", item)

        async with anyio.create_task_group() as tg:
            tg.start_soon(later)
            with anyio.fail_after(5):
                assert await store.wait_for_items("s1", 10) is True
        assert await store.wait_for_items("s1", 0.01, modes=NOW) is False
        assert await store.wait_for_items("s1", 0, modes=["queue"]) is True
        await store.close()

    async def test_wait_for_items_waits_only_for_ids_not_ignored(
        self, store_factory: StoreFactory
    ) -> None:
        # a running prompt waits for what is new, not for what its live queue already holds
        store = await self.fresh(store_factory)
        held, new = queue_items("already held", "queued meanwhile")
        await store.enqueue("s1", held)
        known = {held.id}
        assert await store.wait_for_items("s1", 0.01, ignore=known) is False

        async def later() -> None:
            await anyio.sleep(0.05)
            await store.enqueue("s1", new)

        async with anyio.create_task_group() as tg:
            tg.start_soon(later)
            with anyio.fail_after(5):
                assert await store.wait_for_items("s1", 10, ignore=known) is True
        known.add(new.id)  # read at each look: the caller's set as it is now
        assert await store.wait_for_items("s1", 0, ignore=known) is False
        assert await store.wait_for_items("s1", 0) is True
        await store.close()

    # -- leases -----------------------------------------------------------------------------

    async def test_a_lease_has_one_owner(self, store_factory: StoreFactory) -> None:
        store = await self.fresh(store_factory)
        await store.create_session(Session(session_id="s2").state())
        other = await self.open(store_factory)  # another worker
        assert await store.claim("s1", "worker-a", 30) is None
        assert await other.claim("s1", "worker-b", 30) == "worker-a"
        assert await store.claim("s1", "worker-a", 30) == "worker-a"  # one lease, one prompt
        assert await other.claim("s2", "worker-b", 30) is None  # leases are per session
        assert await other.renew("s1", "worker-b", 30) is False
        assert await store.renew("s1", "worker-a", 30) is True
        assert await other.release("s1", "worker-b") is False  # never another owner's lease
        assert await other.claim("s1", "worker-b", 30) == "worker-a"
        assert await store.release("s1", "worker-a") is True
        assert await store.release("s1", "worker-a") is False
        assert await store.renew("s1", "worker-a", 30) is False
        assert await other.claim("s1", "worker-b", 30) is None
        store = await self.reopen(store, store_factory)  # the lease lives in the store
        assert await store.claim("s1", "worker-a", 30) == "worker-b"
        await store.close()
        await other.close()

    async def test_lease_arguments_are_checked(self, store_factory: StoreFactory) -> None:
        store = await self.fresh(store_factory)
        for owner in ("", "  ", None, 7):
            with pytest.raises(TypeError):
                await store.claim("s1", owner, 30)  # type: ignore[arg-type]
            with pytest.raises(TypeError):
                await store.release("s1", owner)  # type: ignore[arg-type]
        for wrong in ("30", None, True):
            with pytest.raises(TypeError):
                await store.claim("s1", "w", wrong)  # type: ignore[arg-type]
        for ttl in (0, -1, float("inf"), float("nan")):
            with pytest.raises(ConfigError):
                await store.claim("s1", "w", ttl)
            with pytest.raises(ConfigError):
                await store.renew("s1", "w", ttl)
        assert await store.claim("s1", "w", 30) is None  # nothing was claimed before
        await store.close()

    async def test_a_lease_not_renewed_expires(self, store_factory: StoreFactory) -> None:
        """A killed worker's lease ends by itself; a renewed one outlives its first term.
        Time is read from the store (a second short lease on another session is the
        clock), never from a fixed sleep."""
        store = await self.fresh(store_factory)
        for sid in ("kept", "timer"):
            await store.create_session(Session(session_id=sid).state())
        other = await self.open(store_factory)
        assert await store.claim("s1", "dead-worker", 0.3) is None
        assert await store.claim("kept", "live-worker", 0.3) is None
        assert await store.renew("kept", "live-worker", 60) is True
        assert await store.claim("timer", "timer", 0.3) is None
        answers: list[str | None] = []
        with anyio.fail_after(20):
            while not answers or answers[-1] is not None:
                answers.append(await other.claim("s1", "worker-b", 60))
                await anyio.sleep(0.02)
            while await other.claim("timer", "probe", 60) is not None:
                await anyio.sleep(0.02)
        assert set(answers[:-1]) <= {"dead-worker"}
        assert await other.claim("kept", "worker-b", 60) == "live-worker"
        assert await store.renew("s1", "dead-worker", 60) is False  # it lost the lease
        assert await store.release("s1", "dead-worker") is False
        assert await store.claim("s1", "dead-worker", 60) == "worker-b"
        await store.close()
        await other.close()

    async def test_a_holder_known_to_be_gone_is_replaced_and_no_other(
        self, store_factory: StoreFactory
    ) -> None:
        """``claim(..., replace=holder)`` takes a live lease only from that holder (whose
        process the caller knows has ended): a compare-and-set, so a takeover that comes
        late never takes the lease of the worker that got there first."""
        store = await self.fresh(store_factory)
        await store.create_session(Session(session_id="s2").state())
        other = await self.open(store_factory)
        assert await store.claim("s1", "gone", 60) is None
        assert await other.claim("s1", "worker-b", 30, replace="someone-else") == "gone"
        assert await other.claim("s1", "worker-b", 30, replace="gone") is None
        assert await store.renew("s1", "gone", 30) is False  # it lost the lease
        assert await store.release("s1", "gone") is False
        assert await store.claim("s1", "worker-c", 30, replace="gone") == "worker-b"
        assert await other.claim("s2", "worker-b", 30, replace="gone") is None  # a free one
        # two workers replacing one gone holder at once: one of them gets it
        assert await other.release("s1", "worker-b") is True
        assert await store.claim("s1", "gone", 60) is None
        answers: dict[str, str | None] = {}

        async def take(on: Store, owner: str) -> None:
            answers[owner] = await on.claim("s1", owner, 30, replace="gone")

        async with anyio.create_task_group() as tg:
            tg.start_soon(take, store, "worker-x")
            tg.start_soon(take, other, "worker-y")
        winners = [owner for owner, held in answers.items() if held is None]
        assert len(winners) == 1
        (loser,) = set(answers) - set(winners)
        assert answers[loser] == winners[0]
        await store.close()
        await other.close()

    async def test_the_live_lease_is_reported_with_its_time_left(
        self, store_factory: StoreFactory
    ) -> None:
        store = await self.fresh(store_factory)
        await store.create_session(Session(session_id="short").state())
        other = await self.open(store_factory)
        assert await other.lease("s1") is None
        assert await store.claim("s1", "worker-a", 30) is None
        held = await other.lease("s1")
        assert held is not None
        assert held.owner == "worker-a"
        assert 25 < held.expires_in <= 30
        assert await store.renew("s1", "worker-a", 60) is True
        renewed = await other.lease("s1")
        assert renewed is not None
        assert 55 < renewed.expires_in <= 60
        assert await store.release("s1", "worker-a") is True
        assert await other.lease("s1") is None
        assert await store.claim("short", "worker-a", 0.2) is None
        with anyio.fail_after(20):  # an expired lease is no lease
            while await other.lease("short") is not None:
                await anyio.sleep(0.02)
        await store.close()
        await other.close()

    # -- the event log ----------------------------------------------------------------------

    async def test_events_append_and_read(self, store_factory: StoreFactory) -> None:
        store = await self.fresh(store_factory)
        await store.create_session(Session(session_id="s2").state())
        kinds = [
            "transcript.reminder.injected",
            "loop.checkpoint",
            "transcript.reminder.fired",
            "loop.checkpoint",
        ]
        records = [
            EventRecord(seq=99, topic=k.split(".")[0], kind=k, payload={"n": i, "t": (1, 2)})
            for i, k in enumerate(kinds)
        ]
        stored = await store.append_events("s1", records[:2])
        stored += await store.append_events("s1", records[2:])
        assert [r.seq for r in stored] == [1, 2, 3, 4]
        assert stored[0].payload == {"n": 0, "t": [1, 2]}  # stored as JSON
        assert await store.append_events("s2", records[:1]) == [
            EventRecord(seq=1, topic="transcript", kind=kinds[0], payload={"n": 0, "t": [1, 2]})
        ]
        assert await store.read_events("s1") == stored
        assert [r.seq for r in await store.read_events("s1", after_seq=2)] == [3, 4]
        assert [r.seq for r in await store.read_events("s1", kind_prefix="loop.")] == [2, 4]
        assert await store.read_events("s1", after_seq=3, kind_prefix="transcript.") == []
        assert await store.read_events("s1", kind_prefix="%") == []
        with pytest.raises(TypeError):
            await store.append_events("s1", [{"kind": "x"}])  # type: ignore[list-item]
        bad = EventRecord(seq=1, topic="t", kind="x", payload={"obj": object()})
        with pytest.raises(TypeError):
            await store.append_events("s1", [bad])
        store = await self.reopen(store, store_factory)
        assert await store.read_events("s1") == stored
        assert [r.seq for r in await store.append_events("s1", records[:1])] == [5]
        await store.close()

    # -- restarts and closing ---------------------------------------------------------------

    async def test_a_restart_keeps_everything(self, store_factory: StoreFactory) -> None:
        s = conversation()
        store = await self.open(store_factory)
        await store.create_session(s.state())
        await store.create_session(Session(session_id="other").state())
        extra = queue_items("after the save", mode="interrupt")[0]
        await store.enqueue("s1", extra)
        events = await store.append_events(
            "s1", [EventRecord(seq=1, topic="loop", kind="loop.checkpoint", payload={})]
        )
        before: dict[str, Any] = {
            "state": await store.load_session("s1"),
            "pending": await store.pending("s1"),
            "sessions": [i.session_id for i in await store.list_sessions()],
            "latest": await store.latest_session(),
        }
        store = await self.reopen(store, store_factory)
        after: dict[str, Any] = {
            "state": await store.load_session("s1"),
            "pending": await store.pending("s1"),
            "sessions": [i.session_id for i in await store.list_sessions()],
            "latest": await store.latest_session(),
        }
        assert after == before
        assert before["latest"] == "s1"
        assert await store.read_events("s1") == events
        state = after["state"]
        assert isinstance(state, SessionState)
        assert _ids(state.queue.items)[-1] == extra.id
        await store.close()

    async def test_a_closed_store_refuses_calls(self, store_factory: StoreFactory) -> None:
        store = await self.fresh(store_factory)
        await store.close()
        await store.close()  # idempotent
        with pytest.raises(StoreError):
            await store.load_session("s1")
        with pytest.raises(StoreError):
            await store.enqueue("s1", queue_items("late")[0])
        other = await self.open(store_factory)
        assert await other.load_session("s1") is not None
        async with other:
            pass
        with pytest.raises(StoreError):
            await other.pending("s1")
