"""SQLiteStore beyond the contract: refusing foreign files unchanged, the schema and its
versions, WAL and durability, and blocking calls kept off the event loop."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest

from agent_reminders import (
    AgentRemindersError,
    ConfigError,
    EventRecord,
    InjectionQueue,
    QueueError,
    QueueItem,
    ReminderError,
    Session,
    StoreError,
)
from agent_reminders.facts import FactStore
from agent_reminders.storage import SCHEMA_VERSION, SQLiteStore, UnknownSessionError
from agent_reminders.storage.sqlite import MIGRATIONS
from agent_reminders.testing.builders import assistant, user
from agent_reminders.testing.store_contract import conversation, queue_items

pytestmark = pytest.mark.anyio

SRC = Path(__file__).resolve().parents[2] / "src"


def snapshot(path: Path) -> tuple[bytes, int]:
    return path.read_bytes(), path.stat().st_mtime_ns


def assert_refused(path: Path, *words: str) -> StoreError:
    with pytest.raises(StoreError) as caught:
        SQLiteStore(path)
    message = str(caught.value)
    assert caught.value.code == "RMD-109"
    assert str(path) in message
    for word in words:
        assert word in message
    assert "\n" not in message
    return caught.value


def test_random_bytes_are_refused_and_left_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    path.write_bytes(os.urandom(4096))
    before = snapshot(path)
    assert_refused(path, "not a SQLite database")
    assert snapshot(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.db"]


def test_a_damaged_database_is_refused_and_left_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    path.write_bytes(b"SQLite format 3\x00" + os.urandom(2048))
    before = snapshot(path)
    assert_refused(path)
    assert snapshot(path) == before


def test_a_foreign_database_is_refused_and_not_switched_to_wal(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    db.execute("INSERT INTO invoices VALUES (1, 9.5)")
    db.commit()
    db.close()
    before = snapshot(path)
    assert_refused(path, "something else", "invoices")
    assert snapshot(path) == before
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    db.close()


def test_a_fact_store_is_not_a_session_store(tmp_path: Path) -> None:
    path = tmp_path / "facts.db"
    FactStore(path).close()
    before = snapshot(path)
    assert_refused(path, "not an agent-reminders session store")
    assert snapshot(path) == before


def test_a_directory_is_refused(tmp_path: Path) -> None:
    assert_refused(tmp_path, "is a directory")


def test_a_path_under_a_file_is_refused(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert_refused(blocker / "state.db", "cannot create the folder")


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    path.write_bytes(b"")
    path.chmod(0)
    try:
        assert_refused(path, "cannot read")
    finally:
        path.chmod(0o600)


async def test_a_store_from_a_newer_version_is_refused_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    async with SQLiteStore(path) as store:
        await store.create_session(Session(session_id="s1").state())
    db = sqlite3.connect(path)
    db.execute("UPDATE store_meta SET value = ? WHERE key = 'version'", (str(SCHEMA_VERSION + 1),))
    db.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    before = snapshot(path)
    assert_refused(path, "newer agent-reminders", "upgrade")
    assert snapshot(path) == before


def test_the_schema_is_versioned(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    path.write_bytes(b"")  # an empty file is a new store
    SQLiteStore(path)
    db = sqlite3.connect(path)
    meta = dict(db.execute("SELECT key, value FROM store_meta"))
    assert meta == {"schema": "agent-reminders.store", "version": str(SCHEMA_VERSION)}
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"store_meta", "sessions", "messages", "pending", "settled", "events"} <= tables
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()


def downgrade(path: Path, version: int) -> None:
    """Make a file written by this version look like one of schema ``version``: undo what the
    later migrations added (what they add is checked to be all they add)."""
    db = sqlite3.connect(path)
    if version < 4:  # 3 -> 4: the queue split into pending and settled, the activity counter
        # schema 3's queue table and indexes, as the released migrations made them
        released = [
            step
            for step in MIGRATIONS[0]
            if step.startswith(("CREATE TABLE queue", "CREATE INDEX queue_by_status"))
        ]
        assert len(released) == 2
        for statement in released:
            db.execute(statement)
        db.executescript(
            """
            INSERT INTO queue (session_id, item_id, status)
                SELECT session_id, item_id, status FROM settled;
            INSERT INTO queue (session_id, item_id, status, kind, mode, payload)
                SELECT session_id, item_id, 'pending', kind, mode, payload FROM pending
                ORDER BY seq;
            UPDATE sessions SET touched = max(touched, coalesce(
                (SELECT max(seq) FROM pending WHERE pending.session_id = sessions.session_id), 0
            ));
            DROP TABLE pending;
            DROP TABLE settled;
            DROP TABLE activity;
            """
        )
        [activity_index] = [s for s in MIGRATIONS[0] if "sessions_by_activity" in s]
        db.execute(activity_index)
    if version < 3:  # 2 -> 3: audit rows, the session revision
        db.execute("DROP TABLE audit")
        db.execute("ALTER TABLE sessions DROP COLUMN revision")
    if version < 2:  # 1 -> 2: leases
        db.execute("DROP TABLE leases")
    db.execute("UPDATE store_meta SET value = ? WHERE key = 'version'", (str(version),))
    db.commit()
    db.close()


def schema(path: Path) -> list[tuple[str, str]]:
    db = sqlite3.connect(path)
    found = db.execute("SELECT name, sql FROM sqlite_master ORDER BY name").fetchall()
    db.close()
    return [(name, " ".join(str(sql).split())) for name, sql in found]


async def test_a_version_1_file_gains_the_lease_table(tmp_path: Path) -> None:
    """Schema 1 -> 2 adds ``leases`` (docs/storage.md, "The SQLite schema"); what the file held
    is kept."""
    path = tmp_path / "state.db"
    async with SQLiteStore(path) as store:
        await store.create_session(Session(session_id="s1").state())
        await store.enqueue("s1", queue_items("kept")[0])
    current = schema(path)
    downgrade(path, 1)
    assert SCHEMA_VERSION == len(MIGRATIONS) == 4
    async with SQLiteStore(path) as store:
        assert [r["body"] for r in await store.pending("s1")] == ["kept"]
        assert await store.claim("s1", "worker-a", 30) is None
    db = sqlite3.connect(path)
    assert dict(db.execute("SELECT key, value FROM store_meta"))["version"] == "4"
    assert db.execute("SELECT session_id, owner FROM leases").fetchall() == [("s1", "worker-a")]
    db.close()
    assert schema(path) == current  # migrated, the file is what a new one would be


async def test_a_version_3_file_keeps_its_queue_and_the_activity_order(tmp_path: Path) -> None:
    """Schema 3 -> 4 splits the queue into pending items and settled ids: pending items keep
    their FIFO order, delivered and revoked ids stay remembered, the sessions keep their
    activity order, and what is queued later comes after all of it."""
    path = tmp_path / "state.db"
    first, gone, second, third = queue_items("first", "gone", "second", "third")
    [used] = queue_items("used", mode="interrupt")
    async with SQLiteStore(path) as store:
        for sid in ("s1", "s2", "s3"):
            await store.create_session(Session(session_id=sid).state())
        for item in (first, gone, used, second):
            await store.enqueue("s1", item)
        await store.enqueue("s2", third)
        assert await store.revoke("s1", gone.id) == "revoked"
        assert [i.id for i in await store.drain("s1", ["interrupt_immediate"])] == [used.id]
        await store.append_events("s3", [EventRecord(seq=0, topic="t", kind="k", payload={})])
        order = [s.session_id for s in await store.list_sessions()]
    assert order == ["s3", "s1", "s2"]
    current = schema(path)
    downgrade(path, 3)
    async with SQLiteStore(path) as store:
        assert [s.session_id for s in await store.list_sessions()] == order
        assert [r["id"] for r in await store.pending("s1")] == [first.id, second.id]
        assert [r["id"] for r in await store.pending("s2")] == [third.id]
        assert await store.revoke("s1", gone.id) == "already_revoked"
        with pytest.raises(QueueError) as delivered:
            await store.revoke("s1", used.id)
        assert delivered.value.reason == "already_delivered"
        with pytest.raises(ReminderError):  # a settled id is never queued again
            await store.enqueue("s1", used)
        [later] = queue_items("later")
        await store.enqueue("s2", later)
        assert await store.latest_session() == "s2"
        assert [r["id"] for r in await store.pending("s2")] == [third.id, later.id]
        loaded = await store.load_session("s1")
        assert loaded is not None
        assert [i.id for i in loaded.queue.items] == [first.id, second.id]
        assert loaded.queue.delivered_ids == {used.id}
        assert loaded.queue.revoked_ids == {gone.id}
    assert schema(path) == current  # migrated, the file is what a new one would be


async def test_a_version_2_file_keeps_its_sessions_and_moves_audit_entries_out(
    tmp_path: Path,
) -> None:
    """Schema 2 -> 3: a head written by version 2 holds the audit entries; it still loads
    the same, and the next save moves them to audit rows of their own."""
    path = tmp_path / "state.db"
    s = conversation()
    async with SQLiteStore(path) as store:
        await store.create_session(s.state())
    downgrade(path, 2)
    # the head as version 2 wrote it: the whole document but messages and queue
    doc = json.loads(s.state().to_json())
    del doc["transcript"]["events"][: len(s.transcript)], doc["queue"]
    assert [e["visibility"] for e in doc["transcript"]["events"]].count("audit") == 1
    db = sqlite3.connect(path)
    db.execute("UPDATE sessions SET head = ?", (json.dumps(doc, separators=(",", ":")),))
    db.commit()
    db.close()
    async with SQLiteStore(path) as store:
        loaded = await store.load_session("s1")
        assert loaded == s.state()
        assert loaded is not None
        s = Session.from_state(loaded)
        s.queue.remind({"body": "later audit"}, mode="audit_only")
        s.run_seam("loop_exit")
        s.append(assistant("Done."))  # type: ignore[arg-type]
        await store.save_session(s.state())
        assert await store.load_session("s1") == s.state()
    async with SQLiteStore(path) as store:  # a restart, a store object that remembers nothing
        assert await store.load_session("s1") == s.state()
    db = sqlite3.connect(path)
    [head] = db.execute("SELECT head FROM sessions").fetchone()
    audit = [json.loads(r[0]) for r in db.execute("SELECT event FROM audit ORDER BY position")]
    db.close()
    assert all(e.get("visibility") != "audit" for e in json.loads(head)["transcript"]["events"])
    assert audit == list(s.transcript.audit)
    assert len(audit) == 3  # the one of the version-2 head, two from this loop_exit


async def test_lease_expiry_follows_the_store_clock(tmp_path: Path) -> None:
    now = [1000.0]
    path = tmp_path / "state.db"
    a = SQLiteStore(path, clock=lambda: now[0])
    b = SQLiteStore(path, clock=lambda: now[0])
    await a.create_session(Session(session_id="s1").state())
    assert await a.claim("s1", "worker-a", 30) is None
    now[0] += 29.9
    assert await b.claim("s1", "worker-b", 30) == "worker-a"
    assert await a.renew("s1", "worker-a", 30) is True  # now until 1059.9
    now[0] += 29.9
    assert await b.claim("s1", "worker-b", 30) == "worker-a"
    now[0] += 0.1
    assert await b.claim("s1", "worker-b", 30) is None  # a killed worker's claim ends
    assert await a.release("s1", "worker-a") is False
    await a.close()
    await b.close()


def test_durability_settings(tmp_path: Path) -> None:
    assert SQLiteStore(tmp_path / "a.db").synchronous == "NORMAL"
    assert SQLiteStore(tmp_path / "b.db", synchronous="full").synchronous == "FULL"
    with pytest.raises(ConfigError):
        SQLiteStore(tmp_path / "c.db", synchronous="OFF")
    with pytest.raises(ConfigError):
        SQLiteStore(":memory:")
    assert not (tmp_path / "c.db").exists()


def test_many_stores_can_create_one_file_at_once(tmp_path: Path) -> None:
    import threading

    path = tmp_path / "state.db"
    errors: list[BaseException] = []

    def open_it() -> None:
        try:
            SQLiteStore(path)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


async def test_an_acknowledged_enqueue_is_committed(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = SQLiteStore(path)
    await store.create_session(Session(session_id="s1").state())
    [item] = queue_items("on disk")
    await store.enqueue("s1", item)
    # a different connection (another process would be the same) sees it at once
    db = sqlite3.connect(path)
    rows = db.execute("SELECT item_id FROM pending").fetchall()
    db.close()
    assert rows == [(item.id,)]
    await store.close()


async def test_a_damaged_stored_session_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    async with SQLiteStore(path) as store:
        await store.create_session(Session(session_id="s1").state())
    db = sqlite3.connect(path)
    db.execute("""UPDATE sessions SET head = json_set(head, '$.turn', -3)""")
    db.commit()
    db.close()
    async with SQLiteStore(path) as store:
        with pytest.raises(StoreError) as caught:
            await store.load_session("s1")
    assert str(path) in str(caught.value)
    assert "turn" in str(caught.value)


async def test_calls_wait_for_the_lock_off_the_event_loop(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = SQLiteStore(path)
    await store.create_session(Session(session_id="s1").state())
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    ticks = 0
    done = anyio.Event()

    async def tick() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await anyio.sleep(0.01)

    async def release() -> None:
        await anyio.sleep(0.3)
        other.execute("COMMIT")

    async with anyio.create_task_group() as tg:
        tg.start_soon(tick)
        tg.start_soon(release)
        started = time.monotonic()
        await store.enqueue("s1", queue_items("waits for the lock")[0])
        waited = time.monotonic() - started
        done.set()
    other.close()
    assert waited >= 0.25
    assert ticks >= 10  # the loop kept running while the store waited
    await store.close()


def _reminder(body: str, rid: str | None = None) -> QueueItem:
    payload = {"body": body} if rid is None else {"body": body, "id": rid}
    return InjectionQueue().reminder_item(payload)


async def _outcome(call: Callable[[], Awaitable[str]], into: dict[str, object], key: str) -> None:
    try:
        into[key] = await call()
    except AgentRemindersError as exc:
        into[key] = exc


async def test_concurrent_enqueues_share_a_commit_and_fail_one_by_one(tmp_path: Path) -> None:
    """Enqueues that arrive while another is being written are written together (group
    commit); a refused one fails alone, the others are acknowledged and stored, in order."""
    path = tmp_path / "state.db"
    store = SQLiteStore(path)
    await store.create_session(Session(session_id="s1").state())
    first, second, third = (_reminder(b) for b in ("first", "second", "third"))
    again = _reminder("same id as first", first.id)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # the first write waits here; the rest queue behind it
    got: dict[str, object] = {}
    async with anyio.create_task_group() as tg:
        calls = {
            "first": lambda: store.enqueue("s1", first),
            "again": lambda: store.enqueue("s1", again),
            "nope": lambda: store.enqueue("nope", second),
            "second": lambda: store.enqueue("s1", second, max_pending=2),
            "full": lambda: store.enqueue("s1", third, max_pending=2),
        }
        for key, call in calls.items():
            tg.start_soon(_outcome, call, got, key)
            await anyio.wait_all_tasks_blocked()
        assert got == {}  # nothing acknowledged while the write lock is held elsewhere
        other.execute("COMMIT")
    other.close()
    assert got["first"] == first.id
    assert got["second"] == second.id
    assert isinstance(got["again"], ReminderError)
    assert got["again"].code == "RMD-002"
    assert isinstance(got["nope"], UnknownSessionError)
    assert isinstance(got["full"], QueueError)
    assert got["full"].reason == "queue_full"
    db = sqlite3.connect(path)  # what another process sees: exactly the acknowledged rows
    rows = db.execute("SELECT item_id FROM pending ORDER BY seq").fetchall()
    db.close()
    assert rows == [(first.id,), (second.id,)]
    await store.close()


async def test_a_cancelled_enqueue_leaves_the_others_going(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = SQLiteStore(path)
    await store.create_session(Session(session_id="s1").state())
    items = [_reminder(f"r{i}") for i in range(4)]
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    got: dict[str, object] = {}
    scopes = [anyio.CancelScope() for _ in items]

    async def enqueue(i: int) -> None:
        with scopes[i]:
            got[str(i)] = await store.enqueue("s1", items[i])

    async with anyio.create_task_group() as tg:
        tg.start_soon(enqueue, 0)
        await anyio.wait_all_tasks_blocked()  # call 0 is made
        with anyio.fail_after(10):  # the store's thread has taken it (and waits to write)
            while store._thread.waiting():
                await anyio.sleep(0.001)
        for i in range(1, len(items)):
            tg.start_soon(enqueue, i)
            await anyio.wait_all_tasks_blocked()
        # call 0 is writing; 1, 2 and 3 wait for the thread: 1 and 2 give up
        scopes[1].cancel()
        scopes[2].cancel()
        await anyio.wait_all_tasks_blocked()
        other.execute("COMMIT")
    other.close()
    assert got == {"0": items[0].id, "3": items[3].id}
    assert [row["id"] for row in await store.pending("s1")] == [items[0].id, items[3].id]
    # the group is idle again: a later call is written at once
    assert await store.enqueue("s1", items[1]) == items[1].id
    await store.close()


CRASHER = textwrap.dedent(
    """
    import sys, anyio
    from agent_reminders import InjectionQueue, Session
    from agent_reminders.storage import SQLiteStore

    async def main(path, round_):
        store = SQLiteStore(path)
        if round_ == 0:
            await store.create_session(Session(session_id="s1").state())
        queue = InjectionQueue()
        n = 0
        while True:
            rid = queue.remind({"body": f"reminder {n}", "id": f"r{round_}-{n}"}, mode="steer")
            item = queue.state().items[-1]
            await store.enqueue("s1", item)
            print(rid, flush=True)  # the acknowledgement
            if n % 7 == 0:
                await store.drain("s1", ["finish_step"])
            n += 1

    anyio.run(main, sys.argv[1], int(sys.argv[2]))
    """
)


async def test_acknowledged_reminders_survive_sigkill(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    acked: list[str] = []
    for round_ in range(3):
        proc = subprocess.Popen(
            [sys.executable, "-c", CRASHER, str(path), str(round_)],
            stdout=subprocess.PIPE,
            env=env,
        )
        assert proc.stdout is not None
        deadline = time.monotonic() + 30
        target = len(acked) + 20 + 15 * round_
        while len(acked) < target and time.monotonic() < deadline:
            line = await anyio.to_thread.run_sync(proc.stdout.readline)
            if not line:
                break
            acked.append(line.decode().strip())
        proc.kill()  # SIGKILL, mid-stream
        proc.wait()
        proc.stdout.close()
        assert len(acked) >= target, f"round {round_}: the writer stopped early"
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()
    async with SQLiteStore(path) as store:
        state = await store.load_session("s1")
    assert state is not None
    pending = [i.id for i in state.queue.items]
    known = pending + sorted(state.queue.delivered_ids)
    assert len(known) == len(set(known))  # exactly once: pending or delivered
    assert set(acked) <= set(known)


def grown_session(messages: int) -> Session:
    """A session with ``messages`` messages of history, audit entries and delivered ids."""
    s = Session(session_id="s1", system="sys")
    for n in range(messages // 2):
        s.append(user(f"question {n}"))  # type: ignore[arg-type]
        s.append(assistant(f"answer {n}"))  # type: ignore[arg-type]
        if n % 10 == 0:
            s.queue.remind({"body": f"note {n}"}, mode="audit_only")
            s.run_seam("loop_exit")
            s.queue.remind({"body": f"CI run {n} is green", "ttl_turns": 1}, mode="interrupt")
            s.run_seam("iteration_start")
    return s


COUNTED = ("messages", "audit", "pending", "settled", "sessions")


def count_writes(path: Path) -> sqlite3.Connection:
    """Triggers on the store's file that log every row inserted, updated or deleted in the
    session tables — by any connection, the store's own too."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("CREATE TABLE written (tbl TEXT, op TEXT)")
    for table in COUNTED:
        for op in ("INSERT", "UPDATE", "DELETE"):
            db.execute(
                f"CREATE TRIGGER count_{table}_{op} AFTER {op} ON {table} "
                f"BEGIN INSERT INTO written VALUES ('{table}', '{op.lower()}'); END"
            )
    return db


