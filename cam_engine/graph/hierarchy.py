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

from bisect import bisect_left, insort
from collections.abc import Callable, Mapping, Sequence
from typing import Any

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
    regroup: bool = True,
) -> list[list[int]]:
    """Partition root indexes into about ``groups`` groups of 2..``max_size`` members.

    Agglomerative, deterministic: each round merges the mutually most similar pairs of
    groups (best first) whose union fits ``max_size``, until ``groups`` remain.

    ``start``: groups to begin from instead of single roots (the previous batch's, less
    the roots gone since), so that a batch places its new roots and leaves the rest of
    the top as it was: a regrouping from scratch moved roots between many groups each
    batch, and every group that changed is summarized again (an LLM call each). When
    they cannot reach ``groups`` within ``max_size``, a grouping from single roots is
    taken instead if it does, unless ``regroup`` is False (where the caller cannot afford that:
    engine/summaries.py, ``REGROUP_ROOTS``); then the groups stay, above the target. The
    score of two groups is ``alpha * cosine(centroids) + (1 - alpha) * proximity``,
    proximity being ``exp(-d^2 / 2)`` for the smallest distance ``d`` between their
    members in the reading order of one document's roots (0 across documents):
    summaries of neighbouring parts of a book sit far apart in chunk positions, so rank
    among the roots is the scale-free measure. A group left with one member then joins
    its most similar group (over the size cap if it must), so no top node is a copy.
    Groups are returned sorted by their first index.

    With ``start`` and ``regroup`` False the groups are not merged at all: each root
    not in one joins its best group with room (``_placed``), in time linear in the
    groups. Merging pairs scores every group against every other, which at 60,000
    roots (5,000 groups) cost seconds per batch and grew with the square of the roots.
    """
    n = len(vectors)
    if n <= 1:
        return [list(range(n))]
    rank = _ranks(docs, positions)
    if start and not regroup:
        return _placed(np.asarray(vectors, dtype=np.float64), docs, rank, start, max_size, alpha)
    kept = merged_groups(vectors, rank, docs, start, groups=groups, max_size=max_size, alpha=alpha)
    if start and regroup and len(kept) > max(groups, 1):
        # Start over only when that reaches the target: a top that no grouping brings
        # down to ``groups`` keeps its groups, instead of being regrouped by every
        # later batch into groups a little different, each a covering node rewritten.
        fresh = group_roots(vectors, docs, positions, groups=groups, max_size=max_size, alpha=alpha)
        if len(fresh) <= max(groups, 1):
            return fresh
    return kept


def merged_groups(
    vectors: np.ndarray,
    rank: Sequence[int],
    docs: Sequence[str | None],
    start: Sequence[Sequence[int]],
    *,
    groups: int,
    max_size: int,
    alpha: float,
) -> list[list[int]]:
    """The agglomeration of ``group_roots`` from ``start`` (and single roots), no
    regrouping: mutually best pairs merged until ``groups`` remain, then singletons
    placed. ``rank``: each root's place in its document's reading order."""
    top = _Agglomeration(np.asarray(vectors, dtype=np.float64), docs, rank, alpha, start)
    top.merge_pairs(groups, max_size)
    top.place_singletons(max_size)
    return top.groups()


def _placed(
    vectors: np.ndarray,
    docs: Sequence[str | None],
    rank: Sequence[int],
    start: Sequence[Sequence[int]],
    max_size: int,
    alpha: float,
) -> list[list[int]]:
    """The ``start`` groups kept, each root in none placed in its best group with room
    (``alpha * cosine(root, centroid) + (1 - alpha) * proximity``, proximity to the
    group's nearest member in its document's reading order), or, when no group has
    room, in a new group of such roots; then a group of one joins its best group, over
    the cap if it must (no top node is a copy). Groups sorted by their first index."""
    members = [[int(i) for i in g] for g in start if len(g)]
    grouped = {i for g in members for i in g}
    new = [i for i in range(len(vectors)) if i not in grouped]
    sums = np.stack([vectors[g].sum(axis=0) for g in members]) if members else None
    group_of = {i: row for row, g in enumerate(members) for i in g}
    at_rank = {(docs[i], rank[i]): i for i in range(len(vectors)) if docs[i] is not None}
    overflow: list[int] = []
    units = unit(sums) if sums is not None else None
    sizes = np.array([len(g) for g in members], dtype=np.int64)
    for i in new:
        if sums is None or units is None:
            overflow.append(i)
            continue
        score = alpha * (units @ unit(vectors[i]))
        near: dict[int, float] = {}  # group row -> proximity of its nearest member
        for d in range(1, _REACH + 1):
            for r in (rank[i] - d, rank[i] + d):
                j = at_rank.get((docs[i], r))
                if j is not None and j in group_of:
                    near[group_of[j]] = max(near.get(group_of[j], 0.0), float(_PROXIMITY[d]))
        for row, proximity in near.items():
            score[row] += (1 - alpha) * proximity
        score[sizes >= max_size] = -np.inf
        row = int(np.argmax(score))
        if not np.isfinite(score[row]):
            overflow.append(i)
            continue
        members[row].append(i)
        group_of[i] = row
        sizes[row] += 1
        sums[row] += vectors[i]
        units[row] = unit(sums[row])
    for begin in range(0, len(overflow), max_size):
        members.append(overflow[begin : begin + max_size])
    return _without_singletons(members, vectors)


