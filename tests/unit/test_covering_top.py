"""The covering top level: never larger than what it covers, every chunk under it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cam_engine import Memory, Settings
from cam_engine.embed import HashingEmbedder
from cam_engine.engine.summaries import COVER, TOP_SIZE
from cam_engine.types import Node
from tests.conftest import shared_file
from tests.invariants import check_covering_levels, check_memory

EMBEDDER = HashingEmbedder(64)
SETTINGS = Settings(embed_model=EMBEDDER.name, alpha=0.6, theta=0.3, chunk_tokens=40)

SENTENCES = [
    "The whale rose beside the ship and the crew ran to the boats.",
    "Elizabeth walked to Netherfield through the wet fields in the morning.",
    "The creature watched the cottagers through a chink in the wall.",
    "Sir William Lucas had made a tolerable fortune in trade at Meryton.",
    "Ahab nailed a gold doubloon to the mast for the first man to sight the whale.",
    "Victor worked through the night in his chamber at Ingolstadt.",
]


def open_memory(path: Path) -> Memory:
    return Memory.open(path / "m.db", "test", settings=SETTINGS, embedder=EMBEDDER)


def top_and_below(memory: Memory) -> tuple[int, int]:
    """Nodes of the top level, and the roots it covers (its members)."""
    _, top = memory.top_level()
    covered = {m for ms in memory.store.members_of([n.id for n in top]).values() for m in ms}
    return len(top), len(covered)


def test_roots_that_fit_the_top_get_one_covering_node(tmp_path: Path) -> None:
    # Repeated sentences in small batches: equal chunks give equal summaries, and a
    # summary repeating another is not kept, so a few summaries and lone chunks are the
    # roots (5 here, of levels 0 and 1). Grouped in pairs they made a top of 2 nodes.
    text = "\n\n".join(SENTENCES[i] for i in (0, 0, 3) for _ in range(4))
    with open_memory(tmp_path) as memory:
        memory.ingest_text(text, "doc", batch_size=2)
        check_memory(memory.store, max_cluster_size=SETTINGS.max_cluster_size)
        level, top = memory.top_level()
        below = list(memory.store.nodes_at_level(level - 1))
        nodes, covered = top_and_below(memory)
    assert all(n.props.get(COVER) for n in top)
    assert covered <= TOP_SIZE
    assert nodes == len(top) == 1 <= len(below)


def test_a_short_essay_has_a_top_no_larger_than_the_level_below(tmp_path: Path) -> None:
    essay = shared_file("haystacks/paul_graham/addiction.txt").read_text(encoding="utf-8")
    with open_memory(tmp_path) as memory:
        memory.ingest_text(essay[:6000], "addiction")
        check_memory(memory.store, max_cluster_size=SETTINGS.max_cluster_size)
        level, top = memory.top_level()
        assert len(top) <= len(list(memory.store.nodes_at_level(level - 1)))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    picks=st.lists(st.integers(0, len(SENTENCES) - 1), min_size=2, max_size=60),
    repeat=st.integers(1, 4),
    batch=st.integers(2, 16),
)
@example(picks=[0, 0, 3], repeat=4, batch=2)  # 5 roots of two levels: 2 top nodes before
@example(picks=[0, 1, 3], repeat=3, batch=2)
@example(picks=[0] * 9 + [1], repeat=3, batch=2)  # 1 summary and 13 lone chunks as roots
def test_the_top_is_never_larger_than_what_it_covers(
    tmp_path_factory: pytest.TempPathFactory, picks: list[int], repeat: int, batch: int
) -> None:
    # Small graphs: a few sentences, often repeated (equal chunks, dropped summaries,
    # lone roots at several levels).
    text = "\n\n".join(SENTENCES[i] for i in picks for _ in range(repeat))
    with open_memory(tmp_path_factory.mktemp("top")) as memory:
        memory.ingest_text(text, "doc", batch_size=batch)
        check_covering_levels(memory.store)  # fewer nodes than the roots each level covers
        _, top = memory.top_level()
        assert len(top) <= TOP_SIZE
        # Not "no larger than the level below": the roots can be mostly lone chunks of
        # level 0 (repeated text), e.g. 14 roots of which one summary -> 2 covering nodes.
        assert reachable(memory, top) == {n.id for n in memory.chunks()}


def reachable(memory: Memory, top: list[Node]) -> set[str]:
    """The chunks under the top level."""
    seen = frontier = {n.id for n in top}
    while frontier:
        children = memory.store.members_of(frontier)
        frontier = {c for cs in children.values() for c in cs} - seen
        seen = seen | frontier
    return {i for i in seen if i in {n.id for n in memory.chunks()}}
