"""The context each compared strategy would hand the answering LLM, best first.

Every strategy works on the SAME memory (the same chunks, embedder and settings) and
returns passages ranked by its own idea of relevance; the harness then cuts them to a
token budget. Baselines rank level-0 chunks (BM25 with rank-bm25, dense cosine with
the memory's embedder). The CAM strategies activate nodes of any level (chunks and
summaries) with the engine's retrieval; the activated nodes are ranked by cosine to
the question (chunks before summaries), so a budget keeps the most relevant of what a
strategy activated and the CAM strategies differ only in WHAT they activate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from cam_engine.llm.base import Usage
from cam_engine.llm.extractive import ExtractiveSelector
from cam_engine.memory import Memory
from cam_engine.retrieval import Retrieval, global_top_k, prune_and_grow, traverse
from cam_engine.store.keywords import BM25Index
from cam_engine.types import PAGE, Node, ViewNode

# Enough chunks to fill the largest budget (4,000 tokens of <= 200-token chunks) twice.
BASELINE_DEPTH = 40
TOP_K = 10  # CAM's fast localization (the reference's default; cam eval --top-k)
MAX_TURNS = 5


@dataclass
class RankedContext:
    passages: list[str]
    node_ids: list[str]
    usage: Usage = field(default_factory=Usage)


@dataclass
class Scope:
    """A memory the questions are asked against, and what strategies cache about it."""

    memory: Memory
    ablation: Memory | None = None  # the same documents built without ego-splitting
    top_k: int = TOP_K  # nodes found by fast localization
    _chunks: dict[str, Node] | None = None
    _bm25: BM25Index | None = None
    _pages: list[ViewNode] | None = None

    def readagent_pages(self) -> list[ViewNode]:
        """The readagent view's pages in order, read once per memory (not per question)."""
        if self._pages is None:
            self._pages = self.memory.view_nodes("readagent", PAGE)
        return self._pages

    def chunks(self) -> dict[str, Node]:
        if self._chunks is None:
            self._chunks = {n.id: n for n in self.memory.store.nodes_at_level(0)}
        return self._chunks

    def bm25(self) -> BM25Index:
        if self._bm25 is None:
            self._bm25 = BM25Index([(n.id, n.text) for n in self.chunks().values()])
        return self._bm25


Strategy = Callable[[Scope, str, np.ndarray], RankedContext]


def bm25(scope: Scope, question: str, vector: np.ndarray) -> RankedContext:
    by_id = scope.chunks()
    hits = scope.bm25().top_k(question, BASELINE_DEPTH)
    return RankedContext([by_id[i].text for i, _ in hits], [i for i, _ in hits])


def dense(scope: Scope, question: str, vector: np.ndarray) -> RankedContext:
    store = scope.memory.store
    hits = store.nearest(0, vector[None, :], BASELINE_DEPTH)[0]
    nodes = store.get_nodes(i for i, _ in hits)
    ids = [i for i, _ in hits if i in nodes]
    return RankedContext([nodes[i].text for i in ids], ids)


def _ranked(found: Retrieval, vector: np.ndarray) -> RankedContext:
    """Activated chunks by cosine, then activated summaries by cosine: the order of the
    engine's own context (chunks, then summaries), each part ranked so a budget keeps
    its best. Chunks first because they hold the evidence verbatim; measured on the
    hard HotpotQA questions, ranking all nodes together costs prune-and-grow 0.024 of
    recall at 1,000 tokens and 0.073 at 500 (docs/evaluation.md)."""
    nodes = [n for n in found.activated if n.embedding is not None]
    scores = {n.id: float(n.embedding @ vector) for n in nodes}
    order = sorted(nodes, key=lambda n: (n.level > 0, -scores[n.id], n.id))
    return RankedContext([n.text for n in order], [n.id for n in order], found.usage)


def cam_global(scope: Scope, question: str, vector: np.ndarray) -> RankedContext:
    return _ranked(global_top_k(scope.memory.store, vector, scope.top_k), vector)