def writes(db: sqlite3.Connection) -> dict[tuple[str, str], int]:
    found = db.execute("SELECT tbl, op, count(*) FROM written GROUP BY tbl, op").fetchall()
    db.execute("DELETE FROM written")
    return {(table, op): n for table, op, n in found}


async def test_a_save_writes_only_the_rows_a_turn_added(tmp_path: Path) -> None:
    """The regression guard of issue 10: a turn's save inserts its new message, audit and
    queue rows and updates the session row — no old message or audit row is written again,
    and no queue row it did not change is touched."""
    path = tmp_path / "state.db"
    s = grown_session(400)
    assert len(s.transcript.audit) == 20
    assert len(s.queue.delivered_ids) == 40
    store = SQLiteStore(path)
    await store.create_session(s.state())
    loaded = await store.load_session("s1")  # as the bridge does: load, then go on
    assert loaded is not None
    s = Session.from_state(loaded)
    db = count_writes(path)
    for turn in range(3):
        before = len(s.transcript)
        s.queue.remind({"body": f"late note {turn}"}, mode="audit_only")
        s.run_seam("loop_exit")  # one audit entry, one id delivered here
        late = s.queue.remind({"body": f"steer {turn}"}, mode="interrupt")
        await store.enqueue("s1", s.queue.state().items[-1])  # this one the store has too
        s.run_seam("iteration_start")  # delivered here: the save marks it so
        assert late in s.queue.delivered_ids
        s.append(user(f"next {turn}"))  # type: ignore[arg-type]
        s.prepare_request()
        s.append(assistant(f"done {turn}"))  # type: ignore[arg-type]
        writes(db)  # the enqueue's own writes are not the save's
        await store.save_session(s.state())
        added = len(s.transcript) - before
        assert added >= 2
        assert writes(db) == {
            ("messages", "insert"): added,
            ("audit", "insert"): 1,
            # the id delivered at loop_exit, new to the store, and the enqueued one
            ("settled", "insert"): 2,
            ("pending", "delete"): 1,  # the enqueued one, pending -> delivered
            ("sessions", "update"): 2,  # the head, then the activity order
        }
    assert await store.load_session("s1") == s.state()
    # a store object that remembers nothing (a restart) writes every audit row again, but
    # still appends to the stored messages, which are a prefix of the state's
    await store.close()
    store = SQLiteStore(path)
    s.append(user("after the restart"))  # type: ignore[arg-type]
    await store.save_session(s.state())
    found = writes(db)
    assert found[("messages", "insert")] == 1
    assert ("messages", "delete") not in found
    assert found[("audit", "delete")] == found[("audit", "insert")] == len(s.transcript.audit)
    assert await store.load_session("s1") == s.state()
    await store.close()
    db.close()


