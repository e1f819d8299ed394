"""The file under a ``SQLiteStore``: how it is opened (to write, or only to read), checked for
damage, and closed without being written, and what SQLite's failures mean in words.

Kept apart from the store's queries and its schema because none of it knows the schema.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..._core.errors import ConfigError, StoreError

if TYPE_CHECKING:
    import logging

__all__ = [
    "CHECK_LIMIT_BYTES",
    "Check",
    "check_check",
    "close_untouched",
    "code",
    "connect",
    "corrupt",
    "describe",
    "full",
    "log",
    "os_reason",
    "quick_check",
    "read_only",
    "size",
    "writable",
]

Check = Literal["auto", "full", "off"]

# check="auto" runs PRAGMA quick_check at open on files up to this size (write-ahead log
# included). The check reads every page: about 1 ms per MiB from the OS cache (150 ms for a
# 140 MB store of 10,000 sessions and 100,000 reminders), seconds when the file is not cached,
# too much for a command that opens the store before every prompt.
CHECK_LIMIT_BYTES = 64 * 2**20

_JOURNALS = ("-wal", "-shm")
_FIX = "restore it from a backup, or move it away and start a new store"


def check_check(value: object) -> Check:
    """``SQLiteStore``'s ``check`` argument.

    Raises:
        ConfigError: not ``"auto"``, ``"full"`` or ``"off"``.
    """
    if value == "auto":
        return "auto"
    if value == "full":
        return "full"
    if value == "off":
        return "off"
    raise ConfigError(f"check must be 'auto', 'full' or 'off'; got {value!r}")


def log() -> logging.Logger:
    """The stores' logger, ``agent_reminders.storage`` (for damage and a full disk), with
    :mod:`logging` imported only when something is to be said: a short-lived process that
    opens a store and meets no failure does not load it."""
    import logging

    return logging.getLogger("agent_reminders.storage")


def writable(file: Path) -> bool:
    """Whether SQLite can write the store at ``file``: the file (when it exists) and, for the
    write-ahead log and its index beside it, the folder — or those two files, when they
    exist already. ``os.access`` answers for the file system too (a read-only mount, an
    immutable file), which permission bits alone do not for root."""
    if file.exists() and not os.access(file, os.W_OK):
        return False
    if os.access(file.parent, os.W_OK):
        return True
    return all(os.access(f"{file}{suffix}", os.W_OK) for suffix in _JOURNALS)


def _uri(file: Path, *options: str) -> str:
    return f"{file.absolute().as_uri()}?{'&'.join(options)}"


def connect(file: Path, *, read_only: bool, timeout: float) -> sqlite3.Connection:
    """A connection to ``file`` for the store's thread: to write, or only to read.

    A read-only connection to a WAL file needs the log's index beside it; in a folder that
    cannot be written, and with no log left there to read, the file is opened as immutable
    (read as it is: SQLite takes no locks, so a writer elsewhere would not be seen).

    Raises:
        sqlite3.Error: SQLite cannot open it.
    """

    def open_(target: str, uri: bool) -> sqlite3.Connection:
        return sqlite3.connect(
            target, timeout=timeout, isolation_level=None, check_same_thread=False, uri=uri
        )

    if not read_only:
        return open_(str(file), False)
    db = open_(_uri(file, "mode=ro"), True)
    try:
        db.execute("PRAGMA schema_version").fetchone()  # a read: the log index is needed
    except sqlite3.Error as exc:
        db.close()
        left = Path(f"{file}-wal")  # a log with commits in it must be read, never skipped
        if code(exc) != sqlite3.SQLITE_CANTOPEN or (left.exists() and left.stat().st_size):
            raise
        return open_(_uri(file, "mode=ro", "immutable=1"), True)
    return db


def size(file: Path) -> int:
    """The bytes of the file and of its write-ahead log."""
    total = 0
    for name in (str(file), f"{file}-wal"):
        with contextlib.suppress(FileNotFoundError):  # no log beside the file: nothing to add
            total += os.stat(name).st_size
    return total


def quick_check(db: sqlite3.Connection, file: Path, check: Check) -> None:
    """``PRAGMA quick_check`` on the open file, as ``check`` asks (``auto``: files up to
    :data:`CHECK_LIMIT_BYTES`). Reads every page; writes nothing.

    Raises:
        StoreError: the file is damaged.
    """
    if check == "off" or (check == "auto" and size(file) > CHECK_LIMIT_BYTES):
        return
    try:
        found = [str(row[0]) for row in db.execute("PRAGMA quick_check(1)")]
    except sqlite3.DatabaseError as exc:
        raise StoreError(corrupt(str(file), str(exc), at_open=True)) from None
    if found != ["ok"]:
        first = " ".join(found[0].split())  # SQLite's report spans lines
        raise StoreError(corrupt(str(file), f"PRAGMA quick_check: {first}", at_open=True))


def close_untouched(db: sqlite3.Connection, file: Path) -> sqlite3.Connection | None:
    """Close ``db`` without its close writing to the file; returns a read-only connection to
    the file, or ``None`` when none can be had.

    The last connection to a WAL file copies the log into the file when it closes. A
    connection that has read the file holds it open for readers, so ``db`` is not the last
    one; and a read-only connection never copies the log, whenever it is closed.
    """
    try:
        reader = connect(file, read_only=True, timeout=5.0)
    except sqlite3.Error:
        reader = None
    try:
        db.close()
    except sqlite3.Error:  # pragma: no cover - a close fails only on a busy statement
        log().debug("closing the store's connection to %s failed", file, exc_info=True)
    return reader


def code(exc: sqlite3.Error) -> int:
    """SQLite's primary result code of ``exc`` (0 when the error did not come from SQLite)."""
    found: int | None = getattr(exc, "sqlite_errorcode", None)
    return (found or 0) & 0xFF


def corrupt(path: str, detail: str, *, at_open: bool) -> str:
    """The one line for a damaged file: refused at open, or found while the store was open
    (it is not written to after that)."""
    done = "it was not changed" if at_open else "it will not be changed further"
    return f"{path} is corrupt ({detail}); {done}: {_FIX}"


def full(path: str, detail: str) -> str:
    """The one line for a write that found the disk (or the file's size limit) full."""
    return (
        f"cannot write to store {path}: the disk is full ({detail}); nothing was written: free "
        "some space and try again"
    )


def os_reason(exc: OSError) -> str:
    """Why a file operation failed, in words (a full disk said as such)."""
    if exc.errno == errno.ENOSPC:
        return "the disk is full"
    return exc.strerror or str(exc)


def describe(path: str, exc: sqlite3.Error, *, at_open: bool) -> str | None:
    """The line for a failure of the file itself — damage, a full disk, a file that cannot
    be written — else ``None``."""
    kind = code(exc)
    if kind in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
        return corrupt(path, str(exc), at_open=at_open)
    if kind == sqlite3.SQLITE_FULL:
        return full(path, str(exc))
    if kind == sqlite3.SQLITE_READONLY:
        return read_only(path, str(exc))
    return None


def read_only(path: str, why: str) -> str:
    """The one line for a write to a store that can only be read."""
    return f"cannot write to store {path}: it is read-only ({why}); nothing was written"
