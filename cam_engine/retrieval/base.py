"""What a retrieval returns, and how its nodes become the context of an answer."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cam_engine.llm.base import AnswerText, Usage
from cam_engine.types import Node


@dataclass
class Retrieval:
    """The nodes a question activated and how retrieval got there.

    ``ranked`` is the evidence best first (what an answer is drawn from); ``backfill``
    names further nodes in score order, for a caller whose budget the evidence does
    not fill (cam eval cuts ``ranked`` + ``backfill`` to each budget)."""

    strategy: str
    activated: list[Node]  # in activation order
    turns: list[list[str]] = field(default_factory=list)  # node ids activated per turn
    candidates: list[list[str]] = field(default_factory=list)  # ids offered per turn
    usage: Usage = field(default_factory=Usage)
    stop: str = ""  # why exploration stopped
    ranked: list[Node] = field(default_factory=list)
    backfill: list[str] = field(default_factory=list)  # node ids (callers keep the chunks)
    # What the strategy's own reader also sees beyond the evidence (ReadAgent: the
    # gists of the pages it did not read), placed after everything else in a budget.
    extra_context: list[Node] = field(default_factory=list)
    answer: AnswerText | None = None  # written by the strategy itself (the adapters)
    details: dict[str, Any] = field(default_factory=dict)  # strategy-specific figures

    def evidence(self) -> list[Node]:
        """``ranked`` when the strategy ordered its evidence, else the activated nodes."""
        return self.ranked or self.activated


def unique_text(
    nodes: Mapping[str, Node], order: Iterable[str], exclude: set[str] | None = None
) -> list[Node]:
    """The nodes of ``order`` (those found), dropping any whose text an earlier one (or
    ``exclude``) already has: a copy offered twice takes a slot from other evidence."""
    seen = set(exclude or ())
    kept = []
    for node_id in order:
        node = nodes.get(node_id)
        if node is None or node.text in seen:
            continue
        seen.add(node.text)
        kept.append(node)
    return kept


def context_passages(nodes: Sequence[Node]) -> list[tuple[list[Node], str]]:
    """(nodes, text) passages in the order given, a chunk directly after its neighbour
    in the document merged into that neighbour's passage (one passage, one quote)."""
    passages: list[tuple[list[Node], str]] = []
    for node in nodes:
        if node.level == 0 and passages:
            last = passages[-1][0][-1]
            if (
                last.level == 0
                and last.doc_id == node.doc_id
                and (node.position or 0) == (last.position or 0) + 1
            ):
                run = passages[-1][0] + [node]
                passages[-1] = (run, "\n\n".join(n.text for n in run))
                continue
        passages.append(([node], node.text))
    return passages
