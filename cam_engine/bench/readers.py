"""Readers beside a writer: how often ``Memory.stats`` mixes two commits.

    cam bench readers                                   # SQLite
    cam bench readers --store bolt://127.0.0.1:7687     # Neo4j

One ``cam ingest`` process writes a book in small batches while this process calls
``Memory.stats()`` in a loop. An observation is mixed when its level-0 node count is
not the sum of its documents' stored chunks: the nodes of one commit with the
documents of another. ``store.read_snapshot`` is what keeps that at 0 (one read
transaction on SQLite; repeated reads on Neo4j, whose READ COMMITTED reads can see a
commit half applied); ``--unprotected`` reads the counts and the documents one after
the other without it, to show what it prevents. It prints one JSON line: reads,
mixed, read p50/p95 in ms.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from cam_engine import Memory
from cam_engine.bench.crash import cam_argv, child_env
from cam_engine.embed import HashingEmbedder
from cam_engine.errors import NotFoundError
from cam_engine.store.base import backend_name


def observe(
    store: str, memory: str, book: Path, batch_size: int, *, unprotected: bool = False
) -> dict[str, object]:
    args = ["ingest", str(book), "--store", store, "--memory", memory]
    args += ["--batch-size", str(batch_size), "--chunk-tokens", "64"]
    args += ["--embed-model", "hashing:64", "--theta", "0.3"]
    writer = subprocess.Popen(cam_argv(args), env=child_env(), stdout=subprocess.DEVNULL)
    reads, mixed, seconds = 0, 0, []
    try:
        while writer.poll() is None:
            try:
                opened = Memory.open(store, memory, embedder=HashingEmbedder(64), create=False)
            except NotFoundError:  # the writer has not created the memory yet
                time.sleep(0.05)
                continue
            with opened:
                while writer.poll() is None:
                    start = time.perf_counter()
                    if unprotected:
                        levels = opened.store.stats()["levels"]
                        chunks = [d.chunks for d in opened.store.documents()]
                    else:
                        data = opened.stats()
                        levels = data["levels"]
                        chunks = [d["chunks"] for d in data["document_list"]]
                    seconds.append(time.perf_counter() - start)
                    level0 = next((r["nodes"] for r in levels if r["level"] == 0), 0)
                    stored = sum(chunks)
                    reads += 1
                    mixed += level0 != stored
    finally:
        writer.wait()
    ms = np.asarray(seconds) * 1000 if seconds else np.zeros(1)
    return {
        "store": backend_name(store),
        "book": book.name,
        "batch_size": batch_size,
        "unprotected": unprotected,
        "writer_rc": writer.returncode,
        "reads": reads,
        "mixed": mixed,
        "read_ms_p50": round(float(np.percentile(ms, 50)), 1),
        "read_ms_p95": round(float(np.percentile(ms, 95)), 1),
    }


def run(
    book: Path, *, store: str | None = None, batch_size: int = 8, unprotected: bool = False
) -> dict[str, Any]:
    """``observe`` in a fresh memory: of ``store`` (a Neo4j URI, the memory deleted
    afterwards), or of a temporary SQLite file."""
    memory = f"readers{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory(prefix="cam-readers-") as tmp:
        target = store or str(Path(tmp) / "readers.db")
        result = observe(target, memory, book.resolve(), batch_size, unprotected=unprotected)
        if store:
            Memory.open(store, memory, embedder=HashingEmbedder(64), create=False).delete()
    return result


def passed(result: dict[str, Any]) -> bool:
    """The writer finished, and (reads protected) no read mixed two commits."""
    return bool(result["writer_rc"] == 0 and (result["unprotected"] or result["mixed"] == 0))
