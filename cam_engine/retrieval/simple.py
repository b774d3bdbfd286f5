"""Retrievals without exploration: flat baselines over the chunks, CAM's fast
localization alone (``global``) and a top-down walk of the hierarchy (``traverse``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cam_engine.retrieval.base import Retrieval, unique_text
from cam_engine.retrieval.localize import (
    DEPTH,
    dense_ranking,
    hybrid,
    lexical_ranking,
)
from cam_engine.retrieval.scope import Documents, within
from cam_engine.store.base import RetrievalStore
from cam_engine.types import Node


def _ranked(strategy: str, store: RetrievalStore, ids: Sequence[str], top_k: int) -> Retrieval:
    """The first ``top_k`` distinct texts of ``ids`` as evidence, the rest as backfill
    (``ids`` come from a search of the scope: all in it)."""
    nodes = unique_text(store.get_nodes(ids[:top_k], embeddings=True), ids[:top_k])
    return Retrieval(
        strategy,
        nodes,
        turns=[[n.id for n in nodes]],
        candidates=[list(ids[:top_k])],
        ranked=nodes,
        backfill=list(ids[top_k:]),
        stop="flat ranking",
    )


def dense(
    store: RetrievalStore,
    question: str,
    vector: np.ndarray,
    top_k: int,
    documents: Documents = None,
) -> Retrieval:
    """Baseline: chunks by cosine to the question."""
    ids = dense_ranking(store, vector, 0, max(DEPTH, top_k), documents)
    return _ranked("dense", store, ids, top_k)


def lexical(
    store: RetrievalStore,
    question: str,
    vector: np.ndarray | None,
    top_k: int,
    documents: Documents = None,
) -> Retrieval:
    """Baseline: chunks by BM25 (the store's full-text index)."""
    ids = lexical_ranking(store, question, 0, max(DEPTH, top_k), documents)
    return _ranked("bm25", store, ids, top_k)


def fused(
    store: RetrievalStore,
    question: str,
    vector: np.ndarray,
    top_k: int,
    documents: Documents = None,
) -> Retrieval:
    """Baseline: chunks by the two above, fused by calibrated scores (localize.py)."""
    order = hybrid(store, question, vector, 0, max(DEPTH, top_k), documents).order
    return _ranked("hybrid", store, order, top_k)


def global_top_k(
    store: RetrievalStore,
    question: str,
    vector: np.ndarray,
    top_k: int,
    level: int | None = None,
    documents: Documents = None,
) -> Retrieval:
    """CAM's fast localization alone: the ``top_k`` nodes of all levels by cosine."""
    ids = dense_ranking(store, vector, level, top_k, documents)
    nodes = unique_text(store.get_nodes(ids, embeddings=True), ids)
    ranked = sorted(nodes, key=lambda n: (n.level > 0, -_cosine(n, vector), n.id))
    return Retrieval("global", nodes, turns=[ids], candidates=[ids], ranked=ranked)


def traverse(
    store: RetrievalStore,
    question: str,
    vector: np.ndarray,
    top_k: int,
    documents: Documents = None,
) -> Retrieval:
    """Top-down: from the top level, keep the ``top_k`` children closest to the question
    at each level, down to the chunks. Within a scope it starts from the scope's roots
    (the top level may span other documents); the members of a summary in the scope
    are in it."""
    if documents is None:
        top = max(store.levels(), default=0)
        frontier = [n.id for n in store.nodes_at_level(top)]
    else:
        frontier = [n.id for n in store.roots_within(documents)]
    result = Retrieval("traverse", [])
    while frontier:
        found = store.get_nodes(frontier, embeddings=True)
        nodes = within((found[i] for i in frontier if i in found), documents)
        chosen = sorted(nodes, key=lambda n: (-_cosine(n, vector), n.id))[:top_k]
        result.candidates.append(frontier)
        result.turns.append([n.id for n in chosen])
        result.activated.extend(chosen)
        children = store.members_of(n.id for n in chosen)
        frontier = sorted({c for ids in children.values() for c in ids})
    result.stop = "reached the chunks"
    result.ranked = sorted(result.activated, key=lambda n: (n.level > 0, -_cosine(n, vector), n.id))
    return result


def _cosine(node: Node, vector: np.ndarray) -> float:
    # Every stored node has a vector: Memory embeds a node before it stores it.
    return float(node.embedding @ vector) if node.embedding is not None else -1.0
