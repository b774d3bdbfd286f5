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
# Whether the running test connected to Neo4j, so only such tests clean it up afterwards.
_reached_neo4j = {"now": False}


def neo4j_or_skip(memory: str) -> GraphStore:
    from cam_engine.errors import StoreError
    from cam_engine.store.neo4j import Neo4jStore

    try:
        store = Neo4jStore.connect(NEO4J_URI, memory)
    except StoreError as exc:
        if os.environ.get("CAM_REQUIRE_NEO4J") == "1":
            pytest.fail(f"CAM_REQUIRE_NEO4J=1 but Neo4j is not reachable: {exc}")
        pytest.skip(f"no Neo4j server at {NEO4J_URI} (start one: docker/neo4j-local start)")
    _reached_neo4j["now"] = True
    return store


@pytest.fixture(autouse=True)
def _forget_neo4j_use() -> None:
    """Autouse fixtures are set up first: each test starts as not having reached Neo4j."""
    _reached_neo4j["now"] = False


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
def neo4j_location() -> str:
    """The Neo4j server, for tests that compare it with a SQLite reference; skips without one."""
    neo4j_or_skip("probe").close()
    return NEO4J_URI


@pytest.fixture()
def memory_name() -> Iterator[str]:
    """A fresh memory name; its Neo4j memory is wiped afterwards if the test reached Neo4j."""
    name = f"t{uuid.uuid4().hex[:12]}"
    yield name
    if not _reached_neo4j["now"]:
        return
    from cam_engine.store.neo4j import Neo4jStore

    store = Neo4jStore.connect(NEO4J_URI, name)
    with store.transaction():
        store.clear(keep_chunks=False)
    store.close()
