"""One suite, every store: SQLite always; Neo4j when a server answers.

CI starts a local server (docker/neo4j-local) and sets CAM_REQUIRE_NEO4J=1, which
turns "no server" from a skip into a failure, so the Neo4j half can never silently
not run there.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from cam_engine.store.base import GraphStore

NEO4J_URI = os.environ.get("CAM_TEST_NEO4J_URI", "bolt://127.0.0.1:7687")


def neo4j_or_skip(memory: str) -> GraphStore:
    from cam_engine.errors import StoreError
    from cam_engine.store.neo4j import Neo4jStore

    try:
        return Neo4jStore.connect(NEO4J_URI, memory)
    except StoreError as exc:
        if os.environ.get("CAM_REQUIRE_NEO4J") == "1":
            pytest.fail(f"CAM_REQUIRE_NEO4J=1 but Neo4j is not reachable: {exc}")
        pytest.skip(f"no Neo4j server at {NEO4J_URI} (start one: docker/neo4j-local start)")


@pytest.fixture(params=["sqlite", "neo4j"])
def store_location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A store location with a fresh memory name; Neo4j memories are wiped afterwards."""
    if request.param == "sqlite":
        yield str(tmp_path / "contract.db")
        return
    probe = neo4j_or_skip("probe")
    probe.close()
    yield NEO4J_URI


@pytest.fixture()
def memory_name() -> Iterator[str]:
    name = f"t{uuid.uuid4().hex[:12]}"
    yield name
    if NEO4J_URI:
        try:
            from cam_engine.store.neo4j import Neo4jStore

            store = Neo4jStore.connect(NEO4J_URI, name)
        except Exception:
            return
        with store.transaction():
            store.clear(keep_chunks=False)
        store.close()
