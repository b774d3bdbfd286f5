"""A store backend written from outside the package: ``toy://NAME``, each memory a few
Python dicts in this process, registered by this file alone (no other file names it).

It implements the roles the engine uses to build and question a memory
(``StoreBase``, ``RetrievalStore``, ``BuilderStore``, ``ChangeWriter``) and the parts
of ``AdminStore`` those need, with no adapter views. ``test_the_toy_store_passes_the_
contract_suite`` runs the contract suite (tests/contract) on it: this module, loaded as
a pytest plugin (``-p``), registers the backend before the suite reads the registry,
and every test of the suite that takes ``store_location`` runs once more, on ``toy``,
but those ``NOT_SERVED`` names with the reason why.
"""

from __future__ import annotations

import copy
import math
import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import numpy as np
import pytest

from cam_engine.config import Environment
from cam_engine.errors import StoreError
from cam_engine.names import chunk_names
from cam_engine.store import registry
from cam_engine.store.base import (
    AdminStore,
    BuilderStore,
    ChangeWriter,
    DocumentRecord,
    cluster_shape,
)
from cam_engine.store.change import AppliesChanges
from cam_engine.store.keywords import search_terms, tokenize
from cam_engine.store.structure import GENERATION, StructureRows
from cam_engine.types import CHUNK, Edge, Node, Replica, ViewNode

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class ToyMemory:
    """One memory's graph."""

    settings: dict[str, Any] | None = None
    counters: dict[str, int] = field(default_factory=dict)
    documents: dict[str, DocumentRecord] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)
    edges: dict[tuple[str, str], Edge] = field(default_factory=dict)
    replicas: dict[str, Replica] = field(default_factory=dict)
    members: dict[str, set[str]] = field(default_factory=dict)  # summary -> member ids
    mentions: dict[str, set[str]] = field(default_factory=dict)  # chunk -> name keys


def _order(node: Node) -> tuple[Any, ...]:
    """SQLite's ORDER BY doc_id, position, id (NULLs first)."""
    return (
        node.doc_id is not None,
        node.doc_id or "",
        node.position is not None,
        node.position or 0,
        node.id,
    )


