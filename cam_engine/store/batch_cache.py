"""A read cache for one batch's transaction, for stores where every call is a round trip.

The builder reads the same neighbourhoods again and again while one batch climbs the
hierarchy: the ego-networks it re-splits, then the replica graph label propagation
walks, then the clusters it splits and relinks. On Neo4j each of those reads costs a
network round trip; about a third of them ask for ids already read in the same batch.

``BatchCache`` wraps a store for the lifetime of one transaction and answers those
repeats from memory. Writes go straight through to the store (so every read the cache
does not answer sees them, as before) and are also applied to what the cache holds, so
a cached answer always equals what the store would return. Only structural reads are
cached (nodes without embeddings, adjacency, replicas, cluster labels, membership);
everything else passes through unchanged.

Every cached entry is *complete*: ``_adjacency[x]`` holds all of x's edges,
``_by_label[l]`` every replica labelled l, and so on. Invariant: a replica id inside
``_of_node`` or ``_by_label`` is also in ``_replicas``, so a write to a replica the cache
has never seen cannot leave a stale copy behind.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from cam_engine.store.base import GraphStore
from cam_engine.types import Edge, Node, Replica

# Verbs that neither read nor write what the cache holds, so they go straight to the
# store. A verb missing from here and from the class raises AttributeError, so a new
# write verb cannot slip past the cache unnoticed.
_PASS_THROUGH = frozenset(
    {
        "location",
        "memory",
        "remote",
        "prepare",
        "load_settings",
        "save_settings",
        "allocate_labels",
        "get_document",
        "upsert_document",
        "documents",
        "nodes_at_level",
        "root_nodes",
        "chunks_near",
        "nearest",
        "count_nodes",
        "levels",
        "edges_of",
        "count_labels",
        "labels_at_level",
        "upsert_view_nodes",
        "view_nodes",
        "delete_view_nodes",
        "view_counts",
        "keyword_search",
        "stats",
    }
)


class BatchCache:
    """Wraps a store inside one open transaction; discard it when the transaction ends."""

    def __init__(self, store: GraphStore) -> None:
        self._store = store
        self._reset()

    def _reset(self) -> None:
        self._nodes: dict[str, Node | None] = {}  # None: known not to exist
        self._adjacency: dict[str, dict[str, float]] = {}
        self._replicas: dict[str, Replica | None] = {}  # by replica id; None: absent
        self._of_node: dict[str, set[str]] = {}  # node id -> its replica ids
        self._by_label: dict[str, set[str]] = {}  # label -> replica ids
        self._members: dict[str, set[str]] = {}  # summary id -> member ids
        self._parents: dict[str, set[str]] = {}  # node id -> summary ids

    def __getattr__(self, name: str) -> Any:
        if name in _PASS_THROUGH:
            return getattr(self._store, name)
        raise AttributeError(f"BatchCache does not offer {name!r}")

    # --- nodes ------------------------------------------------------------------------------
    def get_nodes(self, ids: Iterable[str], *, embeddings: bool = False) -> dict[str, Node]:
        if embeddings:  # vectors are not cached: only the chunk pool asks, once a batch
            return self._store.get_nodes(list(dict.fromkeys(ids)), embeddings=True)
        wanted = _read_through(self._nodes, ids, self._store.get_nodes, lambda: None)
        return {i: node for i in wanted if (node := self._nodes[i]) is not None}

    def existing_ids(self, ids: Iterable[str]) -> set[str]:
        return set(self.get_nodes(ids))

    def upsert_nodes(self, nodes: Sequence[Node]) -> None:
        self._store.upsert_nodes(nodes)
        for node in nodes:
            self._nodes[node.id] = node

    def delete_nodes(self, ids: Iterable[str]) -> None:
        gone = set(ids)
        self._store.delete_nodes(gone)
        # The store drops the nodes' edges, replicas and membership links with them.
        for node_id in gone:
            self._nodes[node_id] = None
            self._adjacency[node_id] = {}
            self._members[node_id] = set()
            self._parents[node_id] = set()
        for neighbours in self._adjacency.values():
            for node_id in gone & neighbours.keys():
                del neighbours[node_id]
        for related in (*self._members.values(), *self._parents.values()):
            related -= gone
        dropped = [r.id for r in self._replicas.values() if r is not None and r.node_id in gone]
        for replica_id in dropped:
            self._forget_replica(replica_id)

    # --- edges ------------------------------------------------------------------------------
    def neighbours(self, ids: Iterable[str]) -> dict[str, dict[str, float]]:
        # A store may leave out ids without edges: they are cached as empty.
        wanted = _read_through(self._adjacency, ids, self._store.neighbours, dict)
        return {i: dict(self._adjacency[i]) for i in wanted}

    def upsert_edges(self, edges: Sequence[Edge]) -> None:
        self._store.upsert_edges(edges)
        for e in edges:
            if e.src in self._adjacency:
                self._adjacency[e.src][e.dst] = e.score
            if e.dst in self._adjacency:
                self._adjacency[e.dst][e.src] = e.score

    def delete_edges(self, keys: Iterable[tuple[str, str]]) -> None:
        pairs = list(keys)
        self._store.delete_edges(pairs)
        for a, b in pairs:
            self._adjacency.get(a, {}).pop(b, None)
            self._adjacency.get(b, {}).pop(a, None)

    # --- replicas ---------------------------------------------------------------------------
    def replicas_of(self, node_ids: Iterable[str]) -> dict[str, list[Replica]]:
        wanted = list(dict.fromkeys(node_ids))
        missing = [i for i in wanted if i not in self._of_node]
        if missing:
            read = self._store.replicas_of(missing)
            for node_id in missing:
                replicas = read.get(node_id, [])
                self._remember(replicas)
                self._of_node[node_id] = {r.id for r in replicas}
        result: dict[str, list[Replica]] = {}
        for node_id in wanted:
            if self._of_node[node_id]:
                result[node_id] = self._replicas_sorted(self._of_node[node_id])
        return result

    def replicas_by_id(self, ids: Iterable[str]) -> dict[str, Replica]:
        wanted = _read_through(self._replicas, ids, self._store.replicas_by_id, lambda: None)
        return {i: r for i in wanted if (r := self._replicas[i]) is not None}

    def replicas_with_labels(self, labels: Iterable[str]) -> list[Replica]:
        wanted = list(dict.fromkeys(labels))
        missing = [label for label in wanted if label not in self._by_label]
        if missing:
            read = self._store.replicas_with_labels(missing)
            self._remember(read)
            for label in missing:
                self._by_label[label] = set()
            for r in read:
                self._by_label[r.label].add(r.id)
        return self._replicas_sorted({i for label in wanted for i in self._by_label[label]})

    def label_sizes(self, labels: Iterable[str]) -> dict[str, int]:
        sizes: dict[str, int] = {}
        for r in self.replicas_with_labels(labels):
            sizes[r.label] = sizes.get(r.label, 0) + 1
        return sizes

    def upsert_replicas(self, replicas: Sequence[Replica]) -> None:
        self._store.upsert_replicas(replicas)
        for r in replicas:
            self._forget_replica(r.id)
            self._replicas[r.id] = r
            if r.label in self._by_label:
                self._by_label[r.label].add(r.id)
            if r.node_id in self._of_node:
                self._of_node[r.node_id].add(r.id)

    def delete_replicas(self, ids: Iterable[str]) -> None:
        gone = list(ids)
        self._store.delete_replicas(gone)
        for replica_id in gone:
            self._forget_replica(replica_id)

    def _remember(self, replicas: Iterable[Replica]) -> None:
        for r in replicas:
            self._replicas[r.id] = r

    def _forget_replica(self, replica_id: str) -> None:
        """Mark a replica absent and take it out of the cached sets that hold it (by the
        invariant, a replica the cache has not seen is in none of them)."""
        old = self._replicas.get(replica_id)
        self._replicas[replica_id] = None
        if old is not None:
            self._by_label.get(old.label, set()).discard(replica_id)
            self._of_node.get(old.node_id, set()).discard(replica_id)

    def _replicas_sorted(self, ids: Iterable[str]) -> list[Replica]:
        replicas = [self._replicas[i] for i in sorted(ids)]
        return [r for r in replicas if r is not None]

    # --- hierarchy ----------------------------------------------------------------------------
    def members_of(self, summary_ids: Iterable[str]) -> dict[str, set[str]]:
        wanted = _read_through(self._members, summary_ids, self._store.members_of, set)
        return {i: set(self._members[i]) for i in wanted if self._members[i]}

    def parents_of(self, node_ids: Iterable[str]) -> dict[str, set[str]]:
        wanted = _read_through(self._parents, node_ids, self._store.parents_of, set)
        return {i: set(self._parents[i]) for i in wanted if self._parents[i]}

    def set_members(self, members: Mapping[str, Iterable[str]], level: int) -> None:
        new = {summary: set(ms) for summary, ms in members.items()}
        self._store.set_members(new, level)
        for summary, ms in new.items():
            old = self._members.get(summary)
            # A cached parent set is complete: it must learn who joined and who left.
            if old is None:  # the old members are unknown: look in every parent set
                leavers = [n for n, parents in self._parents.items() if summary in parents]
            else:
                leavers = list(old)
            for node_id in leavers:
                if node_id not in ms and node_id in self._parents:
                    self._parents[node_id].discard(summary)
            for node_id in ms:
                if node_id in self._parents:
                    self._parents[node_id].add(summary)
            self._members[summary] = set(ms)

    # --- memory-wide ---------------------------------------------------------------------------
    def clear(self, keep_chunks: bool) -> None:
        self._store.clear(keep_chunks)
        self._reset()


def _read_through(
    cache: dict[str, Any],
    keys: Iterable[str],
    read: Callable[[list[str]], Mapping[str, Any]],
    empty: Callable[[], Any],
) -> list[str]:
    """The keys asked for, in order and without repeats, once ``cache`` holds each: the
    ones it lacked are read in one store call, and a key the store does not return is
    cached as ``empty()`` (known to have nothing)."""
    wanted = list(dict.fromkeys(keys))
    missing = [k for k in wanted if k not in cache]
    if missing:
        found = read(missing)
        for k in missing:
            cache[k] = found.get(k, empty())
    return wanted