def _without_singletons(members: list[list[int]], vectors: np.ndarray) -> list[list[int]]:
    """Each group of one joined to the group whose centroid is most similar to it."""
    singles = [g[0] for g in members if len(g) == 1]
    kept = [g for g in members if len(g) > 1]
    if not kept:
        return (
            sorted(([i] for i in singles), key=lambda g: g[0])
            if len(singles) < 2
            else [sorted(singles)]
        )
    centroids = unit(np.stack([vectors[g].sum(axis=0) for g in kept]))
    for i in singles:
        kept[int(np.argmax(centroids @ unit(vectors[i])))].append(i)
    return sorted((sorted(g) for g in kept), key=lambda g: g[0])


class _Agglomeration:
    """The groups of ``group_roots`` while they merge: one row per starting group (a
    group of ``start`` or a single root), in the order of their first root, so that
    ties go to the smaller root index.

    Rows are groups, not roots: with the previous batch's groups as the start, the
    score matrix is (groups x groups), about ``max_size**2`` times smaller than one
    over the roots, which made every batch quadratic in the roots of a memory whose
    chunks do not cluster.
    """

    def __init__(
        self,
        vectors: np.ndarray,
        docs: Sequence[str | None],
        rank: Sequence[int],
        alpha: float,
        start: Sequence[Sequence[int]],
    ) -> None:
        n = len(vectors)
        grouped = {int(i) for g in start for i in g}
        heads = {int(g[0]): [int(i) for i in g] for g in start}
        heads.update((i, [i]) for i in range(n) if i not in grouped)
        self.members = [heads[h] for h in sorted(heads)]
        row_of = np.empty(n, dtype=np.int64)
        for row, group in enumerate(self.members):
            row_of[group] = row
        self.alpha = alpha
        # A group's vector sum is its members' vectors added in order (as merging them
        # one by one would).
        self.sums = np.empty((len(self.members), vectors.shape[1]), dtype=np.float64)
        for row, group in enumerate(self.members):
            total = vectors[group[0]].copy()
            for i in group[1:]:
                total += vectors[i]
            self.sums[row] = total
        self.sizes = np.array([len(g) for g in self.members], dtype=np.int64)
        self.alive = np.ones(len(self.members), dtype=bool)
        self.prox = _group_proximity(docs, rank, row_of, len(self.members))
        self.units = unit(self.sums)
        self.score = alpha * (self.units @ self.units.T) + (1 - alpha) * self.prox
        self.count = len(self.members)

    def merge_pairs(self, groups: int, max_size: int) -> None:
        """Rounds of merging mutually best pairs that fit, until ``groups`` remain or
        no two groups fit together."""
        while self.count > max(groups, 1):
            live = np.flatnonzero(self.alive)
            sizes = self.sizes[live]
            ok = sizes[:, None] + sizes[None, :] <= max_size
            np.fill_diagonal(ok, False)
            if not ok.any():
                break
            masked = np.where(ok, self.score[np.ix_(live, live)], -np.inf)
            best = masked.argmax(axis=1)
            at = np.arange(len(live))
            mutual = np.flatnonzero(ok.any(axis=1) & (at < best) & (best[best] == at))
            pairs = sorted((-masked[i, best[i]], int(live[i]), int(live[best[i]])) for i in mutual)
            for _, i, j in pairs:
                if self.count <= groups:
                    break
                self._merge(i, j)

    def place_singletons(self, max_size: int) -> None:
        """Each group of one joins its most similar group with room (any group when
        none has room; ties: the smaller index)."""
        for i in range(len(self.members)):
            if self.alive[i] and self.sizes[i] == 1 and self.count > 1:
                others = self.alive.copy()
                others[i] = False
                room = others & (self.sizes < max_size)
                candidates = np.flatnonzero(room if room.any() else others)
                j = candidates[np.argmax(self.score[i, candidates])]
                self._merge(int(j), i)

    def groups(self) -> list[list[int]]:
        alive = np.flatnonzero(self.alive)
        return sorted((sorted(self.members[i]) for i in alive), key=lambda g: g[0])

    def _merge(self, i: int, j: int) -> None:
        """Fold group j into group i and refresh i's scores (single linkage for
        proximity, centroid linkage for similarity)."""
        self.members[i].extend(self.members[j])
        self.sums[i] += self.sums[j]
        self.sizes[i] += self.sizes[j]
        self.alive[j] = False
        self.count -= 1
        prox = self.prox
        prox[i] = prox[:, i] = np.maximum(prox[i], prox[j])
        self.units[i] = unit(self.sums[i])
        row = self.alpha * (self.units @ self.units[i]) + (1 - self.alpha) * prox[i]
        self.score[i] = self.score[:, i] = row


