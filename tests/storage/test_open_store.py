"""open_store URLs, the public surface of agent_reminders.storage, and light imports."""

from __future__ import annotations

import inspect
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import agent_reminders.storage as storage
from agent_reminders import ConfigError, StoreError
from agent_reminders.storage import MemoryStore, RedisStore, SQLiteStore, Store, open_store

pytestmark = pytest.mark.anyio


async def test_memory_url() -> None:
    store = await open_store("memory:")
    assert isinstance(store, MemoryStore)
    assert isinstance(store, Store)
    await store.close()


@pytest.mark.parametrize("form", ["sqlite:{}", "sqlite://{}", "{}"])
async def test_sqlite_urls(tmp_path: Path, form: str) -> None:
    path = tmp_path / "sub" / "state.db"
    store = await open_store(form.format(path), synchronous="FULL")
    assert isinstance(store, SQLiteStore)
    assert isinstance(store, Store)
    assert (Path(store.path), store.synchronous) == (path, "FULL")
    assert path.is_file()
    await store.close()


async def test_a_relative_sqlite_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    async with await open_store("sqlite:.agent-reminders/state.db"):
        pass
    assert (tmp_path / ".agent-reminders" / "state.db").is_file()


async def test_redis_urls_open_a_redis_store(fresh_redis_url: str) -> None:
    store = await open_store(fresh_redis_url, prefix="tenant-a")
    assert isinstance(store, RedisStore)
    assert isinstance(store, Store)
    assert store.prefix == "tenant-a"
    assert await store.latest_session() is None
    await store.close()


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    assert port != 6379
    return port  # nothing listens on it once the probe is closed


async def test_an_unreachable_redis_is_one_store_error_without_the_password() -> None:
    port = _closed_port()
    with pytest.raises(StoreError) as caught:
        await open_store(f"redis://:hunter2@127.0.0.1:{port}/0")
    assert f"redis://:***@127.0.0.1:{port}/0" in str(caught.value)
    assert "hunter2" not in str(caught.value)
    assert "Traceback" not in str(caught.value)


@pytest.mark.parametrize("url", ["redis://127.0.0.1:port/0", "redis://127.0.0.1:6390/db"])
async def test_a_malformed_redis_url_is_a_config_error(url: str) -> None:
    with pytest.raises(ConfigError) as caught:
        await open_store(url)
    assert url in str(caught.value)


@pytest.mark.parametrize("prefix", ["", "a{b}", None])
def test_a_bad_redis_prefix_is_a_config_error(prefix: object) -> None:
    with pytest.raises(ConfigError):
        RedisStore("redis://127.0.0.1:6390/0", prefix=prefix)  # type: ignore[arg-type]


def test_redis_py_is_imported_only_when_a_redis_store_is_made() -> None:
    script = (
        "import json, sys\n"
        "import agent_reminders.storage as storage\n"
        "before = 'redis' in sys.modules\n"
        "sys.modules['redis'] = None  # as if redis-py were not installed\n"
        "try:\n"
        "    storage.RedisStore('redis://127.0.0.1:6390/0')\n"
        "except ImportError as exc:\n"
        "    print(json.dumps([before, str(exc)]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    before, message = json.loads(proc.stdout)
    assert before is False
    assert "agent-reminders[redis]" in message


@pytest.mark.parametrize("url", ["", "   ", "sqlite:", "postgres://db/x", "mem:"])
async def test_bad_urls(url: str) -> None:
    with pytest.raises(ConfigError):
        await open_store(url)


async def test_open_store_reports_an_unusable_file(tmp_path: Path) -> None:
    path = tmp_path / "junk.db"
    path.write_bytes(b"not a database at all" * 10)
    with pytest.raises(StoreError) as caught:
        await open_store(f"sqlite:{path}")
    assert str(path) in str(caught.value)


def test_the_storage_all_is_sorted_and_documented() -> None:
    exported = storage.__all__
    assert exported == sorted(exported)
    assert len(set(exported)) == len(exported)
    for name in exported:
        obj = getattr(storage, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert (obj.__doc__ or "").strip(), name


def test_import_agent_reminders_does_not_load_the_stores() -> None:
    script = "import json, sys\nimport agent_reminders\nprint(json.dumps(sorted(sys.modules)))"
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    loaded = set(json.loads(proc.stdout))
    assert "agent_reminders" in loaded
    assert not {m for m in loaded if m.startswith("agent_reminders.storage")}
    assert "sqlite3" not in loaded
    assert "redis" not in loaded