class ToyStore(AppliesChanges):
    """``toy://NAME``: the memories of location NAME live in ``DATABASES`` (this process)."""

    DATABASES: ClassVar[dict[str, dict[str, ToyMemory]]] = {}
    isolated_snapshots = False

    @classmethod
    def open_location(
        cls, location: str, memory: str, environment: Environment | None, *, create: bool
    ) -> ToyStore:
        return cls(location, memory)

    def __init__(self, location: str, memory: str) -> None:
        self._location = location
        self._memory = memory
        self._database = self.DATABASES.setdefault(location, {})
        self._saved: ToyMemory | None = None  # the memory as the transaction found it

    @property
    def _m(self) -> ToyMemory:
        return self._database.setdefault(self._memory, ToyMemory())

    # --- StoreBase ------------------------------------------------------------------------
    @property
    def location(self) -> str:
        return self._location

    @property
    def memory(self) -> str:
        return self._memory

    @property
    def in_transaction(self) -> bool:
        return self._saved is not None

    def close(self) -> None:
        pass

    def prepare(self, dimensions: int) -> None:
        pass

    @contextmanager
    def transaction(self) -> Iterator[None]:
        if self._saved is not None:
            raise StoreError("a transaction is already open")
        self._saved = copy.deepcopy(self._m)
        try:
            yield
        except BaseException:
            self._database[self._memory] = self._saved
            raise
        finally:
            self._saved = None

    def read_snapshot(self, read: Callable[[], T]) -> T:
        return read()

    # --- RetrievalStore --------------------------------------------------------------------
    def _out(self, node: Node, embeddings: bool) -> Node:
        return replace(node, embedding=node.embedding if embeddings else None, names=None)

    def get_nodes(self, ids: Iterable[str], *, embeddings: bool = False) -> dict[str, Node]:
        nodes = self._m.nodes
        return {i: self._out(nodes[i], embeddings) for i in set(ids) if i in nodes}

    def nodes_at_level(self, level: int, *, embeddings: bool = False) -> Iterator[Node]:
        found = [n for n in self._m.nodes.values() if n.level == level]
        return iter([self._out(n, embeddings) for n in sorted(found, key=_order)])

    def _scope(self, level: int | None, documents: Sequence[str] | None) -> list[Node]:
        return [
            n
            for n in self._m.nodes.values()
            if (level is None or n.level == level) and (documents is None or n.doc_id in documents)
        ]

    def nearest(
        self,
        level: int | None,
        vectors: np.ndarray,
        k: int,
        *,
        documents: Sequence[str] | None = None,
    ) -> list[list[tuple[str, float]]]:
        among = [n for n in self._scope(level, documents) if n.embedding is not None]
        queries = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
        if not among:
            return [[] for _ in queries]
        matrix = np.stack([n.embedding for n in among if n.embedding is not None])
        matrix = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
        scores = (queries / np.linalg.norm(queries, axis=1, keepdims=True)) @ matrix.T
        return [
            sorted(((n.id, float(s)) for n, s in zip(among, row, strict=True)), key=_best)[:k]
            for row in scores
        ]

    def search_text(
        self, level: int | None, query: str, k: int, *, documents: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        # TF-IDF: a term's weight falls with the nodes holding it (Okapi's idf is 0 for
        # a word in half of a corpus of two, which cannot tell two nodes apart).
        terms = search_terms(query)
        words = {n.id: tokenize(n.text) for n in self._scope(level, documents)}
        held = {t: sum(1 for ws in words.values() if t in ws) for t in terms}
        scores = {
            node_id: sum(
                ws.count(t) / (ws.count(t) + 1) * math.log(1 + len(words) / held[t])
                for t in terms
                if t in ws
            )
            for node_id, ws in words.items()
            if set(terms) & set(ws)
        }
        return sorted(scores.items(), key=_best)[: max(k, 0)]

    def roots_within(self, documents: Sequence[str], *, embeddings: bool = False) -> list[Node]:
        scope = self._scope(None, documents)
        below = {m for n in scope for m in self._m.members.get(n.id, ())}
        roots = [n for n in scope if n.id not in below]
        return [self._out(n, embeddings) for n in sorted(roots, key=lambda n: (n.level, _order(n)))]

    def count_nodes(self, level: int) -> int:
        return sum(1 for n in self._m.nodes.values() if n.level == level)

    def levels(self) -> list[int]:
        return sorted({n.level for n in self._m.nodes.values()})

    def neighbours(self, ids: Iterable[str]) -> dict[str, dict[str, float]]:
        found: dict[str, dict[str, float]] = {i: {} for i in ids}
        for e in self._m.edges.values():
            for a, b in ((e.src, e.dst), (e.dst, e.src)):
                if a in found:
                    found[a][b] = e.score
        return found

    def members_of(self, summary_ids: Iterable[str]) -> dict[str, set[str]]:
        members = self._m.members
        return {s: set(members[s]) for s in summary_ids if members.get(s)}

    def parents_of(self, node_ids: Iterable[str]) -> dict[str, set[str]]:
        wanted = set(node_ids)
        parents: dict[str, set[str]] = {}
        for summary, members in self._m.members.items():
            for member in members & wanted:
                parents.setdefault(member, set()).add(summary)
        return parents

    def names_of(self, chunk_ids: Iterable[str]) -> dict[str, list[str]]:
        mentions = self._m.mentions
        return {c: sorted(mentions[c]) for c in set(chunk_ids) if mentions.get(c)}

    def chunks_naming(
        self, names: Iterable[str], *, max_chunks: int, documents: Sequence[str] | None = None
    ) -> dict[str, list[str]]:
        wanted = set(names)
        naming: dict[str, list[str]] = {}
        for chunk_id, keys in self._m.mentions.items():
            if documents is None or self._m.nodes[chunk_id].doc_id in documents:
                for key in keys & wanted:
                    naming.setdefault(key, []).append(chunk_id)
        return {k: sorted(ids) for k, ids in naming.items() if len(ids) <= max_chunks}

    # --- ViewStore: a document's chunks only ------------------------------------------------
    def chunks_near(self, doc_id: str, positions: Iterable[int]) -> list[Node]:
        wanted = set(positions)
        return [
            self._out(n, False)
            for n in self._m.nodes.values()
            if n.level == 0 and n.doc_id == doc_id and n.position in wanted
        ]

    # --- BuilderStore (apply comes from AppliesChanges) --------------------------------
    def lock_generation(self) -> int:
        if not self.in_transaction:
            raise StoreError("lock_generation() needs an open transaction")
        return self._m.counters.get(GENERATION, 0)

    def read_structure(self) -> StructureRows:
        m = self._m
        return StructureRows(
            nodes=[self._out(n, False) for n in m.nodes.values()],
            edges=[(e.src, e.dst, e.score) for e in m.edges.values()],
            replicas=list(m.replicas.values()),
            members=[(s, member) for s, ms in m.members.items() for member in ms],
            counters=dict(m.counters),
            documents=self.documents(),
            settings=self.load_settings(),
            chunk_vectors=None,  # a batch's neighbours are searched by nearest()
        )

    def load_settings(self) -> dict[str, Any] | None:
        return copy.deepcopy(self._m.settings)

    def get_document(self, doc_id: str) -> DocumentRecord | None:
        return self._m.documents.get(doc_id)

    def documents(self) -> list[DocumentRecord]:
        return [self._m.documents[d] for d in sorted(self._m.documents)]

    # --- ChangeWriter ------------------------------------------------------------------------
    def clear(self, keep_chunks: bool) -> None:
        m = self._m
        m.edges.clear()
        m.replicas.clear()
        m.members.clear()
        m.counters.clear()
        if keep_chunks:
            m.nodes = {i: n for i, n in m.nodes.items() if n.level == 0}
        else:
            self._database[self._memory] = ToyMemory()

    def delete_documents(self, ids: Iterable[str]) -> None:
        for doc_id in ids:
            self._m.documents.pop(doc_id, None)

    def delete_document_views(self, ids: Iterable[str]) -> None:
        pass  # the toy keeps no views

    def delete_nodes(self, ids: Iterable[str]) -> None:
        m, gone = self._m, set(ids)
        for node_id in gone:
            m.nodes.pop(node_id, None)
            m.members.pop(node_id, None)
            m.mentions.pop(node_id, None)
        m.edges = {k: e for k, e in m.edges.items() if not gone & set(k)}
        m.replicas = {i: r for i, r in m.replicas.items() if r.node_id not in gone}
        m.members = {s: ms - gone for s, ms in m.members.items()}

    def delete_edges(self, keys: Iterable[tuple[str, str]]) -> None:
        for a, b in keys:
            self._m.edges.pop((a, b) if a < b else (b, a), None)

    def delete_replicas(self, ids: Iterable[str]) -> None:
        for replica_id in ids:
            self._m.replicas.pop(replica_id, None)

    def upsert_document(self, document: DocumentRecord) -> None:
        self._m.documents[document.id] = document

    def place_chunks(self, chunks: Sequence[Node]) -> None:
        for c in chunks:
            stored = self._m.nodes[c.id]
            self._m.nodes[c.id] = replace(stored, position=c.position, text=c.text, props=c.props)
            if stored.text != c.text:  # a paragraph break in a new place may change a name
                self._m.mentions[c.id] = set(chunk_names(c))

    def upsert_nodes(self, nodes: Sequence[Node]) -> None:
        for n in nodes:
            self._m.nodes[n.id] = copy.deepcopy(n)
            if n.kind == CHUNK:
                self._m.mentions[n.id] = set(chunk_names(n))

    def upsert_edges(self, edges: Sequence[Edge]) -> None:
        self._m.edges.update((e.key, e) for e in edges)

    def upsert_replicas(self, replicas: Sequence[Replica]) -> None:
        self._m.replicas.update((r.id, r) for r in replicas)

    def replace_members(self, members: Mapping[str, tuple[int, Iterable[str]]]) -> None:
        for summary, (_, ids) in members.items():
            self._m.members[summary] = set(ids)

    def save_settings(self, settings: Mapping[str, Any]) -> None:
        self._m.settings = copy.deepcopy(dict(settings))

    def set_counters(self, counters: Mapping[str, int]) -> None:
        self._m.counters.update(counters)

    # --- AdminStore --------------------------------------------------------------------------
    def memories(self) -> list[str]:
        return sorted(name for name, m in self._database.items() if m.settings is not None)

    def existing_ids(self, ids: Iterable[str]) -> set[str]:
        return set(ids) & self._m.nodes.keys()

    def edges_of(self, ids: Iterable[str]) -> list[Edge]:
        wanted = set(ids)
        return [e for e in self._m.edges.values() if wanted & {e.src, e.dst}]

    def replicas_of(self, node_ids: Iterable[str]) -> dict[str, list[Replica]]:
        wanted = set(node_ids)
        found: dict[str, list[Replica]] = {}
        for r in sorted(self._m.replicas.values(), key=lambda r: r.id):
            if r.node_id in wanted:
                found.setdefault(r.node_id, []).append(r)
        return found

    def nodes_page(self, after: str, limit: int, *, embeddings: bool = False) -> list[Node]:
        ids = sorted(i for i in self._m.nodes if i > after)[:limit]
        return [self._out(self._m.nodes[i], embeddings) for i in ids]

    def view_nodes_page(self, after: str, limit: int) -> list[ViewNode]:
        return []  # the toy keeps no views

    def counters(self) -> dict[str, int]:
        return dict(self._m.counters)

    def drop_memory(self) -> None:
        if self.in_transaction:
            raise StoreError("drop_memory() runs outside transactions")
        self._database.pop(self._memory, None)

    def stats(self) -> dict[str, Any]:
        m = self._m
        nodes = [n for n in m.nodes.values()]
        levels = sorted({n.level for n in nodes} | {e.level for e in m.edges.values()})
        labels: dict[tuple[int, str], set[str]] = {}
        for r in m.replicas.values():
            labels.setdefault((r.level, r.label), set()).add(r.node_id)
        of_node: dict[str, set[str]] = {}
        for r in m.replicas.values():
            if r.level == 0:
                of_node.setdefault(r.node_id, set()).add(r.label)
        in_two = sum(1 for ls in of_node.values() if len(ls) >= 2)
        below = {member for ms in m.members.values() for member in ms}
        copies: dict[str, list[int]] = {}
        for n in nodes:
            copies.setdefault(n.text, []).append(n.level)
        backends: dict[Any, int] = {}
        for n in nodes:
            if n.level > 0:
                backend = n.props.get("backend")
                backends[backend] = backends.get(backend, 0) + 1
        chunks = sum(1 for n in nodes if n.level == 0)
        return {
            "documents": len(m.documents),
            "levels": [self._level_row(lv, labels) for lv in levels],
            "overlap": in_two / chunks if chunks else 0.0,
            "summaries_by_backend": backends,
            "nodes_in_two_or_more_clusters": in_two,
            "roots": sum(1 for n in nodes if n.id not in below),
            "repeated_texts": sum(len(ls) - 1 for ls in copies.values()),
            "repeated_summary_texts": sum(len(ls) - 1 for ls in copies.values() if max(ls) > 0),
            "names": len({k for keys in m.mentions.values() for k in keys}),
            "mentions": sum(len(keys) for keys in m.mentions.values()),
            "views": {},
        }

    def _level_row(self, level: int, labels: Mapping[tuple[int, str], set[str]]) -> dict[str, Any]:
        sizes: dict[int, int] = {}
        for (lv, _), members in labels.items():
            if lv == level:
                sizes[len(members)] = sizes.get(len(members), 0) + 1
        return {
            "level": level,
            "nodes": self.count_nodes(level),
            "edges": sum(1 for e in self._m.edges.values() if e.level == level),
            "replicas": sum(1 for r in self._m.replicas.values() if r.level == level),
            "clusters": sum(sizes.values()),
            **cluster_shape(sizes.items()),
        }


def _roles(store: ToyStore) -> tuple[BuilderStore, ChangeWriter, AdminStore]:
    """What mypy checks: the toy is each of these roles (and a RetrievalStore through
    BuilderStore); it is no ViewStore, and so no GraphStore."""
    return store, store, store


def _best(hit: tuple[str, float]) -> tuple[float, str]:
    return (-hit[1], hit[0])


TOY = registry.StoreBackend(
    name="toy",
    title="toy",
    schemes=frozenset({"toy"}),
    target=f"{__name__}:ToyStore",
    test=registry.TestInstance(location=lambda folder: f"toy://{folder.name}"),
)

# The contract tests the toy does not run, and why: what it leaves out on purpose.
NOT_SERVED = {
    # No adapter views (ViewStore): a backend need not serve the adapters.
    "test_views_contract.py": "the toy keeps no adapter views (ViewStore)",
    "test_adapters_contract.py": "the toy keeps no adapter views (ViewStore)",
    "test_deleting_documents_takes_their_records_and_views": "no adapter views (ViewStore)",
    "test_deleting_a_chunk_drops_it_from_the_views_that_read_it": "no adapter views (ViewStore)",
    # Its memories live in this process: another process (cam) cannot open them.
    "test_concurrent_ingest.py": "a toy memory lives in one process; cam runs in others",
    "test_a_deleted_document_can_come_back": "its documents carry adapter views (ViewStore)",
}


def pytest_load_initial_conftests(early_config: pytest.Config, parser: Any, args: Any) -> None:
    """Loaded as a plugin (``-p``), before the suite's conftest reads the backends:
    the toy is one of them. (Collected as a test module, the file registers nothing.)"""
    registry.register(TOY)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "[toy" not in item.nodeid:
            continue
        for name, reason in NOT_SERVED.items():
            if name in item.nodeid:
                item.add_marker(pytest.mark.skip(reason=reason))


# The suite, less this file (its test would run itself again).
SUITE = ["tests/contract", f"--ignore={Path(__file__).relative_to(ROOT)}"]


def test_the_toy_store_passes_the_contract_suite() -> None:
    """Every contract test that takes ``store_location``, on the toy (``-k toy``)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", __name__, "-k", "toy", *SUITE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert " passed" in summary and "failed" not in summary, summary
