"""Fixtures shared by the unit tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from cam_engine.store.base import DocumentRecord, GraphStore
from cam_engine.store.sqlite import SqliteStore
from cam_engine.types import CHUNK, SUMMARY, Edge, Node
from tests.unit.tiny_memory import axis, mix


@pytest.fixture()
def tiny_memory(tmp_path: Path) -> GraphStore:
    """Six chunks in a chain (c0-c5), two summaries over them, one top summary.

    The question points at axis 0: c0 is closest, then c1 (which leans to axis 0).
    """
    store = SqliteStore(tmp_path / "r.db", "r")
    chunks = [Node(f"c{i}", 0, CHUNK, f"chunk {i}", "d", i, axis(i)) for i in range(6)]
    chunks[1].embedding = mix((1, 1.0), (0, 0.6))
    with store.transaction():
        store.upsert_document(DocumentRecord("d", "d.txt", None, 6))
        store.upsert_nodes(chunks)
        store.upsert_edges([Edge.make(f"c{i}", f"c{i + 1}", 0, 0.8) for i in range(5)])
        store.upsert_nodes(
            [
                Node("s1-0", 1, SUMMARY, "first half", "d", 1.0, mix((0, 0.5), (1, 0.5), (2, 0.5))),
                Node("s1-1", 1, SUMMARY, "second half", "d", 4.0, mix((3, 1), (4, 1), (5, 1))),
                Node("s2-0", 2, SUMMARY, "all", "d", 2.5, mix(*((i, 1.0) for i in range(6)))),
            ]
        )
        store.upsert_edges([Edge.make("s1-0", "s1-1", 1, 1.0)])
        store.replace_members({"s1-0": (1, ["c0", "c1", "c2"]), "s1-1": (1, ["c3", "c4", "c5"])})
        store.replace_members({"s2-0": (2, ["s1-0", "s1-1"])})
    return store
