"""Foundational network expansion (CAM Section 4.1.1).

score(i, j) = alpha * max(0, cos(e_i, e_j)) + (1 - alpha) * exp(-(p_i - p_j)^2 / (2 sigma^2)),
with proximity 0 across documents. Each new chunk keeps its top-k neighbours whose
score reaches theta; edges are undirected.

Candidates are not every stored node: the caller passes a pool made of each new
chunk's vector top-K (by cosine, from the store's index) and its positional window.
A chunk outside both has a smaller cosine than the K-th candidate and a proximity
below ``PROXIMITY_FLOOR``, so it could only outrank a kept neighbour by less than
``(1 - alpha) * PROXIMITY_FLOOR``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cam_engine.types import Edge

PROXIMITY_FLOOR = 0.01
_BLOCK = 512  # rows scored at once: bounds memory on a rebuild of a large memory


@dataclass(frozen=True)
class Located:
    """A chunk as the scorer sees it."""

    id: str
    doc_id: str
    position: int
    vector: np.ndarray


def proximity(delta: np.ndarray | float, sigma: float) -> np.ndarray:
    return np.exp(-(np.asarray(delta, dtype=np.float64) ** 2) / (2.0 * sigma * sigma))


def window_radius(sigma: float) -> int:
    """Largest position distance whose proximity is still >= PROXIMITY_FLOOR (at least 1)."""
    return max(1, math.floor(sigma * math.sqrt(2.0 * math.log(1.0 / PROXIMITY_FLOOR))))


def composite(
    cosine: np.ndarray, delta: np.ndarray, same_doc: np.ndarray, alpha: float, sigma: float
) -> tuple[np.ndarray, np.ndarray]:
    """(score, proximity) arrays for the given cosines and position distances."""
    prox = np.where(same_doc, proximity(delta, sigma), 0.0)
    return alpha * np.maximum(cosine, 0.0) + (1.0 - alpha) * prox, prox


def expand(
    new: Sequence[Located],
    pool: Sequence[Located],
    *,
    alpha: float,
    sigma: float,
    theta: float,
    k: int,
) -> list[Edge]:
    """Edges from each new chunk to its top-k partners among ``pool`` and the other new chunks."""
    if not new:
        return []
    new_ids = {n.id for n in new}
    targets = list(new) + [p for p in pool if p.id not in new_ids]
    target_vectors = np.stack([t.vector for t in targets]).astype(np.float32)
    target_pos = np.array([t.position for t in targets], dtype=np.float64)
    target_doc = np.array([t.doc_id for t in targets], dtype=object)
    edges: dict[tuple[str, str], Edge] = {}
    for start in range(0, len(new), _BLOCK):
        block = new[start : start + _BLOCK]
        vectors = np.stack([n.vector for n in block]).astype(np.float32)
        cosine = vectors @ target_vectors.T
        delta = np.array([n.position for n in block], dtype=np.float64)[:, None] - target_pos
        same_doc = np.array([n.doc_id for n in block], dtype=object)[:, None] == target_doc
        score, prox = composite(cosine, delta, same_doc, alpha, sigma)
        for row, chunk in enumerate(block):
            score[row, start + row] = -np.inf  # no self loops (new chunks come first in targets)
            passing = np.flatnonzero(score[row] >= theta)
            if passing.size == 0:
                continue
            # top-k by score; equal scores go to the smaller id so runs are reproducible
            order = sorted(passing, key=lambda j: (-score[row, j], targets[j].id))[:k]
            for j in order:
                edge = Edge.make(
                    chunk.id,
                    targets[j].id,
                    0,
                    float(score[row, j]),
                    cosine=float(cosine[row, j]),
                    proximity=float(prox[row, j]),
                )
                edges.setdefault(edge.key, edge)
    return sorted(edges.values(), key=lambda e: e.key)