def cam_traverse(scope: Scope, question: str, vector: np.ndarray) -> RankedContext:
    return _ranked(traverse(scope.memory.store, vector, scope.top_k), vector)


def _prune_grow(
    memory: Memory, question: str, vector: np.ndarray, top_k: int, level: int | None = None
) -> RankedContext:
    """CAM's prune-and-grow with the offline selector, ranked for a budget."""
    selector = ExtractiveSelector(memory.embedder.embed)
    found = prune_and_grow(
        memory.store, question, vector, selector, top_k=top_k, max_turns=MAX_TURNS, level=level
    )
    return _ranked(found, vector)


def cam_prune_grow(scope: Scope, question: str, vector: np.ndarray) -> RankedContext:
    return _prune_grow(scope.memory, question, vector, scope.top_k)


def cam_no_hierarchy(scope: Scope, question: str, vector: np.ndarray) -> RankedContext:
    """CAM Table 3 "w/o hierarchy": prune-and-grow on the level-0 network only."""
    return _prune_grow(scope.memory, question, vector, scope.top_k, level=0)


def cam_no_flexibility(scope: Scope, question: str, vector: np.ndarray) -> RankedContext:
    """CAM Table 3 "w/o flexibility": prune-and-grow on a memory built without
    ego-splitting (label propagation on the chunks themselves: no overlap)."""
    assert scope.ablation is not None, "the ablation memory is built by the runner"
    return _prune_grow(scope.ablation, question, vector, scope.top_k)


def readagent_lookup(scope: Scope, question: str, vector: np.ndarray) -> RankedContext:
    """ReadAgent-P over the memory's readagent view: the pages it looked up (in the order
    chosen), then the gists of the other pages in page order: the gist memory with the
    chosen pages expanded, with what the agent chose first so a budget keeps it."""
    from cam_engine.adapters import readagent

    result = readagent.lookup(scope.memory, question, None)
    read = {s.id for s in result.sources}
    rest = [p for p in scope.readagent_pages() if p.id not in read]
    passages = [s.text for s in result.sources] + [str(p.props.get("gist", "")) for p in rest]
    ids = [s.id for s in result.sources] + [p.id for p in rest]
    return RankedContext(passages, ids, result.log.usage)


def gam_research(scope: Scope, question: str, vector: np.ndarray) -> RankedContext:
    """GAM's deep research over the memory's gam view: the integrated result, then the
    source pages' raw content."""
    from cam_engine.adapters import gam

    result = gam.research(scope.memory, question, None, output="sources")
    passages = [result.answer, *(s.text for s in result.sources)]
    return RankedContext(passages, ["result", *(s.id for s in result.sources)], result.log.usage)


STRATEGIES: dict[str, Strategy] = {
    "bm25": bm25,
    "dense": dense,
    "cam-global": cam_global,
    "cam-traverse": cam_traverse,
    "cam-prune-grow": cam_prune_grow,
    "cam-no-hierarchy": cam_no_hierarchy,
    "cam-no-flexibility": cam_no_flexibility,
    "readagent-lookup": readagent_lookup,
    "gam-research": gam_research,
}
NEEDS_ABLATION = {"cam-no-flexibility"}
# Adapter strategies read a view of the memory, built (extractively) with it.
NEEDS_VIEW = {"readagent-lookup": "readagent", "gam-research": "gam"}
# By default adapters run only where they apply: a memory per document (a meeting, a
# haystack), not a pool of 2,000 unrelated paragraphs of one page each.
ADAPTERS = tuple(NEEDS_VIEW)


def strategy_names(requested: Sequence[str] | None, *, pooled: bool = False) -> list[str]:
    from cam_engine.errors import ConfigError

    default = [n for n in STRATEGIES if not (pooled and n in ADAPTERS)]
    names = list(requested or default)
    unknown = [n for n in names if n not in STRATEGIES]
    if unknown:
        raise ConfigError(f"unknown strategy {unknown[0]!r}: use any of {', '.join(STRATEGIES)}")
    return names
