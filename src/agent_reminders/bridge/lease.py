"""A worker's lease on the session it prompts (spec 06 §3, 04 §4).

Several ``serve`` processes may share one store (Redis): a session is prompted by one worker at
a time. :func:`hold_lease` claims the session in the store under the worker's id, renews the
claim every third of ``lease_seconds`` while the prompt runs, and releases it however the prompt
ends (answer, cancel, error). Another worker that claims it meanwhile is refused with
:class:`SessionBusyError` (``-32006``, ``data.owner`` the holder). A worker killed mid-prompt
renews nothing: its claim expires after ``lease_seconds`` and any worker may prompt the session.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any

import anyio

from .._core.errors import AgentRemindersError
from ..storage.base import Store
from .errors import SessionBusyError

__all__ = ["beside", "hold_lease", "new_worker_id"]

log = logging.getLogger("agent_reminders.bridge")


def new_worker_id() -> str:
    """``HOST:PID:RANDOM``: names this worker as a lease owner (a restarted process with the
    same pid still gets a new id, so it never renews or releases its predecessor's lease)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


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


@asynccontextmanager
async def hold_lease(
    store: Store, session_id: str, owner: str, lease_seconds: float, *, lost: anyio.Event
) -> AsyncIterator[None]:
    """Hold ``session_id``'s lease for ``owner`` while the block runs.

    ``lost`` is set if the lease cannot be renewed (the caller's prompt should stop: another
    worker may own the session now).

    Raises:
        SessionBusyError: another worker (or this one, in another prompt) holds it.
        UnknownSessionError: the store has no such session.
    """
    holder = await store.claim(session_id, owner, lease_seconds)
    if holder is not None:
        log.info("session %s is busy: held by %s", session_id, holder)
        raise SessionBusyError(session_id, holder)
    try:
        async with beside(_renew, store, session_id, owner, lease_seconds, lost):
            yield
    finally:
        with anyio.CancelScope(shield=True):
            try:
                await store.release(session_id, owner)
            except AgentRemindersError as exc:  # it expires by itself after lease_seconds
                log.warning("session %s: releasing %s's lease failed: %s", session_id, owner, exc)
