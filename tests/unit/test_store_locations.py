"""Where a memory lives, and names checked whole: the default store's folder (XDG),
store locations that cannot hold a memory, credentials never echoed, and names with a
trailing newline refused."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from cam_engine import Environment, Memory
from cam_engine.cli.main import cli
from cam_engine.config import default_store_path, redact_credentials, validate_memory_name
from cam_engine.errors import CamError, ConfigError, PromptError, StoreError
from cam_engine.llm.prompts import load_prompt
from cam_engine.memory import memories_in
from cam_engine.store.base import open_store
from cam_engine.store.cypher import check_identifier, load_query
from cam_engine.store.sqlite import SqliteStore

PASSWORD = "hunter2"


@pytest.mark.parametrize("name", ["book\n", "book\r\n", "a\nb"])
def test_a_memory_name_with_a_new_line_is_refused(name: str) -> None:
    with pytest.raises(ConfigError, match="invalid memory name"):
        validate_memory_name(name)


def test_other_names_checked_by_pattern_are_checked_whole() -> None:
    with pytest.raises(StoreError, match="invalid index"):
        check_identifier("chunk_vectors\n", "index")
    with pytest.raises(StoreError, match="invalid query name"):
        load_query("upsert_chunks\n")
    with pytest.raises(PromptError, match="invalid prompt name"):
        load_prompt("summarize\n")


def test_a_relative_xdg_data_home_is_ignored() -> None:
    home_default = Path.home() / ".local" / "share" / "cam" / "memory.db"
    assert default_store_path({"XDG_DATA_HOME": "data"}) == home_default
    assert default_store_path({"XDG_DATA_HOME": ""}) == home_default
    assert default_store_path({"XDG_DATA_HOME": "/srv/data"}) == Path("/srv/data/cam/memory.db")
    assert Environment.from_env({"XDG_DATA_HOME": "data"}).store == str(home_default)


@pytest.fixture()
def umask_022() -> Iterator[None]:
    """The usual umask, under which a folder made with the default mode is 0755."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def test_store_folders_are_made_private(tmp_path: Path, umask_022: None) -> None:
    SqliteStore(tmp_path / "data" / "cam" / "memory.db", "m").close()
    for folder in (tmp_path / "data", tmp_path / "data" / "cam"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


@pytest.mark.parametrize("location", ["", " ", ":memory:"])
def test_a_store_that_cannot_hold_a_memory_is_one_clear_error(
    location: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    env = Environment.from_env({"CAM_STORE": str(tmp_path / "default.db")})
    for attempt in (
        lambda: Memory.open(location, "m", environment=env),
        lambda: memories_in(location, env),
    ):
        with pytest.raises(ConfigError) as refused:
            attempt()
        assert "\n" not in str(refused.value)
    assert list(tmp_path.iterdir()) == []  # neither the default store nor a ":memory:" file
    assert "default.db" not in str(refused.value)
    xdg = {"CAM_STORE": "", "XDG_DATA_HOME": str(tmp_path / "xdg")}
    result = CliRunner().invoke(cli, ["stats", "--store", location], env=xdg)
    assert result.exit_code == 1
    assert result.output.startswith("Error: ") and len(result.output.splitlines()) == 1


@pytest.mark.parametrize(
    "location",
    [
        f"bolt://neo4j:{PASSWORD}@127.0.0.1:7687",
        f"neo4j+s://neo4j:{PASSWORD}@db.example.com",
        f"bolt://{PASSWORD}@127.0.0.1:7687",
    ],
)
def test_credentials_in_a_neo4j_uri_are_refused_and_never_shown(location: str) -> None:
    with pytest.raises(ConfigError) as refused:
        open_store(location, "m", Environment.from_env({}))
    message = str(refused.value)
    assert PASSWORD not in message
    assert "***@" in message and "CAM_NEO4J_PASSWORD" in message
    result = CliRunner().invoke(cli, ["stats", "--store", location])
    assert result.exit_code == 1 and PASSWORD not in result.output
    assert PASSWORD not in repr(Environment.from_env({"CAM_STORE": location}))


@pytest.mark.parametrize(
    ("location", "shown"),
    [
        (f"http://me:{PASSWORD}@host/x", "http://***@host/x"),
        (f"bolt:/neo4j:{PASSWORD}@host:7687", "bolt:/***@host:7687"),
        ("/home/me@work/memory.db", "/home/me@work/memory.db"),
        ("bolt://127.0.0.1:7687", "bolt://127.0.0.1:7687"),
    ],
)
def test_store_locations_are_shown_without_credentials(location: str, shown: str) -> None:
    assert redact_credentials(location) == shown
    if location.startswith(("http", "bolt:/n")):
        with pytest.raises(CamError) as refused:
            open_store(location, "m", Environment.from_env({}))
        assert PASSWORD not in str(refused.value)
