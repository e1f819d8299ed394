"""Shared test configuration: the fixtures folder, async tests on asyncio, common fixtures,
and the test session's own ``redis-server`` (``redis_url``, ``fresh_redis_url``).

Tests live in one folder per area (core/, session/, loop/, providers/, cli/, properties/, …)
and import only public modules of ``agent_reminders``.
"""

from __future__ import annotations

import functools
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_reminders import EventLog

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ROOT = FIXTURES.parents[1]

# Hook runs of the tests (and of the agents the tests run) start their hook servers in a
# folder of this test run, not the user's, and those servers leave a minute after their
# last run (tests/integrations/test_hook_server.py tests the server itself).
_HOOK_DIR = Path(tempfile.mkdtemp(prefix="agent-reminders-hooks-"))
os.environ["AGENT_REMINDERS_HOOK_DIR"] = str(_HOOK_DIR)
os.environ["AGENT_REMINDERS_HOOK_SERVER_IDLE"] = "60"


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio (trio is not a dependency)."""
    return "asyncio"


@pytest.fixture
def fixtures() -> Path:
    """The folder of shared test files (verifier outputs, scripts, forged tags)."""
    return FIXTURES


@pytest.fixture
def event_log() -> EventLog:
    """A fresh in-memory event log."""
    return EventLog()


def _free_port() -> int:
    """A loopback port nobody listens on now — never 6379, the machine's own Redis."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        if port != 6379:
            return port


def redis_command(port: int, *args: str) -> bytes:
    """Send one command to the Redis server on ``127.0.0.1:port`` and return the first line
    of its reply (RESP), without needing a client library."""
    frame = f"*{len(args)}\r\n" + "".join(f"${len(a.encode())}\r\n{a}\r\n" for a in args)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(frame.encode())
        reply = b""
        while not reply.endswith(b"\r\n"):
            chunk = conn.recv(4096)
            if not chunk:
                break
            reply += chunk
    return reply.split(b"\r\n", 1)[0]


def _start_redis(binary: str, folder: Path) -> tuple[subprocess.Popen[bytes], int]:
    for _ in range(5):  # a port taken between the probe and the start: try another
        port = _free_port()
        log = (folder / f"redis-{port}.log").open("wb")
        proc = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(folder)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        log.close()
        deadline = time.monotonic() + 20
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                if redis_command(port, "PING") == b"+PONG":
                    return proc, port
            except OSError:
                pass
            time.sleep(0.02)
        _stop(proc)
    raise RuntimeError(f"redis-server did not start; see the logs in {folder}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``redis://127.0.0.1:PORT/0`` of a ``redis-server`` this test session started on a free
    loopback port (no persistence), stopped by its PID at the end. The machine's own Redis
    (6379) is never used. Without a ``redis-server`` binary the tests that need it skip."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("no redis-server binary on PATH (apt-get install redis-server)")
    proc, port = _start_redis(binary, tmp_path_factory.mktemp("redis"))
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        _stop(proc)


@pytest.fixture
def fresh_redis_url(redis_url: str) -> str:
    """``redis_url`` with every database of the suite's own server flushed first, so each
    test starts empty."""
    port = int(redis_url.rsplit(":", 1)[1].split("/", 1)[0])
    assert redis_command(port, "FLUSHALL") == b"+OK"
    return redis_url


_SHARED_TIKTOKEN = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "tiktoken"


@pytest.fixture(autouse=True)
def _tiktoken_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests read tiktoken's encodings from the shared offline copy when nothing else is set
    (the Makefile exports the same folder); a user's machine downloads them as usual. (One
    conftest for the whole suite: ``--doctest-modules`` imports every conftest.py by its
    basename, so a second one would clash.)"""
    if "TIKTOKEN_CACHE_DIR" not in os.environ and _SHARED_TIKTOKEN.is_dir():
        monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(_SHARED_TIKTOKEN))


@functools.cache
def _tiktoken_missing(cache_dir: str | None) -> str | None:
    """Why tiktoken's two encodings cannot be loaded here (``None``: they can)."""
    try:
        import tiktoken
    except ImportError:
        return "tiktoken is not installed"
    try:
        for name in ("o200k_base", "cl100k_base"):
            tiktoken.get_encoding(name)
    except Exception as exc:  # no network and no cached files: requests' or OS errors
        return (
            f"tiktoken's encoding files cannot be had here ({type(exc).__name__}; "
            f"TIKTOKEN_CACHE_DIR={cache_dir}): the audit falls back to bytes/4"
        )
    return None


@pytest.fixture
def tiktoken_encodings() -> None:
    """Skip, saying why, when tiktoken's encoding files cannot be loaded (a fresh clone offline
    without the shared copy): tests of exact token counts need them; the rest of the audit
    runs on its documented fallback."""
    reason = _tiktoken_missing(os.environ.get("TIKTOKEN_CACHE_DIR"))
    if reason is not None:
        pytest.skip(reason)


# -- real mounts (root only): a full disk and a read-only volume -----------------------------


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 1 MiB tmpfs mounted for this test (root only; skipped otherwise)."""
    folder = tmp_path / "tiny"
    folder.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


@pytest.fixture
def read_only_view(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """``(folder, view)``: ``view`` a real read-only bind mount of ``folder`` (root only;
    skipped otherwise). The file system answers every write under ``view`` with EROFS, as a
    read-only volume does, whoever asks (root ignores permission bits, so a ``chmod`` would
    prove nothing)."""
    folder, view = tmp_path / "data", tmp_path / "view"
    folder.mkdir()
    view.mkdir()
    done = subprocess.run(
        ["mount", "--bind", str(folder), str(view)], capture_output=True, check=False
    )
    if done.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {done.stderr.decode().strip()}")
    try:
        subprocess.run(
            ["mount", "-o", "remount,bind,ro", str(view)], capture_output=True, check=True
        )
        yield folder, view
    finally:
        subprocess.run(["umount", "-l", str(view)], check=True)
