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

import marshal
import os
import sys

TYPE_CHECKING = False  # not typing's: importing typing would cost a hook run more than the rest
if TYPE_CHECKING:
    from _socket import socket as Socket  # noqa: N812 - what the socket module's sockets build on
    from typing import Any

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
_WAIT_SECONDS = 120.0  # an agent's own hook timeout is shorter: it gives up first
_HEADER_BYTES = 4


def _name(text: str) -> str:
    """A short stable name for ``text`` (FNV-1a, 32 bits): no hashing module to import."""
    value = 0x811C9DC5
    for byte in text.encode():
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return f"{value:08x}"


# one server per installation: its socket's name is made from the package's folder
SOCKET = f"hook-{_name(VERSION_TAG)}.sock"


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


def write_frame(sock: Socket, data: bytes) -> None:
    """One length-prefixed frame."""
    sock.sendall(len(data).to_bytes(_HEADER_BYTES, "big") + data)


def read_frame(sock: Socket) -> bytes:
    """One length-prefixed frame; ``ConnectionError`` when the other side is gone."""
    size = int.from_bytes(_read(sock, _HEADER_BYTES), "big")
    return _read(sock, size)


def encode(value: dict[str, Any]) -> bytes:
    """A request or an answer as a frame's bytes (``marshal``: built in, so nothing to import;
    both ends are this user's processes of one installation)."""
    return marshal.dumps(value)


def decode(data: bytes) -> Any:
    """What :func:`encode` made; ``ValueError`` for anything else."""
    try:
        return marshal.loads(data)
    except (EOFError, TypeError) as exc:
        raise ValueError(f"not a hook server frame: {exc}") from None


def _read(sock: Socket, size: int) -> bytes:
    parts, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("the hook server closed the connection")
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _connect(folder: str) -> Socket | None:
    if not private_folder(folder, create=False):
        return None
    import _socket  # the C module itself: the socket module would import enum and selectors

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
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


def _unix_sockets() -> bool:
    return sys.platform != "win32"


def run(agent: str, argv: list[str]) -> int:
    """One ``hook <agent>`` run: through the server when one answers, else in this process
    (then a server is started for the next run). Returns the exit code."""
    data = _stdin()
    folder = socket_folder()
    off = os.environ.get("AGENT_REMINDERS_HOOK_SERVER", "").lower() in OFF_VALUES
    sock = None if off or not _unix_sockets() else _connect(folder)
    if sock is not None:
        try:
            answer = _ask(sock, agent, argv, data)
        finally:
            sock.close()
        if answer is not None:
            sys.stdout.write(str(answer["stdout"]))
            sys.stderr.write(str(answer["stderr"]))
            status = answer["code"]
            return status if isinstance(status, int) else 1
    import io

    from agent_reminders.integrations.agents import hook_main

    code = hook_main(agent, argv, stdin=io.StringIO(data.decode("utf-8", "replace")))
    sys.stdout.flush()
    if not off and _unix_sockets():
        _start_server(folder)
    return code


def _ask(sock: Socket, agent: str, argv: list[str], data: bytes) -> dict[str, object] | None:
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
        write_frame(sock, encode(request))
        write_frame(sock, data)
        answer = decode(read_frame(sock))
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
