"""Every Cypher file loads, declares exactly the parameters it uses, and takes values
only as parameters."""

from __future__ import annotations

from importlib import resources

import pytest

from cam_engine.errors import StoreError
from cam_engine.store.cypher import (
    check_identifier,
    declared_parameters,
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
