"""A batch's store (store/batch.py): reads from the structure held in memory, writes
collected and applied once, the structure kept equal to the store between batches."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cam_engine import Memory, Settings
from cam_engine.embed import HashingEmbedder
from cam_engine.engine.timing import PhaseClock
from cam_engine.errors import LLMError
from cam_engine.llm import ExtractiveSummarizer, SummaryResult
from cam_engine.store.base import DocumentRecord, GraphStore
from cam_engine.store.batch import BatchStore, BatchWriter
from cam_engine.store.sqlite import SqliteStore
from cam_engine.types import CHUNK, SUMMARY, Edge, Node, Replica
from tests.conftest import shared_file
from tests.invariants import check_memory, check_structure_is_stored

EMBEDDER = HashingEmbedder(64)
SETTINGS = Settings(embed_model=EMBEDDER.name, alpha=0.6, theta=0.3, chunk_tokens=60)
IDS = ["a", "b", "c", "d", "e"]
NODE = st.sampled_from(IDS)


def vector(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=8).astype(np.float32)
    return v / np.linalg.norm(v)


def node(node_id: str, version: int) -> Node:
    level = 0 if node_id in "abc" else 1
    return Node(
        node_id,
        level,
        CHUNK if level == 0 else SUMMARY,
        f"text of {node_id}, version {version}",
        "doc",
        IDS.index(node_id),
        vector(IDS.index(node_id) * 10 + version),
    )


# One write operation: (verb, arguments), on the five nodes above.
operation = st.one_of(
    st.tuples(st.just("upsert_node"), st.sampled_from(IDS), st.integers(0, 3)),
    st.tuples(st.just("delete_node"), st.sampled_from(IDS)),
    st.tuples(
        st.just("upsert_edge"), st.sampled_from(IDS), st.sampled_from(IDS), st.integers(1, 9)
    ),
    st.tuples(st.just("delete_edge"), st.sampled_from(IDS), st.sampled_from(IDS)),
    st.tuples(
        st.just("upsert_replica"), st.sampled_from(IDS), st.integers(0, 2), st.integers(0, 3)
    ),
    st.tuples(st.just("delete_replica"), st.sampled_from(IDS), st.integers(0, 2)),
    # e may be a member of d: a summary of summaries
    st.tuples(
        st.just("set_members"), st.sampled_from("de"), st.frozensets(st.sampled_from("abce"))
    ),
    # Deleted (in one call) and written back as they were, with their members: what the
    # covering top goes through in each batch.
    st.tuples(st.just("rewrite"), st.frozensets(st.sampled_from(IDS), min_size=1)),
)


@dataclass
class Written:
    """What the operations so far have left, to skip those the graph does not allow
    (an edge to a missing node, say) and to write a node back as it was."""

    versions: dict[str, int] = field(default_factory=dict)  # the nodes that exist
    members: dict[str, frozenset[str]] = field(default_factory=dict)

    def delete(self, node_id: str) -> None:
        del self.versions[node_id]
        self.members.pop(node_id, None)
        self.members = {s: ms - {node_id} for s, ms in self.members.items()}


def run(target: GraphStore | BatchStore, ops: list[tuple], written: Written) -> None:
    """Apply ``ops`` with the store verbs, skipping those the graph does not allow."""
    alive = written.versions
    for op in ops:
        verb, args = op[0], op[1:]
        if verb == "upsert_node":
            target.upsert_nodes([node(args[0], args[1])])
            alive[args[0]] = args[1]
        elif verb == "delete_node" and args[0] in alive:
            target.delete_nodes([args[0]])
            written.delete(args[0])
        elif verb == "rewrite" and args[0] <= alive.keys():
            before = {i: (alive[i], written.members.get(i, frozenset())) for i in args[0]}
            target.delete_nodes(sorted(args[0]))
            for node_id in args[0]:
                written.delete(node_id)
            run(
                target, [("upsert_node", i, version) for i, (version, _) in before.items()], written
            )
            run(target, [("set_members", i, ms) for i, (_, ms) in before.items() if ms], written)
        elif verb in ("upsert_edge", "delete_edge"):
            a, b = args[0], args[1]
            if a == b or not {a, b} <= alive.keys() or (a in "abc") != (b in "abc"):
                continue
            if verb == "upsert_edge":
                target.upsert_edges([Edge.make(a, b, 0 if a in "abc" else 1, args[2] / 10)])
            else:
                target.delete_edges([(a, b)])
        elif verb == "upsert_replica" and args[0] in alive:
            level = 0 if args[0] in "abc" else 1
            # A node's replicas hold disjoint members (components of its ego-network).
            others = frozenset({IDS[args[1]]} if args[2] else ()) - {args[0]}
            label = f"{level}.{args[1]}"
            target.upsert_replicas(
                [Replica(f"{args[0]}/r{args[1]}", args[0], level, label, others)]
            )
        elif verb == "delete_replica":
            target.delete_replicas([f"{args[0]}/r{args[1]}"])
        elif verb == "set_members" and args[0] in alive and args[1] <= alive.keys():
            members = args[1] - {args[0]}
            if isinstance(target, BatchStore):
                target.set_members({args[0]: members}, 1)
            else:
                target.replace_members({args[0]: (1, members)})
            written.members[args[0]] = members


def dump(store: SqliteStore) -> tuple:
    rows = store.read_structure()
    nodes = list(rows.nodes)  # read once: it streams
    vectors = store.get_nodes([n.id for n in nodes], embeddings=True)
    return (
        sorted((n.id, n.level, n.kind, n.text, n.doc_id, n.position) for n in nodes),
        sorted((i, n.props, np.round(n.embedding, 5).tolist()) for i, n in vectors.items()),
        sorted(rows.edges),
        sorted((r.id, r.node_id, r.label, tuple(sorted(r.members))) for r in rows.replicas),
        sorted(rows.members),
        {k: np.round(v, 5).tolist() for k, v in (rows.chunk_vectors or {}).items()},
    )


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    first=st.lists(operation, max_size=12),
    second=st.lists(operation, max_size=25),
    read_first=st.booleans(),
)
# Nodes written back as they were whose stored links must change all the same: c leaves
# d, which the batch does not write; c is written back changed, so d's link to it goes
# with the old c; d's members were changed by the batch before d was deleted, or after
# it was written back.
@example(
    first=[("set_members", "d", frozenset("c"))],
    second=[("rewrite", frozenset("c"))],
    read_first=True,
)
@example(
    first=[("set_members", "d", frozenset("c"))],
    second=[("rewrite", frozenset("cd")), ("upsert_node", "c", 1)],
    read_first=True,
)
@example(
    first=[("set_members", "d", frozenset("c"))],
    second=[("set_members", "d", frozenset("b")), ("rewrite", frozenset("d"))],
    read_first=True,
)
@example(
    first=[("set_members", "d", frozenset("c"))],
    second=[("rewrite", frozenset("d")), ("set_members", "d", frozenset("b"))],
    read_first=True,
)
def test_a_batch_leaves_the_store_as_its_writes_made_one_by_one_would(
    tmp_path: Path, first: list[tuple], second: list[tuple], read_first: bool
) -> None:
    """Also when the batch read the nodes first: a node it deletes and writes back as
    it was is then left as stored (BatchStore._keep_rewritten), links included."""
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    direct, batched = SqliteStore(folder / "direct.db", "m"), SqliteStore(folder / "batch.db", "m")
    written_direct, written_batched = Written(), Written()
    # The memory as earlier batches left it: every node, then some random writes.
    every = [("upsert_node", i, 0) for i in IDS] + [("upsert_edge", "a", "b", 5)]
    for store, written in ((direct, written_direct), (batched, written_batched)):
        with store.transaction():
            run(store, every + first, written)
    with direct.transaction():
        run(direct, second, written_direct)
    writer = BatchWriter(batched)
    with writer.batch(PhaseClock()) as batch:
        if read_first:
            batch.get_nodes(IDS, embeddings=True)
        run(batch, second, written_batched)
        # The batch reads its own writes.
        assert batch.existing_ids(IDS) == written_batched.versions.keys()
    assert dump(batched) == dump(direct)
    check_structure_is_stored(writer.structure, batched)


@pytest.fixture(scope="module")
def essay() -> str:
    return shared_file("haystacks/paul_graham/gap.txt").read_text()[:12000]


def open_memory(path: Path, **kwargs: object) -> Memory:
    return Memory.open(path / "m.db", "test", settings=SETTINGS, embedder=EMBEDDER, **kwargs)  # type: ignore[arg-type]


def held(memory: Memory) -> BatchWriter:
    return memory._pipeline().writer  # the writer that ingests hold between batches


def test_the_structure_held_between_batches_is_the_stored_one(tmp_path: Path, essay: str) -> None:
    with open_memory(tmp_path) as memory:
        memory.ingest_text(essay[:6000], "first", batch_size=8)
        check_structure_is_stored(held(memory).structure, memory.store)
        memory.ingest_text(essay[6000:], "second", batch_size=8)
        check_structure_is_stored(held(memory).structure, memory.store)
        memory.rebuild()
        check_structure_is_stored(held(memory).structure, memory.store)
        check_memory(memory.store, max_cluster_size=SETTINGS.max_cluster_size)


def test_each_batch_is_one_write_in_a_few_store_calls(tmp_path: Path, essay: str) -> None:
    with open_memory(tmp_path) as memory:
        store = memory.store
        applied: list[int] = []
        apply = store.apply

        def counting_apply(change):  # type: ignore[no-untyped-def]
            applied.append(len(change.nodes))
            apply(change)

        store.apply = counting_apply  # type: ignore[method-assign]
        report = memory.ingest_text(essay[:6000], "doc", batch_size=8)
    assert len(applied) == len(report.batches) > 3
    # The transaction with its generation check, the write and the commit; reads of
    # texts and vectors the process has not seen yet are the rest.
    assert all(b.store_calls <= 6 for b in report.batches), [b.store_calls for b in report.batches]


def test_another_writer_makes_the_structure_be_read_again(tmp_path: Path, essay: str) -> None:
    with open_memory(tmp_path) as one, open_memory(tmp_path) as other:
        one.ingest_text(essay[:4000], "a", batch_size=8)
        other.ingest_text(essay[4000:8000], "b", batch_size=8)  # one's structure is stale
        one.ingest_text(essay[8000:], "c", batch_size=8)
        check_structure_is_stored(held(one).structure, one.store)
        check_memory(one.store, max_cluster_size=SETTINGS.max_cluster_size)
        assert {d.id for d in one.documents()} == {"a", "b", "c"}


class FailOnce(ExtractiveSummarizer):
    """Fails the first summary asked for once armed."""

    def __init__(self) -> None:
        self.armed = False

    def summarize(self, texts: list[str], *, max_words: int) -> SummaryResult:  # type: ignore[override]
        if self.armed:
            self.armed = False
            raise LLMError("endpoint went away")
        return super().summarize(texts, max_words=max_words)


def test_a_failed_batch_drops_the_held_structure_and_the_next_one_reads_it_again(
    tmp_path: Path, essay: str
) -> None:
    summarizer = FailOnce()
    with open_memory(tmp_path, summarizer=summarizer) as memory:
        memory.ingest_text(essay[:4000], "a", batch_size=8)
        before = memory.stats()
        summarizer.armed = True
        with pytest.raises(LLMError):
            memory.ingest_text(essay[4000:8000], "b", batch_size=8)
        assert held(memory).structure is None
        assert memory.stats() == before
        memory.ingest_text(essay[4000:8000], "b", batch_size=8)
        check_structure_is_stored(held(memory).structure, memory.store)
        check_memory(memory.store, max_cluster_size=SETTINGS.max_cluster_size)


def test_documents_written_in_a_batch_are_read_back_by_it(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "d.db", "m")
    writer = BatchWriter(store)
    with writer.batch(PhaseClock()) as batch:
        batch.upsert_document(DocumentRecord("d", "d.txt", "sha", 3, 3))
        assert batch.get_document("d") == DocumentRecord("d", "d.txt", "sha", 3, 3)
        assert batch.allocate_labels(0, 2) == ["0.0", "0.1"]
        assert batch.allocate_labels(0, 1) == ["0.2"]
    assert store.get_document("d") == DocumentRecord("d", "d.txt", "sha", 3, 3)
    with writer.batch(PhaseClock()) as batch:
        assert batch.allocate_labels(0, 1) == ["0.3"]
