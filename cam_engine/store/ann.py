"""An approximate nearest-neighbour index of one level's vectors (HNSW, by usearch),
for levels too large to search exactly in time.

Exact search (``vectors.py``) reads every vector of a level per question: 11.5 ms at
10^5 vectors of 384 dimensions on this project's 2-core machine, 132 ms at 10^6. An
HNSW graph answers in 1-2 ms with a recall@10 of 0.99 at 10^5 (docs/benchmarks.md,
"Scale"). usearch was chosen over hnswlib and FAISS by measurement on real MiniLM
vectors: the same speed and recall, half the memory (vectors kept in half precision),
a prebuilt wheel for every platform, and an index file that can be saved and loaded in
about a second at 10^6 vectors.

**Half precision, not 8 bits.** The index only proposes candidates: the store scores
each again from the float32 rows (``sqlite_vectors.RERANK_EXTRA`` more than asked).
8-bit vectors take less memory (at 10^6 vectors 760 MB) and search faster, and at 2x10^5
vectors they lose nothing once the candidates are scored again (recall@10 0.999 at ef
1,024, half precision 0.996); at 10^6 vectors, where each real vector has about 100
near-copies, their coarser distances misguide the graph search itself: 0.942 / 0.958 /
0.977 at ef 512 / 1,024 / 2,048, and scoring 40 or 90 more candidates again changes
none of them, against 0.943 / 0.980 / 0.990 in half precision (docs/benchmarks.md,
"Exact search or an index"). The recall wanted at 10^6 is 0.98.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

CONNECTIVITY = 16  # HNSW's M: graph edges per vector
EXPANSION_ADD = 128  # candidates weighed when a vector is inserted (efConstruction)
# Candidates weighed per search (ef), by the index's size: the first ef whose recall@10
# as the store searches passed 0.98 on vectors of real structure (cam bench ann;
# docs/benchmarks.md, "Exact search or an index"): at 10^5 vectors 0.973 / 0.984 at ef
# 128 / 256, at 10^6 0.943 / 0.980 at ef 512 / 1,024.
EXPANSION_SEARCH = 256
PRECISION = "f16"  # of the vectors the index keeps (usearch's dtype; "i8": 8 bits)
EXPANSION_SEARCH_LARGE = 1024  # from LARGE_INDEX vectors on
LARGE_INDEX = 300_000


def expansion_for(size: int) -> int:
    return EXPANSION_SEARCH_LARGE if size >= LARGE_INDEX else EXPANSION_SEARCH


class ApproximateIndex:
    """HNSW over cosine, half-precision vectors, integer keys."""

    def __init__(self, dims: int, index: object | None = None, precision: str = PRECISION) -> None:
        from usearch.index import Index

        self.dims = dims
        self._index: Index = (
            index
            if isinstance(index, Index)
            else Index(
                ndim=dims,
                metric="cos",
                dtype=precision,
                connectivity=CONNECTIVITY,
                expansion_add=EXPANSION_ADD,
                expansion_search=EXPANSION_SEARCH,
            )
        )
        self._fixed_expansion = False  # set by the expansion_search setter (benchmarks)

    @classmethod
    def load(cls, path: Path, dims: int) -> ApproximateIndex:
        from usearch.index import Index

        index = Index.restore(str(path), view=False)
        if index is None or index.ndim != dims:
            raise ValueError(f"vector index {path} is not an index of {dims} dimensions")
        index.expansion_search = EXPANSION_SEARCH  # type: ignore[misc]  # it has a setter
        return cls(dims, index)

    def save(self, path: Path) -> None:
        """Write to ``path`` atomically (a reader never sees half a file)."""
        partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
        self._index.save(str(partial))
        partial.replace(path)

    def __len__(self) -> int:
        return len(self._index)

    @property
    def expansion_search(self) -> int:
        return int(self._index.expansion_search)

    @expansion_search.setter
    def expansion_search(self, value: int) -> None:
        self._fixed_expansion = True
        self._index.expansion_search = value  # type: ignore[misc]  # it has a setter

    def keys(self) -> set[int]:
        return {int(k) for k in self._index.keys}

    def __contains__(self, key: int) -> bool:
        return bool(self._index.contains(key))

    # --- changes -----------------------------------------------------------------------
    def put(self, keys: np.ndarray, vectors: np.ndarray, *, threads: int = 1) -> None:
        """Insert (or replace) ``keys``' vectors, in order, on ``threads`` threads (0: all
        cores; anything but 1 makes the graph differ from run to run)."""
        keys = np.asarray(keys, dtype=np.uint64)
        vectors = np.asarray(vectors, dtype=np.float32)
        present = [k for k in keys if self._index.contains(k)]
        if present:
            self._index.remove(np.asarray(present, dtype=np.uint64))
        if len(keys):
            self._index.add(keys, vectors, threads=threads)

    def drop(self, keys: np.ndarray) -> None:
        keys = np.asarray([k for k in keys if self._index.contains(k)], dtype=np.uint64)
        if len(keys):
            self._index.remove(keys)

    @property
    def memory_bytes(self) -> int:
        """What the index holds in memory: vectors and graph."""
        return int(self._index.memory_usage)

    def vector(self, key: int) -> np.ndarray | None:
        """The vector held under ``key`` as the index keeps it (in half precision, or 8
        bits, widened: then not of unit length), or None."""
        if not self._index.contains(key):
            return None
        return np.asarray(self._index.get(key, dtype="f32"), dtype=np.float32)

    # --- search -------------------------------------------------------------------------
    def search(self, queries: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
        """The best ``k`` (key, cosine) for each row of ``queries``, best first."""
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        if not len(self._index) or k < 1:
            return [[] for _ in range(len(queries))]
        wanted = expansion_for(len(self._index))
        if not self._fixed_expansion and self._index.expansion_search != wanted:
            self._index.expansion_search = wanted  # type: ignore[misc]  # it has a setter
        matches = self._index.search(queries, min(k, len(self._index)))
        keys = np.atleast_2d(matches.keys).tolist()
        similarity = (1.0 - np.atleast_2d(matches.distances)).tolist()
        counts = np.atleast_1d(getattr(matches, "counts", [len(keys[0])])).tolist()
        return [
            list(zip(keys[row][:n], similarity[row][:n], strict=True))
            for row, n in enumerate(counts)
        ]
