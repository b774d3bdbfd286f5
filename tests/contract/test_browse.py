"""``cam browse`` prints Cypher that runs against the memory in Neo4j."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from cam_engine import Environment, Memory, Settings
from cam_engine.cli.browse import browser_url, style_sheet
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
    lines = result.output.splitlines()
    # The test server has auth disabled: Browser opens with "No authentication" chosen.
    url = browser_url(NEO4J_URI, Environment.from_env(env))
    assert lines[0] == f"Neo4j Browser: {url}" and "preselectAuthMethod=NO_AUTH&dbms=" in url
    assert lines[3] == style_sheet()[0]
    params = dict(re.findall(r"^:param (\w+) => (.+)$", result.output, re.MULTILINE))
    values = {name: json.loads(value) for name, value in params.items()}
    assert values["memory"] == memory_name and values["node"] == summary
    assert len(values["nodes"]) == 10
    queries = [q.strip() for q in re.split(r"^// .*$", result.output, flags=re.MULTILINE)[1:]]
    assert len(queries) == 6
    store = neo4j_or_skip(memory_name)
    try:
        for query in queries:
            rows = store._driver.execute_query(query, values).records
            assert rows, query
        values["node"] = chunk
        rows = store._driver.execute_query(queries[4], values).records
        assert any(row["s"] is not None for row in rows), "a chunk has a parent summary"
    finally:
        store.close()


def test_browse_refuses_a_sqlite_store(tmp_path) -> None:  # type: ignore[no-untyped-def]
    result = CliRunner().invoke(cli, ["browse", "--store", str(tmp_path / "m.db")])
    assert result.exit_code == 1 and "needs a memory in Neo4j" in result.output


def saved_queries() -> dict[str, str]:
    """The numbered queries of cypher/browser/saved-queries.cypher, comments dropped."""
    text = (Path(__file__).parents[2] / "cypher" / "browser" / "saved-queries.cypher").read_text()
    blocks = re.split(r"^// (\d+[ab]?)\. ", text, flags=re.MULTILINE)[1:]
    return {
        number: "\n".join(
            line for line in body.splitlines() if line.strip() and not line.startswith("//")
        ).split("\n", 1)[1]  # the first line is the rest of the title
        for number, body in zip(blocks[::2], blocks[1::2], strict=True)
    }


def test_saved_view_queries_show_pages_and_memory_states(memory_name: str) -> None:
    from cam_engine.adapters import memagent, readagent

    neo4j_or_skip(memory_name).close()
    embedder = HashingEmbedder(64)
    settings = Settings(embed_model=embedder.name, theta=0.3)
    text = shared_file("haystacks/gutenberg/pg84.txt").read_text()[:20000]
    with Memory.open(NEO4J_URI, memory_name, settings=settings, embedder=embedder) as memory:
        memory.ingest_text(text, "frankenstein", batch_size=32)
        readagent.build_view(memory, None, None)
        memagent.answer(memory, "Who is Walton writing to?", None, chunk_tokens=1500)
    queries = saved_queries()
    assert set(queries) == {"1", "2", "3a", "3b", "4", "5", "6", "7", "8", "9", "10", "11"}
    store = neo4j_or_skip(memory_name)
    try:
        pages = store._driver.execute_query(queries["7"], {"memory": memory_name}).records
        assert len(pages) == 1 and pages[0]["covers"] and pages[0]["order"]
        steps = store._driver.execute_query(queries["8"], {"memory": memory_name}).records
        assert [r["step"] for r in steps] == list(range(1, len(steps) + 1))
        assert steps[-1]["final"] is True and all(r["chunks_read"] > 0 for r in steps[:-1])
    finally:
        store.close()


def test_saved_name_queries_show_the_name_graph(memory_name: str) -> None:
    neo4j_or_skip(memory_name).close()
    embedder = HashingEmbedder(64)
    settings = Settings(embed_model=embedder.name, theta=0.3, chunk_tokens=24)
    text = "\n\n".join(
        [
            "In 1851 Captain Ahab sailed from Nantucket with Queequeg and Starbuck.",
            "On the voyage Starbuck doubted Ahab, and Queequeg carved his coffin.",
            "Far from Nantucket the crew of the Pequod saw the white whale.",
        ]
    )
    with Memory.open(NEO4J_URI, memory_name, settings=settings, embedder=embedder) as memory:
        memory.ingest_text(text, "moby", batch_size=8)
        chunk = next(n.id for n in memory.store.nodes_at_level(0) if n.position == 0)
    queries = saved_queries()
    values = {"memory": memory_name, "node": chunk, "name": "queequeg"}
    store = neo4j_or_skip(memory_name)
    try:
        around = store._driver.execute_query(queries["9"], values).records
        assert len(around) == 5  # 1851, ahab, nantucket, queequeg, starbuck
        assert any(row["shared"] for row in around)
        shared = store._driver.execute_query(queries["10"], values).records
        assert len(shared) == 1 and len(shared[0]["paths"]) == 2 and shared[0]["shared"]
        names = store._driver.execute_query(queries["11"], values).records
        assert names[0]["chunks"] == 2 and {r["name"] for r in names} >= {"pequod", "1851"}
    finally:
        store.close()
