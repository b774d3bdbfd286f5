"""The context each compared strategy would hand the answering LLM, best first.

``cam eval`` names its strategies as ``cam ask --strategy`` does: each is a strategy of
the engine's registry (``cam_engine.retrieval.strategies``), run through the same
``Strategy.retrieve`` as ``Memory.ask`` with the options a user gets (and those its
``EvalUse`` names), on the SAME memory (same chunks, embedder and settings), or for a
strategy that ``needs_build`` other settings (prune-grow-no-flexibility) on the same
documents built with them. The harness then cuts the ranked context to each token
budget. A retrieval's context is its evidence chunks best first, then the other chunks
it reached by relevance (so a large budget is filled in score order, not cut where the
selector stopped), then its summaries.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cam_engine.errors import ConfigError
from cam_engine.llm.base import Usage
from cam_engine.memory import Memory
from cam_engine.retrieval.base import Retrieval
from cam_engine.retrieval.prune_grow import DEFAULT_GROW, GrowSettings
from cam_engine.retrieval.strategies import (
    ADAPTER,
    STRATEGIES,
    AskOptions,
    Strategy,
    strategy_named,
)
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
    # The same documents built with other settings, for the strategies that need them:
    # build_suffix(needs_build) -> memory.
    builds: dict[str, Memory] = field(default_factory=dict)
    top_k: int = TOP_K  # nodes found by fast localization
    _chunks: dict[str, dict[str, Node]] = field(default_factory=dict)  # memory -> chunks

    def memory_for(self, spec: Strategy) -> Memory:
        """The memory ``spec`` is asked of: this scope's, or the one built as it needs."""
        if not spec.needs_build:
            return self.memory
        return self.builds[build_suffix(spec.needs_build)]

    def memories(self) -> list[Memory]:
        return [self.memory, *self.builds.values()]

    def chunks(self, memory: Memory) -> dict[str, Node]:
        """Every chunk of ``memory`` (this scope's or one of its builds) by id, read once
        per memory, not per question (backfill names chunks by id)."""
        if memory.name not in self._chunks:
            self._chunks[memory.name] = {n.id: n for n in memory.chunks()}
        return self._chunks[memory.name]


def build_suffix(settings: Mapping[str, Any]) -> str:
    """A memory-name suffix for a build with these settings ("ego_split-false")."""
    text = "-".join(f"{k}-{v}" for k, v in sorted(settings.items())).lower()
    return re.sub(r"[^a-z0-9_-]", "_", text)


def ranked_context(
    scope: Scope, name: str, question: str, *, grow: GrowSettings = DEFAULT_GROW
) -> RankedContext:
    """The context strategy ``name`` hands the answerer for ``question``, best first."""
    spec = strategy_named(name)
    memory = scope.memory_for(spec)
    options = AskOptions(
        top_k=scope.top_k,
        max_turns=MAX_TURNS,
        adapter=spec.evaluation.options,
        grow=grow,
    )
    found = spec.retrieve(memory, question, options)
    nodes = context_nodes(found, scope.chunks(memory))
    passages = [n.text for n in nodes]
    ids = [n.id for n in nodes]
    if spec.evaluation.answer_first and found.answer is not None:
        passages, ids = [found.answer.text, *passages], ["result", *ids]
    return RankedContext(passages, ids, found.usage)


def context_nodes(found: Retrieval, chunks: Mapping[str, Node]) -> list[Node]:
    """Evidence chunks, then the backfill chunks, then evidence summaries, then what
    else the strategy's reader sees."""
    evidence = found.evidence()
    backfill = [chunks[i] for i in found.backfill if i in chunks]
    summaries = [n for n in evidence if n.level > 0]
    return [n for n in evidence if n.level == 0] + backfill + summaries + found.extra_context


# The names cam eval used before it took the registry's: each is one clear error naming
# the new one, not an alias.
RENAMED = {
    "cam-prune-grow": "prune-grow",
    "cam-global": "global",
    "cam-traverse": "traverse",
    "cam-no-hierarchy": "prune-grow-no-hierarchy",
    "cam-no-flexibility": "prune-grow-no-flexibility",
    "readagent-lookup": "lookup",
    "gam-research": "research",
}


def check_name(name: str) -> Strategy:
    """The registry's strategy ``name``; an old eval name is an error naming the new one."""
    if name in RENAMED:
        raise ConfigError(f"{name} is now {RENAMED[name]} (cam eval takes cam ask's names)")
    return strategy_named(name)


def strategy_names(requested: Sequence[str] | None, *, pooled: bool = False) -> list[str]:
    """The strategies to evaluate: those asked for, checked, else every registry
    strategy evaluated by default (the adapters only where each question has its own
    document: a memory per document, a meeting or a haystack, not a pool of 2,000
    unrelated paragraphs of one page each)."""
    if requested:
        return [check_name(n).name for n in requested]
    return [
        s.name
        for s in STRATEGIES.values()
        if s.evaluation.default and not (pooled and s.family == ADAPTER)
    ]
