"""``SQLiteStore``: the embedded durable ``Store``; ``BlockingSQLite``: the same store with no
event loop.

One file in WAL mode, one connection per store object. A ``SQLiteStore``'s connection is owned
by the store's own thread (``storage.thread.StoreThread``): every call runs there, in call
order, so the event loop never blocks on disk. What each call does is the blocking call of the
same name of a ``BlockingSQLite`` (``blocking``), which a short-lived process (a coding agent's
hook) uses directly, loading no event loop. Each public method is one transaction; the writes
of a turn (``save_session``) and an acknowledged ``enqueue`` are committed before the call
returns. Several store objects — in several threads or processes — may share one file: writers
take SQLite's write lock up front (``BEGIN IMMEDIATE``), so a drain is atomic across all of
them.

A file that is not this store — random bytes, another program's database, a directory, a
schema from a newer version, a file damaged inside (``PRAGMA quick_check``) — is refused with
one ``StoreError`` naming it, before anything is written: the file keeps its bytes (WAL is
switched on only once the file is recognised and checked). Damage found later stops every
write for good; a full disk fails the write that met it. A file (or folder) that cannot be
written is opened read-only: it can be read, and a write says why it cannot be done.

The package: ``store`` (``SQLiteStore``, async), ``blocking`` (``BlockingSQLite``: the session
records and the event log), ``queueing`` (its queue and leases), ``connection`` (its arguments,
connection and transactions), ``sql`` (the statements), ``schema`` (the migrations and how a
file is recognised), ``opening`` and ``file`` (opening, checking and closing the file). Its
names are imported when first read, so importing the package loads nothing of it.
"""

from ..._lazy import exports

TYPE_CHECKING = False  # what type checkers take as typing.TYPE_CHECKING, without loading typing
if TYPE_CHECKING:
    from .blocking import BlockingSQLite
    from .connection import Synchronous
    from .file import CHECK_LIMIT_BYTES, Check
    from .schema import MIGRATIONS, SCHEMA_NAME, SCHEMA_VERSION
    from .store import SQLiteStore
else:
    __getattr__, __dir__ = exports(
        __name__,
        {
            ".blocking": ("BlockingSQLite",),
            ".connection": ("Synchronous",),
            ".file": ("CHECK_LIMIT_BYTES", "Check"),
            ".schema": ("MIGRATIONS", "SCHEMA_NAME", "SCHEMA_VERSION"),
            ".store": ("SQLiteStore",),
        },
    )

__all__ = [
    "CHECK_LIMIT_BYTES",
    "MIGRATIONS",
    "SCHEMA_NAME",
    "SCHEMA_VERSION",
    "BlockingSQLite",
    "Check",
    "SQLiteStore",
    "Synchronous",
]
