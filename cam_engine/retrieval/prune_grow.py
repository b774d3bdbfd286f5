"""Prune-and-Grow (CAM Section 4.2): localize, then let a selector decide where the
activated set grows, turn after turn, along the memory's graph.

1. **Localize** (hybrid): the nodes closest to the question by cosine and by its
   words, fused by calibrated scores (localize.py), over every level, so a summary can
   stand for a cluster the question is about. The best ``top_k`` are offered.
2. **Prune**: the selector keeps the helpful ones; they join the activated set.
3. **Grow**: the next candidates are what the chosen nodes lead to: their children
   (a summary's members), their same-level neighbours (similarity and proximity
   edges) and, from the best localized chunks, their *name bridges*: the chunks a
   personalized PageRank over shared names reaches from them (name_graph.py). Those
   are the second hop of a bridge question (the paragraph about the stadium names
   the city the question asks about). ``bridges="lexical"`` follows the best chunk's
   *lexical links* instead (the chunks sharing its rarest words the question lacks,
   one full-text query), ``"both"`` both.
4. Stop when nothing new is chosen, when the candidates stop changing, or after
   ``max_turns``.

Relevance flows along what the selector chose: a member of a chosen summary is at least
as relevant as the summary (decayed), and the best name bridge (by PPR mass times the
question's relevance) ranks just under the localized chunk at ``bridge_rank``, near the
chunk it bridges from although it shares few words with the question. The evidence is
the activated chunks by relevance, then the activated summaries; ``backfill`` names
every other chunk the question reached, by relevance, so a caller with a larger budget
fills it instead of stopping where the selector stopped. Its head (up to 1,000 tokens
counted from the evidence on) is in relevance order; past it the hierarchy decides
(``fill.py``): the members of the clusters holding the evidence, even those the question
never reached, are lent a share of that evidence's relevance, so they come before
unrelated chunks the flat ranking put higher. On level 0 alone (no hierarchy) the
backfill stays flat.

The defaults were chosen on the 100 hard HotpotQA questions and QMSum's validation
meetings (``cam bench tuning``; docs/evaluation.md, "How
prune-and-grow earns its place", has the comparisons: name bridges against lexical
links, bridge ranks, the cluster fill's variants).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from cam_engine.llm.base import Candidate, Selector
from cam_engine.progress import Progress, ProgressCallback
from cam_engine.retrieval.base import Retrieval, unique_text
from cam_engine.retrieval.fill import DEFAULT_FILL, FillSettings, cluster_fill
from cam_engine.retrieval.localize import (
    DEPTH,
    Localization,
    hybrid,
)
from cam_engine.retrieval.name_graph import name_ppr
from cam_engine.retrieval.scope import Documents, within
from cam_engine.retrieval.selection import RelevanceSelector
from cam_engine.store.base import RetrievalStore
from cam_engine.store.keywords import query_terms
from cam_engine.types import Node

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class GrowSettings:
    # Chunks ranked for relevance: the pool a grown node must be in to inherit
    # relevance, and the backfill. Deep, so that a bridge's second half, which shares
    # few words with the question, is still in it.
    pool_depth: int = 200
    linked: int = 1  # best localized chunks whose lexical links are followed
    links_per_node: int = 5
    link_terms: int = 30  # words of a chunk its lexical links are searched by
    member_decay: float = 0.8  # a member's relevance from its chosen summary's
    # A bridge ranks just below the localized chunk of this rank (from 1): a few ranks
    # under the chunk it bridges from, whatever the scale of the fused scores.
    bridge_rank: int = 2
    # How a bridge's second half is found: "lexical" (links of the best chunk),
    # "names" (personalized PageRank over the names the localized chunks share:
    # name_graph.py) or "both".
    bridges: Literal["lexical", "names", "both"] = "names"
    ppr_seeds: int = 3  # best localized chunks the walk restarts at
    ppr_max_chunks: int = 100  # a name more chunks mention bridges nothing
    ppr_damping: float = 0.5  # the chance the walk goes on rather than restarting
    ppr_raised: int = 1  # best-walked chunks (that the question reached) raised
    fill: FillSettings = DEFAULT_FILL  # a large budget filled from the clusters (fill.py)


DEFAULT_GROW = GrowSettings()


def prune_and_grow(
    store: RetrievalStore,
    question_text: str,
    question: np.ndarray,
    selector: Selector,
    *,
    top_k: int,
    max_turns: int,
    level: int | None = None,
    grow: GrowSettings = DEFAULT_GROW,
    documents: Documents = None,
    on_progress: ProgressCallback | None = None,
) -> Retrieval:
    """CAM's associative exploration. ``level=0`` keeps it to the chunks (localization
    and growth at level 0 only): the paper's "w/o hierarchy" ablation. ``documents``
    keeps it to those documents (``scope.py``): localization, name bridges and lexical
    links search them only, and grown nodes outside them (a neighbour in another document) are
    never offered. ``on_progress`` hears of each turn (one selector call: an LLM's,
    with a chat selector)."""
    result = Retrieval("prune-grow", [])
    chunks = hybrid(store, question_text, question, 0, grow.pool_depth, documents)
    walked = _walk(store, chunks, grow, documents) if grow.bridges != "lexical" else {}
    seeds = (
        chunks if level == 0 else hybrid(store, question_text, question, level, DEPTH, documents)
    )
    # One relevance per node: the chunks' fused score (the deeper ranking), else the
    # all-level one (summaries); raised below as relevance flows.
    relevance = {**seeds.scores, **chunks.scores}
    reached = set(chunks.scores)  # the backfill's candidates
    place = _bridge_place(chunks.order, relevance, grow)
    named = _name_bridges(chunks, walked, relevance, place, grow) if walked else []
    reached.update(named)
    activated: dict[str, Node] = {}
    candidates = seeds.top(top_k)
    bar = 0.0  # set by the first turn: what localization's choices reached

    def vouched(node_id: str) -> float | None:
        """The relevance a candidate is offered with: after the first turn, a node
        less relevant than everything chosen from localization is offered without
        one (growth must not put weaker nodes ahead of stronger ones never reached)."""
        score = relevance.get(node_id, 0.0)
        return score if score > 0 and score >= bar else None

    for turn in range(max_turns):
        fresh_ids = [c for c in candidates if c not in activated]
        found = store.get_nodes(fresh_ids, embeddings=True)
        offered = unique_text(
            {n.id: n for n in within(found.values(), documents)},
            fresh_ids,
            exclude={n.text for n in activated.values()},
        )
        offered.sort(key=lambda n: (-relevance.get(n.id, 0.0), n.id))
        result.candidates.append([n.id for n in offered])
        offered_candidates = [Candidate(n.text, n.embedding, vouched(n.id)) for n in offered]
        selection = selector.select(question_text, offered_candidates)
        result.usage += selection.usage
        if not selection.usable:
            # The model's reply could not be used, even repaired: choose this turn the
            # offline way (what retrieval vouches for) rather than answer from nothing.
            selection = RelevanceSelector().select(question_text, offered_candidates)
            fallbacks = result.details.get("selector_fallback_turns", 0) + 1
            result.details["selector_fallback_turns"] = fallbacks
            logger.warning("turn %d chosen offline: the selector's reply was unusable", turn + 1)
        chosen = [offered[i] for i in selection.chosen if 0 <= i < len(offered)]
        result.turns.append([n.id for n in chosen])
        if on_progress is not None:
            chosen_so_far = f"{len(activated) + len(chosen)} nodes chosen"
            on_progress(Progress("prune-grow", "turn", turn + 1, max_turns, chosen_so_far))
        if not chosen:
            result.stop = "the activated set stopped growing"
            break
        for node in chosen:
            activated[node.id] = node
        if turn == 0:
            bar = min((relevance.get(n.id, 0.0) for n in chosen), default=0.0)
        # Lexical links only from localized chunks (the first turn): a bridge has two
        # hops, and links of links wander off the question.
        first = turn == 0
        grown = _grow(
            store,
            question_text,
            chosen,
            relevance,
            reached,
            grow,
            place if first else None,
            documents,
        )
        if turn == 0:
            grown += [i for i in named if i not in grown]
        fresh = sorted(set(grown) - activated.keys())
        if not fresh or fresh == sorted(set(candidates) - activated.keys()):
            result.stop = "the candidates stopped changing"
            break
        candidates = fresh
    else:
        result.stop = f"reached max_turns ({max_turns})"
    result.activated = list(activated.values())
    result.ranked = sorted(
        result.activated, key=lambda n: (n.level > 0, -relevance.get(n.id, 0.0), n.id)
    )
    result.backfill = sorted(reached - activated.keys(), key=lambda i: (-relevance.get(i, 0.0), i))
    if level != 0:  # the clusters are the hierarchy's: the level-0 ablation has none
        result.backfill = cluster_fill(
            store, result.ranked, result.backfill, relevance, grow.fill, documents
        )
    return result


def _grow(
    store: RetrievalStore,
    question: str,
    chosen: Sequence[Node],
    relevance: dict[str, float],
    reached: set[str],
    grow: GrowSettings,
    bridge_place: float | None,
    documents: Documents = None,
) -> list[str]:
    """The nodes the chosen lead to (children, lexical links where followed, neighbours: in
    that order, sources best first), raising ``relevance`` where it flows and adding the
    chunks reached to ``reached``. Lexical links are followed when a ``bridge_place`` (the
    relevance a bridge gets) is given."""
    order = sorted(chosen, key=lambda n: (-relevance.get(n.id, 0.0), n.id))
    ids = [n.id for n in order]
    neighbours = store.neighbours(ids)
    summaries = [n.id for n in order if n.level > 0]
    children = store.members_of(summaries) if summaries else {}
    links: dict[str, list[str]] = {}
    if bridge_place is not None and grow.bridges != "names":
        asked = set(query_terms(question))
        for node in [n for n in order if n.level == 0][: grow.linked]:
            links[node.id] = _lexical_links(store, node, asked, grow, documents)
            bridge = next((i for i in links[node.id] if relevance.get(i, 0.0) > 0), None)
            if bridge is not None:
                _raise(relevance, bridge, bridge_place)
    for node in order:
        # A cluster the question is about vouches for its members.
        for child in children.get(node.id, ()):
            _raise(relevance, child, relevance.get(node.id, 0.0) * grow.member_decay)
            reached.add(child)  # a chunk, or a summary under a covering top node
    grown: list[str] = []
    for node_id in ids:
        weights = neighbours.get(node_id, {})
        grown += sorted(children.get(node_id, ()))
        grown += links.get(node_id, [])
        grown += sorted(weights, key=lambda m: (-weights[m], m))
    return [i for i in dict.fromkeys(grown) if i not in ids]


def _walk(
    store: RetrievalStore, chunks: Localization, grow: GrowSettings, documents: Documents
) -> dict[str, float]:
    """The PPR mass of the chunks near the best localized ones through shared names."""
    seeds = {i: chunks.scores[i] for i in chunks.top(grow.ppr_seeds)}
    return name_ppr(
        store,
        seeds,
        max_chunks=grow.ppr_max_chunks,
        damping=grow.ppr_damping,
        documents=documents,
    )


def _name_bridges(
    chunks: Localization,
    walked: dict[str, float],
    relevance: dict[str, float],
    place: float,
    grow: GrowSettings,
) -> list[str]:
    """The chunks the walk reached beyond its seeds, best first by their mass times the
    question's relevance (at most ``links_per_node``: a walk alone favours chunks that
    share common names with every seed); the best ``ppr_raised`` of those the question
    reached but ranks below a bridge's place (``_bridge_place``) are raised to it."""
    seeds = set(chunks.top(grow.ppr_seeds))
    order = sorted(
        (i for i in walked if i not in seeds),
        key=lambda i: (-walked[i] * relevance.get(i, 0.0), -walked[i], i),
    )
    if not order:
        return []
    raised = [i for i in order if 0 < relevance.get(i, 0.0) < place][: grow.ppr_raised]
    for rank, node_id in enumerate(raised):
        _raise(relevance, node_id, place * (1 - 1e-6) ** (rank + 1))
    return order[: grow.links_per_node]


def _bridge_place(order: Sequence[str], relevance: dict[str, float], grow: GrowSettings) -> float:
    """The relevance a bridge is given: just under the localized chunk at ``bridge_rank``
    (the last one when fewer), so it ranks a few places under the best chunk on any
    scale of fused scores."""
    if not order:
        return 0.0
    return relevance.get(order[min(grow.bridge_rank, len(order)) - 1], 0.0) * (1 - 1e-6)


def _raise(relevance: dict[str, float], node_id: str, value: float) -> None:
    if value > relevance.get(node_id, 0.0):
        relevance[node_id] = value


def _lexical_links(
    store: RetrievalStore,
    node: Node,
    asked: set[str],
    grow: GrowSettings,
    documents: Documents = None,
) -> list[str]:
    """The chunks sharing ``node``'s words that the question does not have, best first.
    Full-text scoring weighs the words by rarity (idf), so names and rare terms decide."""
    terms = [t for t in query_terms(node.text) if t not in asked][: grow.link_terms]
    if not terms:
        return []
    hits = store.search_text(0, " ".join(terms), grow.links_per_node + 1, documents=documents)
    return [i for i, _ in hits if i != node.id][: grow.links_per_node]
