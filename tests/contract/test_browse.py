"""``cam browse`` prints Cypher that runs against the memory in Neo4j."""

from __future__ import annotations

import json
import re

from click.testing import CliRunner

from cam_engine import Memory, Settings
from cam_engine.cli.main import cli
from cam_engine.embed import HashingEmbedder
from tests.conftest import shared_file
from tests.contract.conftest import NEO4J_URI, neo4j_or_skip


def test_browse_queries_run_and_return_the_memory(memory_name: str) -> None:
    neo4j_or_skip(memory_name).close()
    embedder = HashingEmbedder(64)
    settings = Settings(embed_model=embedder.name, theta=0.3, chunk_tokens=60)
    text = shared_file("haystacks/paul_graham/gap.txt").read_text()[:6000]
    with Memory.open(NEO4J_URI, memory_name, settings=settings, embedder=embedder) as memory:
        memory.ingest_text(text, "gap", batch_size=8)
        chunk = next(iter(memory.store.nodes_at_level(0))).id
        summary = next(iter(memory.store.nodes_at_level(1))).id
    env = {"CAM_STORE": NEO4J_URI, "CAM_MEMORY": memory_name, "CAM_EMBED_MODEL": embedder.name}
    result = CliRunner().invoke(
        cli, ["browse", "--node", summary, "--question", "how do startups get funded"], env=env
    )
    assert result.exit_code == 0, result.output
    assert "http://127.0.0.1:7474/browser/" in result.output
    params = dict(re.findall(r"^:param (\w+) => (.+)$", result.output, re.MULTILINE))
    values = {name: json.loads(value) for name, value in params.items()}
    assert values["memory"] == memory_name and values["node"] == summary
    assert len(values["nodes"]) == 10
    queries = [q.strip() for q in re.split(r"^// .*$", result.output, flags=re.MULTILINE)[1:]]
    assert len(queries) == 4
    store = neo4j_or_skip(memory_name)
    try:
        for query in queries:
            rows = store._driver.execute_query(query, values).records
            assert rows, query
        values["node"] = chunk
        rows = store._driver.execute_query(queries[2], values).records
        assert any(row["s"] is not None for row in rows), "a chunk has a parent summary"
    finally:
        store.close()


def test_browse_refuses_a_sqlite_store(tmp_path) -> None:  # type: ignore[no-untyped-def]
    result = CliRunner().invoke(cli, ["browse", "--store", str(tmp_path / "m.db")])
    assert result.exit_code == 1 and "needs a memory in Neo4j" in result.output
