"""Project reminders: one push that reaches every session of a project's store.

``agent-reminders remind --project`` (and the bridge's ``session/remind`` with
``"project": true``) queues a reminder in every session the store holds — those running now —
and keeps it standing for the sessions that start later: a coding agent's hook that creates a
session queues every standing reminder in it before the session's first delivery, whatever
agent runs it. Each session gets each project reminder once (the same id in every session;
the queue never takes an id twice). A standing reminder stands until it is revoked with
``revoke --project ID``, which also revokes it where it still waits.

The standing reminders live in the store itself, in the queue of a reserved session,
:data:`PROJECT_SESSION`, which no agent runs and no listing shows.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ._core.errors import QueueError, ReminderError, UnknownReminderIdError

if TYPE_CHECKING:
    from .queue import QueueItem
    from .storage import Store
    from .storage.base import RevokeStatus

__all__ = [
    "PROJECT_SESSION",
    "is_project_session",
    "latest_session",
    "remind_project",
    "revoke_project",
    "session_ids",
]

PROJECT_SESSION = "~project"


def is_project_session(session_id: str) -> bool:
    """Whether ``session_id`` is the reserved session of the standing reminders."""
    return session_id == PROJECT_SESSION


async def _registry(store: Store) -> None:
    """Make the reserved session when the store has none yet."""
    from .session import Session
    from .storage import SessionExistsError

    if await store.load_session(PROJECT_SESSION) is not None:
        return
    with contextlib.suppress(SessionExistsError):  # another push made it first
        await store.create_session(Session(PROJECT_SESSION).state())


async def remind_project(
    store: Store, item: QueueItem, *, max_pending: int | None = None
) -> list[str]:
    """Queue ``item`` in every session of ``store`` and keep it standing for the sessions
    that start later; returns the ids of the sessions it was queued in (most recently active
    first). Durable before it returns: first standing, then in each session, so a session
    made meanwhile has it one way or the other, and once."""
    await _registry(store)
    await store.enqueue(PROJECT_SESSION, item)
    reached = []
    for info in await store.list_sessions():
        sid = info.session_id
        if is_project_session(sid):
            continue
        # an id taken there already: a session made meanwhile took it standing (the item
        # itself was validated once, when it was made)
        with contextlib.suppress(ReminderError):
            await store.enqueue(sid, item, max_pending=max_pending)
        reached.append(sid)
    return reached


async def revoke_project(store: Store, reminder_id: str) -> tuple[RevokeStatus, list[str]]:
    """Revoke a standing project reminder, and revoke it in every session where it still
    waits; returns its status in the project (``revoked``, or ``already_revoked``) and the ids
    of the sessions it was revoked in now.

    Raises:
        QueueError: ``unknown_reminder_id`` when the project has no such reminder.
    """
    if await store.load_session(PROJECT_SESSION) is None:
        raise UnknownReminderIdError(f"the project has no standing reminder {reminder_id!r}")
    status = await store.revoke(PROJECT_SESSION, reminder_id)
    revoked = []
    for info in await store.list_sessions():
        sid = info.session_id
        if is_project_session(sid):
            continue
        try:
            done = await store.revoke(sid, reminder_id)
        except QueueError:  # delivered there already, or never queued
            continue
        if done == "revoked":
            revoked.append(sid)
    return status, revoked


async def latest_session(store: Store) -> str | None:
    """The store's most recently active session other than the reserved one, or ``None``."""
    latest = await store.latest_session()
    if latest is None or not is_project_session(latest):
        return latest
    for info in await store.list_sessions():
        if not is_project_session(info.session_id):
            return info.session_id
    return None


async def session_ids(store: Store, *, limit: int, among: Iterable[str] | None) -> list[str]:
    """``store.session_ids`` without the reserved session: up to ``limit`` ids."""
    found = await store.session_ids(limit=limit + 1, among=among)
    return [sid for sid in found if not is_project_session(sid)][:limit]
