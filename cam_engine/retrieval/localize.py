"""Fast localization (CAM Section 4.2), hybrid: the nodes closest to a question by
cosine AND by its words, each ranking weighed by how far its own scores set its best
hits apart for THIS question and memory (calibrated score fusion).

A hit scores ``FOUND`` plus how many spreads (the standard deviation of the ranking's
first 40 scores) it stands above the ranking's floor: its 40th hit, or, with fewer, 0
for a full-text search (every other node matched no word) and the last hit for a
vector search. Hits past the 40th score less than ``FOUND`` (and more than 0), so
asking a ranker for more hits never changes the fused scores of its first 40. The
fused score is the sum over the rankings. So BM25 leads when the question's rare words
(a name, a date, a specific) put a few turns far above those sharing only common
words, dense leads when a few cosines stand above an even tail, and a flat ranking
(all scores equal) adds the same to every hit and leaves the order to the others. Only
the shape of each ranking's scores counts, never their scale, so SQLite's FTS5 bm25,
Neo4j's Lucene and a cosine fuse alike.

Reciprocal ranks (RRF, k=60), the fusion before, give rank 1 of every ranking the
same weight whatever its scores say. MiniLM ranks the turns of a conversation by
topic, not by the specifics asked, and its top ranks pushed BM25's finds down:
on a conversation set built from a play (500 questions, docs/evaluation.md),
recall@500/1000 of `hybrid` went from 0.622 / 0.774 to 0.806 / 0.896 (BM25 alone
0.862 / 0.896) and of prune-and-grow from 0.614 / 0.754 to 0.786 / 0.878. On the
tuning sets: QMSum's validation meetings, hybrid 0.243 / 0.366 to 0.243 / 0.374
(BM25 0.230 / 0.355); the 100 hard HotpotQA questions 0.789 / 0.897 to 0.799 /
0.898; HotpotQA-200, not tuned on, 0.808 / 0.912 to 0.818 / 0.914. Tried and not
kept: RRF weighted per ranking by the separation of its head (lost 0.005-0.018 on
HotpotQA), z-scores without a floor or a bonus for being found (a lone hit of a rare
name counted for nothing), min-max scaling (no weighing by shape).

``fuse`` takes any number of ``Ranking``s: a third ranker joins with its own hits,
its floor where known and a weight.
"""

from __future__ import annotations

import math
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
    if len(hits) >= head:
        # The floor is the head's last score however deep the ranker was asked: the
        # head's calibration, and so the fused order of the best hits, is the same for
        # the flat baseline's 40 hits and for prune-and-grow's 200.
        floor = first[-1]
    elif ranking.floor is None:
        floor = hits[-1][1]
    else:
        floor = ranking.floor
        first += [floor] * (head - len(first))
    spread = float(np.std(first))
    if spread <= 0:
        return dict.fromkeys((node_id for node_id, _ in hits), FOUND)
    return {node_id: _above_floor((score - floor) / spread) for node_id, score in hits}


def _above_floor(spreads: float) -> float:
    """``FOUND`` plus the spreads a hit stands above the floor; under the floor (hits past
    the head) a share of ``FOUND`` falling with the distance: still more than a node the
    ranker did not return, and in the ranker's order."""
    return FOUND + spreads if spreads >= 0 else FOUND * math.exp(spreads)


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
