"""Crash at many points: ``cam ingest`` of a real book is SIGKILLed at each named
checkpoint (cam_engine/faults.py) and once by plain timing, then run again; the
resumed memory equals a clean ingest row by row (nodes with vectors, edges, replicas,
memberships, documents, counters, settings), in ``cam stats --json`` and in
tests/invariants.py. With Neo4j the server's JVM is SIGKILLed too, while the ingest
is paused at a checkpoint, on a private instance (cam_engine/bench/neo4j_private.py).

The harness is cam_engine/bench/crash.py; its long sweep (``cam bench crash --points
50``) gives the figures of docs/reliability.md.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from cam_engine.bench.crash import (
    DROP,
    INGEST,
    REPLY,
    SERVER,
    Book,
    Point,
    PointResult,
    Reference,
    clean_ingest,
    run_point,
)
from cam_engine.bench.neo4j_private import Neo4jUnavailable, PrivateNeo4j
from tests.conftest import shared_file

# The Simple Sabotage Field Manual: 242 chunks of 60 tokens, 16 batches of 16.
BOOK = "haystacks/gutenberg/pg26184.txt"
BATCH, CHUNK_TOKENS = 16, 60


@pytest.fixture(scope="module")
def book() -> Book:
    return Book(shared_file(BOOK), batch_size=BATCH, chunk_tokens=CHUNK_TOKENS)


def assert_resumed_as_clean(result: PointResult) -> None:
    assert result.killed, f"{result.point}: the ingest finished before the kill"
    assert result.resume_rc == 0, result.note
    assert result.lost == {} and result.extra == {}, result
    assert result.identical and result.stats_equal, result
    assert result.invariants is True, result.note


# --- SQLite ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sqlite_reference(book: Book, tmp_path_factory: pytest.TempPathFactory) -> Reference:
    folder = tmp_path_factory.mktemp("crash-clean")
    reference = clean_ingest(book, str(folder / "clean.db"), "m")
    assert reference.batches == 16
    assert any(key == "generation" for key, _ in reference.rows["counters"])
    return reference


SQLITE_POINTS = [
    Point("embedded", 2),  # in the prefetch worker, batch 1 being written
    Point("before_apply", 2),  # batch built, nothing written
    Point("writing", 3),  # nodes written, edges and the rest not
    Point("applied", 3),  # every write done, not committed
    Point("committed", 2),  # committed, the process gone before the next batch
    Point("committed", 16),  # the last batch committed: the resume has nothing to do
]


@pytest.mark.parametrize("point", SQLITE_POINTS, ids=lambda p: p.label)
def test_sqlite_ingest_killed_at_a_checkpoint_resumes_to_the_clean_memory(
    book: Book, sqlite_reference: Reference, point: Point, tmp_path: Path
) -> None:
    result = run_point(book, str(tmp_path / "crash.db"), "m", point, sqlite_reference)
    assert result.crash_rc == -9
    assert_resumed_as_clean(result)


def test_sqlite_ingest_killed_by_timing_resumes_to_the_clean_memory(
    book: Book, sqlite_reference: Reference, tmp_path: Path
) -> None:
    # Half-way through a clean run's time (which includes starting Python; with no
    # model library imported the whole run can take under a second, so no fixed floor).
    point = Point("timer", delay=0.5 * sqlite_reference.seconds)
    assert_resumed_as_clean(run_point(book, str(tmp_path / "t.db"), "m", point, sqlite_reference))


# --- Neo4j: the ingest killed, and the server's JVM killed --------------------------------

neo4j = pytest.mark.neo4j


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateNeo4j]:
    try:
        instance = PrivateNeo4j(tmp_path_factory.mktemp("neo4j-crash"))
    except Neo4jUnavailable as exc:
        if os.environ.get("CAM_REQUIRE_NEO4J") == "1":
            pytest.fail(f"CAM_REQUIRE_NEO4J=1 but a private Neo4j instance cannot run: {exc}")
        pytest.skip(str(exc))
    instance.start()
    try:
        yield instance
    finally:
        instance.stop()


@pytest.fixture(scope="module")
def neo4j_reference(book: Book, server: PrivateNeo4j) -> Reference:
    return clean_ingest(book, server.uri, "clean")


NEO4J_POINTS = [
    Point("applied", 3),  # the ingest SIGKILLed inside an open transaction
    Point("applied", 4, target=SERVER),  # the JVM SIGKILLed, a batch written, not committed
    Point("committed", 2, target=SERVER),  # the JVM SIGKILLed right after a commit
    # The connection cut just before the COMMIT is sent: the server rolls the batch back.
    Point("applied", 5, target=DROP),
    # The COMMIT reaches the server and is applied; its reply is lost: the ingest cannot
    # know the batch committed, and the resume must find out from the store.
    Point("applied", 6, target=REPLY),
]


@neo4j
@pytest.mark.parametrize("point", NEO4J_POINTS, ids=lambda p: p.label)
def test_neo4j_ingest_or_server_killed_resumes_to_the_clean_memory(
    book: Book, server: PrivateNeo4j, neo4j_reference: Reference, point: Point, tmp_path: Path
) -> None:
    memory = f"crash{uuid.uuid4().hex[:8]}"
    result = run_point(
        book, server.uri, memory, point, neo4j_reference, server=server, folder=tmp_path
    )
    if point.target != INGEST:
        assert result.crash_rc not in (0, -9), "the ingest should fail with the server gone"
        # One line saying what happened and that the same command resumes.
        assert result.failure.startswith(("Error: lost Neo4j at", "Error: cannot reach Neo4j")), (
            result
        )
        assert result.failure.endswith("run the same command again to resume"), result
    if point.target in (DROP, REPLY):
        # Cut while batch N (point.hit) waited to commit: it is in the store only if
        # its COMMIT reached the server.
        committed = point.hit if point.target == REPLY else point.hit - 1
        assert result.stored_at_failure == {book.path.name: committed * BATCH}, result
    assert_resumed_as_clean(result)
