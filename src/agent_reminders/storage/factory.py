"""Opening a store from a URL: ``memory:``, ``sqlite:PATH`` (or a plain path), ``redis://…``.

Above the backends it chooses between (each of which builds on :mod:`.base`), so none of them
imports this module.
"""

from __future__ import annotations

import os
from typing import Any

import anyio.to_thread

from .._core.errors import ConfigError
from .base import Store
from .memory import MemoryStore
from .redis import RedisStore
from .sqlite import SQLiteStore

__all__ = ["folder_options", "open_store", "sqlite_path"]


async def open_store(url: str | os.PathLike[str], **options: Any) -> Store:
    """Open a store from a URL, off the event loop; ``options`` go to the backend.

    - ``memory:`` → :class:`~agent_reminders.storage.MemoryStore`;
    - ``sqlite:PATH`` (``sqlite:///abs/path`` also works) or a plain path →
      :class:`~agent_reminders.storage.SQLiteStore` (``synchronous="FULL"`` …), opened and
      migrated before this returns;
    - ``redis://HOST:PORT/DB`` / ``rediss://…`` →
      :class:`~agent_reminders.storage.RedisStore` (``prefix=…``), its server answering
      before this returns (needs ``agent-reminders[redis]``).

    Raises:
        StoreError: ``RMD-109`` — the store cannot be opened (naming the file or URL; a
            password in a URL is never shown).
        ConfigError: ``RMD-104`` — an empty URL or an unknown scheme.

    Example:
        >>> import anyio
        >>> async def main():
        ...     async with await open_store("memory:") as store:
        ...         return await store.latest_session()
        >>> anyio.run(main) is None
        True
    """
    text = os.fspath(url)
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(f"a store URL must be a non-blank string; got {url!r}")
    scheme, sep, _ = text.partition(":")
    if sep and scheme in ("redis", "rediss"):
        store = RedisStore(text, **options)
        try:
            await store.ping()
        except BaseException:
            await store.close()
            raise
        return store
    if text == "memory:":
        return MemoryStore(**options)
    path = sqlite_path(text)
    if path is None:
        raise ConfigError(
            f"unknown store URL scheme {scheme!r} in {text!r}; use memory:, sqlite:PATH or "
            "redis://HOST"
        )
    if not path:
        raise ConfigError(f"{text!r}: sqlite: needs a file path (sqlite:PATH)")
    return await anyio.to_thread.run_sync(lambda: SQLiteStore(path, **options))


def sqlite_path(url: str) -> str | None:
    """The file path of a store URL that names a SQLite file (``sqlite:PATH``,
    ``sqlite:///abs/path`` or a plain path), else ``None`` (``memory:``, ``redis://…``, an
    unknown scheme). For callers that pass SQLite-only options to :func:`open_store`.

    Example:
        >>> sqlite_path("sqlite:.agent-reminders/state.db"), sqlite_path("redis://h:6379/0")
        ('.agent-reminders/state.db', None)
    """
    scheme, sep, rest = url.partition(":")
    if url == "memory:" or (sep and scheme in ("redis", "rediss")):
        return None
    if sep and scheme == "sqlite":
        return rest[2:] if rest.startswith("//") else rest
    if sep and len(scheme) > 1 and scheme.replace("+", "").isalnum():
        return None
    return url  # a plain path (``C:\\x`` has a one-letter drive, not a scheme)


def folder_options(url: str, default: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``open_store`` option that decides whether missing folders are made: only for the
    ``default`` store's file (how a fresh project starts). Any other SQLite path in a folder
    that does not exist is refused (a mistyped path must not start an empty store nobody
    reads). ``{}`` for a store that is not a SQLite file.

    Example:
        >>> folder_options("sqlite:typo/state.db", ".agent-reminders/state.db")
        {'create_folders': False}
        >>> folder_options(".agent-reminders/state.db", ".agent-reminders/state.db")
        {'create_folders': True}
    """
    path = sqlite_path(url)
    default_path = sqlite_path(os.fspath(default))
    if path is None:
        return {}
    same = default_path is not None and os.path.abspath(path) == os.path.abspath(default_path)
    return {"create_folders": same}
