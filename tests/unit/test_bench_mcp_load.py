"""The checks of cam_engine/bench/mcp_load.py, on made-up observations: each one that a
reader of a half-written batch would make is counted."""

from __future__ import annotations

from typing import Any

from cam_engine.bench.mcp_load import Ask, Load, parts_of, quoted_check
from cam_engine.types import CHUNK, Node


def stats(documents: dict[str, tuple[int, int]], chunk_nodes: int) -> dict[str, Any]:
    return {
        "document_list": [
            {"id": doc_id, "chunks": chunks, "total": total}
            for doc_id, (chunks, total) in documents.items()
        ],
        "levels": [{"level": 0, "nodes": chunk_nodes}, {"level": 1, "nodes": 3}],
    }


def test_whole_batches_of_one_commit_pass() -> None:
    load, seen = Load(batch_size=4), [10]
    load.check_stats(stats({"seed": (10, 10), "part": (8, 13)}, 18), 0, seen)
    load.check_stats(stats({"seed": (10, 10), "part": (13, 13)}, 23), 0, seen)
    assert load.violations == [] and seen == [10, 18, 23]


def test_a_partial_batch_two_commits_mixed_and_fewer_chunks_are_counted() -> None:
    load = Load(batch_size=4)
    load.check_stats(stats({"seed": (10, 10), "part": (6, 13)}, 16), 1, [])
    load.check_stats(stats({"seed": (10, 10), "part": (8, 13)}, 14), 2, [])
    load.check_stats(stats({"seed": (10, 10), "part": (4, 13)}, 14), 3, [18])
    assert load.violations == [
        "client 1: part holds 6 of 13 chunks",
        "client 2: 14 chunk nodes, documents {'seed': (10, 10), 'part': (8, 13)}",
        "client 3: 14 chunk nodes after 18",
    ]


def test_while_a_batch_is_held_its_chunks_are_never_seen() -> None:
    load = Load(batch_size=4, held_document="part", held_chunks=4, holding=True)
    load.check_stats(stats({"seed": (10, 10), "part": (4, 13)}, 14), 0, [])
    quoted = [{"node_id": "c3", "document": "part", "position": 3, "text": "t"}]
    load.check_held(Ask(0, 0.0, 1.0, quoted))
    assert load.violations == []
    load.check_stats(stats({"seed": (10, 10), "part": (8, 13)}, 18), 1, [])
    quoted = [{"node_id": "c4", "document": "part", "position": 4, "text": "t"}]
    load.check_held(Ask(2, 0.0, 1.0, quoted))
    assert load.violations == [
        "client 1: part holds 8 chunks while its batch is held (committed: 4)",
        "client 2: quoted c4 (part position 4) of the batch held uncommitted",
    ]


def test_a_quoted_chunk_must_be_stored_as_quoted() -> None:
    stored = [Node("c1", 0, CHUNK, "text one", "part", 1)]
    fine = {"node_id": "c1", "document": "part", "position": 1, "text": "text one"}
    other = {**fine, "text": "text changed"}
    missing = {**fine, "node_id": "c9"}
    asks = [Ask(0, 0.0, 1.0, [fine]), Ask(1, 0.0, 1.0, [other, missing])]
    assert quoted_check(asks, stored) == [
        "client 1: quoted c1, not stored so",
        "client 1: quoted c9, not stored so",
    ]


def test_parts_are_cut_between_paragraphs_in_order() -> None:
    text = "\n\n".join(f"word{i} " * 5 for i in range(7))
    parts = parts_of(text, 10, "book")
    assert [doc_id for doc_id, _ in parts] == ["book-001", "book-002", "book-003", "book-004"]
    assert " ".join(part for _, part in parts).split() == text.split()
