"""One batch's view of a memory: structure from memory, writes collected, one write at
the end.

``BatchWriter.batch()`` opens the batch's transaction and yields a ``BatchStore``,
the store the builder works on. Its reads of the graph's structure (adjacency,
replicas, clusters, memberships, documents, counters) are answered by the
``GraphStructure`` the writer keeps between batches; texts and vectors, which it does
not hold, are read from the store in bulk and remembered for the batch. Its writes go
to the structure (so the batch reads its own writes) and to a ``GraphChange``, which
leaving the block applies in one bulk statement per kind before the commit.

A batch therefore costs a handful of store calls whatever its size: the transaction
with its generation check, reads of the texts and vectors of nodes that earlier
batches of this process did not touch, and the write. The search for a new chunk's
neighbours is exact, over the chunk vectors the structure holds, where the store's own
search is a round trip away (Neo4j); the SQLite store searches in process and is asked.
Every call is timed into the ``StoreMeter`` (the batch's clock).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Set
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np

from cam_engine.faults import checkpoint
from cam_engine.store.base import DocumentRecord, GraphStore
from cam_engine.store.change import GraphChange
from cam_engine.store.structure import GraphStructure, HeldReplica, NodeInfo, text_key
from cam_engine.store.vectors import VectorMatrix
from cam_engine.types import Edge, Node, Replica

T = TypeVar("T")


class StoreMeter(Protocol):
    """Where the time and count of store calls go (engine.timing.PhaseClock)."""

    now: Callable[[], float]

    def add_store(self, seconds: float) -> None: ...


# This many recent nodes are kept (text and vector) between batches: a batch reads
# mostly the chunks and summaries the batches just before it wrote.
RECENT_NODES = 20_000


class BatchWriter:
    """Opens batches on one store and keeps the memory's structure between them, with
    the nodes most recently written or read."""

    def __init__(self, store: GraphStore) -> None:
        self.store = store
        self._structure: GraphStructure | None = None
        self._recent: OrderedDict[str, Node] = OrderedDict()  # least recent first

    @property
    def structure(self) -> GraphStructure | None:
        """The structure held between batches: None before the first batch, and after
        a batch failed (the next one reads it again)."""
        return self._structure

    def forget(self) -> None:
        """Drop what is held in memory (it is read again by the next batch)."""
        self._structure = None
        self._recent.clear()

    @contextmanager
    def batch(self, meter: StoreMeter, *, writes: bool = True) -> Iterator[BatchStore]:
        """A batch in one transaction: everything it wrote lands at once, or nothing.

        The structure is read again when the memory's generation is not the one it was
        read at (another process wrote), and dropped when the batch fails.
        ``writes=False``: a read of the memory as it is (an ingest planning its
        batches), which must write nothing and passes no fault-injection point.
        """
        store = self.store
        structure, self._structure = self._structure, None  # held again only on commit
        start = meter.now()
        with store.transaction():
            generation = store.lock_generation()
            if structure is None or structure.generation != generation:
                self.forget()
                structure = GraphStructure.from_rows(store.read_structure())
                structure.generation = generation
            meter.add_store(meter.now() - start)
            batch = BatchStore(store, structure, meter, self._recent)
            yield batch
            if writes:
                checkpoint("before_apply")  # fault injection (cam_engine/faults.py)
                batch.flush()
                checkpoint("applied")
            elif batch.pending():
                raise RuntimeError("a read-only batch recorded writes")
            start = meter.now()  # leaving the block commits: that is store time
        meter.add_store(meter.now() - start)
        if writes:
            checkpoint("committed")
        self._structure = structure
        self._remember(batch)

    def _remember(self, batch: BatchStore) -> None:
        recent = self._recent
        for node_id in batch.deleted:
            recent.pop(node_id, None)
        for node in batch.nodes_seen():
            recent[node.id] = node
            recent.move_to_end(node.id)
        while len(recent) > RECENT_NODES:
            recent.popitem(last=False)


class BatchStore:
    """The builder's store for one batch (see the module docstring)."""

    def __init__(
        self,
        store: GraphStore,
        structure: GraphStructure,
        meter: StoreMeter,
        recent: Mapping[str, Node] | None = None,
    ) -> None:
        self._store = store
        self._structure = structure
        self._meter = meter
        self._recent = recent or {}  # earlier batches' nodes (BatchWriter)
        self._change = GraphChange(structure.generation)
        self._read: dict[str, Node] = {}  # nodes read or written this batch (text, vector)
        self.deleted: set[str] = set()  # nodes this batch deleted
        self._deleted_chunks: set[str] = set()  # those of them at level 0
        self._deleted_as: dict[str, _Deleted] = {}  # stored nodes as this batch deleted them
        self._regrouped: set[str] = set()  # summaries whose members this batch changed
        # Replicas handed out this batch, each beside the held replica it was made from:
        # one batch asks for the same replicas many times (seeds, edges, labels), and
        # making a Replica's frozenset was 6% of a batch at 10^5 chunks. A held replica
        # is replaced, never changed, so a changed one is told by identity.
        self._made: dict[str, tuple[HeldReplica, Replica]] = {}

    def nodes_seen(self) -> list[Node]:
        """The nodes this batch read or wrote, as they are now."""
        return list(self._read.values())

    @property
    def memory(self) -> str:
        return self._store.memory

    @property
    def location(self) -> str:
        return self._store.location

    def _call(self, read: Callable[[], T]) -> T:
        start = self._meter.now()
        try:
            return read()
        finally:
            self._meter.add_store(self._meter.now() - start)

    def pending(self) -> bool:
        """Whether the batch has recorded writes not yet flushed."""
        return bool(self._change)

    def flush(self) -> None:
        """Write the batch's change (inside the batch's transaction)."""
        self._keep_rewritten()
        if self._change:
            self._change.counters["generation"] = self._structure.generation + 1
            change = self._change
            self._call(lambda: self._store.apply(change))
            self._structure.generation += 1
            self._change = GraphChange(self._structure.generation)

    # --- memory-wide state ---------------------------------------------------------------
    def load_settings(self) -> dict[str, Any] | None:
        return self._structure.settings

    def save_settings(self, settings: Mapping[str, Any]) -> None:
        self._structure.settings = self._change.settings = dict(settings)

    def allocate_labels(self, level: int, count: int) -> list[str]:
        name = f"label:{level}"
        start = self._structure.counters.get(name, 0)
        self._structure.counters[name] = self._change.counters[name] = start + count
        return [f"{level}.{n}" for n in range(start, start + count)]

    def clear(self, keep_chunks: bool) -> None:
        """Drop every level above the chunks (a rebuild); a batch never drops chunks."""
        if not keep_chunks:
            raise ValueError("a batch keeps its memory's chunks: delete the memory instead")
        self._structure.clear_derived()
        kept = self._change
        self._change = GraphChange(kept.generation, True, kept.settings, {}, kept.documents)
        self._read = {i: n for i, n in self._read.items() if n.level == 0}
        self._deleted_as.clear()
        self._regrouped.clear()

    # --- documents ---------------------------------------------------------------------------
    def get_document(self, doc_id: str) -> DocumentRecord | None:
        return self._structure.documents.get(doc_id)

    def upsert_document(self, document: DocumentRecord) -> None:
        self._structure.documents[document.id] = document
        self._change.upsert_document(document)

    def delete_document(self, doc_id: str) -> None:
        """Drop a document's record and its adapter views (its chunks go by
        ``delete_nodes``)."""
        self._structure.documents.pop(doc_id, None)
        self._change.delete_document(doc_id)

    def drop_views_of(self, doc_id: str) -> None:
        """Drop the adapter views of a document whose text changed."""
        self._change.stale_views.add(doc_id)

    def chunks_of(self, doc_id: str) -> list[NodeInfo]:
        """A document's chunks by position, without text or vector (no store call)."""
        infos = [self._structure.nodes[i] for i in self._structure.chunks_of.get(doc_id, ())]
        return sorted(infos, key=lambda n: (n.position or 0.0, n.id))

    def existing_ids(self, ids: Iterable[str]) -> set[str]:
        return {i for i in ids if i in self._structure.nodes}

    def infos(self, ids: Iterable[str]) -> dict[str, NodeInfo]:
        """The nodes of these ids that exist, without text or vector (no store call)."""
        return {i: self._structure.nodes[i] for i in ids if i in self._structure.nodes}

    def count_nodes(self, level: int) -> int:
        return len(self._structure.by_level.get(level, ()))

    def levels(self) -> list[int]:
        return sorted(level for level, ids in self._structure.by_level.items() if ids)

    def infos_at_level(self, level: int) -> list[NodeInfo]:
        """A level's nodes without text or vector (no store call)."""
        return [self._structure.nodes[i] for i in sorted(self._structure.by_level.get(level, ()))]

    def text_keys(self, ids: Iterable[str]) -> dict[str, bytes]:
        """A key of each node's text (``structure.text_key``; no store call)."""
        return {i: self._structure.nodes[i].text_key for i in ids if i in self._structure.nodes}

    def nodes_with_text(self, text: str) -> set[str]:
        """Nodes whose text is ``text`` (whitespace aside), covering nodes included."""
        key = text_key(text)
        s = self._structure
        return s.by_text.get(key) | s.cover_by_text.get(key, set())

    def get_nodes(self, ids: Iterable[str], *, embeddings: bool = False) -> dict[str, Node]:
        wanted = [i for i in dict.fromkeys(ids) if i in self._structure.nodes]
        for i in wanted:
            if i not in self._read and i in self._recent:
                recent = self._recent[i]
                if recent.embedding is not None or not embeddings:
                    self._read[i] = recent
        missing = [
            i
            for i in wanted
            if i not in self._read or (embeddings and self._read[i].embedding is None)
        ]
        if missing:
            found = self._call(lambda: self._store.get_nodes(missing, embeddings=embeddings))
            self._read.update(found)
        return {i: self._read[i] for i in wanted if i in self._read}

    def nodes_at_level(self, level: int, *, embeddings: bool = False) -> list[Node]:
        nodes = self.get_nodes((n.id for n in self.infos_at_level(level)), embeddings=embeddings)
        return sorted(nodes.values(), key=reading_order)

    def nodes_in_order(self, ids: Iterable[str], *, embeddings: bool = False) -> list[Node]:
        """These nodes by level, then in reading order (``root_order``)."""
        return sorted(self.get_nodes(ids, embeddings=embeddings).values(), key=root_order)

    def root_nodes(self, *, embeddings: bool = False) -> list[Node]:
        return self.nodes_in_order(sorted(self._structure.roots), embeddings=embeddings)

    def chunk_ids_near(self, doc_id: str, positions: Iterable[int]) -> set[str]:
        """The chunks of a document at these positions (no store call)."""
        at = self._structure.chunk_at
        return {at[(doc_id, p)] for p in positions if (doc_id, p) in at}

    def nearest(self, level: int, vectors: np.ndarray, k: int) -> list[list[tuple[str, float]]]:
        """The top ``k`` chunks (level 0) by cosine, as this batch has left them: an
        exact search over the structure's chunk vectors (no store call), or, where the
        structure holds none, the store's search of what is committed, less what this
        batch deleted, merged with an exact search of the chunks it wrote."""
        if level != 0:
            raise ValueError("a batch searches chunks (level 0) only")
        queries = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
        if self._structure.chunk_vectors is not None:
            return self._structure.chunk_vectors.top_k(queries, k)
        written = {
            n.id: n.embedding
            for n in self._change.nodes.values()
            if n.level == 0 and n.embedding is not None
        }
        # A chunk this batch deleted may still be among the store's hits: ask for room.
        # One it wrote is searched in ``mine`` with its new vector, not the stored one.
        skip = self.deleted | set(written)
        stored = self._call(lambda: self._store.nearest(0, queries, k + len(self._deleted_chunks)))
        mine = VectorMatrix(written).top_k(queries, k)
        return [
            sorted(
                [hit for hit in found if hit[0] not in skip] + ours,
                key=lambda h: (-h[1], h[0]),
            )[:k]
            for found, ours in zip(stored, mine, strict=True)
        ]

    def upsert_nodes(self, nodes: Sequence[Node]) -> None:
        for n in nodes:
            self._structure.put_node(NodeInfo.of(n))
            if (
                n.level == 0
                and n.embedding is not None
                and self._structure.chunk_vectors is not None
            ):
                self._structure.chunk_vectors.put(n.id, n.embedding)
            self._change.nodes[n.id] = n
            self._read[n.id] = n

    def place_chunks(self, chunks: Sequence[Node]) -> None:
        """Move stored chunks (position, text, offsets) without writing their vectors."""
        for c in chunks:
            self._structure.put_node(NodeInfo.of(c))
            self._read[c.id] = c
            if c.id in self._change.nodes:  # written this batch: write it whole again
                self._change.nodes[c.id] = c
            else:
                self._change.placed[c.id] = c

    def delete_nodes(self, ids: Iterable[str]) -> None:
        gone = set(ids)
        self._deleted_chunks |= {
            i for i in gone if i in self._structure.nodes and self._structure.nodes[i].level == 0
        }
        for node_id in gone:  # all noted first: the links among them are stored ones
            self._note_deleted(node_id)
        for node_id in gone:
            self._regrouped |= self._structure.parents_of(node_id)
            self._structure.remove_node(node_id)
            self._read.pop(node_id, None)
        self._change.delete_nodes(gone)
        self.deleted |= gone

    # --- edges -------------------------------------------------------------------------------
    def neighbours(self, ids: Iterable[str]) -> dict[str, Mapping[str, float]]:
        """Each node's neighbours with the edge weights: read-only views (no copies)."""
        adjacency = self._structure.adjacency
        empty: dict[str, float] = {}
        return {i: adjacency.get(i, empty) for i in ids}

    def edges_of(self, ids: Iterable[str]) -> list[Edge]:
        edges: dict[tuple[str, str], Edge] = {}
        for i in ids:
            level = self._structure.nodes[i].level if i in self._structure.nodes else 0
            for other, score in self._structure.adjacency.get(i, {}).items():
                edge = Edge.make(i, other, level, score)
                edges[edge.key] = edge
        return [edges[key] for key in sorted(edges)]

    def upsert_edges(self, edges: Sequence[Edge]) -> None:
        for e in edges:
            self._structure.put_edge(e.src, e.dst, e.score)
        self._change.upsert_edges(edges)

    def delete_edges(self, keys: Iterable[tuple[str, str]]) -> None:
        pairs = list(keys)
        for a, b in pairs:
            self._structure.remove_edge(a, b)
        self._change.delete_edges(pairs)

    # --- replicas and clusters -----------------------------------------------------------------
    def replicas_of(self, node_ids: Iterable[str]) -> dict[str, list[Replica]]:
        result: dict[str, list[Replica]] = {}
        for node_id in dict.fromkeys(node_ids):
            held = self._structure.of_node.get(node_id)
            if held:
                result[node_id] = [self._replica(self._structure.replicas[i]) for i in held]
        return result

    def replicas_by_id(self, ids: Iterable[str]) -> dict[str, Replica]:
        held = self._structure.replicas
        return {i: self._replica(held[i]) for i in ids if i in held}

    def replicas_with_labels(self, labels: Iterable[str]) -> list[Replica]:
        by_label = self._structure.by_label
        ids = {i for label in set(labels) for i in by_label.get(label)}
        return [self._replica(self._structure.replicas[i]) for i in sorted(ids)]

    def _replica(self, held: HeldReplica) -> Replica:
        made = self._made.get(held.id)
        if made is None or made[0] is not held:
            made = self._made[held.id] = (held, held.replica())
        return made[1]

    def upsert_replicas(self, replicas: Sequence[Replica]) -> None:
        for r in replicas:
            self._structure.put_replica(r)
        self._change.upsert_replicas(replicas)

    def delete_replicas(self, ids: Iterable[str]) -> None:
        gone = list(ids)
        for replica_id in gone:
            self._structure.remove_replica(replica_id)
        self._change.delete_replicas(gone)

    def label_sizes(self, labels: Iterable[str]) -> dict[str, int]:
        by_label = self._structure.by_label
        return {label: by_label.size(label) for label in set(labels) if label in by_label}

    def labels_at_level(self, level: int) -> list[str]:
        return sorted(self._structure.labels_by_level.get(level, ()))

    def count_labels(self, level: int) -> int:
        return len(self._structure.labels_by_level.get(level, ()))

    def replica_holder(self, node_id: str, member: str) -> str | None:
        """The replica of ``node_id`` whose component holds ``member``: the far end of a
        replica-graph edge, current as the batch writes."""
        return self._structure.holder(node_id, member)

    # --- hierarchy -------------------------------------------------------------------------------
    def members_of(self, summary_ids: Iterable[str]) -> dict[str, set[str]]:
        """Members of summaries, covering nodes included."""
        s = self._structure
        return {i: set(s.members_of(i)) for i in summary_ids if s.members_of(i)}

    def parents_of(self, node_ids: Iterable[str]) -> dict[str, set[str]]:
        """The clustered levels' summaries of nodes (not their covering node)."""
        parents = self._structure.parents
        return {i: parents.get(i) for i in node_ids if i in parents}

    def set_members(self, members: Mapping[str, Iterable[str]], level: int) -> None:
        for summary, ms in members.items():
            kept = set(ms)
            self._structure.set_members(summary, kept)
            self._change.members[summary] = (level, kept)
            self._regrouped.add(summary)

    # --- the covering levels, kept apart (structure.py) ---------------------------------------
    def cover_levels(self) -> list[int]:
        return sorted(level for level, ids in self._structure.cover_by_level.items() if ids)

    def cover_ids(self, level: int) -> list[str]:
        return sorted(self._structure.cover_by_level.get(level, ()))

    def cover_set(self, level: int) -> Set[str]:
        """A covering level's ids (a read-only view: no copy, no sort)."""
        return self._structure.cover_by_level.get(level, set())

    def cover_parents(self, ids: Iterable[str]) -> dict[str, str]:
        """The covering node of each node that has one."""
        parent = self._structure.cover_parent
        return {i: parent[i] for i in ids if i in parent}

    def root_ids(self) -> Set[str]:
        """The roots below the covering levels (a read-only view)."""
        return self._structure.roots

    def take_root_changes(self) -> tuple[set[str], set[str]]:
        """(nodes that became or stopped being roots, or were removed; covering nodes
        that lost a member) since the last call, which forgets them."""
        s = self._structure
        changes, shrunk = s.root_changes, s.cover_shrunk
        s.root_changes, s.cover_shrunk = set(), set()
        return changes, shrunk

    @property
    def cover_cache(self) -> Any:
        """What the covering update keeps between batches (dropped with the structure)."""
        return self._structure.cover_cache

    @cover_cache.setter
    def cover_cache(self, cache: Any) -> None:
        self._structure.cover_cache = cache

    def covers_with_text(self, keys: Iterable[bytes]) -> set[str]:
        """Covering nodes whose text has one of these keys."""
        by_text = self._structure.cover_by_text
        return {i for key in keys for i in by_text.get(key, ())}

    def written_text_keys(self) -> set[bytes]:
        """Text keys of the nodes this batch wrote, covering nodes aside."""
        return {
            self._structure.nodes[i].text_key
            for i in self._change.nodes
            if i in self._structure.nodes and not self._structure.is_cover(i)
        }

    # --- deleted, then written back as it was ---------------------------------------------
    def _note_deleted(self, node_id: str) -> None:
        """Keep a node as it is deleted, with its links, when they are the stored ones:
        the batch has not written the node, its members or its edges before, and knows
        its text and vector."""
        change, s = self._change, self._structure
        stored = self._read.get(node_id)
        if (
            stored is None
            or stored.embedding is None
            or node_id in self._deleted_as
            or node_id in change.nodes
            or node_id in change.deleted_nodes
            or node_id in self._regrouped
        ):
            return
        self._deleted_as[node_id] = _Deleted(
            stored,
            frozenset(s.members_of(node_id)),
            frozenset(s.parents_of(node_id)),
            linked=bool(s.adjacency.get(node_id) or s.of_node.get(node_id)),
        )

    def _keep_rewritten(self) -> None:
        """Leave out of the write the nodes this batch deleted and then wrote back unchanged.

        The covering top (engine/summaries.py) is taken down before every batch and put
        back after it, most of it as it was: writing it again cost a delete and an insert
        per covering node and per membership link in every batch, in proportion to the
        memory, not the batch. A node is left as stored when its fields, vector and
        members are the same and it has no edge or replica (before or now); and its
        stored membership links stay right: each summary it was in is deleted or has its
        members rewritten, and none of its members is deleted for good (either would
        remove a link this batch does not write back). Membership rows keep their level:
        a summary's links are written at its own level.
        """
        change, s = self._change, self._structure
        kept = {
            node_id
            for node_id, before in self._deleted_as.items()
            if node_id in change.deleted_nodes
            and node_id in change.nodes
            and not before.linked
            and not s.adjacency.get(node_id)
            and not s.of_node.get(node_id)
            and _same_node(before.node, change.nodes[node_id])
            and s.members_of(node_id) == before.members
            and all(p in change.deleted_nodes or p in change.members for p in before.parents)
        }
        gone = change.deleted_nodes - kept
        while dropped := {i for i in kept if self._deleted_as[i].members & gone}:
            kept -= dropped
            gone |= dropped
        for node_id in kept:
            change.keep(node_id)
        self._deleted_as.clear()
        self._regrouped.clear()


@dataclass(frozen=True)
class _Deleted:
    """A stored node as a batch deleted it: the node and its membership links."""

    node: Node
    members: frozenset[str]
    parents: frozenset[str]
    linked: bool  # it had edges or replicas (deleted with it: never left as stored)


def _same_node(a: Node, b: Node) -> bool:
    return (
        (a.id, a.level, a.kind, a.text, a.doc_id, a.position, a.props)
        == (b.id, b.level, b.kind, b.text, b.doc_id, b.position, b.props)
        and a.embedding is not None
        and b.embedding is not None
        and np.array_equal(a.embedding, b.embedding)
    )


def reading_order(node: Node | NodeInfo) -> tuple[Any, ...]:
    """Documents by id, then position (nodes without either first, as SQL sorts NULL)."""
    return (
        node.doc_id is not None,
        node.doc_id or "",
        node.position is not None,
        node.position or 0.0,
        node.id,
    )


def root_order(node: Node | NodeInfo) -> tuple[Any, ...]:
    """The order roots are grouped in, by the covering levels: by level, then in
    reading order."""
    return (node.level, *reading_order(node))
