"""The store interface: domain verbs over a property graph, no raw queries.

A store is opened for one location and one memory name. Its model is a property
graph: nodes (chunks at level 0, summaries above) with a level, text and embedding;
undirected weighted edges within a level; replicas (a node's roles, from ego-splitting)
carrying cluster labels; membership links from a summary to its members; and the
adapters' view nodes (pages, memos, memory states) linked to the chunks they cover.

Everything a batch changes happens inside ``transaction()``, and an exception rolls
the whole batch back. Memory development does not call the write verbs one by one: it
works on a ``store.batch.BatchStore`` and the batch's change is written at its end by
``apply`` (``store.change``), one bulk statement per kind.

The interface is cut into roles, each the verbs of one kind of user, so that code
names what it uses and a backend is read (and written) role by role:
``RetrievalStore`` (what a question reads: cam_engine.retrieval), ``BuilderStore``
(what store.batch and the ingest pipeline need of the store itself), ``ChangeWriter``
(the bulk writes of one batch's change, made by ``store.change.apply_change`` only),
``ViewStore`` (the adapters' views) and ``AdminStore`` (a memory as a whole: listing,
figures, export and import, removal). ``GraphStore`` is all of them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import numpy as np

from cam_engine.config import Environment, redact_credentials
from cam_engine.errors import ConfigError
from cam_engine.types import Edge, Node, Replica, ViewNode

if TYPE_CHECKING:
    from cam_engine.store.change import GraphChange
    from cam_engine.store.structure import StructureRows


T = TypeVar("T")


@dataclass(frozen=True)
class DocumentRecord:
    id: str
    source: str  # file path or "<stdin>"
    sha256: str | None  # of the whole text when known up front (files); None for streams
    chunks: int  # chunks stored so far
    total: int | None = None  # chunks the whole document makes, when known up front
    # Of the text taken out of the file (whitespace folded, ``sources.text_hash``): the
    # same text as a PDF and as a .txt has one; None for streams and older records.
    text_sha256: str | None = None
    version: int = 1  # raised each time an ingest replaces the document's text
    updated_at: str | None = None  # ISO 8601 UTC time of the last change to its chunks


def cluster_shape(sizes: Iterable[tuple[int, int]]) -> dict[str, Any]:
    """Per-level figures from (distinct members, clusters) pairs: how many clusters of
    each size, and the share of clusters with one member (which get no summary)."""
    counts = {int(size): int(n) for size, n in sizes}
    total = sum(counts.values())
    return {
        "cluster_sizes": {str(size): counts[size] for size in sorted(counts)},
        "single_member_share": counts.get(1, 0) / total if total else 0.0,
    }


class StoreBase(Protocol):
    """What every role needs: where it is, which memory, and a transaction."""

    @property
    def location(self) -> str: ...

    @property
    def memory(self) -> str: ...

    def close(self) -> None: ...

    def prepare(self, dimensions: int) -> None:
        """Create what the store needs for vectors of this size (outside transactions),
        and fail, naming the store, when it cannot be written: an ingest calls it before
        it reads a document."""
        ...

    def transaction(self) -> AbstractContextManager[None]: ...

    def read_snapshot(self, read: Callable[[], T]) -> T:
        """``read()``, whose reads all see one committed state, without taking the
        write lock (a reader beside an ingest: ``cam stats``). SQLite: one read
        transaction. Neo4j, READ COMMITTED statement by statement: ``read()`` runs again
        until two runs agree with the memory's generation unchanged around them."""
        ...

    @property
    def isolated_snapshots(self) -> bool:
        """Whether one read transaction holds every read to one commit, so that a
        reader on its own store object can run beside a writer's batch and see none of
        it until it commits (SQLite: True; Neo4j: False)."""
        ...


