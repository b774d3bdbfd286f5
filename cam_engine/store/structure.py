"""The structure of one memory, held in memory between batches: the graph without its
texts, and the chunks' vectors.

Memory development reads the same structure over and over while a batch climbs the
hierarchy: ego-networks to re-split, the replica graph that label propagation walks,
the clusters it splits and summarizes, the roots the covering level groups. Asked of
the store one neighbourhood at a time, that was about 280 store calls per batch
(each a network round trip on Neo4j). ``GraphStructure`` is read once, in a handful
of bulk reads (``GraphStore.read_structure``), and then kept up to date with the
batches' own changes; every structural read of a batch is answered from it.

It is valid for one ``generation`` of the memory, a counter each committed batch
raises (``store.change``): when another process has written since it was read, the
generations differ and it is read again.

What it costs: about 3.1 KB per chunk at 10^5 chunks (``cam bench structure``;
docs/benchmarks.md, "Scale"). Per node a record without text (a 16-byte key of it,
which the check for repeated summary texts needs, and its props as JSON text), per
edge a dict entry, per replica a record with its members as a sorted tuple. Python's
containers are the cost to watch: a set of one id is 216 bytes, a set of five 728, a
tuple of five 80. So the indexes where nearly every key has one id (a node's
summaries, the nodes of a text, a label's replicas) keep the bare id (``IdSets``),
and which replica of a node holds a neighbour is looked up in its sorted members, with
an index only for nodes of several replicas. Every id is interned (``sys.intern``): a
node's id appears in its edges, replicas and memberships, each read from its own row as
its own string. The chunks' vectors are held only where the store's own search is a
round trip away (Neo4j, up to ``neo4j.HELD_VECTORS_MAX`` chunks); the SQLite store
searches its levels in process, through an approximate index once they are large
(``sqlite_vectors.py``).
"""

from __future__ import annotations

import hashlib
import json
import sys
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cam_engine.store.base import DocumentRecord
from cam_engine.store.vectors import VectorMatrix
from cam_engine.types import CHUNK, COVER, Node, Replica

GENERATION = "generation"  # the counter each committed batch raises


def text_key(text: str) -> bytes:
    """What two texts are compared by for repeats: whitespace does not count."""
    return hashlib.blake2b(" ".join(text.split()).encode(), digest_size=16).digest()


def text_hash(text: str) -> bytes:
    """A 16-byte key of a text as written, whitespace included: the stores keep it
    beside each node's text, and ``stats()`` counts repeated texts by it (an index
    of keys instead of every text read)."""
    return hashlib.blake2b(text.encode(), digest_size=16).digest()


class IdSets:
    """key -> a set of ids, for indexes where nearly every key has one id (a node's
    summaries, the nodes of one text): such a key keeps the bare id, since a set of
    one costs 216 bytes. ``get`` hands out a new set."""

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held: dict[Any, str | set[str]] = {}

    def add(self, key: Any, value: str) -> None:
        held = self._held.get(key)
        if held is None:
            self._held[key] = value
        elif isinstance(held, str):
            if held != value:
                self._held[key] = {held, value}
        else:
            held.add(value)

    def discard(self, key: Any, value: str) -> None:
        held = self._held.get(key)
        if held is None:
            return
        if isinstance(held, str):
            if held == value:
                del self._held[key]
            return
        held.discard(value)
        if len(held) == 1:  # one way to hold each state, so two indexes compare equal
            self._held[key] = next(iter(held))

    def get(self, key: Any) -> set[str]:
        held = self._held.get(key)
        if held is None:
            return set()
        return {held} if isinstance(held, str) else set(held)

    def size(self, key: Any) -> int:
        held = self._held.get(key)
        return 0 if held is None else 1 if isinstance(held, str) else len(held)

    def pop(self, key: Any) -> set[str]:
        found = self.get(key)
        self._held.pop(key, None)
        return found

    def __contains__(self, key: Any) -> bool:
        return key in self._held

    def __len__(self) -> int:
        return len(self._held)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IdSets) and self._held == other._held

    def clear(self) -> None:
        self._held.clear()


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """A node without its text and vector. Its props are held as their JSON text: a
    dict of two keys with their values cost about 400 bytes a node, the text about 60
    (``props`` decodes it when asked, which the batches do for few nodes)."""

    id: str
    level: int
    kind: str
    doc_id: str | None
    position: float | None
    props_json: str
    text_key: bytes
    cover: bool  # a node of the covering top levels (props COVER)

    @property
    def props(self) -> dict[str, Any]:
        decoded: dict[str, Any] = json.loads(self.props_json)
        return decoded

    @staticmethod
    def of(node: Node) -> NodeInfo:
        return NodeInfo(
            sys.intern(node.id),
            node.level,
            node.kind,
            None if node.doc_id is None else sys.intern(node.doc_id),
            node.position,
            json.dumps(node.props, sort_keys=True, separators=(",", ":")),
            text_key(node.text),
            bool(node.props.get(COVER)),
        )


