"""``SQLiteStore`` when the file or the disk under it fails: damage inside a file whose header
is intact, damage found while the store is open, a full disk, a read-only file or folder, and
a folder that does not exist.

Real files throughout. The full disk is a real 1 MiB tmpfs where this process may mount one
(root), else SQLite's own ``max_page_count`` limit, which fails a write with the same
``SQLITE_FULL``. The read-only folder is a real read-only bind mount where this process may
make one; the explicit ``read_only=True`` flag is tested everywhere (root writes any file
whatever its permission bits, so ``chmod`` proves nothing here).
"""

from __future__ import annotations

import hashlib
import logging
import os
import random
import sqlite3
from pathlib import Path

import pytest

from agent_reminders import Session, StoreError
from agent_reminders.storage import SQLiteStore
from agent_reminders.testing.store_contract import queue_items

pytestmark = pytest.mark.anyio

PAGE = 4096


async def make_store(path: Path, *session_ids: str, reminders: int = 3) -> None:
    """A store with ``session_ids``, each with ``reminders`` pending; closed (checkpointed)."""
    async with SQLiteStore(path) as store:
        for sid in session_ids:
            await store.create_session(Session(session_id=sid).state())
            for item in queue_items(*(f"{sid} reminder {n}" for n in range(reminders))):
                await store.enqueue(sid, item)


def roots(path: Path) -> dict[str, int]:
    """Each table's and index's root page, read with a plain connection."""
    db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        return {str(n): int(p) for n, p in db.execute("SELECT name, rootpage FROM sqlite_master")}
    finally:
        db.close()


def scramble(path: Path, *pages: int) -> None:
    """Overwrite whole pages with random bytes, leaving the header (page 1) intact."""
    rng = random.Random(len(pages))
    with path.open("r+b") as handle:
        for page in pages:
            assert page > 1
            handle.seek((page - 1) * PAGE)
            handle.write(rng.randbytes(PAGE))


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def files(path: Path) -> dict[str, str]:
    """The digest of the file and of its write-ahead log, when there is one."""
    found = {}
    for name in (path, Path(f"{path}-wal")):
        if name.exists():
            found[name.name] = digest(name)
    return found


def damage_behind(path: Path, *tables: str) -> None:
    """Damage ``tables`` while a store has the file open: a commit through another connection
    (so the store's connection drops the pages it cached), a checkpoint into the file, then
    the tables' pages scrambled on disk."""
    found = roots(path)
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("UPDATE store_meta SET value = value WHERE key = 'schema'")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()
    scramble(path, *(found[t] for t in tables))


# -- damage inside the file -------------------------------------------------------------------