class RetrievalStore(StoreBase, Protocol):
    """The reads a question makes (cam_engine.retrieval)."""

    def get_nodes(self, ids: Iterable[str], *, embeddings: bool = False) -> dict[str, Node]: ...
    def nodes_at_level(self, level: int, *, embeddings: bool = False) -> Iterator[Node]: ...
    def nearest(
        self,
        level: int | None,
        vectors: np.ndarray,
        k: int,
        *,
        documents: Sequence[str] | None = None,
    ) -> list[list[tuple[str, float]]]:
        """The best ``k`` (id, cosine) nodes (of one level, or of all) for each row of
        ``vectors``, best first. ``documents`` is a scope: only the nodes of those
        documents are searched (chunks of them, and summaries whose ``doc_id`` is one of
        them, i.e. whose every chunk is theirs), so the ``k`` are the scope's best."""
        ...

    def search_text(
        self, level: int | None, query: str, k: int, *, documents: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """The best ``k`` (id, score) nodes (of one level, or of all) for the words of
        ``query``, best first: BM25 over SQLite's FTS5 index, Lucene's full-text index on
        Neo4j. Scores rank within one call only; stopwords are not searched.
        ``documents`` is a scope, as for ``nearest``: the ``k`` are the scope's best."""
        ...

    def roots_within(self, documents: Sequence[str], *, embeddings: bool = False) -> list[Node]:
        """The nodes of ``documents`` (as ``nearest`` scopes them) that no summary of
        those documents has as a member, by (level, document, position, id): where a
        walk down the hierarchy of a scope starts."""
        ...

    def count_nodes(self, level: int) -> int: ...
    def levels(self) -> list[int]: ...

    def neighbours(self, ids: Iterable[str]) -> dict[str, dict[str, float]]: ...

    def members_of(self, summary_ids: Iterable[str]) -> dict[str, set[str]]: ...
    def parents_of(self, node_ids: Iterable[str]) -> dict[str, set[str]]: ...

    # --- the name graph: chunks and the names they mention (cam_engine.names) ----------
    def names_of(self, chunk_ids: Iterable[str]) -> dict[str, list[str]]:
        """Chunk id -> the keys of the names it mentions, sorted; a chunk that mentions
        none (or is not stored) is left out."""
        ...

    def chunks_naming(
        self, names: Iterable[str], *, max_chunks: int, documents: Sequence[str] | None = None
    ) -> dict[str, list[str]]:
        """Name key -> the ids of the chunks that mention it, sorted, for each name that
        at most ``max_chunks`` chunks mention (a commoner name bridges nothing and is
        left out, as is a name no chunk mentions). ``documents`` is a scope: only the
        chunks of those documents, counted within it."""
        ...


class ViewStore(StoreBase, Protocol):
    """The adapters' views of the memory (ReadAgent pages, GAM memos, MemAgent states),
    and the document text they are built from."""

    def chunks_near(self, doc_id: str, positions: Iterable[int]) -> list[Node]:
        """The chunks of a document at these positions (``Memory.document_chunks``)."""
        ...

    def upsert_view_nodes(self, nodes: Sequence[ViewNode]) -> None:
        """Write view nodes with their chunk links (replacing both), and relink the
        order of every sequence they belong to."""
        ...

    def view_nodes(
        self, view: str, kind: str, group: str | None = None, *, embeddings: bool = False
    ) -> list[ViewNode]:
        """One view's nodes of one kind, ordered by (group, seq)."""
        ...

    def delete_view_nodes(
        self, view: str, kind: str | None = None, group: str | None = None
    ) -> int: ...

    def keyword_search(
        self, view: str, kind: str, query: str, k: int, groups: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """Best ``k`` (id, score) of a view's nodes for a keyword query, best first:
        BM25 on the embedded store, the full-text index on Neo4j. ``groups`` keeps the
        search to those sequences (e.g. documents), statistics included on SQLite."""
        ...


class ChangeWriter(StoreBase, Protocol):
    """The bulk writes that ``apply_change`` (store.change) makes of one ``GraphChange``,
    inside the batch's transaction, and nothing else calls: a backend's ``apply`` comes
    from ``store.change.AppliesChanges``, written once for every backend."""

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction is open (``apply`` writes only inside one)."""
        ...

    def clear(self, keep_chunks: bool) -> None:
        """Drop levels >= 1, edges and replicas; without ``keep_chunks``, the whole memory."""
        ...

    def delete_documents(self, ids: Iterable[str]) -> None:
        """Delete these documents' records and the adapter views of them (view nodes
        whose document or group is one of them), in one statement per kind. Their
        chunks are deleted by ``delete_nodes``."""
        ...

    def delete_document_views(self, ids: Iterable[str]) -> None:
        """Delete the adapter views of these documents only (an updated document's
        pages and memos describe its old text)."""
        ...

    def delete_nodes(self, ids: Iterable[str]) -> None: ...
    def delete_edges(self, keys: Iterable[tuple[str, str]]) -> None: ...
    def delete_replicas(self, ids: Iterable[str]) -> None: ...
    def upsert_document(self, document: DocumentRecord) -> None: ...
    def place_chunks(self, chunks: Sequence[Node]) -> None:
        """Write the position, text and props (offsets) of chunks already stored,
        leaving their vectors: the kept chunks of an updated document, moved."""
        ...

    def upsert_nodes(self, nodes: Sequence[Node]) -> None: ...
    def upsert_edges(self, edges: Sequence[Edge]) -> None: ...
    def upsert_replicas(self, replicas: Sequence[Replica]) -> None: ...
    def replace_members(self, members: Mapping[str, tuple[int, Iterable[str]]]) -> None:
        """Replace the members of each summary: summary id -> (its level, member ids)."""
        ...

    def save_settings(self, settings: Mapping[str, Any]) -> None: ...
    def set_counters(self, counters: Mapping[str, int]) -> None: ...


class BuilderStore(RetrievalStore, Protocol):
    """What memory development needs of the store itself: ``store.batch`` reads the
    structure and writes each batch's change through these, and the ingest pipeline
    reads documents and settings. Everything else a batch reads is answered by the
    structure it holds (``store.batch.BatchStore``)."""

    def lock_generation(self) -> int:
        """Inside a transaction: the memory's generation (raised by every committed
        batch), locked against other writers until the transaction ends."""
        ...

    def read_structure(self) -> StructureRows:
        """The memory's whole structure in a few bulk reads (texts, no vectors)."""
        ...

    def apply(self, change: GraphChange) -> None:
        """Write one batch's change inside the open transaction (``store.change``;
        backends inherit it from ``AppliesChanges``)."""
        ...

    def load_settings(self) -> dict[str, Any] | None: ...
    def get_document(self, doc_id: str) -> DocumentRecord | None: ...
    def documents(self) -> list[DocumentRecord]: ...


