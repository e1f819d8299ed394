"""The store of a hook command's run, as the synchronous calls the hook makes.

A SQLite store (every project's default) is used through its blocking API, in the hook's own
thread: no event loop is started and no async library is imported. Any other store (Redis,
say) is opened on an event loop in a helper thread and called through it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._core.errors import ConfigError
from ._agent_hook import DEFAULT_STORE, SessionStore

if TYPE_CHECKING:
    from ..session import Session
    from ..state import SessionState
    from ..storage import Store

__all__ = ["FromAsync", "opened", "resolve", "standing"]


class FromAsync:
    """An async :class:`~agent_reminders.storage.Store` called synchronously: ``call(fn,
    *args)`` runs ``fn(*args)`` on the store's event loop and returns its result (a blocking
    portal's ``call``, or ``anyio.from_thread.run`` from a worker thread of that loop)."""

    def __init__(self, store: Store, call: Callable[..., Any]) -> None:
        self._store = store
        self._call = call

    def create_session(self, state: SessionState) -> None:
        self._call(self._store.create_session, state)

    def load_session(self, session_id: str) -> SessionState | None:
        found: SessionState | None = self._call(self._store.load_session, session_id)
        return found

    def save_session(self, state: SessionState) -> None:
        self._call(self._store.save_session, state)

    def claim(self, session_id: str, owner: str, ttl_seconds: float) -> str | None:
        holder: str | None = self._call(self._store.claim, session_id, owner, ttl_seconds)
        return holder

    def release(self, session_id: str, owner: str) -> bool:
        return bool(self._call(self._store.release, session_id, owner))


def resolve(given: str | None, project: Path) -> tuple[str, dict[str, Any]]:
    """The store's URL and its opening options. Only the project's own store may be started
    in a fresh folder (its ``.agent-reminders``), and only in a project folder that exists:
    a folder that is gone (moved, mistyped) must not get a new, empty store nothing reads."""
    from ..storage.factory import folder_options

    default = project / DEFAULT_STORE
    url = given or f"sqlite:{default}"
    options = folder_options(url, default)
    if options.get("create_folders") and not project.is_dir():
        raise ConfigError(
            f"the project folder {project} (from the agent's project variable, else the hook "
            "input's cwd) does not exist; nothing was created"
        )
    return url, options


@contextlib.contextmanager
def opened(store_url: str | None, project: Path) -> Iterator[SessionStore]:
    """The hook's store — ``store_url``, else ``sqlite:<project>/.agent-reminders/state.db``
    — open for the ``with`` block, closed after it."""
    url, options = resolve(store_url, project)
    from ..storage.factory import open_sqlite, sqlite_path

    if sqlite_path(url) is not None:
        with open_sqlite(url, **options) as blocking:
            yield blocking
        return
    import anyio.from_thread

    from ..storage import open_store

    with anyio.from_thread.start_blocking_portal() as portal:
        store = portal.call(lambda: open_store(url, **options))
        try:
            yield FromAsync(store, portal.call)
        finally:
            portal.call(store.close)


def standing(store: SessionStore) -> Callable[[Session], None]:
    """What a session this run creates starts with: the project's standing reminders
    (``remind --project``), queued for its first delivery."""
    from ..project_reminders import PROJECT_SESSION

    def fresh(session: Session) -> None:
        registry = store.load_session(PROJECT_SESSION)
        if registry is None:
            return
        for item in registry.queue.items:
            session.queue.offer(item)

    return fresh
