"""Stores (docs/storage.md): what a session needs to survive a restart and to be shared between
processes — session records, the injection queue and the event log — behind one async
``Store`` protocol.

Not imported by ``import agent_reminders``; its names are imported when first read, so
``import agent_reminders.storage`` loads none of them (``SQLiteStore`` loads ``sqlite3`` and
``anyio``, ``BlockingSQLite`` only ``sqlite3``); ``RedisStore`` imports redis-py only when one
is made (``pip install 'agent-reminders[redis]'``).

Example:
    >>> import anyio
    >>> from agent_reminders import InjectionQueue, Session
    >>> async def main():
    ...     async with await open_store("memory:") as store:
    ...         await store.create_session(Session(session_id="s1").state())
    ...         queue = InjectionQueue()
    ...         queue.remind({"body": "CI is red"}, mode="interrupt")
    ...         await store.enqueue("s1", queue.state().items[0])
    ...         return [i.payload["body"] for i in await store.drain("s1", ["interrupt_immediate"])]
    >>> anyio.run(main)
    ['CI is red']
"""

from .._lazy import exports

TYPE_CHECKING = False  # what type checkers take as typing.TYPE_CHECKING, without loading typing
if TYPE_CHECKING:
    from .base import (
        Lease,
        RevokeStatus,
        SessionExistsError,
        SessionInfo,
        Store,
        StoredSessionError,
        UnknownSessionError,
    )
    from .factory import folder_options, open_sqlite, open_store, sqlite_path
    from .memory import MemoryData, MemoryStore
    from .redis import RedisStore
    from .sqlite import SCHEMA_VERSION, BlockingSQLite, SQLiteStore, Synchronous
    from .thread import StoreThread
else:
    __getattr__, __dir__ = exports(
        __name__,
        {
            ".base": (
                "Lease",
                "RevokeStatus",
                "SessionExistsError",
                "SessionInfo",
                "Store",
                "StoredSessionError",
                "UnknownSessionError",
            ),
            ".factory": ("folder_options", "open_sqlite", "open_store", "sqlite_path"),
            ".memory": ("MemoryData", "MemoryStore"),
            ".redis": ("RedisStore",),
            ".sqlite": ("SCHEMA_VERSION", "BlockingSQLite", "SQLiteStore", "Synchronous"),
            ".thread": ("StoreThread",),
        },
    )

__all__ = [
    "BlockingSQLite",
    "Lease",
    "MemoryData",
    "MemoryStore",
    "RedisStore",
    "RevokeStatus",
    "SCHEMA_VERSION",
    "SQLiteStore",
    "SessionExistsError",
    "SessionInfo",
    "Store",
    "StoreThread",
    "StoredSessionError",
    "Synchronous",
    "UnknownSessionError",
    "folder_options",
    "open_sqlite",
    "open_store",
    "sqlite_path",
]
