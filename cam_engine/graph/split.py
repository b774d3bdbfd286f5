"""Keep clusters connected and no larger than ``max_size``.

Label propagation can leave a label spread over pieces that no longer touch, and
can grow a cluster past the size a summary can cover. A cluster is first split into
its connected components; a component still too large is partitioned by Leiden
(modularity, with ``max_comm_size``), so cuts follow the graph's structure rather
than cutting arbitrary blocks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: igraph and leidenalg take ~0.8 s to import
    import igraph as ig


def split_cluster(
    members: Sequence[str],
    adjacency: Mapping[str, Mapping[str, float]],
    *,
    max_size: int,
    seed: int,
) -> list[list[str]]:
    """Pieces of a cluster, largest first (ties: smallest first member); each sorted."""
    import igraph as ig

    ordered = sorted(set(members))
    index = {m: i for i, m in enumerate(ordered)}
    edges: dict[tuple[int, int], float] = {}
    for a in ordered:
        for b, weight in adjacency.get(a, {}).items():
            if b in index and a < b:
                edges[(index[a], index[b])] = float(weight)
    graph = ig.Graph(n=len(ordered), edges=list(edges))
    graph.es["weight"] = list(edges.values())
    pieces: list[list[str]] = []
    for component in graph.connected_components():
        for part in _partition(graph.induced_subgraph(component), max_size, seed):
            pieces.append(sorted(ordered[component[i]] for i in part))
    return sorted(pieces, key=lambda p: (-len(p), p[0]))


def _partition(graph: ig.Graph, max_size: int, seed: int) -> list[list[int]]:
    """Vertex sets of at most ``max_size`` following the graph's community structure."""
    if graph.vcount() <= max_size:
        return [list(range(graph.vcount()))]
    import leidenalg

    # Leiden's max_comm_size bounds its moves but not always the final communities
    # (a clique stays whole), so oversized parts are partitioned again.
    parts = [
        list(c)
        for c in leidenalg.find_partition(
            graph,
            leidenalg.ModularityVertexPartition,
            weights="weight",
            max_comm_size=max_size,
            seed=seed,
        )
    ]
    if len(parts) == 1:
        # Modularity sees no structure; cut the fast-greedy dendrogram into enough parts.
        wanted = math.ceil(graph.vcount() / max_size)
        dendrogram = graph.community_fastgreedy(weights="weight")
        parts = [list(c) for c in dendrogram.as_clustering(wanted)]
    if len(parts) == 1:
        # No structure at all (e.g. a uniform clique): consecutive runs of a BFS order.
        order = graph.bfs(0)[0]
        parts = [order[i : i + max_size] for i in range(0, len(order), max_size)]
    result: list[list[int]] = []
    for part in parts:
        if len(part) <= max_size:
            result.append(part)
            continue
        sub = graph.induced_subgraph(part)
        result.extend([part[i] for i in piece] for piece in _partition(sub, max_size, seed))
    return _merge_small(graph, result, max_size)


def _merge_small(graph: ig.Graph, parts: list[list[int]], max_size: int) -> list[list[int]]:
    """Merge each part into the neighbouring part it is most strongly tied to, while
    the union still fits: size-capped Leiden can leave fragments (even singletons)."""
    parts = [sorted(p) for p in parts]
    merged = True
    while merged:
        merged = False
        owner = {v: i for i, p in enumerate(parts) for v in p}
        for i in sorted(range(len(parts)), key=lambda i: (len(parts[i]), parts[i][0])):
            ties: dict[int, float] = {}
            for v in parts[i]:
                for e in graph.incident(v):
                    j = owner[graph.es[e].target if graph.es[e].source == v else graph.es[e].source]
                    if j != i and len(parts[i]) + len(parts[j]) <= max_size:
                        ties[j] = ties.get(j, 0.0) + graph.es[e]["weight"]
            if ties:
                j = min(ties, key=lambda j: (-ties[j], parts[j][0]))
                parts[j] = sorted(parts[j] + parts[i])
                del parts[i]
                merged = True
                break
    return parts
