"""Writing summary nodes: summarize, embed, never repeat a text; and the covering top.

``SummaryWriter`` is what the builder calls for every summary it writes (one per
changed cluster) and, after the clustered levels, for the covering top level: the
roots (nodes without a parent) grouped by ``graph.hierarchy.group_roots`` into at most
``TOP_SIZE`` nodes, so that every chunk is reachable from one small level.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from cam_engine.config import Settings
from cam_engine.embed.base import Embedder
from cam_engine.engine.cover import REGROUP_ROOTS, TOP_SIZE, keeps_cover, update_kept_cover
from cam_engine.engine.reports import BatchReport
from cam_engine.engine.timing import PhaseClock
from cam_engine.graph.hierarchy import group_roots
from cam_engine.llm.base import EXTRACTIVE, Summarizer, SummaryResult
from cam_engine.store.batch import BatchStore
from cam_engine.types import COVER, SUMMARY, Node

# The covering top level has at most TOP_SIZE nodes (more roots get more levels).
# A covering level whose kept groups fall short of its target is grouped again from
# scratch, so that its groups follow similarity over the whole memory (the top-down walk,
# traverse, relies on it: on the hard HotpotQA questions it loses 0.16 recall at
# 1,000 tokens when groups are only ever extended). That costs O(roots^2) and rewrites
# most covering summaries (an LLM call each) in every batch, and a level below the top
# (target ceil(roots / max_cluster_size)) nearly always falls short: with more roots
# than REGROUP_ROOTS (a document whose chunks do not cluster, every chunk a root), the
# levels below the top keep their groups and place the new roots among them, and from
# the next batch on they are kept between batches (engine/cover.py). The top level
# (at most TOP_SIZE nodes) is always regrouped.
# A cluster summary's props: the ids of the members its text was written from (sorted).
# They differ from its members once a change too small to rewrite it has passed
# (``must_rewrite``), and say which texts the summary may hold when one is removed.
WRITTEN_FROM = "written_from"
# A summary's props: ids of nodes further below whose text its text holds through a
# member that was deleted (its cluster dissolved) while the summary kept its text; a
# removal of one of them reaches the summary through this list (``provenance``).
INHERITED_FROM = "inherited_from"

Cover = dict[tuple[int, frozenset[str]], Node]  # covering nodes by (level, members)


def summary_id(label: str) -> str:
    """The summary node of a cluster: label "L.n" (a level-L cluster) -> "s{L+1}-n"."""
    level, _, number = label.partition(".")
    return f"s{int(level) + 1}-{number}"


def label_of(summary: str) -> str:
    """The cluster label of a summary id (the inverse of ``summary_id``)."""
    level, _, number = summary.removeprefix("s").partition("-")
    return f"{int(level) - 1}.{number}"


def written_from(props: Mapping[str, Any], stored_members: Collection[str]) -> set[str]:
    """The members a summary's text was written from: its ``WRITTEN_FROM`` prop, else
    (a summary written before the prop existed, always on every change) its members."""
    ids = props.get(WRITTEN_FROM)
    return set(stored_members) if ids is None else set(ids)


def provenance(props: Mapping[str, Any], stored_members: Collection[str]) -> set[str]:
    """Every node whose text a summary's text may hold, one level down or further."""
    return written_from(props, stored_members) | set(props.get(INHERITED_FROM, ()))


def must_rewrite(written: Collection[str], members: Collection[str], drift: float) -> bool:
    """Whether a cluster's summary, written from ``written``, must be written again for
    its ``members`` now: when the two differ by more than ``drift`` of the current size.
    A removed member is not this rule's business: the builder rewrites for that always."""
    changed = len(set(written) ^ set(members))
    return changed > drift * len(members)


