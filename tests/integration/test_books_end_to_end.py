"""End to end on real books with the real default embedder (all-MiniLM-L6-v2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cam_engine import Memory
from cam_engine.cli.main import cli
from tests.conftest import shared_file
from tests.invariants import check_memory

pytestmark = [pytest.mark.realdata, pytest.mark.model]


def test_two_books_streamed_in_batches_with_a_restart(tmp_path: Path) -> None:
    sabotage = shared_file("haystacks/gutenberg/pg26184.txt")
    romeo = shared_file("haystacks/gutenberg/pg1513.txt")
    store = tmp_path / "books.db"
    env = {"CAM_STORE": str(store)}
    runner = CliRunner()

    first = runner.invoke(cli, ["ingest", str(sabotage), "--batch-size", "32", "--json"], env=env)
    assert first.exit_code == 0, first.output
    batches = [json.loads(line) for line in first.output.splitlines()]
    assert len(batches) >= 2 and all(b["chunks_added"] > 0 for b in batches)
    stats_one = json.loads(runner.invoke(cli, ["stats", "--json"], env=env).output)

    # A new process would reopen the file: here, a new Memory on the same store.
    with Memory.open(store) as memory:
        assert memory.stats()["levels"] == stats_one["levels"]
        report = memory.ingest([romeo], batch_size=64)
        assert not report.errors and report.chunks_added > 100
        check_memory(memory.store, max_cluster_size=memory.settings.max_cluster_size)
        stats_two = memory.stats()

    assert stats_two["documents"] == 2
    level0 = stats_two["levels"][0]
    assert level0["nodes"] == stats_one["levels"][0]["nodes"] + report.chunks_added
    assert level0["edges"] > stats_one["levels"][0]["edges"]
    assert len(stats_two["levels"]) >= 3
    assert stats_two["overlap"] > 0, "ego-splitting should put some chunks in 2+ clusters"

    # Re-ingesting both books is a no-op.
    again = runner.invoke(cli, ["ingest", str(sabotage), str(romeo), "--json"], env=env)
    assert all(json.loads(line)["chunks_added"] == 0 for line in again.output.splitlines())
    assert (
        json.loads(runner.invoke(cli, ["stats", "--json"], env=env).output)["levels"]
        == (stats_two["levels"])
    )


def test_a_chunk_can_be_followed_to_the_top(tmp_path: Path) -> None:
    book = shared_file("haystacks/gutenberg/pg26184.txt")
    with Memory.open(tmp_path / "m.db") as memory:
        memory.ingest([book], batch_size=64)
        chunk = next(iter(memory.store.nodes_at_level(0)))
        view = memory.node(chunk.id)
        assert view is not None
        seen_levels = {0}
        while view.parents:
            view = memory.node(view.parents[0].id)
            assert view is not None
            seen_levels.add(view.node.level)
        top = max(row["level"] for row in memory.stats()["levels"])
    assert max(seen_levels) >= 2
    assert max(seen_levels) <= top
