"""The ``agent-reminders`` command's entry point, and a hook run's fast path: hand the run to
a resident hook server, if one is up.

This module stands beside the ``agent_reminders`` package, not in it, so that a hook run
imports nothing of the library (a package's ``__init__`` runs before any module in it) until
it has to.

A coding agent starts ``agent-reminders hook <agent>`` before every prompt and after every tool
call, as a new process each time; most of such a process's cost is starting Python and
importing the library. So a run first tries the hook server of this user (one process,
:mod:`agent_reminders.integrations._hook_server`, with the library imported once): it sends
the run's arguments, working directory, environment and stdin over a Unix socket (one
per installation of the library) and prints
the answer — this module imports nothing but the standard library's socket and JSON. When no
server answers, the run is done in this process as before, and a server is started in the
background for the next run; it exits after ``AGENT_REMINDERS_HOOK_SERVER_IDLE`` seconds
(default 600) without a run, and as soon as the library's files change under it.

``AGENT_REMINDERS_HOOK_SERVER=off`` turns the server off (every run in its own process).
The socket lives in a folder only this user can enter: ``$AGENT_REMINDERS_HOOK_DIR``, else
``$XDG_RUNTIME_DIR/agent-reminders``, else ``/tmp/agent-reminders-<uid>``; a folder another
user owns, or one others may enter, is not used.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys
import zlib

__all__ = [
    "HOOK_AGENTS",
    "OFF_VALUES",
    "SOCKET",
    "VERSION_TAG",
    "read_frame",
    "run",
    "socket_folder",
    "main",
    "write_frame",
]

# the agents of ``hook <agent>`` (agent_reminders.integrations.agents.AGENTS, checked equal by
# a test): named here so that a hook run imports nothing else before it reaches a hook server
HOOK_AGENTS = ("claude-code", "codex", "gemini-cli", "cursor")

OFF_VALUES = ("0", "off", "no", "false")
# what a server and a client must share to talk: the package's folder (one installation)
VERSION_TAG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "agent_reminders")
# one server per installation: its socket's name is made from the package's folder
SOCKET = f"hook-{zlib.crc32(VERSION_TAG.encode()):08x}.sock"
_WAIT_SECONDS = 120.0  # an agent's own hook timeout is shorter: it gives up first
_HEADER = struct.Struct("!I")


def socket_folder(env: dict[str, str] | os._Environ[str] | None = None) -> str:
    """The folder of this user's hook server socket (see the module's docstring)."""
    given = os.environ if env is None else env
    chosen = given.get("AGENT_REMINDERS_HOOK_DIR")
    if chosen:
        return chosen
    runtime = given.get("XDG_RUNTIME_DIR")
    if runtime:
        return os.path.join(runtime, "agent-reminders")
    return f"/tmp/agent-reminders-{os.getuid()}"


def private_folder(folder: str, *, create: bool) -> bool:
    """Whether ``folder`` is this user's own and closed to others (made so when ``create``
    and it is missing)."""
    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        if not create:
            return False
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            info = os.lstat(folder)
        except OSError:
            return False
    except OSError:
        return False
    import stat

    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and info.st_mode & 0o077 == 0


def write_frame(sock: socket.socket, data: bytes) -> None:
    """One length-prefixed frame."""
    sock.sendall(_HEADER.pack(len(data)) + data)


def read_frame(sock: socket.socket) -> bytes:
    """One length-prefixed frame; ``ConnectionError`` when the other side is gone."""
    header = _read(sock, _HEADER.size)
    return _read(sock, _HEADER.unpack(header)[0])


def _read(sock: socket.socket, size: int) -> bytes:
    parts, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("the hook server closed the connection")
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _connect(folder: str) -> socket.socket | None:
    if not private_folder(folder, create=False):
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(_WAIT_SECONDS)
        sock.connect(os.path.join(folder, SOCKET))
    except OSError:
        sock.close()
        return None
    return sock


def _start_server(folder: str) -> None:
    """Start a hook server in the background, detached from this run (its own session, its
    standard streams on the null device, so the agent never waits for it), for the next run;
    a failure to start is not this run's failure."""
    import contextlib

    if not private_folder(folder, create=True):
        return
    command = [sys.executable, "-m", "agent_reminders.integrations._hook_server", folder]
    actions = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]
    with contextlib.suppress(OSError, AttributeError):
        os.posix_spawn(sys.executable, command, os.environ, file_actions=actions, setsid=True)


def _stdin() -> bytes:
    """The hook input, as bytes; nothing when stdin cannot be read (the run then says what
    is wrong with its input, or its options, as it would anyway)."""
    try:
        source = getattr(sys.stdin, "buffer", None)
        if source is not None:
            return bytes(source.read())
        return str(sys.stdin.read()).encode()
    except (OSError, ValueError):
        return b""


def run(agent: str, argv: list[str]) -> int:
    """One ``hook <agent>`` run: through the server when one answers, else in this process
    (then a server is started for the next run). Returns the exit code."""
    data = _stdin()
    folder = socket_folder()
    off = os.environ.get("AGENT_REMINDERS_HOOK_SERVER", "").lower() in OFF_VALUES
    sock = None if off or not hasattr(socket, "AF_UNIX") else _connect(folder)
    if sock is not None:
        with sock:
            answer = _ask(sock, agent, argv, data)
        if answer is not None:
            sys.stdout.write(str(answer["stdout"]))
            sys.stderr.write(str(answer["stderr"]))
            status = answer["code"]
            return status if isinstance(status, int) else 1
    import io

    from agent_reminders.integrations.agents import agent_module

    code: int = agent_module(agent).hook_main(
        argv, stdin=io.StringIO(data.decode("utf-8", "replace"))
    )
    sys.stdout.flush()
    if not off and hasattr(socket, "AF_UNIX"):
        _start_server(folder)
    return code


def _ask(sock: socket.socket, agent: str, argv: list[str], data: bytes) -> dict[str, object] | None:
    """The server's answer, or ``None`` when it would not take the run (another
    installation's server, or one whose files changed: the run is done here)."""
    request = {
        "version": VERSION_TAG,
        "agent": agent,
        "argv": argv,
        "cwd": os.getcwd(),
        "env": dict(os.environ),
    }
    try:
        write_frame(sock, json.dumps(request).encode())
        write_frame(sock, data)
        answer = json.loads(read_frame(sock))
    except (OSError, ValueError) as exc:
        # the run may have been done before the server went away: never do it twice
        return {
            "code": 1,
            "stdout": "",
            "stderr": f"agent-reminders hook: the hook server failed: {exc}\n",
        }
    if not isinstance(answer, dict) or answer.get("stale"):
        return None
    return answer


def main() -> None:
    """Entry point of the ``agent-reminders`` command: a hook run here, anything else (and a
    hook run asking for ``--help`` or ``--debug``) by the full command line."""
    argv = sys.argv[1:]
    quick = {"--debug", "--help", "-h"}.isdisjoint(argv)
    if argv[:1] == ["hook"] and argv[1:2] and argv[1] in HOOK_AGENTS and quick:
        sys.exit(run(argv[1], argv[2:]))
    from agent_reminders.__main__ import main as full_main

    full_main()