class SummaryWriter:
    def __init__(
        self,
        store: BatchStore,
        embedder: Embedder,
        summarizer: Summarizer,
        settings: Settings,
        clock: PhaseClock,
        *,
        llm_concurrency: int = 1,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.summarizer = summarizer
        self.settings = settings
        self.clock = clock
        self.llm_concurrency = llm_concurrency

    def nodes(
        self,
        level: int,
        ids: list[str],
        groups: list[list[Node]],
        report: BatchReport,
        props: dict[str, Any] | None = None,
        *,
        keep_repeats: bool,
    ) -> list[Node]:
        """Summarize and embed each group (members in reading order) as node ``ids[i]``.

        A summary that repeats another node's text word for word (an extractive summary
        of a cluster dominated by one member picks that member's sentences) is written
        again with twice, then four times the word budget: a reader would otherwise be
        offered the same text twice. One that still does (its members' sentences are
        all in one of them) is left out of the result, or with ``keep_repeats`` takes
        its members' texts joined.
        """
        ordered = [
            sorted(group, key=lambda n: (n.doc_id or "", n.position or 0.0, n.id))
            for group in groups
        ]
        nodes: list[Node] = []
        for sid, members, result in zip(ids, ordered, self._summarize_all(ordered), strict=True):
            report.usage += result.usage
            report.summary_calls += 1
            docs = {n.doc_id for n in members}
            positions = [n.position for n in members if n.position is not None]
            nodes.append(
                Node(
                    id=sid,
                    level=level,
                    kind=SUMMARY,
                    text=result.text,
                    doc_id=docs.pop() if len(docs) == 1 else None,
                    position=sum(positions) / len(positions) if positions else None,
                    props={"backend": result.backend, "members": len(members), **(props or {})},
                )
            )
        self._embed(nodes)
        for factor in (2, 4):
            repeated = self._repeated(nodes)
            for i in repeated:
                texts = [n.text for n in ordered[i]]
                words = self.settings.summary_words * factor
                result = self.summarizer.summarize(texts, max_words=words)
                report.usage += result.usage
                report.summaries_rewritten += 1
                report.summary_calls += 1
                nodes[i].text = result.text
                nodes[i].props["backend"] = result.backend  # extractive when the LLM failed
            self._embed([nodes[i] for i in repeated])
        still = self._repeated(nodes)
        if not keep_repeats:
            return [n for i, n in enumerate(nodes) if i not in set(still)]
        for i in still:
            # A node that must exist (a covering group) and whose summary can only
            # repeat a member: its text is the members' own, joined (extractive).
            joined = " ".join(n.text for n in ordered[i]).split()
            limit = 4 * self.settings.summary_words
            nodes[i].text = " ".join(joined[:limit]) + (" …" if len(joined) > limit else "")
            nodes[i].props["backend"] = EXTRACTIVE
        self._embed([nodes[i] for i in still])
        return nodes

    def _embed(self, nodes: list[Node]) -> None:
        if not nodes:
            return
        with self.clock.phase("embed"):
            vectors = self.embedder.embed([n.text for n in nodes])
        for node, vector in zip(nodes, vectors, strict=True):
            node.embedding = vector

    def _repeated(self, nodes: list[Node]) -> list[int]:
        """Indexes of ``nodes`` whose text another node has: an earlier one of ``nodes``
        or any node of the memory, the batch's own and the members included (the
        batch's store knows every node's text by a key of it)."""
        own = {n.id for n in nodes}
        repeated: list[int] = []
        earlier: set[str] = set()
        for i, node in enumerate(nodes):
            text = plain(node.text)
            if text in earlier or self.store.nodes_with_text(text) - own:
                repeated.append(i)
            earlier.add(text)
        return repeated

    def take_cover(self, *, keep: bool = True) -> Cover | None:
        """Remove the covering top levels (rebuilt after the batch), keeping their nodes
        by (level, members) so an unchanged group keeps its summary without a call.
        With ``keep``, past ``REGROUP_ROOTS`` roots they stay instead (None): apart from
        the clustered levels, to be brought up to date after them (engine/cover.py)."""
        if keep and keeps_cover(self.store, self.settings.max_levels):
            return None
        return self.take_down(self.store.cover_levels())

    def take_down(self, levels: Collection[int], report: BatchReport | None = None) -> Cover:
        """Remove these covering levels, keeping their nodes by (level, members).

        Every node of the levels goes, not only those kept: taken down after a batch
        changed the level below (``engine/cover.py``), several nodes may have lost all
        their members, and one key (level, no members) would hold only one of them.
        Those are counted as removed in ``report``."""
        store = self.store
        cache = store.cover_cache
        old: Cover = {}
        doomed: list[str] = []
        for level in sorted(levels, reverse=True):
            if cache:
                cache.pop(level, None)
            ids = store.cover_ids(level)
            members = store.members_of(ids)
            for node in store.get_nodes(ids, embeddings=True).values():
                held = frozenset(members.get(node.id, ()))
                if held:
                    old[(level, held)] = node
                elif report is not None:
                    report.top_summaries_removed += 1
            doomed += ids
        store.delete_nodes(doomed)
        return old

    def build_cover(
        self, old: Cover | None, report: BatchReport, *, refreshed: Collection[str] = ()
    ) -> None:
        """Group the roots (nodes without a parent) into covering levels until one level
        of at most ``TOP_SIZE`` nodes holds every root below it (``graph.hierarchy``).
        ``old``: the levels ``take_cover`` took down, or None where it kept them.
        ``refreshed``: roots written again because text under them was removed; a
        group holding one is summarized again even when its members are the same. The
        covering nodes of ``old`` not put back are counted as removed."""
        if old is None:
            old = update_kept_cover(self, report, refreshed)
            if old is None:
                return
        self._build_cover(old, report, refreshed)
        report.top_summaries_removed += len(old)
        self.store.take_root_changes()  # the levels were grouped from every root

    def _build_cover(self, old: Cover, report: BatchReport, refreshed: Collection[str]) -> None:
        s = self.settings
        roots = self.store.root_nodes(embeddings=True)
        if s.max_levels == 0 or not roots:
            return
        level = max(n.level for n in roots)
        self.group(roots, level, old, report, refreshed, regroup=len(roots) <= REGROUP_ROOTS)

    def group(
        self,
        roots: list[Node],
        level: int,
        old: Cover,
        report: BatchReport,
        refreshed: Collection[str],
        *,
        regroup: bool,
    ) -> None:
        """Covering levels above ``level`` over ``roots`` (in (level, reading) order),
        each started from the groups of ``old`` at the same step."""
        s = self.settings
        # Past REGROUP_ROOTS, the i-th covering level starts from the previous batch's
        # i-th even when the levels below moved it up or down: a level started from
        # nothing groups every root from scratch, quadratically. Below it, a moved level
        # is regrouped from scratch, as the top-down walk needs (matched by rank there,
        # `traverse` lost 0.10-0.13 recall on HotpotQA-200).
        old_levels = sorted({at for at, _ in old})
        # Past REGROUP_ROOTS, the covering node that took the place of each old one: a
        # level whose members were all written again under new ids still starts from
        # its old groups, read through this map. Started from nothing, 7,300 roots at
        # 2.2x10^5 chunks were merged pair by pair over a score matrix of every root
        # against every other: 10 minutes and 2.7 GB for one batch.
        heirs: dict[str, str] = {}
        step = 0
        while len(roots) > 1 and (len(roots) > TOP_SIZE or any(n.level != level for n in roots)):
            level += 1
            was = old_levels[step] if not regroup and step < len(old_levels) else level
            step += 1
            if len(roots) <= TOP_SIZE:
                # Roots of several levels that already fit the top: one node covers
                # them. Grouped in pairs, the top would hold more nodes than the
                # highest level below it (2 summaries and 6 lone chunks: 4 top nodes).
                roots = self._write_cover(level, [roots], old, report, refreshed)
                break
            # The groups of this level before the batch, on the roots still here.
            index = {n.id: i for i, n in enumerate(roots)}
            carried = not regroup and len(roots) > REGROUP_ROOTS
            was_here = [(members, node) for (at, members), node in old.items() if at == was]
            before = _start_groups(
                [members for members, _ in was_here], index, heirs if carried else {}
            )
            target = max(TOP_SIZE, math.ceil(len(roots) / s.max_cluster_size))
            groups = group_roots(
                np.stack([_embedding(n) for n in roots]),
                [n.doc_id for n in roots],
                [n.position for n in roots],
                groups=target,
                max_size=s.max_cluster_size,
                alpha=s.alpha,
                start=[g for g in before if g],
                regroup=regroup or target <= TOP_SIZE,
            )
            grouped = [[roots[i] for i in g] for g in groups]
            roots = self._write_cover(level, grouped, old, report, refreshed)
            if carried:
                heirs = self._heirs(was_here, heirs, roots)
        report.top_nodes = len(roots)

    def _heirs(
        self, was_here: list[tuple[frozenset[str], Node]], heirs: dict[str, str], nodes: list[Node]
    ) -> dict[str, str]:
        """For each old node of a level, the node just written that holds most of its
        members (read through ``heirs``, the map of the level below; ties: the smaller
        id)."""
        members = self.store.members_of([n.id for n in nodes])
        parent = {m: node for node, ms in members.items() for m in ms}
        found: dict[str, str] = {}
        for held, old_node in was_here:
            votes = Counter(parent[m] for m in {heirs.get(h, h) for h in held} if m in parent)
            if votes:
                found[old_node.id] = min(votes, key=lambda node: (-votes[node], node))
        return found

    def _write_cover(
        self,
        level: int,
        groups: list[list[Node]],
        old: Cover,
        report: BatchReport,
        refreshed: Collection[str] = (),
    ) -> list[Node]:
        pairs: list[tuple[Node, list[Node]]] = []
        fresh: list[list[Node]] = []
        for group in groups:
            node = old.pop((level, frozenset(n.id for n in group)), None)
            if node is not None:
                report.top_summaries_removed += 1  # counted back below if it is kept
            if node is not None and any(n.id in refreshed for n in group):
                node = None  # its text may hold text that was removed below it
            if node is not None and self.store.nodes_with_text(node.text):
                # A member was summarized again in this batch, into this very text:
                # keeping the node would offer a reader the same text twice.
                node = None
            if node is None:
                fresh.append(group)
            else:
                report.top_summaries_removed -= 1
                pairs.append((node, group))
        written = self.nodes(
            level, self.new_ids(level, len(fresh)), fresh, report, {COVER: True}, keep_repeats=True
        )
        report.top_summaries_written += len(written)
        pairs.extend(zip(written, fresh, strict=True))
        self.store.upsert_nodes([node for node, _ in pairs])
        self.store.set_members({node.id: {m.id for m in g} for node, g in pairs}, level)
        return [node for node, _ in pairs]

    def new_ids(self, level: int, count: int) -> list[str]:
        """Ids for new covering nodes of a level (from the labels of the level below)."""
        return [summary_id(label) for label in self.store.allocate_labels(level - 1, count)]

    def _summarize_all(self, groups: list[list[Node]]) -> list[SummaryResult]:
        """Summaries of independent clusters; an LLM backend gets up to
        ``llm_concurrency`` calls in flight (the extractive one is CPU-bound: serial)."""

        def summarize(group: list[Node]) -> SummaryResult:
            texts = [n.text for n in group]
            return self.summarizer.summarize(texts, max_words=self.settings.summary_words)

        if self.llm_concurrency <= 1 or len(groups) <= 1 or self.summarizer.backend == EXTRACTIVE:
            return [summarize(g) for g in groups]
        with ThreadPoolExecutor(max_workers=self.llm_concurrency) as pool:
            return list(pool.map(summarize, groups))


def plain(text: str) -> str:
    """Text compared for repeats: whitespace does not make two texts different."""
    return " ".join(text.split())


def _embedding(node: Node) -> np.ndarray:
    assert node.embedding is not None  # every node is embedded before it is stored
    return node.embedding


def _start_groups(
    old_groups: list[frozenset[str]], index: dict[str, int], heirs: dict[str, str]
) -> list[list[int]]:
    """The old groups of a level on the roots still here (each member read through
    ``heirs``), sorted, each root in the first group that has it."""
    mapped = sorted(
        sorted({index[r] for r in (heirs.get(m, m) for m in members) if r in index})
        for members in old_groups
    )
    taken: set[int] = set()
    groups: list[list[int]] = []
    for group in mapped:
        mine = [i for i in group if i not in taken]
        taken.update(mine)
        groups.append(mine)
    return groups
