"""BatchCache answers exactly what its store would, and answers repeats from memory."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cam_engine import Memory, Settings
from cam_engine.embed import HashingEmbedder
from cam_engine.store.base import GraphStore
from cam_engine.store.batch_cache import BatchCache
from cam_engine.store.sqlite import SqliteStore
from cam_engine.types import CHUNK, SUMMARY, Edge, Node, Replica
from tests.conftest import shared_file
from tests.invariants import check_memory

EMBEDDER = HashingEmbedder(64)
SETTINGS = Settings(embed_model=EMBEDDER.name, alpha=0.6, theta=0.3, chunk_tokens=60)


class CountingStore:
    """Counts the calls that reach the store."""

    def __init__(self, store: GraphStore) -> None:
        self.store = store
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.store, name)
        if not callable(attribute):
            return attribute

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return attribute(*args, **kwargs)

        return counted


def dump(store: GraphStore) -> dict[str, Any]:
    """Everything the builder writes, in a comparable form."""
    levels = [row["level"] for row in store.stats()["levels"]]
    nodes = {n.id: n for level in levels for n in store.nodes_at_level(level)}
    return {
        "nodes": sorted((n.id, n.level, n.text, n.doc_id, n.position) for n in nodes.values()),
        "edges": sorted(
            (e.src, e.dst, round(e.score, 9), e.level) for e in store.edges_of(list(nodes))
        ),
        "replicas": sorted(
            (r.id, r.node_id, r.label, tuple(sorted(r.members)))
            for reps in store.replicas_of(list(nodes)).values()
            for r in reps
        ),
        "members": sorted(
            (s, tuple(sorted(ms))) for s, ms in store.members_of(list(nodes)).items()
        ),
    }


def test_an_ingest_through_the_cache_builds_the_same_memory(tmp_path: Path) -> None:
    text = shared_file("haystacks/paul_graham/gap.txt").read_text()[:15000]
    more = shared_file("haystacks/paul_graham/gap.txt").read_text()[15000:22000]
    memories = []
    for name, remote in (("plain", False), ("cached", True)):
        memory = Memory.open(tmp_path / f"{name}.db", "m", settings=SETTINGS, embedder=EMBEDDER)
        # The SQLite store does not need the cache; claiming to be remote forces it.
        memory.store.remote = remote  # type: ignore[misc]
        memory.ingest_text(text, "gap", batch_size=6)
        memory.ingest_text(more, "gap-more", batch_size=5)
        memories.append(memory)
    plain, cached = memories
    assert dump(cached.store) == dump(plain.store)
    assert len(dump(plain.store)["members"]) > 20
    check_memory(cached.store, max_cluster_size=SETTINGS.max_cluster_size)
    plain.rebuild()
    cached.rebuild()
    assert dump(cached.store) == dump(plain.store)
    for memory in memories:
        memory.close()


def test_repeated_reads_reach_the_store_once(tmp_path: Path) -> None:
    base = SqliteStore(tmp_path / "s.db", "m")
    with base.transaction():
        base.upsert_nodes([chunk(i) for i in range(3)])
        base.upsert_edges([Edge.make("c0", "c1", 0, 0.5)])
        counting = CountingStore(base)
        cache = BatchCache(counting)  # type: ignore[arg-type]
        for _ in range(3):
            assert cache.neighbours(["c0", "c2"]) == {"c0": {"c1": 0.5}, "c2": {}}
            assert set(cache.get_nodes(["c0", "c9"])) == {"c0"}
            assert cache.replicas_of(["c0"]) == {}
        cache.upsert_edges([Edge.make("c0", "c2", 0, 0.25)])
        assert cache.neighbours(["c0"]) == {"c0": {"c1": 0.5, "c2": 0.25}}
        assert cache.neighbours(["c1"]) == {"c1": {"c0": 0.5}}
    assert counting.calls == Counter(neighbours=2, get_nodes=1, replicas_of=1, upsert_edges=1)
    base.close()


def test_verbs_the_cache_does_not_know_are_refused(tmp_path: Path) -> None:
    cache = BatchCache(SqliteStore(tmp_path / "s.db", "m"))
    with pytest.raises(AttributeError, match="does not offer 'drop_everything'"):
        cache.drop_everything  # noqa: B018


# --- every read through the cache equals the store's own answer, under random writes ---------

NODE_IDS = [f"c{i}" for i in range(5)] + ["s1", "s2", "s3"]
LABELS = ["0.1", "0.2", "0.3"]


def chunk(i: int) -> Node:
    vector = np.random.default_rng(i).normal(size=16).astype(np.float32)
    return Node(f"c{i}", 0, CHUNK, f"chunk {i}", "d", float(i), vector / np.linalg.norm(vector))


def summary(node_id: str) -> Node:
    vector = np.ones(16, dtype=np.float32) / 4.0
    return Node(node_id, 1, SUMMARY, f"summary {node_id}", None, None, vector)


def node(node_id: str) -> Node:
    return chunk(int(node_id[1:])) if node_id.startswith("c") else summary(node_id)


ids = st.sampled_from(NODE_IDS)
some_ids = st.lists(ids, max_size=4)
replica_ids = st.sampled_from([f"{n}#{k}" for n in NODE_IDS for k in range(2)])

writes = st.one_of(
    st.tuples(st.just("upsert_nodes"), some_ids),
    st.tuples(st.just("delete_nodes"), some_ids),
    st.tuples(st.just("upsert_edges"), st.lists(st.tuples(ids, ids, st.integers(1, 9)))),
    st.tuples(st.just("delete_edges"), st.lists(st.tuples(ids, ids), max_size=3)),
    st.tuples(
        st.just("upsert_replicas"),
        st.lists(st.tuples(replica_ids, st.sampled_from(LABELS), some_ids), max_size=3),
    ),
    st.tuples(st.just("delete_replicas"), st.lists(replica_ids, max_size=3)),
    st.tuples(
        st.just("set_members"),
        st.dictionaries(st.sampled_from(["s1", "s2", "s3"]), some_ids, max_size=2),
    ),
)
reads = st.one_of(
    st.tuples(st.just("neighbours"), some_ids),
    st.tuples(st.just("get_nodes"), some_ids),
    st.tuples(st.just("existing_ids"), some_ids),
    st.tuples(st.just("replicas_of"), some_ids),
    st.tuples(st.just("replicas_by_id"), st.lists(replica_ids, max_size=4)),
    st.tuples(st.just("replicas_with_labels"), st.lists(st.sampled_from(LABELS), max_size=3)),
    st.tuples(st.just("label_sizes"), st.lists(st.sampled_from(LABELS), max_size=3)),
    st.tuples(st.just("members_of"), some_ids),
    st.tuples(st.just("parents_of"), some_ids),
)


def apply_write(store: GraphStore, op: str, arg: Any) -> None:
    existing = store.existing_ids(NODE_IDS)
    if op == "upsert_nodes":
        store.upsert_nodes([node(i) for i in dict.fromkeys(arg)])
    elif op == "delete_nodes":
        store.delete_nodes(arg)
    elif op == "upsert_edges":
        # Edges join existing nodes of one level, as the builder writes them.
        edges = {
            (a, b): Edge.make(a, b, node(a).level, w / 10)
            for a, b, w in arg
            if a != b and a in existing and b in existing and node(a).level == node(b).level
        }
        store.upsert_edges(list(edges.values()))
    elif op == "delete_edges":
        store.delete_edges([(a, b) for a, b in arg if a != b])
    elif op == "upsert_replicas":
        replicas = {
            rid: Replica(rid, rid.split("#")[0], node(rid.split("#")[0]).level, label, frozenset(m))
            for rid, label, m in arg
            if rid.split("#")[0] in existing
        }
        store.upsert_replicas(list(replicas.values()))
    elif op == "delete_replicas":
        store.delete_replicas(arg)
    elif op == "set_members":
        store.set_members(
            {s: [m for m in ms if m in existing] for s, ms in arg.items() if s in existing}, 1
        )


def read(store: GraphStore, op: str, arg: Any) -> Any:
    if op == "get_nodes":
        return {i: (n.level, n.text) for i, n in store.get_nodes(arg).items()}
    if op == "replicas_with_labels":
        return sorted(store.replicas_with_labels(arg), key=lambda r: r.id)
    return getattr(store, op)(arg)


READS = {
    "neighbours",
    "get_nodes",
    "existing_ids",
    "replicas_of",
    "replicas_by_id",
    "replicas_with_labels",
    "label_sizes",
    "members_of",
    "parents_of",
}
EVERYTHING = [
    ("neighbours", NODE_IDS),
    ("get_nodes", NODE_IDS),
    ("replicas_of", NODE_IDS),
    ("replicas_by_id", [f"{n}#{k}" for n in NODE_IDS for k in range(2)]),
    ("replicas_with_labels", LABELS),
    ("members_of", NODE_IDS),
    ("parents_of", NODE_IDS),
]


def seed(store: GraphStore) -> None:
    """A small memory with something of every kind, so writes have things to change."""
    store.upsert_nodes([node(i) for i in NODE_IDS])
    apply_write(store, "upsert_edges", [("c0", "c1", 5), ("c1", "c2", 3), ("s1", "s2", 4)])
    apply_write(
        store,
        "upsert_replicas",
        [("c0#0", "0.1", ["c1"]), ("c1#0", "0.1", ["c0", "c2"]), ("c2#0", "0.2", ["c1"])],
    )
    apply_write(store, "set_members", {"s1": ["c0", "c1"], "s2": ["c1", "c2"]})


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(warm=st.booleans(), steps=st.lists(st.one_of(writes, reads), min_size=1, max_size=30))
def test_the_cache_answers_like_the_store(
    tmp_path: Path, warm: bool, steps: list[tuple[str, Any]]
) -> None:
    for name in ("direct.db", "through.db"):  # hypothesis reuses tmp_path
        (tmp_path / name).unlink(missing_ok=True)
    direct = SqliteStore(tmp_path / "direct.db", "m")
    through = SqliteStore(tmp_path / "through.db", "m")
    with direct.transaction(), through.transaction():
        seed(direct)
        seed(through)
        cache = BatchCache(through)
        if warm:  # every entry cached first, so every write must update the cache
            for op, arg in EVERYTHING:
                read(cache, op, arg)
        for op, arg in steps:
            if op in READS:
                assert read(cache, op, arg) == read(direct, op, arg), (op, arg)
            else:
                apply_write(direct, op, arg)
                apply_write(cache, op, arg)
        for op, arg in EVERYTHING:  # finally, everything the cache holds
            assert read(cache, op, arg) == read(direct, op, arg), op
        for label in LABELS:  # one at a time: a stale entry could hide in a union
            for op in ("replicas_with_labels", "label_sizes"):
                assert read(cache, op, [label]) == read(direct, op, [label]), (op, label)
    direct.close()
    through.close()
