"""A real ``agent-reminders serve`` over stdio when its SQLite file or its disk fails: damage
inside a file whose header is intact (at start, and while serving) and a full disk. The
client gets an error that says what happened (``data.message``), stderr gets a log line, and
a damaged file is not written to once the damage is seen.

The full disk is a real 1 MiB tmpfs (mounting one needs root; skipped otherwise).
"""

from __future__ import annotations

import hashlib
import random
import sqlite3
from pathlib import Path
from typing import Any

import anyio
from crashkit import ServeProcess

from agent_reminders import Session
from agent_reminders.storage import SQLiteStore
from agent_reminders.testing.store_contract import queue_items

PAGE = 4096


def build(path: Path, *session_ids: str) -> None:
    async def run() -> None:
        async with SQLiteStore(path) as store:
            for sid in session_ids:
                await store.create_session(Session(session_id=sid).state())
                for item in queue_items(f"{sid}: one", f"{sid}: two"):
                    await store.enqueue(sid, item)

    anyio.run(run)


def roots(path: Path) -> dict[str, int]:
    db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        return {str(n): int(p) for n, p in db.execute("SELECT name, rootpage FROM sqlite_master")}
    finally:
        db.close()


def scramble(path: Path, *pages: int) -> None:
    rng = random.Random(11)
    with path.open("r+b") as handle:
        for page in pages:
            handle.seek((page - 1) * PAGE)
            handle.write(rng.randbytes(PAGE))


def digests(path: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in (path, Path(f"{path}-wal"))
        if p.exists()
    }


def error_of(reply: dict[str, Any]) -> dict[str, Any]:
    assert "error" in reply, reply
    error: dict[str, Any] = reply["error"]
    assert "Traceback" not in str(error)
    return error


def test_a_file_damaged_behind_its_header_ends_serve_at_once(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    build(path, "s1", "s2")
    found = roots(path)
    scramble(path, found["sessions"], found["sqlite_autoindex_sessions_1"])
    before = digests(path)
    server = ServeProcess("--store", f"sqlite:{path}", cwd=tmp_path)
    assert server.close() != 0
    lines = server.stderr.strip().splitlines()
    assert len(lines) == 1, server.stderr
    assert str(path) in lines[0]
    assert "corrupt" in lines[0]
    assert "Traceback" not in server.stderr
    assert digests(path) == before


def test_damage_found_while_serving_is_said_to_the_client_and_nothing_more_is_written(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.db"
    build(path, "s1", "s2")
    server = ServeProcess("--store", f"sqlite:{path}", cwd=tmp_path)
    try:
        assert len(server.call("session/pending_injections", {"sessionId": "s1"})["injections"])
        # damage the queue's pages behind the server's back: a commit through another
        # connection (the server drops the pages it cached), a checkpoint, then the bytes
        found = roots(path)
        db = sqlite3.connect(path, isolation_level=None)
        db.execute("UPDATE store_meta SET value = value WHERE key = 'schema'")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
        scramble(path, found["pending"], found["sqlite_autoindex_pending_1"])
        before = digests(path)
        remind = {"sessionId": "s2", "body": "after the damage"}
        first = error_of(server.reply(server.send("session/remind", remind)))
        assert first["code"] == -32603
        said = first["data"]["message"]
        assert str(path) in said
        assert "corrupt" in said
        assert "will not be changed" in said
        # every later write is refused with the same words, and the file stays as it was
        again = error_of(server.reply(server.send("session/remind", remind)))
        assert "corrupt" in again["data"]["message"]
        made = error_of(server.reply(server.send("session/new", {"cwd": str(tmp_path)})))
        assert "corrupt" in made["data"]["message"]
        assert digests(path) == before
    finally:
        server.close()
    assert digests(path) == before
    logged = [line for line in server.stderr.splitlines() if "corrupt" in line]
    assert logged, server.stderr
    assert str(path) in logged[0]
    assert "Traceback" not in server.stderr


def test_a_full_disk_is_said_to_the_client_and_on_stderr(tiny_disk: Path, tmp_path: Path) -> None:
    path = tiny_disk / "state.db"
    server = ServeProcess("--store", f"sqlite:{path}", cwd=tmp_path)
    try:
        sid = server.call("session/new", {"cwd": str(tmp_path)})["sessionId"]
        acknowledged, error = 0, None
        for n in range(500):
            body = f"{n}: " + "x" * 12_000
            reply = server.reply(server.send("session/remind", {"sessionId": sid, "body": body}))
            if "error" in reply:
                error = error_of(reply)
                break
            acknowledged += 1
        assert error is not None, "the disk never filled"
        assert acknowledged > 0
        assert error["code"] == -32603
        assert str(path) in error["data"]["message"]
        assert "the disk is full" in error["data"]["message"]
    finally:
        server.close()
    logged = [line for line in server.stderr.splitlines() if "the disk is full" in line]
    assert logged, server.stderr
    assert str(path) in logged[0]
    assert "Traceback" not in server.stderr