# Proximity exp(-d^2 / 2) of roots d ranks apart: 0.0 in float64 from d = 39 on, so
# each root has nonzero proximity to at most 38 roots on either side.
_PROXIMITY = np.exp(-(np.arange(64, dtype=np.float64) ** 2) / 2)
_REACH = int(np.flatnonzero(_PROXIMITY)[-1])


def _group_proximity(
    docs: Sequence[str | None], rank: Sequence[int], row_of: np.ndarray, rows: int
) -> np.ndarray:
    """(rows x rows) proximity of groups: the largest over their members' pairs (single
    linkage), from the roots' pairs within ``_REACH`` ranks of one document."""
    prox = np.zeros((rows, rows), dtype=np.float64)
    by_doc: dict[str, list[tuple[int, int]]] = {}
    for i, (doc, r) in enumerate(zip(docs, rank, strict=True)):
        if doc is not None:
            by_doc.setdefault(doc, []).append((r, i))
    for roots in by_doc.values():
        # Ranks of one document are 0..m-1: sorted by rank, d ranks apart is d places apart.
        ordered = row_of[[i for _, i in sorted(roots)]]
        for d in range(1, min(_REACH, len(ordered) - 1) + 1):
            a, b = ordered[:-d], ordered[d:]
            np.maximum.at(prox, (a, b), _PROXIMITY[d])
            np.maximum.at(prox, (b, a), _PROXIMITY[d])
    np.fill_diagonal(prox, 0.0)
    return prox


def unit(matrix: np.ndarray) -> np.ndarray:
    """Each row (or the vector) scaled to length 1; a zero row stays zero."""
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


