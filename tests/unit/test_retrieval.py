"""Retrieval strategies on a small hand-built memory with known answers."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from cam_engine.llm.base import Candidate, Selection, Usage
from cam_engine.retrieval import context_passages, global_top_k, prune_and_grow, traverse
from cam_engine.store.base import GraphStore
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


def test_global_is_exact_top_k_over_all_levels(tiny_memory: GraphStore) -> None:
    q = axis(0)
    found = global_top_k(tiny_memory, q, 3)
    everything = [n for lv in (0, 1, 2) for n in tiny_memory.nodes_at_level(lv, embeddings=True)]
    expected = sorted(everything, key=lambda n: -float(n.embedding @ q))[:3]
    assert [n.id for n in found.activated] == [n.id for n in expected]


def test_traverse_goes_down_through_children(tiny_memory: GraphStore) -> None:
    found = traverse(tiny_memory, axis(0), 1)
    assert [t for t in found.turns] == [["s2-0"], ["s1-0"], ["c0"]]
    assert found.candidates[1] == ["s1-0", "s1-1"]


def test_prune_and_grow_follows_neighbours_and_children(tiny_memory: GraphStore) -> None:
    selector = ScriptedSelector([{"chunk 0", "first half"}, {"chunk 1", "chunk 2"}, set()])
    found = prune_and_grow(tiny_memory, "q", axis(0), selector, top_k=3, max_turns=5)
    assert found.turns == [["c0", "s1-0"], ["c1", "c2"], []]
    assert found.stop == "the activated set stopped growing"
    assert {n.id for n in found.activated} == {"c0", "s1-0", "c1", "c2"}
    # Turn 2 offers c0's neighbour c1, s1-0's neighbour s1-1 and s1-0's other children.
    assert sorted(selector.seen[1]) == ["chunk 1", "chunk 2", "second half"]
    assert found.usage.calls == 3


def test_prune_and_grow_stops_at_max_turns(tiny_memory: GraphStore) -> None:
    walk = [{f"chunk {i}"} for i in range(6)]
    selector = ScriptedSelector(walk)
    found = prune_and_grow(tiny_memory, "q", axis(0), selector, top_k=1, max_turns=3)
    assert found.turns == [["c0"], ["c1"], ["c2"]]
    assert found.stop == "reached max_turns (3)"


def test_context_merges_adjacent_chunks_then_summaries(tiny_memory: GraphStore) -> None:
    nodes = tiny_memory.get_nodes(["c4", "c0", "s2-0", "c1", "s1-0"])
    passages = context_passages(list(nodes.values()))
    assert [[n.id for n in group] for group, _ in passages] == [
        ["c0", "c1"],
        ["c4"],
        ["s2-0"],
        ["s1-0"],
    ]
    assert passages[0][1] == "chunk 0\n\nchunk 1"


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
    from cam_engine.errors import ConfigError
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