async def test_scrambled_pages_behind_an_intact_header_are_refused_at_open(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.db"
    await make_store(path, "s1", "s2")
    found = roots(path)
    scramble(path, found["sessions"], found["sqlite_autoindex_sessions_1"])
    before = files(path)
    with pytest.raises(StoreError) as refused:
        SQLiteStore(path)
    message = str(refused.value)
    assert str(path) in message
    assert "corrupt" in message
    assert "\n" not in message
    assert files(path) == before  # nothing was written, not even a migration or WAL


async def test_damage_found_while_open_stops_every_write_and_leaves_the_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "state.db"
    await make_store(path, "s1", "s2")
    store = SQLiteStore(path)
    try:
        assert len(await store.pending("s1")) == 3
        damage_behind(path, "pending", "sqlite_autoindex_pending_1")
        before = files(path)
        with (
            caplog.at_level(logging.WARNING, logger="agent_reminders.storage"),
            pytest.raises(StoreError) as first,
        ):
            await store.enqueue("s1", queue_items("after the damage")[0])
        message = str(first.value)
        assert str(path) in message
        assert "corrupt" in message
        assert "will not be changed" in message
        logged = [r for r in caplog.records if r.name == "agent_reminders.storage"]
        assert len(logged) == 1
        assert str(path) in logged[0].getMessage()
        assert "corrupt" in logged[0].getMessage()
        # every later write is refused the same way, whichever table it would touch
        for write in (
            lambda: store.enqueue("s2", queue_items("again")[0]),
            lambda: store.create_session(Session(session_id="s3").state()),
            lambda: store.append_events("s2", []),
            lambda: store.claim("s2", "worker", 30),
            lambda: store.drain("s2", ["finish_step"]),
        ):
            with pytest.raises(StoreError) as again:
                await write()
            assert "corrupt" in str(again.value)
            assert str(path) in str(again.value)
        # what is still readable can be read, to save it
        assert await store.read_events("s2") == []
        assert files(path) == before
    finally:
        await store.close()
    assert files(path) == before  # closing does not merge anything into the damaged file


# -- a full disk -------------------------------------------------------------------------------


async def fill(store: SQLiteStore, acknowledged: list[str]) -> StoreError:
    """Queue 8 KB reminders on ``s1`` (their ids into ``acknowledged``) until a write fails;
    that failure."""
    for n in range(1000):
        try:
            acknowledged.append(await store.enqueue("s1", queue_items(f"{n}: " + "x" * 8000)[0]))
        except StoreError as exc:
            return exc
    raise AssertionError("the store never filled")


async def test_a_full_disk_says_so_naming_the_file_and_the_store_goes_on_once_freed(
    tiny_disk: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tiny_disk / "state.db"
    acknowledged: list[str] = []
    async with SQLiteStore(path) as store:
        await store.create_session(Session(session_id="s1").state())
        # leave the store a little room, so it fills after a few reminders
        filler = tiny_disk / "filler"
        free = os.statvfs(tiny_disk).f_bavail * os.statvfs(tiny_disk).f_frsize
        filler.write_bytes(b"\0" * max(0, free - 64 * 1024))
        with caplog.at_level(logging.WARNING, logger="agent_reminders.storage"):
            message = str(await fill(store, acknowledged))
        assert str(path) in message
        assert "the disk is full" in message
        assert "nothing was written" in message
        assert "\n" not in message
        assert acknowledged  # some went in before the disk filled
        logged = [r.getMessage() for r in caplog.records if r.name == "agent_reminders.storage"]
        assert any("the disk is full" in line and str(path) in line for line in logged)
        # a full disk is not damage: once there is room again, writes go on
        filler.unlink()
        acknowledged.append(await store.enqueue("s1", queue_items("after")[0]))
        assert [r["id"] for r in await store.pending("s1")] == acknowledged


async def test_a_database_at_its_size_limit_is_a_full_disk_too(tmp_path: Path) -> None:
    """SQLite's ``max_page_count`` fails a write with the same ``SQLITE_FULL`` as a full
    disk: the variant of the test above that needs no mount."""
    path = tmp_path / "state.db"
    async with SQLiteStore(path) as store:
        await store.create_session(Session(session_id="s1").state())

        # the limit is per connection, so it is set on the store's own (a private door: no
        # public API should let a caller shrink a store)
        def limit(db: sqlite3.Connection) -> None:
            (pages,) = db.execute("PRAGMA page_count").fetchone()
            db.execute(f"PRAGMA max_page_count = {pages + 2}")

        await store._call(limit)
        message = str(await fill(store, []))
        assert str(path) in message
        assert "the disk is full" in message
        assert "nothing was written" in message


# -- read-only ---------------------------------------------------------------------------------


async def test_a_store_opened_read_only_reads_and_refuses_writes_by_name(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    await make_store(path, "s1")
    before = path.read_bytes(), path.stat().st_mtime_ns
    async with SQLiteStore(path, read_only=True) as store:
        assert store.read_only
        assert len(await store.pending("s1")) == 3
        assert await store.latest_session() == "s1"
        with pytest.raises(StoreError) as refused:
            await store.enqueue("s1", queue_items("a write")[0])
        assert str(path) in str(refused.value)
        assert "read-only" in str(refused.value)
        assert "corrupt" not in str(refused.value)
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


async def test_an_empty_or_missing_file_is_not_a_read_only_store(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    with pytest.raises(StoreError) as refused:
        SQLiteStore(empty, read_only=True)
    assert str(empty) in str(refused.value)
    with pytest.raises(StoreError):
        SQLiteStore(tmp_path / "missing.db", read_only=True)
    assert not (tmp_path / "missing.db").exists()


async def test_a_store_on_a_read_only_volume_opens_read_only(
    read_only_view: tuple[Path, Path],
) -> None:
    folder, view = read_only_view
    await make_store(folder / "state.db", "s1")
    before = digest(folder / "state.db")
    async with SQLiteStore(view / "state.db") as store:  # found read-only, no flag needed
        assert store.read_only
        assert len(await store.pending("s1")) == 3
        with pytest.raises(StoreError) as refused:
            await store.revoke("s1", (await store.pending("s1"))[0]["id"])
        assert str(view / "state.db") in str(refused.value)
        assert "read-only" in str(refused.value)
    assert digest(folder / "state.db") == before


# -- a folder that does not exist -------------------------------------------------------------


async def test_a_missing_folder_is_refused_by_name_when_folders_are_not_made(
    tmp_path: Path,
) -> None:
    typo = tmp_path / "stat" / "nested"
    with pytest.raises(StoreError) as refused:
        SQLiteStore(typo / "state.db", create_folders=False)
    message = str(refused.value)
    assert f"folder {typo} does not exist" in message
    assert not (tmp_path / "stat").exists()
    # an existing folder gets its new store as before
    async with SQLiteStore(tmp_path / "state.db", create_folders=False) as store:
        assert await store.latest_session() is None


async def test_a_tool_that_only_adds_names_the_missing_folder(tmp_path: Path) -> None:
    typo = tmp_path / "typo"
    with pytest.raises(StoreError) as refused:
        SQLiteStore(typo / "state.db", create=False)
    assert f"folder {typo} does not exist" in str(refused.value)
    assert not typo.exists()