async def test_the_pending_limit_sees_what_other_connections_and_calls_changed(
    tmp_path: Path,
) -> None:
    """``enqueue`` remembers the pending count between its commits; whatever else changes
    the queue — another store object on the file, a raw connection, this store's own drain
    or revoke — is seen by the next full-queue check."""
    path = tmp_path / "state.db"
    limit = 3

    async def full(store: SQLiteStore, body: str) -> bool:
        try:
            await store.enqueue("s1", _reminder(body), max_pending=limit)
        except QueueError as exc:
            refused = exc.reason
        else:
            return False
        assert refused == "queue_full"
        return True

    async with SQLiteStore(path) as store, SQLiteStore(path) as other:
        await store.create_session(Session(session_id="s1").state())
        assert not await full(store, "a")
        assert not await full(store, "b")
        await other.enqueue("s1", _reminder("from another store object"))
        assert await full(store, "c")  # three pending, one of them not queued here
        await other.drain("s1", ["finish_step"])
        assert not await full(store, "d")  # the other object delivered all three
        assert not await full(store, "e")
        own = _reminder("f")
        await store.enqueue("s1", own, max_pending=limit)
        assert await full(store, "g")
        assert await store.revoke("s1", own.id) == "revoked"  # this store's own change
        assert not await full(store, "h")
        raw = sqlite3.connect(path)
        raw.execute("INSERT INTO settled SELECT session_id, item_id, 'delivered' FROM pending")
        raw.execute("DELETE FROM pending")
        raw.commit()
        raw.close()
        for body in ("i", "j", "k"):
            assert not await full(store, body)
        assert await full(store, "l")
        await store.drain("s1", ["finish_step"])  # and its own drain
        assert not await full(store, "m")
        assert len(await store.pending("s1")) == 1


def test_an_old_sqlite_is_refused_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite3, "sqlite_version_info", (3, 22, 0))
    monkeypatch.setattr(sqlite3, "sqlite_version", "3.22.0")
    with pytest.raises(StoreError, match=r"SQLite is 3\.22\.0; the session store needs 3\.24\.0"):
        SQLiteStore(tmp_path / "state.db")
    assert not (tmp_path / "state.db").exists()