class AdminStore(StoreBase, Protocol):
    """Managing a memory as a whole: the memories a store holds, their figures, a node's
    whole record (``Memory.node``), and what moving a memory to another store needs
    (``cam export`` / ``cam import``, ``cam_engine.transfer``): the memory read page by
    page in a stable order, and removed in steps of bounded size."""

    def memories(self) -> list[str]: ...  # names of the memories in this store, sorted
    def stats(self) -> dict[str, Any]: ...
    def existing_ids(self, ids: Iterable[str]) -> set[str]: ...
    def edges_of(self, ids: Iterable[str]) -> list[Edge]: ...
    def replicas_of(self, node_ids: Iterable[str]) -> dict[str, list[Replica]]: ...

    def nodes_page(self, after: str, limit: int, *, embeddings: bool = False) -> list[Node]:
        """At most ``limit`` nodes of any level whose ids sort after ``after`` ("" for
        the first page), by id."""
        ...

    def view_nodes_page(self, after: str, limit: int) -> list[ViewNode]:
        """At most ``limit`` view nodes of any view whose ids sort after ``after``, by id,
        with their vectors and chunk links."""
        ...

    def counters(self) -> dict[str, int]:
        """The memory's counters (label numbers per level, the generation)."""
        ...

    def drop_memory(self) -> None:
        """Delete the whole memory, settings included, outside any transaction and in
        steps of bounded size (Neo4j: a million chunks are not one transaction): what
        removes an import that failed halfway. Any open transaction is an error."""
        ...


class GraphStore(BuilderStore, ChangeWriter, ViewStore, AdminStore, Protocol):
    """A whole store: every role. SqliteStore and Neo4jStore are one; code that needs
    less names the role it uses."""


IN_MEMORY = ":memory:"
# "scheme://..." (two or more letters, so a path never looks like one), and a Neo4j
# scheme missing a slash: both would otherwise become SQLite files named "http:/...".
_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+)://")
_BROKEN_NEO4J_URI = re.compile(r"^(neo4j|bolt)(\+s|\+ssc)?:(?!//)", re.IGNORECASE)


def backend_name(location: str | Path) -> str:
    """The name of the registered backend (store.registry) that serves a location:
    the one whose URI scheme it has, or the path backend (SQLite) for a path."""
    from cam_engine.store import registry

    uri = _URI.match(str(location))
    served = registry.backend_for_scheme(uri.group(1)) if uri else None
    return served.name if served is not None else registry.PATH_BACKEND


def is_neo4j_uri(location: str | Path) -> bool:
    return backend_name(location) == "neo4j"


def open_store(
    location: str | Path,
    memory: str,
    environment: Environment | None = None,
    *,
    create: bool = True,
) -> GraphStore:
    """A store for a location: a URI whose scheme a registered backend serves
    (store.registry: ``neo4j://`` / ``bolt://``) or a SQLite file path.

    Neo4j credentials and database come from ``environment`` (CAM_NEO4J_USER,
    CAM_NEO4J_PASSWORD, CAM_NEO4J_DATABASE). With ``create=False`` a SQLite file that
    does not exist is an error instead of a new empty store (commands that only read).
    """
    from cam_engine.store import registry

    text = str(location)
    if not text.strip():  # Path("") is ".": it would name this folder
        raise ConfigError(
            "the store location is empty: give a SQLite file path or a bolt:// or neo4j:// "
            "URI, or leave it out for the default store"
        )
    if text == IN_MEMORY:
        raise ConfigError(
            f"{IN_MEMORY} (SQLite's in-memory database) cannot hold a memory: a memory "
            "outlives the command that builds it and is read over several connections; "
            "give a file path (a temporary one for scratch work, such as /tmp/scratch.db)"
        )
    uri = _URI.match(text)
    if uri:
        served = registry.backend_for_scheme(uri.group(1))
        if served is None:
            raise ConfigError(
                f"unknown store URI scheme {uri.group(1)!r} in {redact_credentials(text)!r}: "
                "a store is a SQLite file path or a bolt:// or neo4j:// URI (+s or +ssc for TLS)"
            )
        # The scheme in lower case: drivers compare it as written.
        normal = uri.group(1).lower() + text[len(uri.group(1)) :]
        return served.open(normal, memory, environment, create=create)
    if _BROKEN_NEO4J_URI.match(text):
        raise ConfigError(
            f"malformed Neo4j URI {redact_credentials(text)!r}: write it as bolt://HOST:PORT"
        )
    return registry.backend(registry.PATH_BACKEND).open(text, memory, environment, create=create)
