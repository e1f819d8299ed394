"""The resident hook server and a hook run's fast path (``_agent_reminders_hook``): a run
through the server answers exactly as a run in its own process, and the server steps aside
whenever it might not (another user, changed files, a displaced socket, an open folder)."""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import _agent_reminders_hook as _hook_client
from _agent_reminders_hook import SOCKET, VERSION_TAG, decode, encode, read_frame, write_frame
from agent_reminders.integrations import _hook_server

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    made = tmp_path / "sock"
    made.mkdir(mode=0o700)
    return made


@pytest.fixture
def server(folder: Path) -> Iterator[threading.Thread]:
    """A server in a thread of this process, stopped by removing its socket."""
    thread = threading.Thread(target=_hook_server.serve, args=(str(folder), 30.0), daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not (folder / SOCKET).exists():
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.01)
    yield thread
    _stop(folder)
    thread.join(timeout=30)
    assert not thread.is_alive()


def _stop(folder: Path) -> None:
    """Connect, then take the socket away: after this connection the server sees it gone."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(folder / SOCKET))
        (folder / SOCKET).unlink()
    except OSError:
        pass
    finally:
        sock.close()


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    return project


def _run_client(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    folder: Path,
    event: dict[str, Any],
) -> tuple[int, str, str]:
    monkeypatch.setenv("AGENT_REMINDERS_HOOK_DIR", str(folder))
    monkeypatch.setenv("AGENT_REMINDERS_HOOK_SERVER", "on")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(json.dumps(event).encode())))
    started: list[str] = []
    monkeypatch.setattr(_hook_client, "_start_server", started.append)
    code = _hook_client.run("codex", [])
    out = capsys.readouterr()
    return code, out.out, out.err


def _event(project: Path, **fields: Any) -> dict[str, Any]:
    return {"session_id": "s1", "cwd": str(project), "transcript_path": None, **fields}


def test_a_run_through_the_server_answers_as_the_run_itself(
    tmp_path: Path,
    folder: Path,
    server: threading.Thread,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    project = _project(tmp_path)
    start = _event(project, hook_event_name="SessionStart", source="startup")
    code, out, err = _run_client(monkeypatch, capsys, folder, start)
    assert (code, err) == (0, "")
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert f"Primary workspace root: {project}" in context
    assert (project / ".agent-reminders" / "state.db").exists()
    # a bad input: the same one line and exit 1 as without the server
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"not json")))
    assert _hook_client.run("codex", []) == 1
    said = capsys.readouterr()
    assert said.out == ""
    assert said.err.startswith("agent-reminders hook: ")
    assert said.err.count("\n") == 1


def test_the_server_uses_the_run_s_environment_and_directory(
    tmp_path: Path,
    folder: Path,
    server: threading.Thread,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    project = _project(tmp_path)
    monkeypatch.setenv("GEMINI_PROJECT_DIR", str(project))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENT_REMINDERS_HOOK_DIR", str(folder))
    event = {"session_id": "g1", "hook_event_name": "BeforeAgent", "prompt": "hello"}
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(json.dumps(event).encode())))
    assert _hook_client.run("gemini-cli", []) == 0
    out = json.loads(capsys.readouterr().out)
    assert str(project) in out["hookSpecificOutput"]["additionalContext"]
    assert (project / ".agent-reminders" / "state.db").exists()


def test_without_a_server_the_run_is_done_here_and_one_is_started(
    tmp_path: Path,
    folder: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    project = _project(tmp_path)
    started: list[str] = []
    monkeypatch.setenv("AGENT_REMINDERS_HOOK_DIR", str(folder))
    monkeypatch.delenv("AGENT_REMINDERS_HOOK_SERVER", raising=False)
    monkeypatch.setattr(_hook_client, "_start_server", started.append)
    event = _event(project, hook_event_name="SessionStart", source="startup")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(json.dumps(event).encode())))
    assert _hook_client.run("codex", []) == 0
    assert "Primary workspace root" in capsys.readouterr().out
    assert started == [str(folder)]
    # switched off: done here, and no server started
    started.clear()
    monkeypatch.setenv("AGENT_REMINDERS_HOOK_SERVER", "off")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(json.dumps(event).encode())))
    assert _hook_client.run("codex", []) == 0
    assert started == []


def test_a_folder_others_may_enter_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    open_folder = tmp_path / "open"
    open_folder.mkdir(mode=0o755)
    open_folder.chmod(0o755)
    assert not _hook_client.private_folder(str(open_folder), create=False)
    _hook_server.serve(str(open_folder), 1.0)  # refuses at once: no socket made
    assert not (open_folder / SOCKET).exists()
    missing = tmp_path / "missing"
    assert not _hook_client.private_folder(str(missing), create=False)
    assert _hook_client.private_folder(str(missing), create=True)
    assert oct(missing.stat().st_mode & 0o777) == "0o700"


def test_one_server_per_installation_and_it_leaves_when_idle(folder: Path) -> None:
    started = time.monotonic()
    first = threading.Thread(target=_hook_server.serve, args=(str(folder), 0.5), daemon=True)
    first.start()
    while not (folder / SOCKET).exists():
        time.sleep(0.01)
    _hook_server.serve(str(folder), 0.5)  # the lock is held: returns at once
    assert (folder / SOCKET).exists()
    first.join(timeout=30)
    assert not first.is_alive()
    assert not (folder / SOCKET).exists()  # it removed its socket when it left
    assert time.monotonic() - started < 30


def test_a_server_whose_files_changed_hands_the_run_back(
    tmp_path: Path, folder: Path, server: threading.Thread
) -> None:
    watched = tmp_path / "module.py"
    watched.write_text("x = 1\n")
    files = {str(watched): watched.stat().st_mtime_ns}
    assert not _hook_server._changed(files)
    os.utime(watched, ns=(0, 0))
    assert _hook_server._changed(files)
    watched.unlink()
    assert _hook_server._changed({str(watched): 0})
    # another installation (or a garbled request) gets "stale": the client runs it itself
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(folder / SOCKET))
    request = {"version": "/elsewhere", "agent": "codex", "argv": [], "cwd": "/", "env": {}}
    write_frame(sock, encode(request))
    write_frame(sock, b"{}")
    assert decode(read_frame(sock)) == {"stale": True}
    sock.close()
    server.join(timeout=30)
    assert not server.is_alive()


def test_a_server_that_fails_mid_run_is_an_error_not_a_second_run(
    tmp_path: Path,
    folder: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(folder / SOCKET))
    listener.listen(1)

    def hang_up() -> None:
        conn, _ = listener.accept()
        read_frame(conn)
        conn.close()

    thread = threading.Thread(target=hang_up, daemon=True)
    thread.start()
    event = _event(_project(tmp_path), hook_event_name="SessionStart", source="startup")
    code, out, err = _run_client(monkeypatch, capsys, folder, event)
    thread.join(timeout=30)
    listener.close()
    assert (code, out) == (1, "")
    assert err.startswith("agent-reminders hook: the hook server failed")


def test_the_command_starts_a_server_and_the_next_run_uses_it(tmp_path: Path) -> None:
    """The real command twice: the first run starts a server, the second is answered by it
    (the server's socket exists and the answer is the same), then the server is stopped."""
    folder = tmp_path / "sock"
    project = _project(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_REMINDERS_HOOK")}
    env.update(
        AGENT_REMINDERS_HOOK_DIR=str(folder),
        AGENT_REMINDERS_HOOK_SERVER_IDLE="60",
        PYTHONPATH=str(ROOT / "src"),
    )

    def run(event: dict[str, Any]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "agent_reminders", "hook", "codex"],
            input=json.dumps(event),
            capture_output=True,
            text=True,
            env=env,
            cwd=project,
            timeout=60,
            check=False,
        )

    first = run(_event(project, hook_event_name="SessionStart", source="startup"))
    assert "Primary workspace root" in first.stdout
    deadline = time.monotonic() + 60
    while not (folder / SOCKET).exists():
        assert time.monotonic() < deadline, "no server was started"
        time.sleep(0.05)
    # the second run cannot import sqlite3 itself: only the server, which has, can answer it
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "sqlite3.py").write_text("raise ImportError('this run was not served')\n")
    env["PYTHONPATH"] = f"{broken}{os.pathsep}{ROOT / 'src'}"
    second = run(_event(project, hook_event_name="UserPromptSubmit", prompt="hi"))
    assert (second.returncode, second.stdout, second.stderr) == (0, "", "")
    _stop(folder)
    assert str(ROOT / "src" / "agent_reminders") == VERSION_TAG