@dataclass(frozen=True, slots=True)
class HeldReplica:
    """A replica as the structure holds it: its members a sorted tuple, which costs a
    fifth of the frozenset a ``Replica`` carries (728 bytes from five members on); the
    batch is handed ``Replica``s (``replica()``)."""

    id: str
    node_id: str
    level: int
    label: str
    members: tuple[str, ...]

    def replica(self) -> Replica:
        return Replica(self.id, self.node_id, self.level, self.label, frozenset(self.members))


@dataclass
class StructureRows:
    """What a store reads to build a ``GraphStructure`` (``read_structure``)."""

    nodes: Iterable[Node]  # text included, vectors not; read once (it may stream)
    edges: list[tuple[str, str, float]]
    replicas: list[Replica]
    members: list[tuple[str, str]]  # (summary id, member id)
    counters: dict[str, int]
    documents: list[DocumentRecord]
    settings: dict[str, Any] | None
    # Level 0, for a store whose own search answers a batch: None (SQLite searches its
    # level 0 in process, through an approximate index once it is large).
    chunk_vectors: dict[str, np.ndarray] | None


@dataclass
class GraphStructure:
    generation: int = 0
    settings: dict[str, Any] | None = None
    counters: dict[str, int] = field(default_factory=dict)
    documents: dict[str, DocumentRecord] = field(default_factory=dict)
    nodes: dict[str, NodeInfo] = field(default_factory=dict)
    by_level: dict[int, set[str]] = field(default_factory=dict)
    chunk_at: dict[tuple[str, int], str] = field(default_factory=dict)  # (doc, position)
    chunks_of: dict[str, set[str]] = field(default_factory=dict)  # doc -> its chunk ids
    by_text: IdSets = field(default_factory=IdSets)
    adjacency: dict[str, dict[str, float]] = field(default_factory=dict)
    replicas: dict[str, HeldReplica] = field(default_factory=dict)
    # node id -> its replicas' ids, sorted: a tuple (mostly of one) costs a quarter of
    # a set.
    of_node: dict[str, tuple[str, ...]] = field(default_factory=dict)
    by_label: IdSets = field(default_factory=IdSets)  # label -> replica ids
    # For a node of several replicas: neighbour -> the replica whose component holds
    # it (``holder``).
    holders: dict[str, dict[str, str]] = field(default_factory=dict)
    labels_by_level: dict[int, set[str]] = field(default_factory=dict)
    members: dict[str, set[str]] = field(default_factory=dict)  # summary -> member ids
    parents: IdSets = field(default_factory=IdSets)  # node -> summary ids
    # Nodes no summary has as a member, kept up as members change: the covering top
    # level reads them every batch, and finding them by a pass over every node cost
    # a pass over a million nodes per batch.
    roots: set[str] = field(default_factory=set)
    # The covering top levels sit apart: a node whose props mark it COVER is in
    # ``nodes`` but in none of the indexes above (levels, texts, members, parents,
    # roots), so the clustered levels' update never sees it, as if the covering
    # levels were taken down for the batch; they are kept here instead, and brought
    # up to date after it from what changed (engine/summaries.py).
    cover_by_level: dict[int, set[str]] = field(default_factory=dict)
    cover_by_text: dict[bytes, set[str]] = field(default_factory=dict)
    cover_members: dict[str, set[str]] = field(default_factory=dict)  # cover -> members
    cover_parent: dict[str, str] = field(default_factory=dict)  # node -> its cover node
    # Since the covering levels were last brought up to date: nodes that became or
    # stopped being roots, or were removed; covering nodes that lost a member.
    root_changes: set[str] = field(default_factory=set)
    cover_shrunk: set[str] = field(default_factory=set)
    # What the covering update keeps between batches (its centroids); dropped with
    # the structure.
    cover_cache: Any = None
    # The chunks' vectors, where the store's own search is a round trip away: a new
    # batch's neighbours are searched here, exactly (a Neo4j vector-index query per
    # batch cost more than the batch). None: the store is asked (SQLite).
    chunk_vectors: VectorMatrix | None = field(default_factory=lambda: VectorMatrix({}))

    @classmethod
    def from_rows(cls, rows: StructureRows) -> GraphStructure:
        s = cls(
            generation=rows.counters.get(GENERATION, 0),
            settings=rows.settings,
            counters={k: v for k, v in rows.counters.items() if k != GENERATION},
            documents={d.id: d for d in rows.documents},
            chunk_vectors=None if rows.chunk_vectors is None else VectorMatrix(rows.chunk_vectors),
        )
        for node in rows.nodes:
            s.put_node(NodeInfo.of(node))
        for a, b, score in rows.edges:
            s.put_edge(a, b, score)
        for r in rows.replicas:
            s.put_replica(r)
        grouped: dict[str, set[str]] = {}
        for summary, member in rows.members:
            grouped.setdefault(summary, set()).add(member)
        for summary, ms in grouped.items():
            s.set_members(summary, ms)
        s.root_changes.clear()
        s.cover_shrunk.clear()
        return s

    def is_cover(self, node_id: str) -> bool:
        info = self.nodes.get(node_id)
        return info is not None and info.cover

    def members_of(self, node_id: str) -> set[str]:
        """A summary's members, a covering node's included."""
        return self.members.get(node_id) or self.cover_members.get(node_id) or set()

    def parents_of(self, node_id: str) -> set[str]:
        """A node's summaries, its covering node included."""
        cover = self.cover_parent.get(node_id)
        held = self.parents.get(node_id)
        return held | {cover} if cover is not None else held

    # --- nodes ---------------------------------------------------------------------------
    def put_node(self, info: NodeInfo) -> None:
        old = self.nodes.get(info.id)
        if old is not None:
            self._unindex(old)
        self.nodes[info.id] = info
        if info.cover:
            self.cover_by_level.setdefault(info.level, set()).add(info.id)
            self.cover_by_text.setdefault(info.text_key, set()).add(info.id)
            return
        if info.id not in self.parents:
            self.roots.add(info.id)
            self.root_changes.add(info.id)
        self.by_level.setdefault(info.level, set()).add(info.id)
        self.by_text.add(info.text_key, info.id)
        if info.kind == CHUNK and info.doc_id is not None and info.position is not None:
            self.chunk_at[(info.doc_id, int(info.position))] = info.id
            self.chunks_of.setdefault(info.doc_id, set()).add(info.id)

    def _unindex(self, info: NodeInfo) -> None:
        cover = info.cover
        by_level = self.cover_by_level if cover else self.by_level
        by_level.get(info.level, set()).discard(info.id)
        if cover:
            same = self.cover_by_text.get(info.text_key)
            if same is not None:
                same.discard(info.id)
                if not same:
                    del self.cover_by_text[info.text_key]
        else:
            self.by_text.discard(info.text_key, info.id)
        if info.kind == CHUNK and info.doc_id is not None and info.position is not None:
            at = (info.doc_id, int(info.position))
            # Another chunk may have moved to this position already (an updated document).
            if self.chunk_at.get(at) == info.id:
                del self.chunk_at[at]
            held = self.chunks_of.get(info.doc_id)
            if held is not None:
                held.discard(info.id)
                if not held:
                    del self.chunks_of[info.doc_id]

    def remove_node(self, node_id: str) -> None:
        """A node with its edges, replicas and membership links (as the stores delete)."""
        info = self.nodes.pop(node_id, None)
        if info is not None:
            self._unindex(info)
        self.roots.discard(node_id)
        self.root_changes.add(node_id)
        cover = self.cover_parent.pop(node_id, None)
        if cover is not None:
            self.cover_members.get(cover, set()).discard(node_id)
            self.cover_shrunk.add(cover)
        if self.chunk_vectors is not None:
            self.chunk_vectors.drop(node_id)
        for other in self.adjacency.pop(node_id, {}):
            self.adjacency.get(other, {}).pop(node_id, None)
        for replica_id in list(self.of_node.get(node_id, ())):
            self.remove_replica(replica_id)
        self.of_node.pop(node_id, None)
        self.set_members(node_id, set())
        for summary in self.parents.pop(node_id):
            members = self.members.get(summary)
            if members is not None:
                members.discard(node_id)
                if not members:
                    del self.members[summary]

    # --- edges ---------------------------------------------------------------------------
    def put_edge(self, a: str, b: str, score: float) -> None:
        a, b = sys.intern(a), sys.intern(b)
        self.adjacency.setdefault(a, {})[b] = score
        self.adjacency.setdefault(b, {})[a] = score

    def remove_edge(self, a: str, b: str) -> None:
        self.adjacency.get(a, {}).pop(b, None)
        self.adjacency.get(b, {}).pop(a, None)

    # --- replicas ------------------------------------------------------------------------
    def put_replica(self, replica: Replica) -> None:
        held_replica = HeldReplica(
            sys.intern(replica.id),
            sys.intern(replica.node_id),
            replica.level,
            sys.intern(replica.label),
            tuple(sorted(sys.intern(m) for m in replica.members)),
        )
        node_id = held_replica.node_id
        self.remove_replica(held_replica.id)
        self.replicas[held_replica.id] = held_replica
        held = tuple(sorted((*self.of_node.get(node_id, ()), held_replica.id)))
        self.of_node[node_id] = held
        if len(held) > 1:
            holders = self.holders.get(node_id)
            if holders is None:  # it had one replica: index that one first
                holders = self.holders[node_id] = {}
                for other in held:
                    if other != held_replica.id:
                        holders.update(dict.fromkeys(self.replicas[other].members, other))
            holders.update(dict.fromkeys(held_replica.members, held_replica.id))
        self.by_label.add(held_replica.label, held_replica.id)
        self.labels_by_level.setdefault(held_replica.level, set()).add(held_replica.label)

    def remove_replica(self, replica_id: str) -> None:
        old = self.replicas.pop(replica_id, None)
        if old is None:
            return
        held = tuple(i for i in self.of_node.get(old.node_id, ()) if i != replica_id)
        if held:
            self.of_node[old.node_id] = held
        else:
            self.of_node.pop(old.node_id, None)
        holders = self.holders.get(old.node_id)
        if holders is not None:
            if len(held) <= 1:
                del self.holders[old.node_id]
            else:
                for member in old.members:
                    if holders.get(member) == replica_id:
                        del holders[member]
        self.by_label.discard(old.label, replica_id)
        if old.label not in self.by_label:
            self.labels_by_level.get(old.level, set()).discard(old.label)

    def holder(self, node_id: str, member: str) -> str | None:
        """The replica of ``node_id`` whose component holds ``member``: the far end of a
        replica-graph edge (``graph.ego_split.replica_edges``). Every edge of a node
        leads to one of its replicas. A node of one replica (most) is looked up in its
        sorted members; only nodes of several have an index (``holders``): one of
        every (node, neighbour) pair cost 50 MB at 10^5 chunks."""
        holders = self.holders.get(node_id)
        if holders is not None:
            return holders.get(member)
        held = self.of_node.get(node_id)
        if not held:
            return None
        members = self.replicas[held[0]].members
        at = bisect_left(members, member)
        return held[0] if at < len(members) and members[at] == member else None

    # --- hierarchy -----------------------------------------------------------------------
    def set_members(self, summary: str, members: Iterable[str]) -> None:
        summary = sys.intern(summary)
        new = {sys.intern(m) for m in members}
        if self.is_cover(summary) or summary in self.cover_members:
            self._set_cover_members(summary, new)
            return
        for old in self.members.pop(summary, set()) - new:
            self.parents.discard(old, summary)
            if old in self.nodes and old not in self.parents:
                self.roots.add(old)
                self.root_changes.add(old)
        if new:
            self.members[summary] = new
            for member in new:
                self.parents.add(member, summary)
                if member in self.roots:
                    self.roots.discard(member)
                    self.root_changes.add(member)

    def _set_cover_members(self, cover: str, new: set[str]) -> None:
        """A covering node's members: each node is in at most one covering node."""
        for old in self.cover_members.pop(cover, set()) - new:
            if self.cover_parent.get(old) == cover:
                del self.cover_parent[old]
        if new:
            self.cover_members[cover] = new
            for member in new:
                self.cover_parent[member] = cover

    # --- memory-wide ---------------------------------------------------------------------
    def clear_derived(self) -> None:
        """Keep the chunks and documents only (a rebuild starts from them)."""
        for node_id in [i for i, n in self.nodes.items() if n.level > 0]:
            self.remove_node(node_id)
        self.adjacency.clear()
        self.replicas.clear()
        self.of_node.clear()
        self.by_label.clear()
        self.holders.clear()
        self.labels_by_level.clear()
        self.members.clear()
        self.parents.clear()
        self.cover_by_level.clear()
        self.cover_by_text.clear()
        self.cover_members.clear()
        self.cover_parent.clear()
        self.cover_shrunk.clear()
        self.cover_cache = None
        self.roots = set(self.nodes)
        self.root_changes |= self.roots
        self.counters.clear()
