"""Opening a store from a URL: ``memory:``, ``sqlite:PATH`` (or a plain path), ``redis://…``;
or, with no event loop, a SQLite file as a ``BlockingSQLite``.

Above the backends it chooses between (each of which builds on :mod:`.base`), so none of them
imports this module. It loads a backend only when it opens one: a process that opens a
blocking SQLite store (``open_sqlite``) loads no event loop.
"""

from __future__ import annotations

import os
from typing import Any

from .._core.errors import ConfigError
from .base import Store
from .sqlite.blocking import BlockingSQLite

__all__ = ["folder_options", "open_sqlite", "open_store", "sqlite_path"]


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
    text = _url_text(url)
    if _is_redis(text):
        from .redis import RedisStore

        store = RedisStore(text, **options)
        try:
            await store.ping()
        except BaseException:
            await store.close()
            raise
        return store
    if text == "memory:":
        from .memory import MemoryStore

        return MemoryStore(**options)
    path = _sqlite_file(text)
    import anyio.to_thread

    from .sqlite.store import SQLiteStore

    return await anyio.to_thread.run_sync(lambda: SQLiteStore(path, **options))


def open_sqlite(url: str | os.PathLike[str], **options: Any) -> BlockingSQLite:
    """Open a SQLite store file from a URL, for blocking calls (no event loop): the file of
    ``open_store``'s ``sqlite:PATH`` (``sqlite:///abs/path``, a plain path), opened and
    migrated before this returns. ``options`` are ``SQLiteStore``'s (``synchronous``,
    ``busy_timeout_ms``, ``clock``, ``create``, ``create_folders`` — see
    :func:`folder_options` —, ``read_only``, ``check``) except ``poll_interval``.

    Raises:
        StoreError: ``RMD-109`` — the file cannot be opened (as ``open_store`` says it).
        ConfigError: ``RMD-104`` — an empty URL, or one that is not a SQLite file
            (``memory:``, ``redis://…``, an unknown scheme).

    Example:
        >>> import os, tempfile
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     with open_sqlite(f"sqlite:{os.path.join(tmp, 'state.db')}") as store:
        ...         store.latest_session() is None
        True
    """
    text = _url_text(url)
    if text == "memory:" or _is_redis(text):
        raise ConfigError(f"{text!r} is not a SQLite store file; open it with open_store")
    return BlockingSQLite(_sqlite_file(text), **options)


def _is_redis(url: str) -> bool:
    scheme, sep, _ = url.partition(":")
    return bool(sep) and scheme in ("redis", "rediss")


def _url_text(url: str | os.PathLike[str]) -> str:
    text = os.fspath(url)
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(f"a store URL must be a non-blank string; got {url!r}")
    return text


def _sqlite_file(text: str) -> str:
    """The SQLite file a store URL names, else ``ConfigError``."""
    path = sqlite_path(text)
    if path is None:
        raise ConfigError(
            f"unknown store URL scheme {text.partition(':')[0]!r} in {text!r}; use memory:, "
            "sqlite:PATH or redis://HOST"
        )
    if not path:
        raise ConfigError(f"{text!r}: sqlite: needs a file path (sqlite:PATH)")
    return path


def sqlite_path(url: str) -> str | None:
    """The file path of a store URL that names a SQLite file (``sqlite:PATH``,
    ``sqlite:///abs/path`` or a plain path), else ``None`` (``memory:``, ``redis://…``, an
    unknown scheme). For callers that pass SQLite-only options to :func:`open_store`.

    Example:
        >>> sqlite_path("sqlite:.agent-reminders/state.db"), sqlite_path("redis://h:6379/0")
        ('.agent-reminders/state.db', None)
    """
    scheme, sep, rest = url.partition(":")
    if url == "memory:" or _is_redis(url):
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
