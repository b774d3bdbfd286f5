"""Filling a large budget from the clusters the evidence lies in.

Prune-and-grow's evidence (the activated chunks, best first) rarely fills 2,000-4,000
tokens; what followed it was the next chunks of the flat fused ranking. With a
hierarchy the memory says more than that ranking: a summary is a cluster of chunks
that belong together, and a cluster that holds the evidence is likely to hold what the
question needs next, although it may share few words with the question.

So past ``lead_tokens`` (the context a small budget sees, left in flat relevance
order) every chunk is ranked by its own relevance plus what its clusters lend it.
Every summary holding an evidence chunk as a member is such a cluster (a level-1
summary, or a higher one that took the chunk in as a root); it lends its other
members the mean relevance of the evidence it holds, times ``decay``, times the share
of its members that is evidence to the power ``density``: a pair whose other half was
chosen lends much, a large cluster holding one chosen chunk less. A member takes its
best cluster's loan. Members the question did not reach at all (no shared word, far in
cosine) join the fill this way; within a cluster the members' own relevance keeps
their order, so the flat ranking and the clusters interleave on one scale.

A property of the hierarchy: on level 0 alone (the no-hierarchy ablation) there are no
clusters to read and the flat order stands. The settings were chosen on the hard
HotpotQA questions and QMSum's validation meetings (docs/evaluation.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from cam_engine.chunking import count_tokens
from cam_engine.retrieval.scope import Documents, within
from cam_engine.store.base import RetrievalStore
from cam_engine.types import Node


@dataclass(frozen=True)
class FillSettings:
    lead_tokens: int = 1000  # context (evidence, then backfill) kept in flat order
    decay: float = 0.7  # the share of its cluster's evidence relevance a member is lent
    density: float = 0.25  # how much a cluster's share of evidence counts (0: not at all)
    max_members: int = 50  # larger clusters (covering nodes) lend nothing


DEFAULT_FILL = FillSettings()
LEAD_SLICE = 16  # backfill texts read at once while counting the lead


def cluster_fill(
    store: RetrievalStore,
    evidence: Sequence[Node],
    backfill: Sequence[str],
    relevance: Mapping[str, float],
    fill: FillSettings = DEFAULT_FILL,
    documents: Documents = None,
) -> list[str]:
    """``backfill`` with its part past ``fill.lead_tokens`` (counted from the evidence
    chunks on) reordered by cluster-lent relevance, and the unreached members of the
    evidence's clusters added (those of ``documents`` only, when given: a cluster may
    span documents)."""
    chunks = [n for n in evidence if n.level == 0]
    if fill.decay <= 0 or not chunks:
        return list(backfill)
    lent = _lent(store, chunks, relevance, fill)
    if documents is not None and lent:
        scoped = _scoped(store, lent, documents)
        lent = {i: v for i, v in lent.items() if i in scoped}
    if not lent:
        return list(backfill)
    lead = _lead(store, chunks, backfill, fill.lead_tokens)
    chosen = {n.id for n in chunks}
    kept = chosen | set(backfill[:lead])
    rest = [i for i in dict.fromkeys([*backfill[lead:], *sorted(lent)]) if i not in kept]
    order = {node_id: position for position, node_id in enumerate(rest)}

    def score(node_id: str) -> float:
        return relevance.get(node_id, 0.0) + lent.get(node_id, 0.0)

    return [*backfill[:lead], *sorted(rest, key=lambda i: (-score(i), order[i]))]


def _scoped(store: RetrievalStore, ids: Iterable[str], documents: Documents) -> set[str]:
    return {n.id for n in within(store.get_nodes(ids).values(), documents)}


def _lent(
    store: RetrievalStore,
    chunks: Sequence[Node],
    relevance: Mapping[str, float],
    fill: FillSettings,
) -> dict[str, float]:
    """The relevance each chunk of an evidence cluster is lent by its best cluster."""
    chosen = {n.id for n in chunks}
    parents = store.parents_of(chosen)
    clusters = {p for ps in parents.values() for p in ps}
    if not clusters:
        return {}
    members = store.members_of(clusters)
    lent: dict[str, float] = {}
    for ids in members.values():
        held = ids & chosen
        if not held or len(ids) > fill.max_members:
            continue
        mean = sum(relevance.get(i, 0.0) for i in held) / len(held)
        value = fill.decay * mean * (len(held) / len(ids)) ** fill.density
        for member in ids - chosen:
            if value > lent.get(member, 0.0):
                lent[member] = value
    return lent


def _lead(
    store: RetrievalStore, chunks: Sequence[Node], backfill: Sequence[str], lead_tokens: int
) -> int:
    """How many backfill ids, after the evidence chunks, reach ``lead_tokens`` (the
    one the lead's end falls in included: a budget that size sees the flat order)."""
    room = lead_tokens - sum(count_tokens(n.text) for n in chunks)
    position = 0
    while room > 0 and position < len(backfill):
        # A slice at a time: the lead is a few chunks long, the backfill hundreds.
        ids = list(backfill[position : position + LEAD_SLICE])
        found = store.get_nodes(ids)
        for node_id in ids:
            node = found.get(node_id)
            if node is not None and node.level == 0:  # a caller shows chunks only
                room -= count_tokens(node.text)
            position += 1
            if room <= 0:
                break
    return position
