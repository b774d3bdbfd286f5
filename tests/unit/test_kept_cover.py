"""The covering levels kept between batches past ``REGROUP_ROOTS`` (engine/cover.py).

``REGROUP_ROOTS`` is lowered here so that memories of a few hundred chunks are past
it: the kept path is the same code at any size.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cam_engine import Memory, Settings
from cam_engine.embed import HashingEmbedder
from cam_engine.engine import cover, summaries
from cam_engine.types import COVER
from tests import invariants
from tests.conftest import shared_file
from tests.invariants import check_memory, check_structure_is_stored

EMBEDDER = HashingEmbedder(64)
LIMIT = 30
# Words that do not cluster: almost every chunk stays a root.
LINE_SETTINGS = Settings(embed_model=EMBEDDER.name, chunk_tokens=16)


@pytest.fixture
def kept_paths(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """``REGROUP_ROOTS`` lowered; the result of each kept-levels update, in order:
    "kept" (brought up to date) or "regrouped" (taken down and grouped again)."""
    monkeypatch.setattr(cover, "REGROUP_ROOTS", LIMIT)
    monkeypatch.setattr(summaries, "REGROUP_ROOTS", LIMIT)
    paths: list[str] = []
    update = cover.update_kept_cover

    def spy(*args: Any, **kwargs: Any) -> Any:
        result = update(*args, **kwargs)
        paths.append("kept" if result is None else "regrouped")
        return result

    monkeypatch.setattr(summaries, "update_kept_cover", spy)
    return paths


def random_line(chunks: int, seed: int) -> str:
    rng = random.Random(seed)
    words = ["".join(rng.choices("abcdefghijklmnop", k=rng.randint(2, 9))) for _ in range(2000)]
    return " ".join(rng.choices(words, k=16 * chunks))


def checked(memory: Memory, settings: Settings) -> Callable[[Any], None]:
    """A batch callback checking the memory and the structure the writer holds."""

    def check(_: Any) -> None:
        check_memory(memory.store, max_cluster_size=settings.max_cluster_size)
        check_structure_is_stored(memory._pipeline().writer.structure, memory.store)

    return check


def covering_ids(memory: Memory) -> dict[int, set[str]]:
    levels: dict[int, set[str]] = {}
    for level in memory.store.levels():
        ids = {n.id for n in memory.store.nodes_at_level(level) if n.props.get(COVER)}
        if ids:
            levels[level] = ids
    return levels


def graph(memory: Memory) -> list[tuple[Any, ...]]:
    """Every node (id, level, text, props) with its members."""
    store = memory.store
    nodes = [n for level in store.levels() for n in store.nodes_at_level(level)]
    members = store.members_of([n.id for n in nodes])
    return sorted(
        (n.id, n.level, n.text, repr(sorted(n.props.items())), sorted(members.get(n.id, ())))
        for n in nodes
    )


def test_a_batch_rewrites_only_the_covering_nodes_it_reaches(
    tmp_path: Path, kept_paths: list[str]
) -> None:
    with Memory.open(tmp_path / "m.db", "t", settings=LINE_SETTINGS, embedder=EMBEDDER) as m:
        m.ingest_text(random_line(600, 1), "first", batch_size=64)
        before = covering_ids(m)
        kept_paths.clear()
        report = m.ingest_text(random_line(20, 2), "second", batch_size=64).batches[-1]
        check_memory(m.store, max_cluster_size=LINE_SETTINGS.max_cluster_size)
        check_structure_is_stored(m._pipeline().writer.structure, m.store)
        after = covering_ids(m)
        roots = m.stats()["roots"]
    assert kept_paths == ["kept"]
    first = min(before)
    assert min(after) == first, "no clustered level grew: the covering levels stay put"
    assert len(before[first]) > 20, "a first covering level of many groups"
    unchanged = before[first] & after[first]
    # 20 new roots reach at most 20 groups of the first covering level, and one group
    # per written node above it.
    assert len(before[first] - unchanged) <= 20
    assert report.top_summaries_written <= 20 + sum(len(ids) for ids in after.values()) - len(
        after[first]
    )
    assert roots == len(after[max(after)]) <= summaries.TOP_SIZE


def test_a_new_process_continues_the_kept_levels_as_the_writer_would(
    tmp_path: Path, kept_paths: list[str]
) -> None:
    """The group sums a process keeps between batches equal those a new process builds
    from the stored groups: one process per document gives the memory one process
    gives."""
    texts = [random_line(150, seed) for seed in range(4)]
    with Memory.open(tmp_path / "one.db", "t", settings=LINE_SETTINGS, embedder=EMBEDDER) as m:
        for i, text in enumerate(texts):
            m.ingest_text(text, f"doc{i}", batch_size=40)
        one = graph(m)
    assert kept_paths.count("kept") >= 8
    for i, text in enumerate(texts):
        with Memory.open(tmp_path / "many.db", "t", settings=LINE_SETTINGS, embedder=EMBEDDER) as m:
            m.ingest_text(text, f"doc{i}", batch_size=40)
            many = graph(m)
    assert many == one


def test_the_covering_levels_move_when_the_clustered_levels_grow(
    tmp_path: Path, kept_paths: list[str]
) -> None:
    """A book whose clustered levels grow while its covering levels are kept: a batch
    that adds a clustered level takes the covering levels down and groups them again one
    level higher; the memory and the held structure stay sound after every batch."""
    words = shared_file("haystacks/gutenberg/pg84.txt").read_text(encoding="utf-8").split()
    text = " ".join(words[3000:15000])
    settings = Settings(embed_model=EMBEDDER.name, alpha=0.6, theta=0.35, chunk_tokens=40)
    with Memory.open(tmp_path / "m.db", "t", settings=settings, embedder=EMBEDDER) as m:
        m.ingest_text(text, "book", batch_size=16, on_batch=checked(m, settings))
    assert "kept" in kept_paths
    assert "regrouped" in kept_paths, "a clustered level grew under kept covering levels"


def test_taking_down_a_level_removes_the_nodes_that_lost_every_member(tmp_path: Path) -> None:
    """After a batch rewrote the level below, several covering nodes of a level may
    have no member left: taking the level down removes each of them (keyed by level
    and members, all but one of them were left in the memory, with no member)."""
    from cam_engine.engine.reports import BatchReport
    from cam_engine.engine.summaries import SummaryWriter
    from cam_engine.engine.timing import PhaseClock
    from cam_engine.llm import ExtractiveSummarizer

    with Memory.open(tmp_path / "m.db", "t", settings=LINE_SETTINGS, embedder=EMBEDDER) as m:
        m.ingest_text(random_line(300, 5), "doc", batch_size=64)
        clock = PhaseClock()
        with m._pipeline().writer.batch(clock) as store:
            top = store.cover_levels()[-1]
            emptied = store.cover_ids(top)[:2]
            assert len(emptied) == 2
            store.set_members({node: set() for node in emptied}, top)
            writer = SummaryWriter(store, EMBEDDER, ExtractiveSummarizer(), LINE_SETTINGS, clock)
            report = BatchReport("doc", 1)
            old = writer.take_down([top], report)
            assert store.cover_ids(top) == []
            assert report.top_summaries_removed == 2
            assert all(members for _, members in old)


def test_a_level_shift_starts_each_covering_level_from_its_old_groups(
    tmp_path: Path, kept_paths: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the clustered levels grow under kept covering levels, every covering level
    is written again one level higher, under new ids. Each level above the first still
    starts from its old groups, read through the nodes that took their places: merged
    pair by pair from nothing, a level costs the square of its roots (10 minutes and
    2.7 GB for one batch at 2.2x10^5 chunks). Small limits make a small book show it:
    with the old groups lost, levels of 175 and 60 roots were merged from nothing."""
    for module in (summaries, cover, invariants):
        monkeypatch.setattr(module, "TOP_SIZE", 2)
    for module in (summaries, cover):
        monkeypatch.setattr(module, "REGROUP_ROOTS", 6)
    merged_from_nothing: list[int] = []
    group_roots = summaries.group_roots

    def spy(vectors: Any, docs: Any, positions: Any, **options: Any) -> Any:
        if not options.get("start") and not options["regroup"]:
            merged_from_nothing.append(len(vectors))
        return group_roots(vectors, docs, positions, **options)

    monkeypatch.setattr(summaries, "group_roots", spy)
    words = shared_file("haystacks/gutenberg/pg84.txt").read_text(encoding="utf-8").split()
    settings = Settings(
        embed_model=EMBEDDER.name, alpha=0.6, theta=0.35, chunk_tokens=40, max_cluster_size=3
    )
    with Memory.open(tmp_path / "m.db", "t", settings=settings, embedder=EMBEDDER) as m:
        m.ingest_text(" ".join(words[:3000]), "first", batch_size=64)
        m.ingest_text(
            " ".join(words[3000:15000]), "book", batch_size=16, on_batch=checked(m, settings)
        )
    assert kept_paths.count("regrouped") >= 5, "clustered levels grew under kept levels"
    assert max(merged_from_nothing) < 30, merged_from_nothing
