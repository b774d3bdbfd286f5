"""End to end on real books with the real default embedder (all-MiniLM-L6-v2)."""

from __future__ import annotations

import itertools
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
    assert max(seen_levels) == top, "a chunk's line of parents ends at the top level"


def test_a_book_ends_in_a_small_top_level_that_covers_it(tmp_path: Path) -> None:
    book = shared_file("haystacks/gutenberg/pg1513.txt")  # Romeo and Juliet, 223 chunks
    with Memory.open(tmp_path / "m.db") as memory:
        memory.ingest([book], batch_size=64)
        store = memory.store
        levels = memory.stats()["levels"]
        top = [n.id for n in store.nodes_at_level(levels[-1]["level"])]
        assert 1 <= len(top) <= 10
        # Every clustered level is clearly smaller than the one below it (the covering
        # top level groups roots of several levels, so it is left out).
        clustered = [row for row in levels if row["clusters"] > 0]
        for below, above in itertools.pairwise(clustered):
            assert above["nodes"] <= 0.75 * below["nodes"], (below, above)
        # Few clusters of one member are left (lone chunks join a neighbour's cluster).
        assert levels[0]["single_member_share"] < 0.25
        # traverse from the top reaches every chunk; nothing but the top lacks a parent.
        seen, frontier = set(top), set(top)
        while frontier:
            children = store.members_of(frontier)
            frontier = {c for cs in children.values() for c in cs} - seen
            seen |= frontier
        chunks = {n.id for n in store.nodes_at_level(0)}
        assert chunks <= seen
        everything = {n.id for lv in levels for n in store.nodes_at_level(lv["level"])}
        assert everything - store.parents_of(everything).keys() == set(top)
        # No two nodes have the same text.
        texts = [
            " ".join(n.text.split()) for lv in levels for n in store.nodes_at_level(lv["level"])
        ]
        assert len(texts) == len(set(texts))
        check_memory(store, max_cluster_size=memory.settings.max_cluster_size)
