"""A worker's lease on the session it prompts.

Several ``serve`` processes may share one store (a SQLite file, a Redis): a session is
prompted by one worker at a time. :func:`hold_lease` claims the session in the store under the
worker's id, renews the claim every third of ``lease_seconds`` while the prompt runs, and
releases it however the prompt ends (answer, cancel, error). Another worker that claims it
meanwhile is refused with :class:`SessionBusyError` (``-32006``, ``data.owner`` the holder).

A worker killed mid-prompt renews nothing and releases nothing. When its id names a process of
this machine that has ended (:func:`ended`), the next worker here takes the lease over at once;
otherwise the claim expires after ``lease_seconds``, and the refusal meanwhile says how long is
left once the holder has visibly stopped renewing.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import logging
import math
import os
import secrets
import socket
import stat
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from .._core.errors import AgentRemindersError
from ..storage.base import Store
from .errors import SessionBusyError

__all__ = ["beside", "ended", "hold_lease", "new_worker_id"]

log = logging.getLogger("agent_reminders.bridge")

# the worker ids this process made: alive as long as it is
_MINE: set[str] = set()
# worker id -> the open file holding its mark's lock, for the life of the process
_MARKED: dict[str, int] = {}


def new_worker_id() -> str:
    """``HOST:PID:RANDOM``: names this worker as a lease owner (a restarted process with the
    same pid still gets a new id, so it never renews or releases its predecessor's lease)."""
    made = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
    _MINE.add(made)
    return made


def _marks() -> Path | None:
    """This user's folder of worker marks on this machine, or ``None`` when there is no safe
    one: a folder someone else could write to could hold a forged mark."""
    if sys.platform == "win32":  # no flock; no worker is taken over early there
        return None
    folder = Path(tempfile.gettempdir()) / f"agent-reminders-{os.getuid()}" / "workers"
    try:
        for part in (folder.parent, folder):
            part.mkdir(mode=0o700, exist_ok=True)
            found = part.lstat()
            if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid():
                return None
            if found.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                return None
    except OSError:
        return None
    return folder


def _mark_path(folder: Path, owner: str) -> Path:
    # any worker id, whatever its characters, as a short file name
    return folder / f"{hashlib.sha256(owner.encode()).hexdigest()[:32]}.lock"


def _mark(owner: str) -> None:
    """Leave a mark for ``owner``, a worker of this process: a file whose lock this process
    holds until it ends, however it ends (the kernel drops the lock of a killed process).
    Other workers of this machine read a free lock as proof that the worker has ended."""
    if owner not in _MINE or owner in _MARKED:
        return
    folder = _marks()
    if folder is None:
        return
    import fcntl

    try:
        handle = os.open(_mark_path(folder, owner), os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        log.debug("cannot leave a mark for worker %s in %s", owner, folder, exc_info=True)
        return
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(handle)
        log.debug("cannot lock the mark of worker %s", owner, exc_info=True)
        return
    if not _MARKED:
        atexit.register(_unmark, folder)
        _sweep(folder)
    _MARKED[owner] = handle


# a free mark this old is taken for one whose worker died long ago and whose lease has
# expired: removing it only ever delays a takeover (to the lease's expiry), never allows one
_STALE_SECONDS = 24 * 3600


def _sweep(folder: Path) -> None:
    """Remove the free marks of workers killed long ago (a lease that expired instead of
    being taken over leaves its worker's mark behind)."""
    import fcntl

    too_old = time.time() - _STALE_SECONDS
    for path in folder.glob("*.lock"):
        try:
            if path.stat().st_mtime > too_old:
                continue
            handle = os.open(path, os.O_RDWR)
        except OSError:  # gone meanwhile, or not ours to open: left alone
            continue
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            path.unlink(missing_ok=True)
        except OSError:  # held: its worker lives
            pass
        finally:
            os.close(handle)


def _unmark(folder: Path) -> None:
    """At a normal exit: this process's marks go (a killed process leaves its own, free,
    for the next worker here to find)."""
    for owner, handle in list(_MARKED.items()):
        # a mark that cannot be removed stays behind, free, naming a worker with no lease
        with contextlib.suppress(OSError):
            _mark_path(folder, owner).unlink(missing_ok=True)
        os.close(handle)
        del _MARKED[owner]


def ended(owner: str) -> bool:
    """Whether ``owner`` is a worker id (``HOST:PID:RANDOM``) of a process of this machine
    that has ended, so its lease may be taken over at once.

    All of these must hold, else the worker is treated as alive: the id names this host;
    no process has its pid now — or it is this process's pid but an id this process did
    not make (a process before it had the pid, as a restarted container's server often
    does); and the worker's mark is here, in this user's folder, with its lock free. The
    pid alone would not do: a reused pid looks alive (which only delays a takeover), but a
    container that shares the host's name (host networking) has pids of its own, and a pid
    that is free here may be alive there — the mark, made on this machine by that very
    worker, is what proves it ran here and has ended. Workers of other users, on other
    machines, or on Windows are never taken over early.

    Example:
        >>> ended(new_worker_id()), ended("worker-a")
        (False, False)
    """
    parts = owner.rsplit(":", 2)
    if len(parts) != 3 or owner in _MINE:
        return False
    host, pid_text, _ = parts
    if host != socket.gethostname() or not (pid_text.isascii() and pid_text.isdigit()):
        return False
    if not _pid_free(int(pid_text)):
        return False
    folder = _marks()
    if folder is None:
        return False
    import fcntl

    path = _mark_path(folder, owner)
    try:
        handle = os.open(path, os.O_RDWR)
    except OSError:  # no mark here: nothing says the worker ran on this machine
        return False
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # locked: the worker's process lives
        return False
    finally:
        os.close(handle)
    path.unlink(missing_ok=True)  # the worker has ended: its mark is of no more use
    return True


def _pid_free(pid: int) -> bool:
    """Whether no process has ``pid`` now (this process's own pid counts as free: the caller
    has checked that the id is not one of this process's)."""
    if pid == os.getpid():
        return True
    if pid <= 0:  # 0 and below name process groups, never one worker
        return False
    try:
        os.kill(pid, 0)  # signal 0: is there such a process? (nothing is sent)
    except ProcessLookupError:
        return True
    except OSError:  # it exists but is not ours to signal: alive
        return False
    return False


@asynccontextmanager
async def beside(func: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> AsyncIterator[None]:
    """Run ``func(*args)`` in the background while the block runs; it is cancelled when the
    block ends. An error of the block leaves as itself (not inside an exception group)."""
    failure: Exception | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(func, *args)
        try:
            yield
        except Exception as exc:  # re-raised below, once the background task is gone
            failure = exc
        finally:
            tg.cancel_scope.cancel()
    if failure is not None:
        raise failure


async def _renew(
    store: Store, session_id: str, owner: str, lease_seconds: float, lost: anyio.Event
) -> None:
    """Renew every third of the lease until cancelled; ``lost`` is set when the store says
    the lease is gone (expired — a stalled worker — and perhaps taken by another)."""
    while True:
        await anyio.sleep(lease_seconds / 3)
        try:
            held = await store.renew(session_id, owner, lease_seconds)
        except AgentRemindersError as exc:  # the store is unreachable: try again next time
            log.warning("session %s: renewing the lease of %s failed: %s", session_id, owner, exc)
            continue
        if not held:
            log.warning(
                "session %s: worker %s lost its lease (not renewed in time); the prompt stops "
                "at its next seam",
                session_id,
                owner,
            )
            lost.set()
            return


async def _refusal(
    store: Store, session_id: str, holder: str, lease_seconds: float
) -> SessionBusyError:
    """The ``-32006`` for ``holder``. A renewing worker renews every third of its lease, so
    its lease never has less than about two thirds left; one with less than half left has
    stopped renewing (killed, or stalled), and the refusal says when the session is free.
    (That reads the holder's lease term as this worker's: workers sharing a store share a
    config.)"""
    try:
        held = await store.lease(session_id)
    except AgentRemindersError:  # only the wording of the refusal depends on it
        held = None
    if held is None or held.owner != holder or held.expires_in >= lease_seconds / 2:
        return SessionBusyError(session_id, holder)
    return SessionBusyError(
        session_id,
        holder,
        f"worker {holder} holds it but stopped renewing its lease; it is free in "
        f"{math.ceil(held.expires_in)} s",
    )


@asynccontextmanager
async def hold_lease(
    store: Store, session_id: str, owner: str, lease_seconds: float, *, lost: anyio.Event
) -> AsyncIterator[None]:
    """Hold ``session_id``'s lease for ``owner`` while the block runs.

    ``lost`` is set if the lease cannot be renewed (the caller's prompt should stop: another
    worker may own the session now).

    A worker id this process made is marked on this machine first (a file whose lock the
    process holds while it lives). A lease held by a worker of this machine whose process
    has ended (:func:`ended`) is taken over at once — only from that worker, in one atomic
    step of the store, so a takeover never takes the lease of a worker that got there first.

    Raises:
        SessionBusyError: another worker (or this one, in another prompt) holds it.
        UnknownSessionError: the store has no such session.
    """
    if owner in _MINE and owner not in _MARKED:
        await anyio.to_thread.run_sync(_mark, owner)
    holder = await store.claim(session_id, owner, lease_seconds)
    if holder is not None and await anyio.to_thread.run_sync(ended, holder):
        log.warning(
            "session %s: worker %s ended without releasing its lease; %s takes it over",
            session_id,
            holder,
            owner,
        )
        holder = await store.claim(session_id, owner, lease_seconds, replace=holder)
    if holder is not None:
        log.info("session %s is busy: held by %s", session_id, holder)
        raise await _refusal(store, session_id, holder, lease_seconds)
    try:
        async with beside(_renew, store, session_id, owner, lease_seconds, lost):
            yield
    finally:
        with anyio.CancelScope(shield=True):
            try:
                await store.release(session_id, owner)
            except AgentRemindersError as exc:  # it expires by itself after lease_seconds
                log.warning("session %s: releasing %s's lease failed: %s", session_id, owner, exc)
