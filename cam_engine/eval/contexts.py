"""The context each compared strategy would hand the answering LLM, best first.

Every eval strategy is a strategy of the engine's registry
(``cam_engine.retrieval.strategies``), run through ``Memory.ask``'s own retrieval step
with the same options a user gets, on the SAME memory (same chunks, embedder and
settings); the harness then cuts the ranked context to each token budget. The
ablations are the registry's prune-grow on level 0 only (no hierarchy) or on a memory
built without ego-splitting (no flexibility). A retrieval's context is its evidence
chunks best first, then the other chunks it reached by relevance (so a large budget
is filled in score order, not cut where the selector stopped), then its summaries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cam_engine.errors import ConfigError
from cam_engine.llm.base import Usage
from cam_engine.memory import Memory
from cam_engine.retrieval.base import Retrieval
from cam_engine.retrieval.prune_grow import DEFAULT_GROW, GrowSettings
from cam_engine.retrieval.strategies import AskOptions, strategy_named
from cam_engine.types import Node

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
    _chunks: dict[str, dict[str, Node]] = field(default_factory=dict)  # memory -> chunks

    def chunks(self, memory: Memory) -> dict[str, Node]:
        """Every chunk of ``memory`` (this scope's or its ablation) by id, read once per
        memory, not per question (backfill names chunks by id)."""
        if memory.name not in self._chunks:
            self._chunks[memory.name] = {n.id: n for n in memory.chunks()}
        return self._chunks[memory.name]


@dataclass(frozen=True)
class EvalStrategy:
    """An eval name for a registry strategy, with the options it is run with."""

    ask: str  # the registry's name (cam ask --strategy)
    level: int | None = None
    ablation: bool = False  # asked of the memory built without ego-splitting
    adapter: Mapping[str, Any] = field(default_factory=dict)
    answer_first: bool = False  # the strategy's own answer leads its context
    grow: GrowSettings = DEFAULT_GROW

    def __call__(self, scope: Scope, question: str) -> RankedContext:
        memory = scope.memory
        if self.ablation:
            assert scope.ablation is not None, "the ablation memory is built by the runner"
            memory = scope.ablation
        spec = strategy_named(self.ask)
        options = AskOptions(
            top_k=scope.top_k,
            max_turns=MAX_TURNS,
            level=self.level,
            adapter=self.adapter,
            grow=self.grow,
        )
        found = spec.run(memory, question, options)
        nodes = context_nodes(found, scope.chunks(memory))
        passages = [n.text for n in nodes]
        ids = [n.id for n in nodes]
        if self.answer_first and found.answer is not None:
            passages, ids = [found.answer.text, *passages], ["result", *ids]
        return RankedContext(passages, ids, found.usage)


def context_nodes(found: Retrieval, chunks: Mapping[str, Node]) -> list[Node]:
    """Evidence chunks, then the backfill chunks, then evidence summaries, then what
    else the strategy's reader sees."""
    evidence = found.evidence()
    backfill = [chunks[i] for i in found.backfill if i in chunks]
    summaries = [n for n in evidence if n.level > 0]
    return [n for n in evidence if n.level == 0] + backfill + summaries + found.extra_context


STRATEGIES: dict[str, EvalStrategy] = {
    "bm25": EvalStrategy("bm25"),
    "dense": EvalStrategy("dense"),
    "hybrid": EvalStrategy("hybrid"),
    "cam-global": EvalStrategy("global"),
    "cam-traverse": EvalStrategy("traverse"),
    "cam-prune-grow": EvalStrategy("prune-grow"),
    # CAM Table 3 "w/o hierarchy": prune-and-grow on the level-0 network only.
    "cam-no-hierarchy": EvalStrategy("prune-grow", level=0),
    # CAM Table 3 "w/o flexibility": prune-and-grow on a memory built without
    # ego-splitting (label propagation on the chunks themselves: no overlap).
    "cam-no-flexibility": EvalStrategy("prune-grow", ablation=True),
    # ReadAgent-P: the pages it looked up, then the gists of the others.
    "readagent-lookup": EvalStrategy("lookup"),
    # GAM: the integrated result, then the source pages' raw content.
    "gam-research": EvalStrategy("research", adapter={"output": "sources"}, answer_first=True),
}
NEEDS_ABLATION = {name for name, s in STRATEGIES.items() if s.ablation}
# Adapter strategies read a view of the memory, built (extractively) with it.
NEEDS_VIEW = {
    name: view for name, s in STRATEGIES.items() if (view := strategy_named(s.ask).view) is not None
}
# By default adapters run only where they apply: a memory per document (a meeting, a
# haystack), not a pool of 2,000 unrelated paragraphs of one page each.
ADAPTERS = tuple(NEEDS_VIEW)


def strategy_names(requested: Sequence[str] | None, *, pooled: bool = False) -> list[str]:
    default = [n for n in STRATEGIES if not (pooled and n in ADAPTERS)]
    names = list(requested or default)
    unknown = [n for n in names if n not in STRATEGIES]
    if unknown:
        raise ConfigError(f"unknown strategy {unknown[0]!r}: use any of {', '.join(STRATEGIES)}")
    return names
