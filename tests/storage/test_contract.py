"""The store contract suite (``agent_reminders.testing.store_contract``), run unchanged
against every backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_reminders.storage import MemoryData, MemoryStore, RedisStore, SQLiteStore
from agent_reminders.testing.store_contract import StoreContract, StoreFactory


class TestMemoryStore(StoreContract):
    @pytest.fixture
    def store_factory(self) -> StoreFactory:
        data = MemoryData()
        return lambda: MemoryStore(data=data)


class TestSQLiteStore(StoreContract):
    @pytest.fixture
    def store_factory(self, tmp_path: Path) -> StoreFactory:
        path = tmp_path / "state.db"
        return lambda: SQLiteStore(path)


class TestSQLiteStoreFull(StoreContract):
    """The same contract with ``synchronous=FULL`` and a nested, not yet existing folder."""

    @pytest.fixture
    def store_factory(self, tmp_path: Path) -> StoreFactory:
        path = tmp_path / "deep" / "er" / "state.db"
        return lambda: SQLiteStore(path, synchronous="FULL")


class TestRedisStore(StoreContract):
    """The same contract on the test session's own ``redis-server``."""

    @pytest.fixture
    def store_factory(self, fresh_redis_url: str) -> StoreFactory:
        return lambda: RedisStore(fresh_redis_url)
