"""What a failed SQLite call means for the user, in one line.

SQLite names a failed write by its result code only: a full disk is ``SQLITE_FULL``
("database or disk is full"), but a write past the process's file size limit (``ulimit
-f``, RLIMIT_FSIZE) fails with EFBIG, which SQLite reports as ``SQLITE_IOERR_WRITE``
("disk I/O error") unless part of the write fit (then ``SQLITE_FULL`` again). The cause
is therefore read off the system: the limit when a store file has reached it, the disk
when it has no room left. A store whose file or folder cannot be written reports one of
the ``SQLITE_READONLY`` codes.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

# SQLite writes a WAL frame (a 4 KiB page and its header) at a time, and a checkpoint
# writes whole pages into the database file: a file this close to the size limit has
# reached it for any write that SQLite could be making.
LIMIT_SLACK_BYTES = 1 << 20
# Less free space than this on the store's disk counts as a full disk (a page or a WAL
# frame needs 4 KiB; file systems keep some room for their own metadata).
FULL_DISK_BYTES = 1 << 20


def error_name(exc: sqlite3.Error) -> str:
    """The extended result code's name, such as ``SQLITE_IOERR_WRITE`` ("" if unknown)."""
    return str(getattr(exc, "sqlite_errorname", "") or "")


def is_write_failure(exc: sqlite3.Error) -> bool:
    """A write the file system refused: disk full, size limit, I/O error, read-only."""
    return error_name(exc).startswith(("SQLITE_FULL", "SQLITE_IOERR", "SQLITE_READONLY"))


def is_busy(exc: sqlite3.Error) -> bool:
    return error_name(exc).startswith(("SQLITE_BUSY", "SQLITE_LOCKED"))


def store_files(path: Path) -> list[Path]:
    """The database file and the files SQLite keeps beside it (WAL mode)."""
    return [path, *(path.with_name(path.name + suffix) for suffix in ("-wal", "-shm"))]


def cause(path: Path, exc: sqlite3.Error, *, file_limit: int | None, free_bytes: int | None) -> str:
    """Why SQLite could not write ``path``. ``file_limit``: the RLIMIT_FSIZE in bytes
    (None: unlimited); ``free_bytes``: room left on its disk (None: unknown)."""
    name = error_name(exc)
    if name == "SQLITE_READONLY_DIRECTORY":
        return (
            f"its folder {path.parent} is not writable, and SQLite must create "
            f"{path.name}-wal and {path.name}-shm there (WAL mode), even to read"
        )
    if name.startswith("SQLITE_READONLY"):
        return "the file is read-only for this process (check its permissions and its folder's)"
    if name == "SQLITE_CANTOPEN":
        return "the file cannot be opened or created (check that its folder is writable)"
    if file_limit is not None:
        sizes = [f.stat().st_size for f in store_files(path) if f.exists()]
        if max(sizes, default=0) + LIMIT_SLACK_BYTES >= file_limit:
            return f"the file size limit (ulimit -f) of {file_limit} bytes is reached"
    if free_bytes is not None and free_bytes < FULL_DISK_BYTES:
        return f"the disk is full ({free_bytes} bytes left)"
    if name.startswith("SQLITE_FULL"):
        return "no room to write"
    return "the disk or file system failed"


def file_size_limit() -> int | None:
    """This process's RLIMIT_FSIZE in bytes; None when unlimited (or not POSIX)."""
    try:
        import resource
    except ImportError:  # Windows has no such limit
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    return None if soft == resource.RLIM_INFINITY else soft


def describe(path: Path, exc: sqlite3.Error) -> str:
    """``cause`` with this process's file size limit and the free space of the disk,
    then SQLite's own words."""
    try:
        free: int | None = shutil.disk_usage(path.parent).free
    except OSError:
        free = None
    return f"{cause(path, exc, file_limit=file_size_limit(), free_bytes=free)} ({exc})"
