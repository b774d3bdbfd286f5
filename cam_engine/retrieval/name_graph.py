"""Relevance spread through shared names: personalized PageRank on a chunk-name graph.

A bridge question's second paragraph shares no word with the question, but it names
what the first paragraph names (HippoRAG, HippoRAG 2, LinearRAG: entity bridges are
where graph retrieval wins over flat retrieval). Here the graph is local to one
question: the localized chunks (the seeds), the names they mention, and every chunk
mentioning one of those names (two hops). A name mentioned by more than
``max_chunks`` chunks ("England", "2010") bridges everything and is left out. A walk
restarting at the seeds (weighted by their relevance) steps from a chunk to one of
its names, a rare name more often (edge weight 1 / log(1 + chunks naming it)), and
from a name to one of its chunks; a chunk's visit frequency is its PPR mass.

The walk is a power iteration in numpy, not igraph's ``personalized_pagerank``: the
graph has a few thousand edges at most, and a cold ``cam ask`` imports no graph
library.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

import numpy as np

MAX_ITER = 100  # each step shrinks the error by ``damping`` (0.85**100: 1e-7)
TOLERANCE = 1e-12


class NameIndex(Protocol):
    """Which names each chunk mentions and which chunks mention a name (the store's)."""

    def names_of(self, chunk_ids: Iterable[str]) -> dict[str, list[str]]: ...

    def chunks_naming(
        self,
        names: Iterable[str],
        *,
        max_chunks: int,
        documents: Sequence[str] | None = None,
    ) -> dict[str, list[str]]: ...


def name_ppr(
    index: NameIndex,
    seeds: Mapping[str, float],
    *,
    max_chunks: int,
    damping: float,
    documents: Sequence[str] | None = None,
) -> dict[str, float]:
    """The PPR mass of every chunk of the seeds' local chunk-name graph (seeds
    included), restarting at ``seeds`` in proportion to their weights; empty when the
    seeds share no name with another chunk. ``damping`` is the chance the walk goes
    on rather than restarting."""
    named = index.names_of(list(seeds))
    names = {name for chunk_names in named.values() for name in chunk_names}
    if not names:
        return {}
    chunks_by_name = index.chunks_naming(sorted(names), max_chunks=max_chunks, documents=documents)
    vertex: dict[tuple[str, str], int] = {}  # ("c", chunk id) or ("n", name) -> vertex
    edges: list[tuple[int, int]] = []
    weights: list[float] = []
    for name, chunk_ids in sorted(chunks_by_name.items()):
        if len(chunk_ids) < 2:
            continue  # a name no other chunk mentions leads nowhere
        name_vertex = vertex.setdefault(("n", name), len(vertex))
        for chunk_id in chunk_ids:
            edges.append((vertex.setdefault(("c", chunk_id), len(vertex)), name_vertex))
            weights.append(1.0 / math.log(1.0 + len(chunk_ids)))
    reset = [0.0] * len(vertex)
    for chunk_id, weight in seeds.items():
        if ("c", chunk_id) in vertex:
            reset[vertex[("c", chunk_id)]] = max(weight, 0.0)
    if sum(reset) <= 0:
        return {}
    mass = _personalized_pagerank(len(vertex), edges, weights, reset, damping)
    return {key: float(mass[v]) for (kind, key), v in vertex.items() if kind == "c"}


def _personalized_pagerank(
    size: int,
    edges: list[tuple[int, int]],
    weights: list[float],
    reset: list[float],
    damping: float,
) -> np.ndarray:
    """The stationary distribution of a walk on an undirected weighted graph that
    goes on along an edge (chosen by weight) with chance ``damping`` and otherwise
    restarts at a vertex drawn from ``reset``. Every vertex has an edge."""
    ends = np.array(edges, dtype=np.int64)
    tails = np.concatenate([ends[:, 0], ends[:, 1]])  # each edge in both directions
    heads = np.concatenate([ends[:, 1], ends[:, 0]])
    weight = np.concatenate([weights, weights])
    share = weight / np.bincount(tails, weights=weight, minlength=size)[tails]
    restart = np.array(reset) / sum(reset)
    mass = restart
    for _ in range(MAX_ITER):
        walked = np.bincount(heads, weights=mass[tails] * share, minlength=size)
        new = (1.0 - damping) * restart + damping * walked
        done = np.abs(new - mass).sum() < TOLERANCE
        mass = new
        if done:
            break
    return mass
