"""Scoped reads (a question kept to some documents), on every store: the search runs
over the scope itself, so its top k are the scope's best, never the survivors of a
search of everything."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from cam_engine.store.base import DocumentRecord, GraphStore, open_store
from cam_engine.types import CHUNK, SUMMARY, Node

DIM = 32


def unit(seed: int) -> np.ndarray:
    vector = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    return vector / np.linalg.norm(vector)


def near(vector: np.ndarray, seed: int, noise: float) -> np.ndarray:
    moved = vector + noise * unit(seed)
    return (moved / np.linalg.norm(moved)).astype(np.float32)


# Document "b" is all about whales and sits right by the question's vector; document
# "a" mentions a whale once, farther away.
QUESTION = unit(100)
A_TEXTS = [
    "A quiet harbour at dawn.",
    "The lighthouse keeper counted ships.",
    "Once a whale was seen far out.",
    "The keeper mended nets with his daughter.",
]
B_TEXTS = [f"The whale, the whale, the great white whale number {i}." for i in range(8)]


@pytest.fixture()
def store(store_location: str, memory_name: str) -> Iterator[GraphStore]:
    s = open_store(store_location, memory_name)
    s.prepare(DIM)
    with s.transaction():
        s.upsert_document(DocumentRecord("a", "a.txt", "1", len(A_TEXTS)))
        s.upsert_document(DocumentRecord("b", "b.txt", "2", len(B_TEXTS)))
        s.upsert_nodes(
            [
                Node(f"a{i}", 0, CHUNK, t, "a", i, near(QUESTION, i, 3.0))
                for i, t in enumerate(A_TEXTS)
            ]
            + [
                Node(f"b{i}", 0, CHUNK, t, "b", i, near(QUESTION, 50 + i, 0.1))
                for i, t in enumerate(B_TEXTS)
            ]
        )
        # s1-0 summarizes a's chunks only; s1-1 spans both documents (no doc_id), and
        # so does the top s2-0.
        s.upsert_nodes(
            [
                Node("s1-0", 1, SUMMARY, "The keeper.", "a", 0.5, near(QUESTION, 7, 2.0)),
                Node("s1-1", 1, SUMMARY, "A whale.", None, 1.0, near(QUESTION, 8, 0.05)),
            ]
        )
        s.replace_members({"s1-0": (1, ["a0", "a1"]), "s1-1": (1, ["a2", "b0"])})
        s.upsert_nodes([Node("s2-0", 2, SUMMARY, "All.", None, 0.7, near(QUESTION, 9, 0.01))])
        s.replace_members({"s2-0": (2, ["s1-0", "s1-1"])})
    yield s
    s.close()


def exact_order(ids: list[str], store: GraphStore) -> list[str]:
    nodes = store.get_nodes(ids, embeddings=True)
    return sorted(ids, key=lambda i: (-float(nodes[i].embedding @ QUESTION), i))  # type: ignore[operator]


def test_nearest_within_a_scope_ranks_the_scope_itself(store: GraphStore) -> None:
    # Everything near the question belongs to b: a search of everything cut at k and
    # then filtered to a would come back empty.
    assert {i[0] for i, _ in store.nearest(0, QUESTION[None, :], 4)[0]} == {"b"}
    hits = store.nearest(0, QUESTION[None, :], 2, documents=["a"])[0]
    assert [i for i, _ in hits] == exact_order(["a0", "a1", "a2", "a3"], store)[:2]
    # All levels: a's summary is in the scope; the summaries spanning b are not.
    every = [i for i, _ in store.nearest(None, QUESTION[None, :], 10, documents=["a"])[0]]
    assert sorted(every) == ["a0", "a1", "a2", "a3", "s1-0"]
    assert [i for i, _ in store.nearest(1, QUESTION[None, :], 5, documents=["a"])[0]] == ["s1-0"]
    # Several documents, several questions, and an empty scope.
    both = store.nearest(0, np.stack([QUESTION, QUESTION]), 3, documents=["a", "b"])
    assert both[0] == both[1] and len(both[0]) == 3
    assert store.nearest(None, QUESTION[None, :], 3, documents=[]) == [[]]


def test_search_text_within_a_scope_ranks_the_scope_itself(store: GraphStore) -> None:
    assert {i[0] for i, _ in store.search_text(0, "whale", 3)} == {"b"}
    assert [i for i, _ in store.search_text(0, "whale", 1, documents=["a"])] == ["a2"]
    keeper = store.search_text(None, "keeper", 5, documents=["a"])
    assert {i for i, _ in keeper} == {"a1", "a3", "s1-0"}
    found = {i for i, _ in store.search_text(None, "whale keeper", 20, documents=["a"])}
    assert found == {"a1", "a2", "a3", "s1-0"}  # s1-1 ("A whale.") spans b: left out
    assert store.search_text(0, "whale", 5, documents=[]) == []


def test_roots_within_a_scope(store: GraphStore) -> None:
    # a2's only parent spans b: within a it is a root, like s1-0 (whose parent spans b).
    roots = store.roots_within(["a"], embeddings=True)
    assert [n.id for n in roots] == ["a2", "a3", "s1-0"]
    assert all(n.embedding is not None for n in roots)
    assert [n.id for n in store.roots_within(["b"])][:2] == ["b0", "b1"]
    assert store.roots_within([]) == []
