"""One suite, every store: each backend registered in cam_engine.store.registry, where
its test instance answers (SQLite always; Neo4j when a server answers).

CI starts a local server (docker/neo4j-local) and sets CAM_REQUIRE_NEO4J=1, which
turns "no server" from a skip into a failure, so the Neo4j half can never silently
not run there.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest

from cam_engine.store import registry
from cam_engine.store.base import GraphStore

NEO4J_URI = registry.backend("neo4j").test.location(Path())
# Whether the running test connected to Neo4j, so only such tests clean it up afterwards.
_reached_neo4j = {"now": False}


def unreachable(backend: registry.StoreBackend, location: str, error: Exception) -> NoReturn:
    """Skip the test: the backend's test instance does not answer (a failure instead
    where the backend's ``required_by`` variable is "1")."""
    required_by = backend.test.required_by
    if required_by is not None and os.environ.get(required_by) == "1":
        pytest.fail(f"{required_by}=1 but {backend.title} is not reachable: {error}")
    pytest.skip(backend.test.unreachable.format(location=location))


def reach_or_skip(backend: registry.StoreBackend, location: str) -> None:
    """Probe the backend's test instance at ``location``; skip the test when it does not answer."""
    from cam_engine.errors import StoreError

    if backend.test.probe is None:
        return
    try:
        backend.test.probe(location)
    except StoreError as exc:
        unreachable(backend, location, exc)


def neo4j_or_skip(memory: str) -> GraphStore:
    from cam_engine.errors import StoreError
    from cam_engine.store.neo4j import Neo4jStore

    try:
        store = Neo4jStore.connect(NEO4J_URI, memory)
    except StoreError as exc:
        unreachable(registry.backend("neo4j"), NEO4J_URI, exc)
    _reached_neo4j["now"] = True
    return store


@pytest.fixture(autouse=True)
def _forget_neo4j_use() -> None:
    """Autouse fixtures are set up first: each test starts as not having reached Neo4j."""
    _reached_neo4j["now"] = False


@pytest.fixture(params=registry.names())
def store_location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A store location of each registered backend, skipped where its test instance
    does not answer; Neo4j memories are wiped afterwards (see memory_name)."""
    backend = registry.backend(request.param)
    location = backend.test.location(tmp_path)
    if backend.name == "neo4j":  # marks the test as one whose memory to wipe
        neo4j_or_skip("probe").close()
    else:
        reach_or_skip(backend, location)
    yield location


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
