"""Several ``cam ingest`` processes into one memory (SQLite file or Neo4j) build what a
sequential ingest of the same documents builds; readers during an ingest see whole
batches only.

tests/unit/test_sqlite_other_writers.py has the in-process half (one process sees what
another committed); these run real ``cam`` processes side by side.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from click.testing import CliRunner

from cam_engine.cli.main import cli
from cam_engine.store.base import GraphStore
from cam_engine.store.neo4j import Neo4jStore
from cam_engine.store.sqlite import SqliteStore
from tests.conftest import shared_file
from tests.invariants import check_memory

ESSAYS = ("addiction.txt", "aord.txt", "apple.txt", "desres.txt")
BATCH = 8
SETTINGS = ("--chunk-tokens", "64", "--theta", "0.2")
ENV = {"CAM_EMBED_MODEL": "hashing:64", "HF_HUB_OFFLINE": "1"}


def _cam_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAM_")}
    return env | ENV


def cam_process(location: str, memory: str, *args: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "cam_engine.cli.main", "ingest", *args]
    command += ["--store", location, "--memory", memory, "--batch-size", str(BATCH), *SETTINGS]
    return subprocess.Popen(
        command, env=_cam_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def finish(process: subprocess.Popen[str]) -> str:
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, f"exit {process.returncode}: {err}"
    assert not err.strip(), err
    return out


def open_store(location: str, memory: str) -> GraphStore:
    if location.startswith("bolt://"):
        return Neo4jStore.connect(location, memory)
    return SqliteStore(Path(location), memory)


def level_zero(store: GraphStore) -> tuple[set[tuple[object, ...]], set[tuple[object, ...]]]:
    """The chunks (id, document, position, text) and the edges between them."""
    chunks = store.nodes_at_level(0)
    nodes = {(n.id, n.doc_id, n.position, n.text) for n in chunks}
    edges = {
        (e.src, e.dst, round(e.score, 5))
        for e in store.edges_of([n.id for n in chunks])
        if e.level == 0
    }
    return nodes, edges


@pytest.fixture()
def essays(tmp_path: Path) -> list[Path]:
    paths = []
    for name in ESSAYS:
        path = tmp_path / name
        path.write_text(shared_file(f"haystacks/paul_graham/{name}").read_text())
        paths.append(path)
    return paths


@pytest.fixture()
def second_memory(store_location: str) -> Iterator[str]:
    """A second memory name (a second file for SQLite), wiped afterwards on Neo4j."""
    name = f"t{uuid.uuid4().hex[:12]}"
    yield name
    if store_location.startswith("bolt://"):
        with closing(Neo4jStore.connect(store_location, name)) as store, store.transaction():
            store.clear(keep_chunks=False)


@pytest.mark.parametrize("writers", [2, 4])
def test_concurrent_ingests_build_what_a_sequential_one_builds(
    store_location: str,
    memory_name: str,
    second_memory: str,
    essays: list[Path],
    tmp_path: Path,
    writers: int,
) -> None:
    documents = essays[:writers]
    sequential = (
        store_location if store_location.startswith("bolt://") else str(tmp_path / "sequential.db")
    )
    for path in documents:
        finish(cam_process(sequential, second_memory, str(path)))
    processes = [cam_process(store_location, memory_name, str(path)) for path in documents]
    for process in processes:
        finish(process)  # no error, not even "busy": each batch holds the lock briefly

    with closing(open_store(sequential, second_memory)) as alone:
        expected_nodes, expected_edges = level_zero(alone)
        expected_documents = {d.id: (d.chunks, d.total) for d in alone.documents()}
    with closing(open_store(store_location, memory_name)) as shared:
        nodes, edges = level_zero(shared)
        stored = {d.id: (d.chunks, d.total) for d in shared.documents()}
        check_memory(shared, max_cluster_size=12)
    assert set(stored) == {p.name for p in documents}
    assert all(chunks == total for chunks, total in stored.values()), stored
    assert stored == expected_documents  # no lost batch
    assert nodes == expected_nodes
    assert edges == expected_edges


def test_readers_during_an_ingest_see_whole_batches(
    store_location: str,
    memory_name: str,
    essays: list[Path],
    tmp_path: Path,
) -> None:
    """`cam stats` and `cam ask` while another process ingests: every document holds a
    whole number of batches (or all its chunks), the chunks counted match the
    documents' bookkeeping (one commit: store.read_snapshot), and every chunk an answer
    quotes exists. On Neo4j the reads also meet outdated-read errors, which are
    retried."""
    path = tmp_path / "long.txt"  # many batches: the essays one after the other
    path.write_text("\n\n".join(p.read_text() for p in essays * 3))
    finish(cam_process(store_location, memory_name, str(essays[0])))  # a memory to read
    writer = cam_process(store_location, memory_name, str(path))
    env = {"CAM_STORE": store_location, "CAM_MEMORY": memory_name, **ENV}
    seen: set[int] = set()
    deadline = time.monotonic() + 120
    while writer.poll() is None and time.monotonic() < deadline:
        result = CliRunner().invoke(cli, ["stats", "--json"], env=env)
        assert result.exit_code == 0, result.output
        data = json.loads(result.output)
        chunks = {d["id"]: (d["chunks"], d["total"]) for d in data["document_list"]}
        for done, total in chunks.values():
            assert done == total or done % BATCH == 0, chunks
        level0 = next(row["nodes"] for row in data["levels"] if row["level"] == 0)
        assert level0 == sum(done for done, _ in chunks.values()), (level0, chunks)
        seen.add(chunks.get(path.name, (0, 0))[0])
        answer = CliRunner().invoke(cli, ["ask", "What is a startup?", "--json"], env=env)
        assert answer.exit_code == 0, answer.output
        evidence = json.loads(answer.output)["evidence"]
        assert evidence and all(e["text"].strip() for e in evidence)
        # Chunks are never deleted, so each one quoted is there still (a summary may
        # have been replaced by a later batch since).
        quoted = {e["node_id"] for e in evidence if e["level"] == 0}
        with closing(open_store(store_location, memory_name)) as store:
            assert store.existing_ids(quoted) == quoted
    finish(writer)
    assert len(seen) >= 2, f"the readers saw only {seen} chunks of the ingest"
