"""A benchmark's starting memory (``--base``): a SQLite memory copied afresh for each run.

A SQLite memory is more than its file: the file's ``-wal`` and ``-shm`` beside it when
it has them, and the ``.vectors`` folder of its approximate indexes
(store/sqlite_vectors.py). A copy takes them all, so the copy opens with the indexes
the base has instead of building them again, and the base itself is never written.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cam_engine.errors import InputError
from cam_engine.store.base import is_neo4j_uri, open_store

COMPANIONS = ("-wal", "-shm")  # SQLite's files beside the database, when it has them
VECTORS = ".vectors"  # the folder of approximate indexes beside it


@dataclass(frozen=True)
class BaseMemory:
    """A memory ``memory`` in the SQLite file ``path``, which the benchmarks only copy."""

    path: Path
    memory: str

    def copy_into(self, folder: Path) -> Path:
        """A copy of the memory's files in ``folder`` (made if missing), under the base's
        file name: the database, its -wal and -shm, and its .vectors folder."""
        if is_neo4j_uri(str(self.path)) or not self.path.is_file():
            raise InputError(f"--base {self.path}: not a SQLite file")
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / self.path.name
        shutil.copyfile(self.path, target)
        for suffix in COMPANIONS:
            companion = Path(f"{self.path}{suffix}")
            if companion.is_file():
                shutil.copyfile(companion, f"{target}{suffix}")
        vectors = Path(f"{self.path}{VECTORS}")
        if vectors.is_dir():
            shutil.copytree(vectors, f"{target}{VECTORS}")
        return target


def stored_settings(copy: Path, memory: str) -> dict[str, Any]:
    """The settings stored by memory ``memory`` of a copy, with its chunk count under
    ``chunks``; an ``InputError`` when the copy holds no such memory. (Read from a copy:
    opening a store may write to its files, and the base is never written.)"""
    store = open_store(copy, memory, create=False)
    try:
        settings = store.load_settings()
        chunks = store.count_nodes(0)
    finally:
        store.close()
    if settings is None:
        raise InputError(f"--base holds no memory {memory!r}")
    return {**settings, "chunks": chunks}


def remove_copy(copy: Path) -> None:
    """Delete a copy made by ``BaseMemory.copy_into`` (a large one fills the disk)."""
    for path in (copy, *(Path(f"{copy}{suffix}") for suffix in COMPANIONS)):
        path.unlink(missing_ok=True)
    shutil.rmtree(f"{copy}{VECTORS}", ignore_errors=True)
