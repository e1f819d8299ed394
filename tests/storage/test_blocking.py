"""``BlockingSQLite`` and ``open_sqlite``: the SQLite store with no event loop, for a process
that runs once per event (a coding agent's hook). ``SQLiteStore`` runs these same calls on its
thread, so the contract suite covers what each one does; here: the blocking API itself, its
opener, and that both objects share one file."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import anyio
import pytest

from agent_reminders import (
    ConfigError,
    InjectionQueue,
    QueueError,
    QueueItem,
    ReminderError,
    Session,
    StoreError,
)
from agent_reminders.storage import (
    BlockingSQLite,
    SessionExistsError,
    SQLiteStore,
    UnknownSessionError,
    folder_options,
    open_sqlite,
)


def _reminder(body: str, rid: str | None = None) -> QueueItem:
    payload = {"body": body} if rid is None else {"body": body, "id": rid}
    return InjectionQueue().reminder_item(payload)


def test_a_session_round_trip_with_no_event_loop(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with BlockingSQLite(path) as store:
        session = Session(session_id="s1")
        store.create_session(session.state())
        kept = session.queue.remind({"body": "kept in the state"})
        store.save_session(session.state())
        first = _reminder("from the queue")
        assert store.enqueue("s1", first) == first.id
        assert [row["body"] for row in store.pending("s1")] == [
            "kept in the state",
            first.payload["body"],
        ]
        assert [i.id for i in store.drain("s1", ["finish_step"])] == [kept, first.id]
        assert store.latest_session() == "s1"
        assert [s.session_id for s in store.list_sessions()] == ["s1"]
        assert store.session_ids(limit=5, among=["s1", "nope"]) == ["s1"]
    assert store.closed
    with BlockingSQLite(path) as store:  # the next process
        state = store.load_session("s1")
        assert state is not None
        assert state.session_id == "s1"
        assert store.load_session("nope") is None


def test_errors_are_the_stores(tmp_path: Path) -> None:
    with BlockingSQLite(tmp_path / "state.db") as store:
        store.create_session(Session(session_id="s1").state())
        with pytest.raises(SessionExistsError):
            store.create_session(Session(session_id="s1").state())
        with pytest.raises(UnknownSessionError):
            store.save_session(Session(session_id="s2").state())
        with pytest.raises(UnknownSessionError):
            store.enqueue("s2", _reminder("x"))
        item = _reminder("once")
        store.enqueue("s1", item, max_pending=1)
        with pytest.raises(ReminderError):  # the id is used
            store.enqueue("s1", item)
        with pytest.raises(QueueError) as full:
            store.enqueue("s1", _reminder("twice"), max_pending=1)
        assert full.value.reason == "queue_full"
    with pytest.raises(StoreError, match="this store is closed"):
        store.latest_session()


def test_a_group_of_enqueues_fails_only_the_refused(tmp_path: Path) -> None:
    """``enqueue_many`` (the group commit ``SQLiteStore`` runs): one transaction, an error per
    refused job."""
    with BlockingSQLite(tmp_path / "state.db") as store:
        store.create_session(Session(session_id="s1").state())
        first, second = _reminder("a"), _reminder("b")
        jobs = [
            store.enqueue_job("s1", first),
            store.enqueue_job("nope", second),
            store.enqueue_job("s1", first),
            store.enqueue_job("s1", second, max_pending=2),
        ]
        errors = store.enqueue_many(jobs)
        assert errors[0] is None
        assert errors[3] is None
        assert isinstance(errors[1], UnknownSessionError)
        assert isinstance(errors[2], ReminderError)
        assert [row["id"] for row in store.pending("s1")] == [first.id, second.id]


def test_leases(tmp_path: Path) -> None:
    now = [100.0]
    with BlockingSQLite(tmp_path / "state.db", clock=lambda: now[0]) as store:
        store.create_session(Session(session_id="s1").state())
        assert store.claim("s1", "hook-1", 30) is None
        assert store.claim("s1", "hook-2", 30) == "hook-1"
        assert store.claim("s1", "hook-2", 30, replace="hook-1") is None
        lease = store.lease("s1")
        assert lease is not None
        assert (lease.owner, lease.expires_in) == ("hook-2", 30)
        assert not store.release("s1", "hook-1")
        assert store.renew("s1", "hook-2", 60)
        assert store.release("s1", "hook-2")
        assert store.lease("s1") is None


def test_the_async_store_and_the_blocking_one_share_the_file(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    item = _reminder("pushed by the hook")
    with BlockingSQLite(path) as store:
        store.create_session(Session(session_id="s1").state())
        store.enqueue("s1", item)

    async def serve() -> list[str]:
        async with SQLiteStore(path) as store:
            assert await store.wait_for_items("s1", 0)
            drained = await store.drain("s1", ["finish_step"])
            await store.append_events("s1", [])
            return [i.id for i in drained]

    assert anyio.run(serve) == [item.id]
    with BlockingSQLite(path) as store:
        assert not store.has_pending("s1")
        assert store.read_events("s1") == []


def test_read_only_refuses_writes_by_name(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    BlockingSQLite(path).close()
    with BlockingSQLite(path, read_only=True) as store:
        assert store.read_only
        assert store.latest_session() is None
        with pytest.raises(StoreError, match="it is read-only"):
            store.create_session(Session(session_id="s1").state())


def test_damage_found_later_turns_the_store_read_only(tmp_path: Path) -> None:
    """The latch ``SQLiteStore`` has: SQLite's "malformed" makes every later write fail with
    the same line, and the file is not written again."""
    err = sqlite3.DatabaseError("database disk image is malformed")
    err.sqlite_errorcode = sqlite3.SQLITE_CORRUPT

    def malformed(db: sqlite3.Connection) -> None:
        raise err

    with BlockingSQLite(tmp_path / "state.db") as store:
        with pytest.raises(StoreError, match="is corrupt"):
            store.run(malformed)
        assert store.read_only
        with pytest.raises(StoreError, match="it will not be changed further"):
            store.create_session(Session(session_id="s1").state())
        assert store.latest_session() is None  # reads go on


@pytest.mark.parametrize("form", ["sqlite:{}", "{}", "sqlite://{}"])
def test_open_sqlite_takes_the_sqlite_urls_of_open_store(tmp_path: Path, form: str) -> None:
    path = tmp_path / "state.db"
    with open_sqlite(form.format(path)) as store:
        assert isinstance(store, BlockingSQLite)
        assert store.path == str(path)
    assert path.exists()


@pytest.mark.parametrize("url", ["memory:", "redis://127.0.0.1:6379/0", "rediss://h/0"])
def test_open_sqlite_refuses_other_stores(url: str) -> None:
    with pytest.raises(ConfigError, match="not a SQLite store file"):
        open_sqlite(url)


@pytest.mark.parametrize(
    ("url", "said"),
    [("", "non-blank"), ("sqlite:", "needs a file path"), ("mongodb://x", "unknown store URL")],
)
def test_open_sqlite_refuses_a_bad_url_as_open_store_does(url: str, said: str) -> None:
    with pytest.raises(ConfigError, match=said):
        open_sqlite(url)


def test_open_sqlite_takes_the_folder_and_create_options(tmp_path: Path) -> None:
    default = tmp_path / ".agent-reminders" / "state.db"
    typo = f"sqlite:{tmp_path / 'typo' / 'state.db'}"
    with pytest.raises(StoreError, match="does not exist"):
        open_sqlite(typo, **folder_options(typo, default))
    assert not (tmp_path / "typo").exists()
    with pytest.raises(StoreError, match="nothing was created"):
        open_sqlite(str(default), create=False)
    with open_sqlite(str(default), **folder_options(str(default), default)) as store:
        assert store.latest_session() is None
    with pytest.raises(TypeError):
        open_sqlite(str(default), poll_interval=0.1)  # nothing waits here
    with pytest.raises(ConfigError, match="synchronous"):
        open_sqlite(str(default), synchronous="SOMETIMES")


def test_the_file_keeps_its_bytes_when_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"not a database")
    with pytest.raises(StoreError, match="not a SQLite database"):
        open_sqlite(os.fspath(path))
    assert path.read_bytes() == b"not a database"
