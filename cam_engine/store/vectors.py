"""Exact vector search over vectors held in memory (SQLite's levels, the builder's
chunks)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


class VectorMatrix:
    """Vectors by node id, as the rows of a matrix for exact top-k by cosine (the
    vectors are normalized: a dot product is the cosine).

    Rows are written in place (a new vector goes to the end, a dropped one is replaced
    by the last), and the matrix grows by doubling: a batch that adds a few vectors to
    a large level does not copy the level.
    """

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self._ids: list[str] = list(vectors)
        self._row_of = {node_id: row for row, node_id in enumerate(self._ids)}
        self._rows: np.ndarray | None = (
            np.stack([vectors[i] for i in self._ids]).astype(np.float32) if vectors else None
        )

    def put(self, node_id: str, vector: np.ndarray) -> None:
        row = self._row_of.get(node_id)
        if row is None:
            row = len(self._ids)
            rows = self._rows
            if rows is None:
                rows = np.empty((16, len(vector)), dtype=np.float32)
            elif row == len(rows):
                rows = np.empty((2 * row, rows.shape[1]), dtype=np.float32)
                rows[:row] = self._rows
            self._rows = rows
            self._ids.append(node_id)
            self._row_of[node_id] = row
        assert self._rows is not None
        self._rows[row] = vector

    def drop(self, node_id: str) -> None:
        row = self._row_of.pop(node_id, None)
        if row is None or self._rows is None:
            return
        last = len(self._ids) - 1
        if row != last:
            moved = self._ids[last]
            self._ids[row] = moved
            self._row_of[moved] = row
            self._rows[row] = self._rows[last]
        self._ids.pop()

    def matrix(self) -> tuple[list[str], np.ndarray | None]:
        if self._rows is None or not self._ids:
            return [], None
        return self._ids, self._rows[: len(self._ids)]

    def __len__(self) -> int:
        return len(self._ids)

    def top_k(
        self, queries: np.ndarray, k: int, among: Iterable[str] | None = None
    ) -> list[list[tuple[str, float]]]:
        """The best ``k`` (id, cosine) for each row of ``queries``, best first (ties by
        id); with ``among``, only those ids are searched (a scope), not all rows."""
        ids, matrix = self.matrix()
        if matrix is not None and among is not None:
            rows = sorted({self._row_of[i] for i in among if i in self._row_of})
            ids = [ids[r] for r in rows]
            matrix = matrix[rows] if rows else None
        if matrix is None or k < 1:
            return [[] for _ in range(len(queries))]
        scores = queries @ matrix.T
        take = min(k, len(ids))
        hits: list[list[tuple[str, float]]] = []
        for row in scores:
            top = np.argpartition(-row, take - 1)[:take]
            hits.append(sorted(((ids[i], float(row[i])) for i in top), key=lambda h: (-h[1], h[0])))
        return hits
