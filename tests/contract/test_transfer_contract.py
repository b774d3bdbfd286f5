"""A memory moved SQLite -> Neo4j -> SQLite through ``cam export`` files: the Neo4j
copy answers as the original, and the memory that comes back is the original."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from cam_engine import Environment, InputError, Memory
from cam_engine.adapters.readagent import build_view
from cam_engine.embed import HashingEmbedder
from cam_engine.store.base import GraphStore
from cam_engine.transfer import ExportFile, import_memory
from tests.conftest import shared_file
from tests.contract.conftest import NEO4J_URI, neo4j_or_skip
from tests.support.memory_contents import answers, comparable_stats, memory_contents

EMBEDDER = HashingEmbedder(64)
NO_ENV = Environment.from_env({})


@pytest.fixture()
def neo4j_names() -> Iterator[list[str]]:
    """Two fresh memory names on the Neo4j server, removed afterwards."""
    names = [f"t{uuid.uuid4().hex[:12]}" for _ in range(2)]
    neo4j_or_skip("probe").close()
    yield names
    for name in names:
        store = neo4j_or_skip(name)
        store.drop_memory()
        store.close()


def open_memory(store: str | Path, name: str) -> Memory:
    return Memory.open(store, name, embedder=EMBEDDER, environment=NO_ENV, create=False)


def test_sqlite_to_neo4j_and_back(tmp_path: Path, neo4j_names: list[str]) -> None:
    imported, built = neo4j_names
    text = shared_file("haystacks/gutenberg/pg1513.txt").read_text()[:40_000]
    original = tmp_path / "original.db"
    with Memory.open(original, "play", embedder=EMBEDDER, environment=NO_ENV) as memory:
        memory.ingest_text(text, "r")
        build_view(memory, None, None, min_words=60, max_words=200)
        memory.export(tmp_path / "out.jsonl.gz")
        before = (memory_contents(memory.store), comparable_stats(memory), answers(memory))

    Memory.import_from(tmp_path / "out.jsonl.gz", NEO4J_URI, imported, environment=NO_ENV)
    # Lucene's full-text ranking is not FTS5's: the imported memory answers as one
    # built on Neo4j from the same text does.
    with Memory.open(NEO4J_URI, built, embedder=EMBEDDER, environment=NO_ENV) as native:
        native.ingest_text(text, "r")
        native_answers = answers(native)
    with open_memory(NEO4J_URI, imported) as on_neo4j:
        assert comparable_stats(on_neo4j) == before[1]
        assert answers(on_neo4j) == native_answers
        on_neo4j.export(tmp_path / "back.jsonl")

    back = tmp_path / "back.db"
    Memory.import_from(tmp_path / "back.jsonl", back, "play", environment=NO_ENV)
    with open_memory(back, "play") as returned:
        assert (memory_contents(returned.store), comparable_stats(returned), answers(returned)) == (
            before
        )


def test_a_failed_import_into_neo4j_leaves_nothing(tmp_path: Path, neo4j_names: list[str]) -> None:
    source = tmp_path / "source.db"
    with Memory.open(source, "m", embedder=EMBEDDER, environment=NO_ENV) as memory:
        memory.ingest_text(shared_file("haystacks/gutenberg/pg84.txt").read_text()[:20_000], "f")
        memory.export(tmp_path / "m.jsonl")
    lines = (tmp_path / "m.jsonl").read_text().splitlines(keepends=True)
    lines[-2] = lines[-2][: len(lines[-2]) // 2]  # a truncated line, after every node
    (tmp_path / "bad.jsonl").write_text("".join(lines[:-1]))
    store = neo4j_or_skip(neo4j_names[0])
    try:
        with ExportFile(tmp_path / "bad.jsonl") as bad, pytest.raises(InputError, match="cut"):
            import_memory(bad, store, batch_records=20)  # several transactions committed first
        assert nothing_of(store)
    finally:
        store.close()


def nothing_of(store: GraphStore) -> bool:
    return (
        store.load_settings() is None
        and not store.nodes_page("", 1)
        and not store.documents()
        and not store.counters()
        and store.memory not in store.memories()
    )
