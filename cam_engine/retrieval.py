"""Memory retrieval (CAM Section 4.2): which nodes a question activates.

- ``global``: fast localization only, the top-k nodes of all levels by cosine.
- ``traverse``: top-down, from the top level, keeping the top-k children at each level.
- ``prune-grow`` (CAM): fast localization, then turns of associative exploration: the
  selector picks the helpful candidates, they join the activated set (which only
  grows), and the next candidates are their same-level neighbours and their children.
  It stops when the activated set stops growing, when the candidates stop changing, or
  after ``max_turns``.

The context for the answer is the activated chunks in document order (adjacent ones
merged into one passage), then the activated summaries, highest level first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from cam_engine.llm.base import Candidate, Selector, Usage
from cam_engine.store.base import GraphStore
from cam_engine.types import Node

STRATEGIES = ("prune-grow", "global", "traverse")


@dataclass
class Retrieval:
    strategy: str
    activated: list[Node]  # in activation order
    turns: list[list[str]] = field(default_factory=list)  # node ids activated per turn
    candidates: list[list[str]] = field(default_factory=list)  # ids offered per turn
    usage: Usage = field(default_factory=Usage)
    stop: str = ""  # why exploration stopped


def _with_vectors(store: GraphStore, ids: Sequence[str]) -> list[Node]:
    nodes = store.get_nodes(ids, embeddings=True)
    return [nodes[i] for i in ids if i in nodes]


def _vector(node: Node) -> np.ndarray:
    # Memory embeds every node before it stores it, and _with_vectors reads them back.
    assert node.embedding is not None
    return node.embedding


def _rank(nodes: Sequence[Node], question: np.ndarray) -> list[Node]:
    if not nodes:
        return []
    scores = np.stack([_vector(n) for n in nodes]) @ question
    return [nodes[i] for i in sorted(range(len(nodes)), key=lambda i: (-scores[i], nodes[i].id))]


def localize(
    store: GraphStore, question: np.ndarray, top_k: int, level: int | None = None
) -> list[str]:
    """The ``top_k`` nodes closest to the question, of every level or of one."""
    return [node_id for node_id, _ in store.nearest(level, question[None, :], top_k)[0]]


def global_top_k(
    store: GraphStore, question: np.ndarray, top_k: int, level: int | None = None
) -> Retrieval:
    ids = localize(store, question, top_k, level)
    return Retrieval("global", _with_vectors(store, ids), turns=[ids], candidates=[ids])


def traverse(store: GraphStore, question: np.ndarray, top_k: int) -> Retrieval:
    top = max(store.levels(), default=0)
    frontier = [n.id for n in store.nodes_at_level(top)]
    result = Retrieval("traverse", [])
    while frontier:
        chosen = _rank(_with_vectors(store, frontier), question)[:top_k]
        result.candidates.append(frontier)
        result.turns.append([n.id for n in chosen])
        result.activated.extend(chosen)
        children = store.members_of(n.id for n in chosen)
        frontier = sorted({c for ids in children.values() for c in ids})
    result.stop = "reached the chunks"
    return result


def prune_and_grow(
    store: GraphStore,
    question_text: str,
    question: np.ndarray,
    selector: Selector,
    *,
    top_k: int,
    max_turns: int,
    level: int | None = None,
) -> Retrieval:
    """CAM's associative exploration. ``level=0`` keeps it to the chunks (localization
    and growth along level-0 edges only): the paper's "w/o hierarchy" ablation."""
    result = Retrieval("prune-grow", [])
    activated: dict[str, Node] = {}
    candidates = localize(store, question, top_k, level)
    for _ in range(max_turns):
        offered = _with_vectors(store, [c for c in candidates if c not in activated])
        result.candidates.append([n.id for n in offered])
        selection = selector.select(
            question_text, [Candidate(n.text, n.embedding) for n in offered]
        )
        result.usage += selection.usage
        chosen = [offered[i] for i in selection.chosen if 0 <= i < len(offered)]
        result.turns.append([n.id for n in chosen])
        if not chosen:
            result.stop = "the activated set stopped growing"
            break
        for node in chosen:
            activated[node.id] = node
        neighbours = store.neighbours(n.id for n in chosen)
        children = store.members_of(n.id for n in chosen)
        grown = sorted(
            (
                {m for ids in neighbours.values() for m in ids}
                | {c for ids in children.values() for c in ids}
            )
            - activated.keys()
        )
        if not grown or grown == sorted(set(candidates) - activated.keys()):
            result.stop = "the candidates stopped changing"
            break
        candidates = grown
    else:
        result.stop = f"reached max_turns ({max_turns})"
    result.activated = list(activated.values())
    return result


def context_passages(nodes: Sequence[Node]) -> list[tuple[list[Node], str]]:
    """(nodes, text) passages: chunks in document order with adjacent ones merged,
    then summaries from the highest level down."""
    chunks = sorted(
        (n for n in nodes if n.level == 0), key=lambda n: (n.doc_id or "", n.position or 0)
    )
    passages: list[tuple[list[Node], str]] = []
    run: list[Node] = []
    for chunk in chunks:
        if run and (
            chunk.doc_id != run[-1].doc_id or (chunk.position or 0) != (run[-1].position or 0) + 1
        ):
            passages.append((run, "\n\n".join(n.text for n in run)))
            run = []
        run.append(chunk)
    if run:
        passages.append((run, "\n\n".join(n.text for n in run)))
    summaries = sorted((n for n in nodes if n.level > 0), key=lambda n: (-n.level, n.id))
    passages.extend(([s], s.text) for s in summaries)
    return passages
