"""Fast localization (CAM Section 4.2), hybrid: the nodes closest to a question by
cosine AND by its words, fused by reciprocal rank, each ranking weighed by how far
its own scores can be trusted for this question.

(docstring with the evidence: written once the variants are measured)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cam_engine.store.base import RetrievalStore

DEPTH = 40  # hits asked of each ranker: enough to fill 4,000 tokens of chunks twice
FOUND = 1.0  # what being returned at all is worth, in spreads above not being returned

Hits = Sequence[tuple[str, float]]  # (id, score) best first; scores rank within one call


@dataclass
class Localization:
    """Nodes ranked by fused relevance to one question, best first."""

    order: list[str]
    scores: dict[str, float]  # id -> fused score (higher is better)

    def top(self, k: int) -> list[str]:
        return self.order[:k]


@dataclass(frozen=True)
class Ranking:
    """One ranker's hits for a question, best first, as fusion reads them."""

    hits: Hits
    # The score of a node the ranker did not return, where it is known: 0 for a full-
    # text search that returned fewer hits than asked (the others matched no word).
    # Otherwise it is at most the last hit's, which stands for it.
    floor: float | None = None
    weight: float = 1.0


def calibrated(ranking: Ranking, head: int = DEPTH) -> dict[str, float]:
    """Each hit's score in spreads above the ranking's floor, plus ``FOUND``; the
    spread is the standard deviation of the ranker's first ``head`` scores (where the
    floor is known, it stands for the nodes not returned). Only the shape of the
    scores counts (an affine change of them keeps it), so FTS5's BM25, Lucene's and a
    cosine become comparable, and a ranking whose best hits stand far out of the rest
    weighs more than one whose scores fall evenly; all scores equal weigh nothing."""
    hits = ranking.hits
    if not hits:
        return {}
    first = [score for _, score in hits[:head]]
    if ranking.floor is None:
        floor = hits[-1][1]
    else:
        floor = ranking.floor
        first += [floor] * (head - len(first))
    spread = float(np.std(first))
    if spread <= 0:
        return dict.fromkeys((node_id for node_id, _ in hits), FOUND)
    return {node_id: FOUND + (score - floor) / spread for node_id, score in hits}


def fuse(rankings: Sequence[Ranking]) -> Localization:
    """Calibrated score fusion of any number of rankings: a node scores the sum over
    the rankings of its ``calibrated`` score times the ranking's weight; a ranking
    that did not return it adds 0. Ties by id, so the order is stable."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for node_id, value in calibrated(ranking).items():
            scores[node_id] = scores.get(node_id, 0.0) + ranking.weight * value
    order = sorted(scores, key=lambda i: (-scores[i], i))
    return Localization(order, scores)


def dense_hits(
    store: RetrievalStore,
    vector: np.ndarray,
    level: int | None,
    depth: int = DEPTH,
    documents: Sequence[str] | None = None,
) -> list[tuple[str, float]]:
    return store.nearest(level, vector[None, :], depth, documents=documents)[0]


def lexical_hits(
    store: RetrievalStore,
    question: str,
    level: int | None,
    depth: int = DEPTH,
    documents: Sequence[str] | None = None,
) -> list[tuple[str, float]]:
    return store.search_text(level, question, depth, documents=documents)


def dense_ranking(
    store: RetrievalStore,
    vector: np.ndarray,
    level: int | None,
    depth: int = DEPTH,
    documents: Sequence[str] | None = None,
) -> list[str]:
    return [node_id for node_id, _ in dense_hits(store, vector, level, depth, documents)]


def lexical_ranking(
    store: RetrievalStore,
    question: str,
    level: int | None,
    depth: int = DEPTH,
    documents: Sequence[str] | None = None,
) -> list[str]:
    return [node_id for node_id, _ in lexical_hits(store, question, level, depth, documents)]


def hybrid(
    store: RetrievalStore,
    question: str,
    vector: np.ndarray,
    level: int | None = 0,
    depth: int = DEPTH,
    documents: Sequence[str] | None = None,
) -> Localization:
    """Dense and full-text rankings of one level (or all, ``level=None``), fused; with
    ``documents``, of those documents' nodes only (``scope.py``)."""
    words = lexical_hits(store, question, level, depth, documents)
    return fuse(
        [
            Ranking(dense_hits(store, vector, level, depth, documents)),
            Ranking(words, floor=0.0 if len(words) < depth else None),
        ]
    )
