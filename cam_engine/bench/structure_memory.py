"""``cam bench structure``: what a writer holds in memory between batches, on a memory
that exists (one ``cam bench scale`` left, for instance).

A writer's first batch reads the memory's structure (``store/structure.py``: the graph
without texts) and keeps it; on SQLite, its searches load each large level's vector
index (``store/sqlite_vectors.py``). This reads the structure once, as that batch does,
then searches every level once, and prints one JSON line: the time the read took, the
resident memory it added (``structure_mb``) and the indexes' (``indexes_mb``), each
per chunk as well, with the counts they hold.
"""

from __future__ import annotations

import gc
import time
from pathlib import Path
from typing import Any

import numpy as np

from cam_engine.bench import process_mb
from cam_engine.store.base import open_store
from cam_engine.store.structure import GraphStructure


def run(location: str | Path, name: str) -> dict[str, Any]:
    store = open_store(location, name, create=False)
    try:
        before = process_mb()
        start = time.perf_counter()
        structure = store.read_snapshot(lambda: GraphStructure.from_rows(store.read_structure()))
        read_s = time.perf_counter() - start
        gc.collect()
        after_structure = process_mb()
        levels = sorted(structure.by_level)
        dims = int((structure.settings or {}).get("embed_dim") or 384)
        question = np.random.default_rng(0).standard_normal(dims).astype(np.float32)
        question /= np.linalg.norm(question)
        start = time.perf_counter()
        for level in levels:
            store.nearest(level, question[None, :], 10)
        first_search_s = time.perf_counter() - start
        after_indexes = process_mb()
    finally:
        store.close()
    chunks = len(structure.by_level.get(0, ()))
    per_chunk = 1024 / max(1, chunks)  # MB to KB per chunk
    return {
        "store": store.location,
        "chunks": chunks,
        "nodes": len(structure.nodes),
        "edges": sum(len(ends) for ends in structure.adjacency.values()) // 2,
        "replicas": len(structure.replicas),
        "read_s": round(read_s, 2),
        "structure_mb": round(after_structure - before, 1),
        "structure_kb_per_chunk": round((after_structure - before) * per_chunk, 2),
        "first_search_s": round(first_search_s, 2),
        "indexes_mb": round(after_indexes - after_structure, 1),
        "indexes_kb_per_chunk": round((after_indexes - after_structure) * per_chunk, 2),
        "rss_mb": round(after_indexes, 1),
    }
