"""Retrieval strategies on small hand-built memories with known answers."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cam_engine.errors import ConfigError
from cam_engine.llm.base import Candidate, Selection, Usage
from cam_engine.retrieval import (
    RelevanceSelector,
    context_passages,
    global_top_k,
    prune_and_grow,
    traverse,
)
from cam_engine.retrieval.localize import DEPTH, FOUND, Ranking, calibrated, fuse, hybrid
from cam_engine.retrieval.prune_grow import GrowSettings
from cam_engine.store.base import GraphStore
from cam_engine.store.sqlite import SqliteStore
from cam_engine.types import CHUNK, Node
from tests.unit.tiny_memory import axis, mix


class ScriptedSelector:
    """Chooses the candidates whose text is in the script for this turn."""

    def __init__(self, turns: Sequence[set[str]]) -> None:
        self.turns = list(turns)
        self.seen: list[list[str]] = []

    @property
    def backend(self) -> str:
        return "scripted"

    def select(self, question: str, candidates: Sequence[Candidate]) -> Selection:
        wanted = self.turns.pop(0) if self.turns else set()
        self.seen.append([c.text for c in candidates])
        return Selection([i for i, c in enumerate(candidates) if c.text in wanted], "x", Usage(1))


def ranking(*hits: tuple[str, float], floor: float | None = None) -> Ranking:
    return Ranking(list(hits), floor)


def test_fusion_scores_each_hit_in_its_rankings_spread_above_its_floor() -> None:
    fused = fuse([ranking(("a", 3.0), ("b", 2.0), ("c", 1.0)), ranking(("c", 5.0), ("a", 4.0))])
    spread = float(np.std([3.0, 2.0, 1.0]))
    # Each hit FOUND plus its spreads above the last hit: a: 2 / spread + 0 / 0.5;
    # c: 0 + 1 / 0.5; b: 1 / spread, in the first ranking only.
    assert fused.order == ["a", "c", "b"]
    assert fused.scores["a"] == pytest.approx(2 * FOUND + 2 / spread)
    assert fused.scores["c"] == pytest.approx(2 * FOUND + 2.0)
    assert fused.scores["b"] == pytest.approx(FOUND + 1 / spread)
    assert fuse([ranking(("x", 1.0)), ranking(("y", 1.0))]).order == ["x", "y"]  # ties: ids


def test_a_known_floor_makes_a_lone_hit_count() -> None:
    """A full-text search returning one hit found the one node with the question's
    rare word: measured against the floor every other node has (0), it stands out."""
    dense = ranking(*((f"d{i}", 0.5 - 0.01 * i) for i in range(10)))
    assert fuse([dense, ranking(("name", 7.0), floor=0.0)]).order[0] == "name"
    assert fuse([dense, ranking(("name", 7.0))]).order[0] == "d0"  # no floor: no spread


def test_an_uninformative_ranking_leaves_the_order_to_the_other() -> None:
    flat = ranking(("a", 0.5), ("b", 0.5), ("c", 0.5), ("d", 0.5))
    told = ranking(("d", 9.0), ("c", 4.0), ("a", 2.0), ("b", 1.5))
    assert fuse([flat, told]).order == ["d", "c", "a", "b"]
    assert fuse([told, flat]).order == ["d", "c", "a", "b"]
    assert fuse([flat, flat]).order == ["a", "b", "c", "d"]  # nothing to go by: ids


def test_a_ranking_whose_best_stands_out_outweighs_a_flat_one() -> None:
    # Dense: cosines that fall evenly (no hit stands out), best "p". Full text: the
    # one turn with the question's rare name far above turns sharing common words.
    # Reciprocal ranks would put "p", high in both, first; the calibrated scores
    # follow the ranking that can tell its best from the rest.
    dense = [(f"p{i}" if i else "p", 0.60 - 0.01 * i) for i in range(20)]
    dense.insert(12, ("name", 0.48))
    words = [("name", 14.0), ("p", 3.1), *((f"w{i}", 3.0 - 0.05 * i) for i in range(20))]
    assert fuse([Ranking(dense), Ranking(words)]).order[0] == "name"
    assert fuse([Ranking(words), Ranking(dense)]).order[0] == "name"


@st.composite
def rankings(draw: st.DrawFn) -> list[Ranking]:
    ids = st.sampled_from("abcdefghij")
    scores = st.floats(-5, 5, allow_nan=False).map(lambda x: round(x, 3))
    drawn = []
    for _ in range(draw(st.integers(1, 3))):
        found = draw(st.dictionaries(ids, scores, max_size=8))
        drawn.append(Ranking(sorted(found.items(), key=lambda hit: (-hit[1], hit[0]))))
    return drawn


@given(rankings(), st.floats(0.01, 100), st.floats(-100, 100))
def test_fusion_ignores_order_of_rankings_and_each_rankings_scale(
    drawn: list[Ranking], scale: float, shift: float
) -> None:
    """Symmetric in the rankings, and blind to an affine change of one ranking's
    scores: FTS5 and Lucene score the same words differently."""
    fused = fuse(drawn)
    assert fuse(drawn[::-1]).scores == pytest.approx(fused.scores)
    rescaled = Ranking([(i, s * scale + shift) for i, s in drawn[0].hits])
    assert fuse([rescaled, *drawn[1:]]).scores == pytest.approx(fused.scores)
    assert all(value >= FOUND for value in fused.scores.values())
    assert fused.order == sorted(fused.scores, key=lambda i: (-fused.scores[i], i))


def test_weights_scale_each_rankings_share() -> None:
    first = [("a", 2.0), ("b", 1.0), ("c", 0.0)]
    second = [("c", 2.0), ("b", 1.0), ("a", 0.0)]
    assert fuse([Ranking(first, weight=2.0), Ranking(second)]).order[0] == "a"
    assert fuse([Ranking(first), Ranking(second, weight=2.0)]).order[0] == "c"


def test_global_is_exact_top_k_over_all_levels(tiny_memory: GraphStore) -> None:
    q = axis(0)
    found = global_top_k(tiny_memory, "q", q, 3)
    everything = [n for lv in (0, 1, 2) for n in tiny_memory.nodes_at_level(lv, embeddings=True)]
    expected = sorted(everything, key=lambda n: -float(n.embedding @ q))[:3]
    assert [n.id for n in found.activated] == [n.id for n in expected]
    assert [n.level for n in found.ranked] == sorted(n.level for n in found.ranked)


def test_traverse_goes_down_through_children(tiny_memory: GraphStore) -> None:
    found = traverse(tiny_memory, "q", axis(0), 1)
    assert [t for t in found.turns] == [["s2-0"], ["s1-0"], ["c0"]]
    assert found.candidates[1] == ["s1-0", "s1-1"]


def test_prune_and_grow_follows_neighbours_and_children(tiny_memory: GraphStore) -> None:
    selector = ScriptedSelector([{"chunk 0", "first half"}, {"chunk 1", "chunk 2"}, set()])
    lexical = GrowSettings(bridges="lexical")
    found = prune_and_grow(tiny_memory, "q", axis(0), selector, top_k=3, max_turns=5, grow=lexical)
    assert found.turns == [["c0", "s1-0"], ["c1", "c2"], []]
    assert found.stop == "the activated set stopped growing"
    assert {n.id for n in found.activated} == {"c0", "s1-0", "c1", "c2"}
    # Turn 2 offers c0's neighbour c1, s1-0's neighbour s1-1 and s1-0's other children,
    # and c0's lexical links: every chunk shares its word "chunk".
    assert sorted(selector.seen[1]) == [*(f"chunk {i}" for i in range(1, 6)), "second half"]
    assert found.usage.calls == 3
    # Evidence: chunks first, then summaries; every other chunk reached is backfill.
    assert [n.level for n in found.ranked] == [0, 0, 0, 1]
    assert set(found.backfill) == {"c3", "c4", "c5"}


def test_prune_and_grow_stops_at_max_turns(tiny_memory: GraphStore) -> None:
    walk = [{f"chunk {i}"} for i in range(6)]
    selector = ScriptedSelector(walk)
    heard: list[str] = []
    found = prune_and_grow(
        tiny_memory,
        "q",
        axis(0),
        selector,
        top_k=1,
        max_turns=3,
        on_progress=lambda progress: heard.append(progress.line()),
    )
    assert found.turns == [["c0"], ["c1"], ["c2"]]
    assert found.stop == "reached max_turns (3)"
    assert heard == [f"prune-grow: turn {t}/3 ({t} nodes chosen)" for t in (1, 2, 3)]


def test_without_hierarchy_no_summary_is_ever_offered(tiny_memory: GraphStore) -> None:
    selector = ScriptedSelector([{f"chunk {i}" for i in range(6)}] * 5)
    found = prune_and_grow(tiny_memory, "q", axis(0), selector, top_k=6, max_turns=5, level=0)
    offered = [text for turn in selector.seen for text in turn]
    assert offered and all(text.startswith("chunk") for text in offered)
    assert all(n.level == 0 for n in found.activated)


def test_a_chosen_summary_vouches_for_its_members(tiny_memory: GraphStore) -> None:
    """c2 points away from the question; as a member of the chosen summary s1-0 it
    ranks above c3 (as far from the question, but in no chosen cluster) only when
    relevance flows from summaries to members."""

    def backfill(decay: float) -> list[str]:
        selector = ScriptedSelector([{"first half"}])
        grow = GrowSettings(member_decay=decay)
        return prune_and_grow(
            tiny_memory, "q", axis(0), selector, top_k=3, max_turns=1, grow=grow
        ).backfill

    flowing, still = backfill(1.0), backfill(0.0)
    assert flowing.index("c2") < flowing.index("c3")
    assert still.index("c2") > still.index("c3") or "c2" not in still[:2]


@pytest.fixture()
def bridge_memory(tmp_path: Path) -> GraphStore:
    """A bridge question: the question's words and meaning find c0; its answer is in
    c1, which shares none of the question's words but names c0's subject."""
    store = SqliteStore(tmp_path / "b.db", "b")
    texts = {
        "c0": ("The Diamond Head Classic award went to Buddy Hield in 2015.", axis(0)),
        "c1": ("Buddy Hield plays for the Sacramento Kings of the NBA.", axis(5)),
        "c2": ("The Diamond Head Classic is a basketball tournament.", mix((0, 1), (2, 1))),
        "c3": ("Honolulu hosts a college tournament every December.", mix((0, 1), (3, 1))),
        "c4": ("Surfers ride the waves off Waikiki beach.", mix((0, 1), (4, 2))),
    }
    nodes = [Node(i, 0, CHUNK, t, i, 0, v) for i, (t, v) in texts.items()]
    with store.transaction():
        store.upsert_nodes(nodes)
    return store


def test_a_lexical_link_brings_a_bridges_second_half_next_to_its_first(
    bridge_memory: GraphStore,
) -> None:
    question = "Which team does the Diamond Head Classic award winner of 2015 play for?"
    vector = axis(0)
    flat = hybrid(bridge_memory, question, vector).order
    assert flat[0] == "c0" and flat.index("c1") > 1  # alone, the answer ranks low
    found = prune_and_grow(
        bridge_memory,
        question,
        vector,
        RelevanceSelector(),
        top_k=2,
        max_turns=3,
        grow=GrowSettings(bridges="lexical", bridge_rank=1),
    )
    evidence = [n.id for n in found.ranked] + found.backfill
    # c1 is placed just under the first localized chunk (bridge_rank=1): from last, it
    # rises to just below c0.
    assert evidence[:2] == ["c0", "c1"] and flat.index("c1") > 2
    # Without lexical links the answer stays where the flat ranking put it.
    unlinked = prune_and_grow(
        bridge_memory,
        question,
        vector,
        RelevanceSelector(),
        top_k=2,
        max_turns=3,
        grow=GrowSettings(bridges="lexical", linked=0),
    )
    assert ([n.id for n in unlinked.ranked] + unlinked.backfill).index("c1") == flat.index("c1")


def test_shared_names_bring_a_bridges_second_half_next_to_its_first(
    bridge_memory: GraphStore,
) -> None:
    question = "Which team does the Diamond Head Classic award winner of 2015 play for?"
    flat = hybrid(bridge_memory, question, axis(0)).order

    def evidence(grow: GrowSettings) -> list[str]:
        found = prune_and_grow(
            bridge_memory, question, axis(0), RelevanceSelector(), top_k=2, max_turns=3, grow=grow
        )
        return [n.id for n in found.ranked] + found.backfill

    # The walk from c0 reaches c1 through "Buddy Hield", which c1 alone shares with c0.
    named = evidence(GrowSettings(bridges="names", ppr_seeds=1, bridge_rank=2))
    assert named[:3] == ["c0", "c2", "c1"] and flat.index("c1") > 2
    # A name mentioned by more chunks than the walk allows bridges nothing.
    crowded = evidence(GrowSettings(bridges="names", ppr_seeds=1, ppr_max_chunks=1))
    assert crowded.index("c1") == flat.index("c1")


def test_hybrid_localization_finds_what_only_the_words_find(bridge_memory: GraphStore) -> None:
    # Sacramento is in c1 only, whose vector is orthogonal to the question's.
    order = hybrid(bridge_memory, "Sacramento", axis(0)).order
    assert order.index("c1") < order.index("c3")


def test_relevance_selector_takes_the_best_vouched_candidates_and_keeps_no_state() -> None:
    selector = RelevanceSelector(max_chosen=2)
    candidates = [
        Candidate("a", score=0.3),
        Candidate("b", score=0.5),
        Candidate("c"),  # nothing vouched for
        Candidate("d", score=0.4),
        Candidate("e", score=0.0),
    ]
    assert selector.select("q", candidates).chosen == [1, 3]
    assert selector.select("q", candidates).chosen == [1, 3]  # same answer again
    with pytest.raises(ConfigError, match="max_chosen"):
        RelevanceSelector(max_chosen=0)


def test_after_the_first_turn_weaker_candidates_are_offered_unvouched(
    bridge_memory: GraphStore,
) -> None:
    """Growth must not put a node less relevant than localization's choices ahead of
    stronger ones: from the second turn such a node is offered without a score."""

    class Recording(RelevanceSelector):
        def __init__(self) -> None:
            super().__init__(max_chosen=2)
            self.offered: list[list[float | None]] = []

        def select(self, question: str, candidates: Sequence[Candidate]) -> Selection:
            self.offered.append([c.score for c in candidates])
            return super().select(question, candidates)

    question = "Which team does the Diamond Head Classic award winner of 2015 play for?"
    selector = Recording()
    found = prune_and_grow(
        bridge_memory, question, axis(0), selector, top_k=2, max_turns=3, level=0
    )
    bar = min(s for s in selector.offered[0] if s is not None)
    assert all(s is None or s >= bar for turn in selector.offered[1:] for s in turn)
    # A reused selector (or a second ask of the same question) finds the same evidence.
    again = prune_and_grow(
        bridge_memory, question, axis(0), selector, top_k=2, max_turns=3, level=0
    )
    assert [n.id for n in again.ranked] == [n.id for n in found.ranked]


def test_context_keeps_the_order_and_merges_adjacent_chunks(tiny_memory: GraphStore) -> None:
    nodes = tiny_memory.get_nodes(["c4", "c0", "s2-0", "c1", "s1-0"])
    order = [nodes[i] for i in ("c0", "c1", "c4", "s1-0", "s2-0")]
    passages = context_passages(order)
    assert [[n.id for n in group] for group, _ in passages] == [
        ["c0", "c1"],
        ["c4"],
        ["s1-0"],
        ["s2-0"],
    ]
    assert passages[0][1] == "chunk 0\n\nchunk 1"
    # c1 before c0 is not one passage: the reader sees them in relevance order.
    assert len(context_passages([nodes["c1"], nodes["c0"]])) == 2


def test_extractive_selector_keeps_candidates_near_the_best() -> None:
    from cam_engine.llm.extractive import ExtractiveSelector

    selector = ExtractiveSelector(lambda texts: np.stack([axis(0)] * len(texts)), margin=0.1)
    candidates = [
        Candidate("a", mix((0, 1.0), (1, 0.1))),  # cos 0.995
        Candidate("b", mix((0, 1.0), (1, 0.4))),  # cos 0.93
        Candidate("c", mix((0, 1.0), (1, 1.0))),  # cos 0.71: too far below the best
        Candidate("d", axis(3)),  # cos 0
    ]
    assert selector.select("q", candidates).chosen == [0, 1]
    assert selector.select("q", []).chosen == []


def test_extractive_selector_chooses_at_most_max_chosen_best_first() -> None:
    from cam_engine.llm.extractive import ExtractiveSelector

    embed = lambda texts: np.stack([axis(0)] * len(texts))  # noqa: E731
    # Eight near-equal candidates, as a book's chunks look to a vague question.
    candidates = [Candidate(str(i), mix((0, 1.0), (1, 0.05 * i))) for i in range(8)]
    assert ExtractiveSelector(embed, max_chosen=3).select("q", candidates).chosen == [0, 1, 2]
    assert len(ExtractiveSelector(embed, max_chosen=None).select("q", candidates).chosen) == 8
    with pytest.raises(ConfigError, match="max_chosen"):
        ExtractiveSelector(embed, max_chosen=0)


def test_extractive_answer_quotes_the_best_matching_sentences() -> None:
    from cam_engine.llm.extractive import ExtractiveAnswerer

    passages = [
        "The ship sailed at dawn. Ahab hated the white whale.",
        "Queequeg carried a harpoon. The whale was white and huge.",
    ]
    result = ExtractiveAnswerer(sentences=1).answer("Who hated the white whale?", passages)
    assert result.text == "Ahab hated the white whale." and result.backend == "extractive"


def test_memory_ask_runs_every_strategy_and_refuses_bad_requests(tmp_path: Path) -> None:
    from cam_engine import Memory, Settings
    from cam_engine.embed import HashingEmbedder
    from cam_engine.errors import InputError
    from cam_engine.retrieval.strategies import ADAPTER, STRATEGIES

    embedder = HashingEmbedder(32)
    settings = Settings(embed_model=embedder.name, chunk_tokens=30, theta=0.2)
    text = "\n\n".join(f"The whale {i} swam past the ship near the harbour." for i in range(20))
    with Memory.open(tmp_path / "a.db", "a", settings=settings, embedder=embedder) as memory:
        memory.ingest_text(text, "doc", batch_size=8)
        for name, spec in STRATEGIES.items():
            if spec.family == ADAPTER or spec.needs_build:
                # Views (tests/unit/test_cli_adapters.py) or another build
                # (tests/unit/test_strategy_registry.py).
                continue
            result = memory.ask("Which whale swam past the ship?", strategy=name)
            assert result.evidence and result.retrieval.strategy == name, name
        with pytest.raises(InputError, match="must be text"):
            memory.ask(None)  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="options are for the adapter strategies"):
            memory.ask("whale?", strategy="dense", options={"max_pages": 3})
        with pytest.raises(ConfigError, match=r"strategy .memagent.*max_pagez"):
            memory.ask("whale?", strategy="memagent", options={"max_pagez": 3})
        with pytest.raises(ConfigError, match="unknown strategy"):
            memory.ask("whale?", strategy="nope")


@given(
    st.lists(st.floats(0.0, 100.0, allow_nan=False), min_size=41, max_size=200),
    st.booleans(),
)
def test_asking_a_ranker_for_more_hits_never_changes_the_calibration_of_its_first_40(
    scores: list[float], known_floor: bool
) -> None:
    # The flat baseline asks each ranker for 40 hits, prune-and-grow for 200: the best
    # hits must fuse the same, or the two would order the same question's chunks apart.
    ordered = sorted(scores, reverse=True)
    hits = [(f"n{i:03d}", s) for i, s in enumerate(ordered)]
    shallow = calibrated(Ranking(hits[:DEPTH]))
    deep = calibrated(Ranking(hits, floor=0.0 if known_floor else None))
    assert all(deep[i] == pytest.approx(shallow[i]) for i, _ in hits[:DEPTH])
    assert all(0 < deep[i] <= FOUND for i, _ in hits[DEPTH:])