class KeptGroups:
    """One covering level's groups, kept between batches so that a batch places its new
    nodes without reading the whole level: each group's vector sum and size, and the
    reading order of the level below's nodes within each document (for proximity).

    A new node goes to its best group with room, scored as ``_placed`` scores it
    (``alpha * cosine(node, centroid) + (1 - alpha) * proximity``). A group's sum is
    set from its members' vectors (``set_group``, in the caller's fixed order), so a
    process that builds these from the stored groups holds the same sums as the one
    that kept them; within a batch, ``add_member`` adds to it.
    """

    def __init__(self, dimensions: int, *, alpha: float, max_size: int) -> None:
        self.alpha = alpha
        self.max_size = max_size
        self.row_of: dict[str, int] = {}
        self.group_at: list[str | None] = []  # row -> group
        self.sums = np.zeros((0, dimensions), dtype=np.float64)
        self.units = np.zeros((0, dimensions), dtype=np.float64)
        self.sizes = np.zeros(0, dtype=np.int64)
        self.free: list[int] = []
        # document -> its nodes (of the level below) by reading-order key, and each
        # node's place there (a node that left may be gone from the store)
        self.reading: dict[str, list[tuple[tuple[Any, ...], str]]] = {}
        self.where: dict[str, tuple[str, tuple[Any, ...]]] = {}

    def __len__(self) -> int:
        return len(self.row_of)

    def set_group(self, group: str, vectors: np.ndarray) -> None:
        """A group (new or changed) with its members' vectors."""
        row = self.row_of.get(group)
        if row is None:
            row = self.free.pop() if self.free else self._grow()
            self.row_of[group] = row
            self.group_at[row] = group
        self.sums[row] = np.asarray(vectors, dtype=np.float64).sum(axis=0)
        self.units[row] = unit(self.sums[row])
        self.sizes[row] = len(vectors)

    def drop_group(self, group: str) -> None:
        row = self.row_of.pop(group, None)
        if row is not None:
            self.group_at[row] = None
            self.sums[row] = 0.0
            self.units[row] = 0.0
            self.sizes[row] = 0
            self.free.append(row)

    def add_member(self, group: str, vector: np.ndarray) -> None:
        row = self.row_of[group]
        self.sums[row] += vector
        self.units[row] = unit(self.sums[row])
        self.sizes[row] += 1

    def size(self, group: str) -> int:
        return int(self.sizes[self.row_of[group]])

    def add_node(self, node: str, doc: str | None, key: tuple[Any, ...]) -> None:
        """A node of the level below in its document's reading order (``key``: its
        position, then level, then id), or moved there."""
        self.drop_node(node)
        if doc is not None:
            insort(self.reading.setdefault(doc, []), (key, node))
            self.where[node] = (doc, key)

    def drop_node(self, node: str) -> None:
        doc, key = self.where.pop(node, (None, ()))
        order = self.reading.get(doc) if doc is not None else None
        if order:
            at = bisect_left(order, (key, node))
            if at < len(order) and order[at][1] == node:
                del order[at]

    def place(
        self,
        nodes: Sequence[str],
        vectors: np.ndarray,
        places: Sequence[tuple[str | None, tuple[Any, ...]]],
        group_of: Callable[[str], str | None],
    ) -> list[str | None]:
        """Each node in turn into its best group with room, which grows by it; None for
        a node every group was full for. ``places``: each node's (document, reading
        key), its place among the level below's nodes (``add_node``); ``group_of``: the
        group a node of the level below is in, before this call.

        The similarities of every node to every group are one matrix product; a
        placement changes one group's centroid, so one column is computed again.
        """
        placed: dict[str, str] = {}

        def current(node: str) -> str | None:
            return placed.get(node) or group_of(node)

        directions = unit(np.asarray(vectors, dtype=np.float64))
        cosines = directions @ self.units.T if len(nodes) else np.zeros((0, len(self.sizes)))
        chosen: list[str | None] = []
        for i, node in enumerate(nodes):
            score = self.alpha * cosines[i]
            doc, key = places[i]
            for near, proximity in self._near(doc, key, node, current).items():
                score[near] += (1 - self.alpha) * proximity
            score[(self.sizes == 0) | (self.sizes >= self.max_size)] = -np.inf
            row = self._first_best(score)
            group = None if row is None else self.group_at[row]
            chosen.append(group)
            if row is None or group is None:
                continue
            placed[node] = group
            self.add_member(group, vectors[i])
            cosines[i + 1 :, row] = directions[i + 1 :] @ self.units[row]
        return chosen

    def most_similar(self, vector: np.ndarray) -> tuple[str | None, float]:
        """The group of two or more members whose centroid is most similar, with its
        cosine (None, -inf: there is none)."""
        scores = self.units @ unit(vector)
        scores[self.sizes <= 1] = -np.inf
        row = self._first_best(scores)
        return (None, -np.inf) if row is None else (self.group_at[row], float(scores[row]))

    def _first_best(self, scores: np.ndarray) -> int | None:
        """The row of the highest finite score; of equal scores (groups of identical
        texts), the group with the smallest id: rows are assigned in the order groups
        came, which differs between the process that kept them and one that read them."""
        if not len(scores):
            return None
        best = scores.max()
        if not np.isfinite(best):
            return None
        rows = np.flatnonzero(scores == best)
        return int(min(rows, key=lambda r: self.group_at[r] or ""))

    def _near(
        self,
        doc: str | None,
        key: tuple[Any, ...],
        node: str,
        group_of: Callable[[str], str | None],
    ) -> dict[int, float]:
        """Group row -> proximity of its nearest member in the node's document."""
        order = self.reading.get(doc) if doc is not None else None
        near: dict[int, float] = {}
        if not order:
            return near
        at = bisect_left(order, (key, node))
        for d in range(1, _REACH + 1):
            for j in (at - d, at + d):
                if 0 <= j < len(order):
                    group = group_of(order[j][1])
                    if group is not None and group in self.row_of:
                        row = self.row_of[group]
                        near[row] = max(near.get(row, 0.0), float(_PROXIMITY[d]))
        return near

    def _grow(self) -> int:
        row = len(self.sizes)
        capacity = max(16, 2 * row)
        dims = self.sums.shape[1]
        self.sums = np.vstack([self.sums, np.zeros((capacity - row, dims))])
        self.units = np.vstack([self.units, np.zeros((capacity - row, dims))])
        self.sizes = np.concatenate([self.sizes, np.zeros(capacity - row, dtype=np.int64)])
        self.group_at.extend([None] * (capacity - row))
        self.free.extend(range(capacity - 1, row, -1))
        return row
