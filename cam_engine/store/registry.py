"""Which store backend serves a location: one entry per backend.

An entry names the backend, the URI schemes it serves (the path backend, SQLite,
serves the locations that are not URIs), the class to import when a location needs
it (``module:Class``, imported lazily so that a backend's driver is only loaded when
used), the extra that installs its packages, and how the contract suite
(tests/contract) reaches a test instance of it. ``open_store`` (store.base) and the
contract suite read the entries; a new backend is its module plus one ``register``.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from cam_engine.config import Environment
from cam_engine.errors import ConfigError
from cam_engine.extras import NEO4J, require_extra

if TYPE_CHECKING:
    from cam_engine.store.base import GraphStore


class StoreClass(Protocol):
    """What a backend's class offers the registry: a store for a location."""

    @classmethod
    def open_location(
        cls, location: str, memory: str, environment: Environment | None, *, create: bool
    ) -> GraphStore: ...


@dataclass(frozen=True)
class TestInstance:
    """Where the contract suite finds a store of this backend, and whether it answers."""

    location: Callable[[Path], str]  # a test's temporary folder -> the location
    # Connects to ``location`` and raises a StoreError when nothing answers; None: always there.
    probe: Callable[[str], None] | None = None
    unreachable: str = ""  # the skip reason when the probe fails; {location} is filled in
    # An environment variable that, set to "1", makes an unreachable instance a failure
    # (CI sets it where it starts a server, so that half of the suite cannot vanish).
    required_by: str | None = None


@dataclass(frozen=True)
class StoreBackend:
    name: str  # as benchmarks and the contract suite's test ids name it
    title: str  # as messages name it: "the {title} store"
    schemes: frozenset[str]  # lower case; empty for the path backend
    target: str  # "module:Class", the class implementing GraphStore with open_location
    test: TestInstance
    extra: str | None = None  # the pip extra that installs what the module needs
    extra_module: str | None = None  # the import that shows the extra is installed

    def store_class(self) -> StoreClass:
        if self.extra is not None and self.extra_module is not None:
            require_extra(self.extra_module, self.extra, f"the {self.title} store")
        module, _, name = self.target.partition(":")
        return cast(StoreClass, getattr(importlib.import_module(module), name))

    def open(
        self, location: str, memory: str, environment: Environment | None, *, create: bool
    ) -> GraphStore:
        return self.store_class().open_location(location, memory, environment, create=create)


PATH_BACKEND = "sqlite"  # serves every location that is not a URI
_BACKENDS: dict[str, StoreBackend] = {}


def register(backend: StoreBackend) -> None:
    """Add a backend; a name or URI scheme another backend holds is a ``ConfigError``."""
    if backend.name in _BACKENDS:
        raise ConfigError(f"a store backend named {backend.name!r} is already registered")
    for other in _BACKENDS.values():
        taken = sorted(backend.schemes & other.schemes)
        if taken:
            raise ConfigError(
                f"store URI scheme {taken[0]!r} is already served by the {other.name} "
                f"backend: backend {backend.name!r} cannot register it"
            )
    _BACKENDS[backend.name] = backend


def unregister(name: str) -> None:
    _BACKENDS.pop(name, None)


def backends() -> Iterator[StoreBackend]:
    """Every registered backend, in the order registered (the contract suite runs each)."""
    return iter(list(_BACKENDS.values()))


def names() -> list[str]:
    """The registered backends' names: the contract suite's store_location runs each."""
    return list(_BACKENDS)


def backend(name: str) -> StoreBackend:
    return _BACKENDS[name]


def backend_for_scheme(scheme: str) -> StoreBackend | None:
    """The backend serving a URI scheme (any case), or None when none does."""
    lowered = scheme.lower()
    return next((b for b in _BACKENDS.values() if lowered in b.schemes), None)


def uri_schemes() -> frozenset[str]:
    return frozenset(s for b in _BACKENDS.values() for s in b.schemes)


def _probe_neo4j(location: str) -> None:
    from cam_engine.store.neo4j import Neo4jStore

    Neo4jStore.connect(location, "probe").close()


register(
    StoreBackend(
        name=PATH_BACKEND,
        title="SQLite",
        schemes=frozenset(),
        target="cam_engine.store.sqlite:SqliteStore",
        test=TestInstance(location=lambda folder: str(folder / "contract.db")),
    )
)
register(
    StoreBackend(
        name="neo4j",
        title="Neo4j",
        schemes=frozenset({"neo4j", "neo4j+s", "neo4j+ssc", "bolt", "bolt+s", "bolt+ssc"}),
        target="cam_engine.store.neo4j:Neo4jStore",
        extra=NEO4J,
        extra_module="neo4j",
        test=TestInstance(
            location=lambda _folder: os.environ.get("CAM_TEST_NEO4J_URI", "bolt://127.0.0.1:7687"),
            probe=_probe_neo4j,
            unreachable="no Neo4j server at {location} (start one: docker/neo4j-local start)",
            required_by="CAM_REQUIRE_NEO4J",
        ),
    )
)
