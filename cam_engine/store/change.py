"""One batch's writes, collected while the batch is built and applied at its end.

The builder never writes to the store while it works: ``BatchStore`` records every
write here (and in the in-memory structure, so the batch reads its own writes). At the
end of the batch, ``apply_change`` writes it in one transaction with one bulk
statement per kind, in an order that leaves the same graph as the writes made one by
one would have: deletions first (a node takes its edges, replicas and membership links
with it), then upserts, then memberships and counters. A deleted document takes its record and
the adapter views of it; its chunks are among the deleted nodes.

The same transaction raises the memory's generation counter, which tells a process
holding the structure in memory (``store.structure``) that another has written.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cam_engine.errors import StoreError
from cam_engine.faults import checkpoint
from cam_engine.store.base import DocumentRecord
from cam_engine.types import Edge, Node, Replica

if TYPE_CHECKING:
    from cam_engine.store.base import ChangeWriter

EdgeKey = tuple[str, str]


@dataclass
class GraphChange:
    generation: int  # the memory's generation the batch was built on
    clear_derived: bool = False  # a rebuild: drop every level above the chunks first
    settings: dict[str, Any] | None = None
    counters: dict[str, int] = field(default_factory=dict)  # new values
    documents: dict[str, DocumentRecord] = field(default_factory=dict)
    deleted_documents: set[str] = field(default_factory=set)
    stale_views: set[str] = field(default_factory=set)  # documents whose views go
    deleted_nodes: set[str] = field(default_factory=set)
    nodes: dict[str, Node] = field(default_factory=dict)
    placed: dict[str, Node] = field(default_factory=dict)  # chunks moved, vectors kept
    deleted_edges: set[EdgeKey] = field(default_factory=set)
    edges: dict[EdgeKey, Edge] = field(default_factory=dict)
    deleted_replicas: set[str] = field(default_factory=set)
    replicas: dict[str, Replica] = field(default_factory=dict)
    members: dict[str, tuple[int, set[str]]] = field(default_factory=dict)  # summary ->

    def __bool__(self) -> bool:
        return bool(
            self.clear_derived
            or self.settings is not None
            or self.counters
            or self.documents
            or self.deleted_documents
            or self.stale_views
            or self.deleted_nodes
            or self.nodes
            or self.placed
            or self.deleted_edges
            or self.edges
            or self.deleted_replicas
            or self.replicas
            or self.members
        )

    # --- recording (BatchStore) ------------------------------------------------------------
    def upsert_document(self, document: DocumentRecord) -> None:
        self.deleted_documents.discard(document.id)
        self.documents[document.id] = document

    def delete_document(self, doc_id: str) -> None:
        self.documents.pop(doc_id, None)
        self.deleted_documents.add(doc_id)

    def delete_nodes(self, ids: Iterable[str]) -> None:
        """Record deletions; writes already recorded that the deletion undoes are dropped
        (they would otherwise be applied after it and point at a deleted node)."""
        gone = set(ids)
        self.deleted_nodes |= gone
        for node_id in gone:
            self.nodes.pop(node_id, None)
            self.placed.pop(node_id, None)
            self.members.pop(node_id, None)
        self.edges = {k: e for k, e in self.edges.items() if not (gone & set(k))}
        # Deletions of edges stay (after the node's, a no-op): if the node is kept after
        # all (``keep``), its edges this batch deleted must still go.
        self.replicas = {i: r for i, r in self.replicas.items() if r.node_id not in gone}
        for summary, (level, ms) in list(self.members.items()):
            if ms & gone:
                self.members[summary] = (level, ms - gone)

    def keep(self, node_id: str) -> None:
        """Drop a deletion of ``node_id`` and the rewrite of it (node and members) that
        followed: the caller knows the stored node is what the rewrite would write."""
        self.deleted_nodes.discard(node_id)
        self.nodes.pop(node_id, None)
        self.members.pop(node_id, None)

    def upsert_edges(self, edges: Iterable[Edge]) -> None:
        for e in edges:
            self.deleted_edges.discard(e.key)
            self.edges[e.key] = e

    def delete_edges(self, keys: Iterable[EdgeKey]) -> None:
        for a, b in keys:
            key = (a, b) if a < b else (b, a)
            self.edges.pop(key, None)
            self.deleted_edges.add(key)

    def upsert_replicas(self, replicas: Iterable[Replica]) -> None:
        for r in replicas:
            self.deleted_replicas.discard(r.id)
            self.replicas[r.id] = r

    def delete_replicas(self, ids: Iterable[str]) -> None:
        for replica_id in ids:
            self.replicas.pop(replica_id, None)
            self.deleted_replicas.add(replica_id)


class AppliesChanges:
    """``apply`` for a store class that implements ``ChangeWriter``: inherit it, and
    every backend writes a batch's change the same way."""

    def apply(self: ChangeWriter, change: GraphChange) -> None:
        if not self.in_transaction:
            raise StoreError("apply() needs an open transaction")
        apply_change(self, change)


def apply_change(store: ChangeWriter, change: GraphChange) -> None:
    """Write ``change`` with the store's bulk verbs, in an order that leaves the graph
    its writes made one by one would have (see the module docstring). Call it inside
    the batch's transaction; ``AppliesChanges.apply`` does."""
    if change.clear_derived:
        store.clear(keep_chunks=True)
    if change.deleted_documents:
        store.delete_documents(sorted(change.deleted_documents))
    if change.stale_views:
        store.delete_document_views(sorted(change.stale_views))
    if change.deleted_nodes:
        store.delete_nodes(sorted(change.deleted_nodes))
    if change.deleted_edges:
        store.delete_edges(sorted(change.deleted_edges))
    if change.deleted_replicas:
        store.delete_replicas(sorted(change.deleted_replicas))
    # Records before chunks: a chunk is linked to its document's record as it is written.
    for doc_id in sorted(change.documents):
        store.upsert_document(change.documents[doc_id])
    if change.placed:
        store.place_chunks([change.placed[i] for i in sorted(change.placed)])
    if change.nodes:
        store.upsert_nodes(list(change.nodes.values()))
        checkpoint("writing")  # fault injection (cam_engine/faults.py): mid-write
    if change.edges:
        store.upsert_edges([change.edges[key] for key in sorted(change.edges)])
    if change.replicas:
        store.upsert_replicas([change.replicas[i] for i in sorted(change.replicas)])
    if change.members:
        store.replace_members(change.members)
    if change.settings is not None:
        store.save_settings(change.settings)
    if change.counters:
        store.set_counters(change.counters)
