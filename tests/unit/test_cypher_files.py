"""Every Cypher file loads, declares exactly the parameters it uses, and takes values
only as parameters."""

from __future__ import annotations

from importlib import resources

import pytest

from cam_engine.errors import StoreError
from cam_engine.store.cypher import (
    check_identifier,
    declared_parameters,
    is_read_only,
    load_query,
    statements,
    used_parameters,
)

NAMES = sorted(
    p.name.removesuffix(".cypher")
    for p in resources.files("cam_engine.cypher").iterdir()
    if p.name.endswith(".cypher")
)


def test_there_are_cypher_files() -> None:
    assert len(NAMES) > 20


@pytest.mark.parametrize("name", NAMES)
def test_declared_parameters_match_used_ones(name: str) -> None:
    text = load_query(name)
    assert declared_parameters(text) == used_parameters(text), name


@pytest.mark.parametrize("name", NAMES)
def test_no_python_formatting_placeholders(name: str) -> None:
    text = load_query(name)
    for statement in statements(name):
        assert "{}" not in statement and "%s" not in statement
    # every query is scoped to one memory, except those about the database itself
    database_wide = {"schema", "count_vectors", "memories", "await_indexes", "index_exists"}
    assert "memory" in declared_parameters(text) or name in database_wide


def test_bad_names_are_refused() -> None:
    with pytest.raises(StoreError):
        load_query("../secrets")
    with pytest.raises(StoreError):
        load_query("no_such_query")
    with pytest.raises(StoreError, match="invalid index name"):
        check_identifier("x) DETACH DELETE n //", "index name")
    assert check_identifier("cam_embedding", "index name") == "cam_embedding"


WRITE_PREFIXES = ("upsert_", "delete_", "set_", "save_", "clear_", "lock_", "allocate_", "link_")


@pytest.mark.parametrize("name", NAMES)
def test_writes_are_never_run_as_retried_reads(name: str) -> None:
    """Neo4jStore runs read-only files as managed read transactions, which the driver
    may run again: a write misread as a read could be applied twice, or refused."""
    if name.startswith(WRITE_PREFIXES) or name == "schema":
        assert not is_read_only(name), name


def test_reads_are_recognised_and_comments_do_not_count() -> None:
    assert is_read_only("get_nodes") and is_read_only("counters") and is_read_only("stats")
    # counters.cypher's comment says "packed"; set_counters' says "Sets": only code counts.
    assert not is_read_only("set_counters") and not is_read_only("lock_generation")
