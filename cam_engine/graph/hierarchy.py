"""Shape of the hierarchy: no clusters of one, and a small top that covers everything.

Two pure steps, no I/O:

- ``absorb_singletons``: a cluster of one replica says nothing its member does not, and
  its summary would be a copy of it. Such a replica joins the neighbouring cluster it
  is most strongly tied to, among those with room (the size cap stays a hard limit).
  A replica with no neighbour, or whose neighbours' clusters are all full, stays alone;
  the builder then writes no summary for it and the node remains a root.
- ``group_roots``: when the clustered levels stop shrinking, what has no parent (the
  last level's nodes and the singletons left below it) is grouped by similarity and
  document proximity into a few covering nodes, so a reader (and ``traverse``) has one
  small top level from which every chunk is reachable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np


def absorb_singletons(
    singles: Sequence[str],
    edges: Mapping[str, Mapping[str, float]],
    labels: Mapping[str, str],
    sizes: Mapping[str, int],
    *,
    max_size: int,
) -> dict[str, str]:
    """New labels for the replicas in ``singles`` (each alone in its cluster).

    ``edges``: replica-graph adjacency of the singles; ``labels``: the label of every
    replica named there; ``sizes``: replicas per label. A single moves to the label with
    the largest total edge weight to it that has room (ties: smallest label); singles
    are taken in id order, so two lone neighbours pair up. A single that has received a
    replica is no longer alone and stays.
    """
    size = dict(sizes)
    moved: dict[str, str] = {}
    for rid in sorted(singles):
        own = moved.get(rid, labels[rid])
        if size.get(own, 0) != 1:
            continue
        ties: dict[str, float] = {}
        for other, weight in edges.get(rid, {}).items():
            label = moved.get(other, labels.get(other))
            if label is None or label == own:
                continue
            ties[label] = ties.get(label, 0.0) + weight
        fits = [
            (-weight, label)
            for label, weight in ties.items()
            if 0 < size.get(label, 0) < max_size and weight > 0
        ]
        if not fits:
            continue
        target = min(fits)[1]
        moved[rid] = target
        size[own] = 0
        size[target] = size.get(target, 0) + 1
    return moved


def group_roots(
    vectors: np.ndarray,
    docs: Sequence[str | None],
    positions: Sequence[float | None],
    *,
    groups: int,
    max_size: int,
    alpha: float,
    start: Sequence[Sequence[int]] = (),
) -> list[list[int]]:
    """Partition root indexes into about ``groups`` groups of 2..``max_size`` members.

    Agglomerative, deterministic: each round merges the mutually most similar pairs of
    groups (best first) whose union fits ``max_size``, until ``groups`` remain.

    ``start``: groups to begin from instead of single roots (the previous batch's, less
    the roots gone since), so that a batch places its new roots and leaves the rest of
    the top as it was: a regrouping from scratch moved roots between many groups each
    batch, and every group that changed is summarized again (an LLM call each). When
    they cannot reach ``groups`` within ``max_size``, the grouping starts over from
    single roots. The
    score of two groups is ``alpha * cosine(centroids) + (1 - alpha) * proximity``,
    proximity being ``exp(-d^2 / 2)`` for the smallest distance ``d`` between their
    members in the reading order of one document's roots (0 across documents):
    summaries of neighbouring parts of a book sit far apart in chunk positions, so rank
    among the roots is the scale-free measure. A group left with one member then joins
    its most similar group (over the size cap if it must), so no top node is a copy.
    Groups are returned sorted by their first index.
    """
    n = len(vectors)
    if n <= 1:
        return [list(range(n))]
    rank = np.array(_ranks(docs, positions), dtype=np.float64)
    codes = {d: c for c, d in enumerate(sorted({d for d in docs if d is not None}))}
    doc = np.array([codes[d] if d is not None else -1 - i for i, d in enumerate(docs)])
    prox = np.where(doc[:, None] == doc[None, :], np.exp(-((rank[:, None] - rank) ** 2) / 2), 0.0)
    np.fill_diagonal(prox, 0.0)
    sums = np.asarray(vectors, dtype=np.float64).copy()
    sizes = np.ones(n, dtype=np.int64)
    alive = np.ones(n, dtype=bool)
    members = [[i] for i in range(n)]
    score = alpha * (_unit(sums) @ _unit(sums).T) + (1 - alpha) * prox
    count = n
    for group in start:
        first, *rest = group
        for other in rest:
            _merge(first, other, members, sums, sizes, alive, prox, score, alpha)
            count -= 1
    while count > max(groups, 1):
        ok = alive[:, None] & alive[None, :] & (sizes[:, None] + sizes[None, :] <= max_size)
        np.fill_diagonal(ok, False)
        if not ok.any():
            break
        masked = np.where(ok, score, -np.inf)
        best = masked.argmax(axis=1)
        pairs = sorted(
            (-masked[i, best[i]], i, int(best[i]))
            for i in range(n)
            if ok[i].any() and i < best[i] and best[best[i]] == i
        )
        for _, i, j in pairs:
            if count <= groups:
                break
            _merge(i, j, members, sums, sizes, alive, prox, score, alpha)
            count -= 1
    if start and count > max(groups, 1):
        return group_roots(vectors, docs, positions, groups=groups, max_size=max_size, alpha=alpha)
    for i in range(n):
        if alive[i] and sizes[i] == 1 and count > 1:
            others = np.where(alive & (np.arange(n) != i))[0]
            room = [j for j in others if sizes[j] < max_size] or list(others)
            j = max(room, key=lambda j: (score[i, j], -j))
            _merge(int(j), i, members, sums, sizes, alive, prox, score, alpha)
            count -= 1
    return sorted((sorted(members[i]) for i in range(n) if alive[i]), key=lambda g: g[0])


def _merge(
    i: int,
    j: int,
    members: list[list[int]],
    sums: np.ndarray,
    sizes: np.ndarray,
    alive: np.ndarray,
    prox: np.ndarray,
    score: np.ndarray,
    alpha: float,
) -> None:
    """Fold group j into group i and refresh i's scores (single linkage for proximity,
    centroid linkage for similarity)."""
    members[i].extend(members[j])
    sums[i] += sums[j]
    sizes[i] += sizes[j]
    alive[j] = False
    prox[i] = prox[:, i] = np.maximum(prox[i], prox[j])
    row = alpha * (_unit(sums) @ _unit(sums[i])) + (1 - alpha) * prox[i]
    score[i] = score[:, i] = row


def _unit(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return np.asarray(matrix / np.where(norms == 0, 1.0, norms))


def _ranks(docs: Sequence[str | None], positions: Sequence[float | None]) -> list[int]:
    """Each root's index in its document's reading order (by position, then index)."""
    order = sorted(range(len(docs)), key=lambda i: (docs[i] or "", positions[i] or 0.0, i))
    rank = [0] * len(docs)
    seen: dict[str | None, int] = {}
    for i in order:
        rank[i] = seen.get(docs[i], 0)
        seen[docs[i]] = rank[i] + 1
    return rank
