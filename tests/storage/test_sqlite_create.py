"""``SQLiteStore(path, create=False)``: tools that only add to an existing store never make
one by accident."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_reminders import Session, StoreError
from agent_reminders.storage import SQLiteStore, open_store

pytestmark = pytest.mark.anyio


async def test_a_missing_file_is_refused_and_nothing_is_created(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "state.db"
    with pytest.raises(StoreError) as info:
        await open_store(f"sqlite:{path}", create=False)
    assert str(path) in str(info.value)
    assert "does not exist" in str(info.value)
    assert not path.parent.exists()


async def test_an_existing_store_opens_as_usual(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    async with SQLiteStore(path) as store:
        await store.create_session(Session("s1").state())
    async with SQLiteStore(path, create=False) as store:
        assert await store.latest_session() == "s1"
