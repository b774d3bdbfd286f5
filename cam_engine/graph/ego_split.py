"""Ego-centric disentanglement (CAM Section 4.1.2), incremental.

For a node v, its ego-network is the subgraph induced by v's neighbours WITHOUT v.
Each connected component of it becomes one replica of v; an edge (u, v) then joins
u's replica whose component holds v with v's replica whose component holds u.
Clustering replicas (non-overlapping) and mapping them back to nodes gives
overlapping clusters: a node bridging two contexts lands in both.

Only affected nodes are re-split. Their new components are matched to their old
replicas by overlap, so a replica whose neighbourhood did not change keeps its id
and its cluster label, and a grown component keeps the id of the replica it grew from.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from cam_engine.types import Replica

Adjacency = Mapping[str, Mapping[str, float]]


def ego_components(node: str, adjacency: Adjacency) -> list[frozenset[str]]:
    """Connected components of node's ego-network (neighbours without the node).

    ``adjacency`` must hold the node, its neighbours and the edges among them.
    Components are sorted by their smallest member, so the result is deterministic.

    A depth-first search in plain Python: an ego-network has a dozen nodes, and
    building an igraph graph for each of the thousands re-split per batch cost more
    than the search (tests check it against igraph's connected components).
    """
    neighbours = adjacency.get(node, {})
    seen: set[str] = set()
    components: list[frozenset[str]] = []
    for start in sorted(neighbours):
        if start in seen:
            continue
        seen.add(start)
        component, stack = [start], [start]
        while stack:
            for other in adjacency.get(stack.pop(), {}):
                if other in neighbours and other not in seen and other != node:
                    seen.add(other)
                    component.append(other)
                    stack.append(other)
        components.append(frozenset(component))
    return components


@dataclass
class ReplicaDiff:
    """What re-splitting some nodes changed. Labels of new replicas are left empty."""

    added: list[Replica] = field(default_factory=list)
    changed: list[Replica] = field(default_factory=list)  # same id and label, new members
    removed: list[Replica] = field(default_factory=list)
    unchanged: list[Replica] = field(default_factory=list)


def _next_suffix(node: str, replicas: Iterable[Replica]) -> int:
    suffixes = [int(r.id.rsplit("/r", 1)[1]) for r in replicas if "/r" in r.id]
    return max(suffixes, default=-1) + 1


def resplit(
    nodes: Iterable[str],
    adjacency: Adjacency,
    old: Mapping[str, list[Replica]],
    level: int,
    *,
    split: bool = True,
) -> ReplicaDiff:
    """New replicas of ``nodes`` given the current graph and their stored replicas.

    With ``split=False`` (the "w/o flexibility" ablation) every node keeps one replica
    holding all its neighbours, so label propagation gives non-overlapping clusters.
    """
    diff = ReplicaDiff()
    for node in sorted(set(nodes)):
        if split:
            components = ego_components(node, adjacency) or [frozenset()]  # isolated: one
        else:
            components = [frozenset(adjacency.get(node, {}))]
        previous = sorted(old.get(node, []), key=lambda r: r.id)
        # Greedy matching, largest overlap first; ties by replica id then component order.
        pairs = sorted(
            ((-len(c & r.members), r.id, ci) for ci, c in enumerate(components) for r in previous)
        )
        by_id = {r.id: r for r in previous}
        matched_component: dict[int, Replica] = {}
        used: set[str] = set()
        for overlap, rid, ci in pairs:
            if overlap < 0 and rid not in used and ci not in matched_component:
                matched_component[ci] = by_id[rid]
                used.add(rid)
        # Left-over old replicas take left-over components in order even without overlap,
        # so a node that was isolated keeps its replica (and label) when it gains neighbours.
        spare = [r for r in previous if r.id not in used]
        for ci in range(len(components)):
            if ci not in matched_component and spare:
                taken = spare.pop(0)
                matched_component[ci] = taken
                used.add(taken.id)
        suffix = _next_suffix(node, previous)
        for ci, component in enumerate(components):
            replica = matched_component.get(ci)
            if replica is None:
                diff.added.append(Replica(f"{node}/r{suffix}", node, level, "", component))
                suffix += 1
            elif replica.members == component:
                diff.unchanged.append(replica)
            else:
                diff.changed.append(Replica(replica.id, node, level, replica.label, component))
        diff.removed.extend(r for r in previous if r.id not in used)
    return diff


def replica_edges(
    replicas: Iterable[Replica], partners: Iterable[Replica], adjacency: Adjacency
) -> dict[str, dict[str, float]]:
    """Replica-graph adjacency of ``replicas``.

    The edge (u, v) joins u's replica holding v to v's replica holding u; ``partners``
    must contain the replicas of u's neighbours and ``adjacency`` the edges of u.
    """
    holder = {(p.node_id, member): p.id for p in partners for member in p.members}
    return {
        r.id: {
            holder[(v, r.node_id)]: float(adjacency[r.node_id][v])
            for v in sorted(r.members)
            if (v, r.node_id) in holder
        }
        for r in replicas
    }
