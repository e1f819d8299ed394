"""Opening the file of a ``SQLiteStore``: refused with one ``StoreError`` naming it unless it
is this store (or empty), checked for damage, switched to WAL, migrated — in that order, so
a file that is refused keeps its bytes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ..._core.errors import StoreError
from . import file as file_
from . import schema
from .file import Check


def connect(
    path: str,
    *,
    read_only: bool,
    create: bool,
    create_folders: bool,
    busy_timeout_ms: int,
    synchronous: str,
    check: Check,
) -> tuple[sqlite3.Connection, bool]:
    """The store's connection to ``path``, and whether it only reads (asked for, or the file
    or its folder cannot be written).

    Raises:
        StoreError: the file is refused, or cannot be created or opened.
    """
    if sqlite3.sqlite_version_info < schema.MIN_SQLITE:
        raise StoreError(
            f"cannot use {path}: this Python's SQLite is {sqlite3.sqlite_version}; the "
            f"session store needs {'.'.join(map(str, schema.MIN_SQLITE))} or newer (upserts)"
        )
    file = Path(path)
    if file.is_dir():
        raise StoreError(f"{path} is a directory, not a session store file")
    if file.exists():
        try:
            with file.open("rb") as handle:
                header = handle.read(len(schema.MAGIC))
        except OSError as exc:
            raise StoreError(f"cannot read store {path}: {file_.os_reason(exc)}") from None
        if header and header != schema.MAGIC:
            raise StoreError(
                f"{path} is not a SQLite database, so not an agent-reminders session "
                "store; point at another file or move this one away"
            )
    else:
        _new_file(path, file, create=create and not read_only, create_folders=create_folders)
    if not read_only and not file_.writable(file):
        if not file.exists():
            raise StoreError(
                f"cannot create store {path}: its folder {file.parent} cannot be written"
            )
        read_only = True
    try:
        db = file_.connect(file, read_only=read_only, timeout=busy_timeout_ms / 1000)
    except sqlite3.Error as exc:
        said = file_.describe(path, exc, at_open=True)
        raise StoreError(said or f"cannot open store {path}: {exc}") from None
    try:
        db.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
        version = schema.recognise(path, db)
        # before anything is written: a damaged file keeps its bytes
        file_.quick_check(db, file, check)
        if read_only:
            schema.readable(path, version)
        else:
            # switching to WAL rewrites the header of the file: only once it is known
            mode = db.execute("PRAGMA journal_mode = WAL").fetchone()
            if mode is None or str(mode[0]).lower() != "wal":
                raise StoreError(f"{path}: WAL journal mode is not available ({mode})")
            db.execute(f"PRAGMA synchronous = {synchronous}")
        # sorts and IN lists in memory, never in a temp file per statement
        db.execute("PRAGMA temp_store = MEMORY")
        if not read_only:
            schema.migrate(db, path)
    except StoreError:
        _close_refused(db, file)
        raise
    except sqlite3.Error as exc:
        _close_refused(db, file)
        said = file_.describe(path, exc, at_open=True)
        raise StoreError(said or f"{path} cannot be used as a session store: {exc}") from None
    return db, read_only


def _close_refused(db: sqlite3.Connection, file: Path) -> None:
    """Close a connection to a file the store refused, writing nothing to it (not even
    a write-ahead log left there by another process)."""
    reader = file_.close_untouched(db, file)
    if reader is not None:
        reader.close()


def _new_file(path: str, file: Path, *, create: bool, create_folders: bool) -> None:
    """Make the folder of a file that does not exist yet, or refuse it (``create`` is false
    for a store that only reads)."""
    """Make the folder of a file that does not exist yet, or refuse it."""
    folder = file.parent
    missing = not folder.exists()
    if not create:
        where = f"its folder {folder} does not exist" if missing else "the file does not exist"
        raise StoreError(f"no session store at {path}: {where} (nothing was created)")
    if missing and not create_folders:
        raise StoreError(
            f"cannot create store {path}: the folder {folder} does not exist; create "
            "it first or fix the path (nothing was created)"
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(
            f"cannot create the folder of store {path}: {file_.os_reason(exc)}"
        ) from None
