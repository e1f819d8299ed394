"""The resident hook server: hook runs answered by one process that imported the library once.

Started in the background by a hook run that found none (:mod:`_agent_reminders_hook`),
as ``python -m agent_reminders.integrations._hook_server FOLDER``. It listens on
``FOLDER/hook-<installation>.sock`` (this user's only) and answers one run at a time, exactly as the
run would have been answered in its own process — the same ``hook_main`` of the same agent,
with the run's arguments, stdin, working directory and environment — so the store, its lease
and every error are what they would be without it. It takes runs of this user only (the
peer's uid), of this installation only (the package's folder), and stops taking them when a
file of the library it has loaded changes (the run is then done by the client), when its
socket is taken away, or after ``AGENT_REMINDERS_HOOK_SERVER_IDLE`` seconds (default 600)
without a run. One server per installation: it holds the lock file beside its socket while
it runs.
"""

from __future__ import annotations

import contextlib
import io
import os
import socket
import struct
import sys
from pathlib import Path
from typing import Any

from _agent_reminders_hook import (
    SOCKET,
    VERSION_TAG,
    decode,
    encode,
    private_folder,
    read_frame,
    write_frame,
)

from .agents import AGENTS, agent_module, hook_main

__all__ = ["serve"]

IDLE_SECONDS = 600.0


def _loaded_files() -> dict[str, int]:
    """The library's modules loaded in this process, with their files' modification times."""
    files: dict[str, int] = {}
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if name.startswith("agent_reminders") and isinstance(path, str):
            with contextlib.suppress(OSError):
                files[path] = os.stat(path).st_mtime_ns
    return files


def _changed(files: dict[str, int]) -> bool:
    for path, mtime in files.items():
        try:
            if os.stat(path).st_mtime_ns != mtime:
                return True
        except OSError:
            return True
    return False


def _peer_is_me(conn: socket.socket) -> bool:
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:  # pragma: no cover - Linux has it; elsewhere the folder's mode guards
        return True
    creds = conn.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    return bool(struct.unpack("3i", creds)[1] == os.getuid())


def _answer(request: dict[str, Any], data: bytes) -> dict[str, Any]:
    """Run ``hook <agent>`` as its own process would, capturing what it prints."""
    agent = request["agent"]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = hook_main(
            agent,
            list(request["argv"]),
            stdin=io.StringIO(data.decode("utf-8", "replace")),
            env=dict(request["env"]),
            cwd=Path(request["cwd"]),
        )
    return {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


def _preload() -> None:
    """Import what the runs need now, not during the first one."""
    for name in AGENTS:
        agent_module(name)
    from . import _hook_store  # noqa: F401


def serve(folder: str, idle: float = IDLE_SECONDS) -> None:
    """Answer hook runs on ``folder/hook.sock`` until idle, stale or displaced."""
    import fcntl

    if not private_folder(folder, create=True):
        return
    lock = open(os.path.join(folder, SOCKET.replace(".sock", ".lock")), "a")  # noqa: SIM115 - held for the life
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # another server runs here
        lock.close()
        return
    path = os.path.join(folder, SOCKET)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    _preload()
    files = _loaded_files()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o600)
    listener.listen(64)
    listener.settimeout(idle)
    mine = os.stat(path).st_ino
    try:
        while True:
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                return
            with conn:
                if not _serve_one(conn, files):
                    return
            try:
                if os.stat(path).st_ino != mine:  # the socket was replaced or removed
                    return
            except OSError:
                return
    finally:
        listener.close()
        with contextlib.suppress(OSError):
            if os.stat(path).st_ino == mine:
                os.unlink(path)
        lock.close()


def _serve_one(conn: socket.socket, files: dict[str, int]) -> bool:
    """Answer one run; whether the server goes on."""
    conn.settimeout(30.0)
    try:
        if not _peer_is_me(conn):
            return True
        request = decode(read_frame(conn))
        data = read_frame(conn)
    except (OSError, ValueError):
        return True
    if (
        not isinstance(request, dict)
        or request.get("version") != VERSION_TAG
        or request.get("agent") not in AGENTS
        or _changed(files)
    ):
        with contextlib.suppress(OSError):
            write_frame(conn, encode({"stale": True}))
        return False
    answer = _answer(request, data)
    with contextlib.suppress(OSError):
        write_frame(conn, encode(answer))
    return True


if __name__ == "__main__":
    idle = float(os.environ.get("AGENT_REMINDERS_HOOK_SERVER_IDLE") or IDLE_SECONDS)
    serve(sys.argv[1], idle)
