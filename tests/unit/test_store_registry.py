"""The store registry: a backend registered from outside the package (here a toy
``mem://NAME`` scheme, a SQLite file per name) is opened by ``Memory.open``, is among
the backends the contract suite runs, and a URI scheme can be registered only once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from cam_engine import ConfigError, Environment, Memory
from cam_engine.embed import HashingEmbedder
from cam_engine.store import registry
from cam_engine.store.base import backend_name, is_neo4j_uri, open_store
from cam_engine.store.sqlite import SqliteStore

EMBEDDER = HashingEmbedder(64)
NO_ENV = Environment.from_env({})
PREFIX = "mem://"


class MemStore(SqliteStore):
    """mem://NAME: the SQLite file NAME.db in one folder (the test's temporary one)."""

    folder: ClassVar[Path]

    @classmethod
    def open_location(
        cls, location: str, memory: str, environment: Environment | None, *, create: bool
    ) -> MemStore:
        return cls(cls.folder / f"{location.removeprefix(PREFIX)}.db", memory)


def mem_backend(
    name: str = "mem", schemes: frozenset[str] = frozenset({"mem"})
) -> registry.StoreBackend:
    return registry.StoreBackend(
        name=name,
        title="toy",
        schemes=schemes,
        target=f"{__name__}:MemStore",
        test=registry.TestInstance(location=lambda folder: f"{PREFIX}contract"),
    )


@pytest.fixture()
def mem_registered(tmp_path: Path) -> Iterator[Path]:
    MemStore.folder = tmp_path
    registry.register(mem_backend())
    try:
        yield tmp_path
    finally:
        registry.unregister("mem")


def test_a_registered_backend_serves_its_scheme(mem_registered: Path) -> None:
    with Memory.open("mem://book", "m", embedder=EMBEDDER, environment=NO_ENV) as memory:
        assert isinstance(memory.store, MemStore)
        memory.ingest_text(
            "Victor went at last to the remotest of the Orkneys to build the second creature.\n\n"
            "The weather was cold in that northern place.",
            "book",
        )
        result = memory.ask("Where did Victor go to build the second creature?")
    assert "Orkneys" in result.answer
    assert (mem_registered / "book.db").is_file()  # the toy's file, nowhere else
    assert backend_name("MEM://book") == "mem"
    assert not is_neo4j_uri("mem://book")


def test_the_contract_suite_runs_every_registered_backend(mem_registered: Path) -> None:
    assert registry.names() == ["sqlite", "neo4j", "mem"]
    assert registry.backend("mem").test.location(mem_registered) == "mem://contract"


def test_an_unregistered_scheme_is_unknown_again(tmp_path: Path) -> None:
    MemStore.folder = tmp_path
    registry.register(mem_backend())
    registry.unregister("mem")
    assert registry.names() == ["sqlite", "neo4j"]
    with pytest.raises(ConfigError, match="unknown store URI scheme 'mem'"):
        open_store("mem://book", "m", NO_ENV)


def test_a_scheme_is_served_by_one_backend_only(mem_registered: Path) -> None:
    with pytest.raises(ConfigError, match="scheme 'bolt' is already served by the neo4j backend"):
        registry.register(mem_backend("other", frozenset({"bolt", "other"})))
    with pytest.raises(ConfigError, match="backend named 'mem' is already registered"):
        registry.register(mem_backend("mem", frozenset({"mem2"})))
    assert registry.names() == ["sqlite", "neo4j", "mem"]


def test_the_built_in_backends_keep_their_locations() -> None:
    assert backend_name("/tmp/m.db") == "sqlite"
    assert backend_name("relative/m.db") == "sqlite"
    for scheme in ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "NEO4J+SSC"):
        assert backend_name(f"{scheme}://localhost:7687") == "neo4j"
        assert is_neo4j_uri(f"{scheme}://localhost:7687")
    assert registry.backend("neo4j").extra == "neo4j"
