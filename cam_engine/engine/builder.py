"""Memory development (CAM Section 4.1), one batch at a time.

A batch of new chunks enters level 0 (network expansion); then each level runs the
same three steps on the part of the graph the batch touched, and hands what it
changed to the level above:

1. re-split the affected nodes into replicas (ego-splitting),
2. propagate labels from the affected replicas (the ripple is capped),
3. keep changed clusters connected and small, re-summarize the clusters whose
   membership changed, drop vanished ones, and relink the summaries of the next level.

It stops at ``max_levels`` or at a level whose clusters no longer shrink it.
Everything runs inside one store transaction opened by the caller.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cam_engine.config import Settings
from cam_engine.embed.base import Embedder
from cam_engine.engine.reports import BatchReport, LevelReport
from cam_engine.engine.timing import PhaseClock
from cam_engine.graph.ego_split import replica_edges, resplit
from cam_engine.graph.hierarchy import absorb_singletons, group_roots
from cam_engine.graph.propagation import propagate
from cam_engine.graph.similarity import Located, expand, window_radius
from cam_engine.graph.split import split_cluster
from cam_engine.llm.base import EXTRACTIVE, Summarizer, SummaryResult
from cam_engine.store.base import GraphStore
from cam_engine.types import SUMMARY, Edge, Node, Replica

logger = logging.getLogger(__name__)

EdgeKey = tuple[str, str]
_WEIGHT_EPSILON = 1e-9
# A level is built only when its clusters are at most this share of the nodes below:
# a level that barely shrinks adds summaries that mostly restate their members.
MIN_SHRINK = 0.75
# The covering top level has at most this many nodes (more roots get more levels).
TOP_SIZE = 10
# Marks a node of the covering top levels (props): it groups roots, not a cluster.
COVER = "cover"


def summary_id(label: str) -> str:
    """The summary node of a cluster: label "L.n" (a level-L cluster) -> "s{L+1}-n"."""
    level, _, number = label.partition(".")
    return f"s{int(level) + 1}-{number}"


@dataclass
class LevelChange:
    """What changed at one level, which the level's update must absorb."""

    level: int
    added: set[str] = field(default_factory=set)
    removed: set[str] = field(default_factory=set)
    changed_edges: set[EdgeKey] = field(default_factory=set)  # appeared or vanished
    reweighted: set[EdgeKey] = field(default_factory=set)  # same edge, new weight
    removed_replicas: list[Replica] = field(default_factory=list)  # of removed nodes

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed_edges or self.reweighted)


class ReplicaGraph:
    """Reads the replica graph from the store on demand (for propagation and splits).

    The labels of every replica it reads are remembered, so label propagation does not
    read again the neighbours it has just read with their edges (one query fewer per
    round, which counts on Neo4j). Use a fresh one per propagation: the remembered
    labels are those stored when it started.
    """

    def __init__(self, store: GraphStore) -> None:
        self._store = store
        self._labels: dict[str, str] = {}

    def neighbours(self, replica_ids: Sequence[str]) -> dict[str, dict[str, float]]:
        replicas = list(self._store.replicas_by_id(replica_ids).values())
        return self.edges_of(replicas)

    def edges_of(self, replicas: Sequence[Replica]) -> dict[str, dict[str, float]]:
        adjacency = self._store.neighbours({r.node_id for r in replicas})
        partners = self._store.replicas_of({m for r in replicas for m in r.members})
        flat = [p for ps in partners.values() for p in ps]
        self._labels.update({r.id: r.label for r in [*replicas, *flat]})
        return replica_edges(replicas, flat, adjacency)

    def labels(self, replica_ids: Sequence[str]) -> dict[str, str]:
        known = {rid: self._labels[rid] for rid in replica_ids if rid in self._labels}
        missing = [rid for rid in replica_ids if rid not in known]
        if missing:
            read = self._store.replicas_by_id(missing)
            known.update({rid: r.label for rid, r in read.items()})
        return known


class MemoryBuilder:
    def __init__(
        self,
        store: GraphStore,
        embedder: Embedder,
        summarizer: Summarizer,
        settings: Settings,
        clock: PhaseClock,
        *,
        llm_concurrency: int = 1,
    ) -> None:
        self.llm_concurrency = llm_concurrency
        self.store = store
        self.embedder = embedder
        self.summarizer = summarizer
        self.settings = settings
        self.clock = clock
        self.replica_graph = ReplicaGraph(store)
        self._texts: set[str] = set()  # summary texts written in the current batch

    # --- level 0 ------------------------------------------------------------------------
    def assimilate(
        self, chunks: Sequence[Node], report: BatchReport, *, stored: bool = False
    ) -> None:
        """Store new chunk nodes and link them into level 0, then develop every level.

        ``stored``: the chunks are in the store already (a rebuild), so the vector
        search must look past them.
        """
        validate_chunk_nodes(chunks)
        self._texts = set()
        with self.clock.phase("edges"):
            # Candidates first, while the store holds only older chunks: a top-k then
            # needs no room for the batch's own chunks.
            pool = self._candidates(chunks, stored=stored)
            if not stored:
                self.store.upsert_nodes(chunks)
            edges = self._expand(chunks, pool)
            self.store.upsert_edges(edges)
        report.edges_added = len(edges)
        with self.clock.phase("summaries"):
            cover = self._take_cover()
        change = LevelChange(0, added={c.id for c in chunks}, changed_edges={e.key for e in edges})
        while change:
            change = self._update_level(change, report)
        with self.clock.phase("summaries"):
            self._build_cover(cover, report)

    def _candidates(self, chunks: Sequence[Node], *, stored: bool) -> list[Node]:
        """Older chunks worth scoring against the new ones: each new chunk's vector
        top-``candidate_k`` and the chunks within the positional window."""
        s = self.settings
        new_ids = {c.id for c in chunks}
        vectors = np.stack([c.embedding for c in chunks if c.embedding is not None])
        pool_ids: set[str] = set()
        # Chunks already stored are among the hits (whether or not a store's index
        # sees this transaction's writes), so ask for room to skip them; a rebuild,
        # where the batch is every chunk, has no older ones to look for.
        if not stored or self.store.count_nodes(0) > len(chunks):
            k = s.candidate_k + (len(chunks) if stored else 0)
            for row in self.store.nearest(0, vectors, k):
                older = [node_id for node_id, _ in row if node_id not in new_ids]
                pool_ids.update(older[: s.candidate_k])
        pool = list(self.store.get_nodes(pool_ids - new_ids, embeddings=True).values())
        radius = window_radius(s.sigma)
        by_doc: dict[str, set[int]] = {}
        for c in chunks:
            assert c.doc_id is not None and c.position is not None
            base = int(c.position)
            by_doc.setdefault(c.doc_id, set()).update(range(base - radius, base + radius + 1))
        for doc_id, positions in by_doc.items():
            pool.extend(n for n in self.store.chunks_near(doc_id, positions) if n.id not in new_ids)
        return list({n.id: n for n in pool}.values())

    def _expand(self, chunks: Sequence[Node], pool: Sequence[Node]) -> list[Edge]:
        s = self.settings
        located_pool = [_located(n) for n in pool]
        new = [_located(c) for c in chunks]
        return expand(new, located_pool, alpha=s.alpha, sigma=s.sigma, theta=s.theta, k=s.k)

    # --- one level ------------------------------------------------------------------------
    def _update_level(self, change: LevelChange, report: BatchReport) -> LevelChange:
        level = change.level
        lrep = LevelReport(level)
        report.levels.append(lrep)
        store = self.store

        with self.clock.phase("replicas"):
            affected, adjacency = self._affected(change)
            lrep.affected_nodes = len(affected)
            old = store.replicas_of(affected)
            gone = change.removed_replicas
            diff = resplit(affected, adjacency, old, level, split=self.settings.ego_split)
            fresh = store.allocate_labels(level, len(diff.added))
            added = [
                Replica(r.id, r.node_id, r.level, label, r.members)
                for r, label in zip(diff.added, fresh, strict=True)
            ]
            store.delete_replicas([r.id for r in diff.removed])
            store.upsert_replicas(added + diff.changed)
            touched = {r.label for r in gone + diff.removed + diff.changed + added}
            lrep.replicas_touched = len(gone) + len(diff.removed) + len(diff.changed) + len(added)

        with self.clock.phase("propagation"):
            seeds = self._seeds(change, added + diff.changed, diff.removed + gone)
            labels = {r.id: r.label for r in seeds}
            graph = ReplicaGraph(store)
            result = propagate(
                [r.id for r in seeds],
                labels,
                graph.neighbours,
                graph.labels,
                max_rounds=self.settings.max_rounds,
                max_size=self.settings.max_cluster_size,
                read_sizes=store.label_sizes,
            )
            lrep.propagation_rounds, lrep.propagation_capped = result.rounds, result.capped
            if result.capped:
                logger.info("label propagation at level %d stopped at the round cap", level)
            relabelled = store.replicas_by_id(result.changed)
            store.upsert_replicas(
                [
                    Replica(r.id, r.node_id, r.level, result.changed[r.id][1], r.members)
                    for r in relabelled.values()
                ]
            )
            for old_label, new_label in result.changed.values():
                touched.update((old_label, new_label))
            lrep.replicas_touched += len(result.changed)
            lrep.clusters_split, touched = self._split_clusters(level, touched)
            lrep.singletons_absorbed, touched = self._absorb_singletons(touched)
            touched = self._keep_cluster_identity(level, touched)

        n_nodes, n_clusters = store.count_nodes(level), store.count_labels(level)
        if level + 1 > self.settings.max_levels or n_clusters > MIN_SHRINK * n_nodes:
            # This level is the top: whatever was built above it no longer belongs.
            self._drop_levels_above(level)
            return LevelChange(level + 1)
        if store.count_nodes(level + 1) == 0:
            touched = set(store.labels_at_level(level))  # the level above is new: build it whole

        with self.clock.phase("summaries"):
            return self._update_summaries(change, touched, lrep, report)

    def _seeds(
        self, change: LevelChange, moved: list[Replica], dropped: list[Replica]
    ) -> list[Replica]:
        """Replicas whose replica-graph neighbourhood changed: the new and re-membered
        replicas, the replicas across an edge from them or from a dropped replica, and
        the replicas at both ends of a re-weighted edge."""
        touching = {(v, r.node_id) for r in [*moved, *dropped] for v in r.members}
        touching |= change.reweighted | {(b, a) for a, b in change.reweighted}
        seeds = {r.id: r for r in moved}
        for node, replicas in self.store.replicas_of({v for v, _ in touching}).items():
            for r in replicas:
                if any((node, m) in touching for m in r.members):
                    seeds[r.id] = r
        return list(seeds.values())

    def _affected(self, change: LevelChange) -> tuple[set[str], dict[str, dict[str, float]]]:
        """Nodes whose ego-network changed, and the adjacency needed to re-split them.

        An edge (x, y) that appeared or vanished alters the ego-networks of x, y and of
        every common neighbour (which sees both). A new weight changes no component.
        """
        store = self.store
        endpoints = {x for key in change.changed_edges for x in key} - change.removed
        near = store.neighbours(endpoints | change.added)
        affected = (change.added | endpoints) - change.removed
        for x, y in change.changed_edges:
            affected |= near.get(x, {}).keys() & near.get(y, {}).keys()
        adjacency = store.neighbours(affected)
        second = {n for nbrs in adjacency.values() for n in nbrs} - adjacency.keys()
        adjacency.update(store.neighbours(second))
        return affected, adjacency

    def _split_clusters(self, level: int, labels: set[str]) -> tuple[int, set[str]]:
        """Split disconnected or oversized clusters among ``labels``.

        Returns the number of clusters split and every label now touched.
        """
        by_label: dict[str, list[Replica]] = {}
        for r in self.store.replicas_with_labels(labels):
            by_label.setdefault(r.label, []).append(r)
        # One read for the replica edges of every touched cluster.
        graph = self.replica_graph.edges_of(
            [r for replicas in by_label.values() if len(replicas) > 1 for r in replicas]
        )
        touched = set(labels)
        splits = 0
        for label in sorted(by_label):
            replicas = by_label[label]
            if len(replicas) == 1:
                continue
            pieces = split_cluster(
                [r.id for r in replicas],
                graph,
                max_size=self.settings.max_cluster_size,
                seed=self.settings.seed,
            )
            if len(pieces) == 1:
                continue
            splits += 1
            by_id = {r.id: r for r in replicas}
            new_labels = self.store.allocate_labels(level, len(pieces) - 1)
            updated = [
                Replica(rid, by_id[rid].node_id, level, new_label, by_id[rid].members)
                for piece, new_label in zip(pieces[1:], new_labels, strict=True)
                for rid in piece
            ]
            self.store.upsert_replicas(updated)
            touched.update(new_labels)
        return splits, touched

    def _absorb_singletons(self, labels: set[str]) -> tuple[int, set[str]]:
        """Move each replica alone in a cluster among ``labels`` into the neighbouring
        cluster it is most tied to, where there is room (``graph.hierarchy``).

        Returns the number moved and every label now touched (the receiving ones too).
        """
        by_label: dict[str, list[Replica]] = {}
        for r in self.store.replicas_with_labels(labels):
            by_label.setdefault(r.label, []).append(r)
        singles = [rs[0] for rs in by_label.values() if len(rs) == 1]
        if not singles:
            return 0, labels
        graph = ReplicaGraph(self.store)  # fresh: labels as stored after the splits
        edges = graph.edges_of(singles)
        partners = sorted({p for nbrs in edges.values() for p in nbrs})
        current = graph.labels(partners) | {r.id: r.label for r in singles}
        sizes = self.store.label_sizes(set(current.values()))
        moved = absorb_singletons(
            [r.id for r in singles],
            edges,
            current,
            sizes,
            max_size=self.settings.max_cluster_size,
        )
        if not moved:
            return 0, labels
        self.store.upsert_replicas(
            [
                Replica(r.id, r.node_id, r.level, moved[r.id], r.members)
                for r in singles
                if r.id in moved
            ]
        )
        return len(moved), labels | set(moved.values())

    def _keep_cluster_identity(self, level: int, labels: set[str]) -> set[str]:
        """Give a cluster born in this batch the label of a cluster that vanished in it
        when they share most members (Jaccard >= 1/2), best match first.

        Labels are arbitrary: propagation can move a whole cluster to a new label, and a
        split can hand an old cluster's members a fresh one. Without this, such a
        cluster's summary would be deleted and written again under a new id (an LLM
        call, and a removed plus an added node one level up); with it, an unchanged
        membership costs nothing and a changed one keeps its summary's id.
        """
        store = self.store
        now: dict[str, set[str]] = {}
        for r in store.replicas_with_labels(labels):
            now.setdefault(r.label, set()).add(r.node_id)
        before = store.members_of(summary_id(label) for label in labels)
        vanished = {
            label: before[summary_id(label)]
            for label in labels - now.keys()
            if summary_id(label) in before
        }
        newborn = {label: ms for label, ms in now.items() if summary_id(label) not in before}
        pairs = sorted(
            (-len(old & new) / len(old | new), old_label, new_label)
            for old_label, old in vanished.items()
            for new_label, new in newborn.items()
            if 2 * len(old & new) >= len(old | new)
        )
        renamed: dict[str, str] = {}
        for _, old_label, new_label in pairs:
            if old_label not in renamed.values() and new_label not in renamed:
                renamed[new_label] = old_label
        if renamed:
            store.upsert_replicas(
                [
                    Replica(r.id, r.node_id, r.level, renamed[r.label], r.members)
                    for r in store.replicas_with_labels(renamed)
                ]
            )
        return labels - renamed.keys()

    def _drop_levels_above(self, level: int) -> None:
        for upper in range(level + 1, self.settings.max_levels + 2):
            ids = [n.id for n in self.store.nodes_at_level(upper)]
            if not ids:
                break
            self.store.delete_nodes(ids)

    # --- summaries of the next level ------------------------------------------------
    def _update_summaries(
        self, change: LevelChange, touched: set[str], lrep: LevelReport, report: BatchReport
    ) -> LevelChange:
        level, store = change.level, self.store
        up = LevelChange(level + 1)
        members: dict[str, set[str]] = {}
        for r in store.replicas_with_labels(touched):
            members.setdefault(summary_id(r.label), set()).add(r.node_id)
        # A cluster of one member gets no summary: it would be a copy of its member,
        # which stays a root where it is (the covering top level picks it up). Members
        # that all have one text (a paragraph in two pooled documents) count as one.
        members = {sid: ms for sid, ms in members.items() if len(ms) > 1}
        texts = store.get_nodes({m for ms in members.values() for m in ms})
        members = {
            sid: ms
            for sid, ms in members.items()
            if len({_plain(texts[m].text) for m in ms if m in texts}) > 1
        }
        candidates = {summary_id(label) for label in touched}
        stored = store.members_of(candidates)
        existing = store.existing_ids(candidates)
        # Only a cluster whose membership changed is re-summarized (an LLM call each);
        # a summary's text is not refreshed when a member's text changes.
        vanished = sorted(sid for sid in candidates if sid not in members and sid in existing)
        write = sorted(sid for sid, ms in members.items() if stored.get(sid) != ms)

        if vanished:
            up.changed_edges |= {e.key for e in store.edges_of(vanished)}
            up.removed_replicas = [r for rs in store.replicas_of(vanished).values() for r in rs]
            store.delete_nodes(vanished)
            up.removed.update(vanished)
        if write:
            self._write_summaries(level + 1, write, members, report)
        up.added = {sid for sid in write if sid not in existing}
        lrep.clusters_changed = len(write) + len(vanished)
        lrep.summaries_written = len(write)
        lrep.summaries_removed = len(vanished)

        # Relink: summaries whose membership changed, and those holding the ends of a
        # changed edge of this level (a new edge between members links their clusters).
        moved = set(write)
        ends = {x for key in change.changed_edges for x in key}
        ends |= {x for key in change.reweighted for x in key}
        holders = {p for ps in store.parents_of(ends).values() for p in ps}
        structural, reweighted = self._relink(level + 1, (moved | holders) - up.removed)
        up.changed_edges |= structural
        up.reweighted = reweighted - structural
        return up

    def _write_summaries(
        self, level: int, ids: list[str], members: dict[str, set[str]], report: BatchReport
    ) -> None:
        store = self.store
        children = store.get_nodes({m for sid in ids for m in members[sid]})
        groups = [[children[m] for m in members[sid] if m in children] for sid in ids]
        store.upsert_nodes(self._summary_nodes(level, ids, groups, report))
        store.set_members({sid: members[sid] for sid in ids}, level)

    def _summary_nodes(
        self,
        level: int,
        ids: list[str],
        groups: list[list[Node]],
        report: BatchReport,
        props: dict[str, Any] | None = None,
    ) -> list[Node]:
        """Summarize and embed each group (members in reading order) as node ``ids[i]``.

        A summary that repeats another node's text word for word (an extractive summary
        of a cluster dominated by one member picks that member's sentences) is written
        again with twice, then four times the word budget: a reader would otherwise be
        offered the same text twice.
        """
        ordered = [
            sorted(group, key=lambda n: (n.doc_id or "", n.position or 0.0, n.id))
            for group in groups
        ]
        nodes: list[Node] = []
        for sid, members, result in zip(ids, ordered, self._summarize_all(ordered), strict=True):
            report.usage += result.usage
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
            repeated = self._repeated(nodes, ordered)
            for i in repeated:
                texts = [n.text for n in ordered[i]]
                words = self.settings.summary_words * factor
                result = self.summarizer.summarize(texts, max_words=words)
                report.usage += result.usage
                report.summaries_rewritten += 1
                nodes[i].text = result.text
            self._embed([nodes[i] for i in repeated])
        self._texts.update(_plain(n.text) for n in nodes)
        return nodes

    def _embed(self, nodes: list[Node]) -> None:
        if not nodes:
            return
        with self.clock.phase("embed"):
            vectors = self.embedder.embed([n.text for n in nodes])
        for node, vector in zip(nodes, vectors, strict=True):
            node.embedding = vector

    def _repeated(self, nodes: list[Node], groups: list[list[Node]]) -> list[int]:
        """Indexes of ``nodes`` whose text another node has: a member, an earlier one of
        ``nodes``, a summary written earlier in the batch, or any stored node (found by
        its identical vector; an index may not see this transaction's writes, hence the
        batch's own texts)."""
        if not nodes:
            return []
        own = {n.id for n in nodes}
        hits = self.store.nearest(None, np.stack([_embedding(n) for n in nodes]), 3)
        same = {hit for row in hits for hit, score in row if score > 1 - 1e-4 and hit not in own}
        stored = {_plain(n.text) for n in self.store.get_nodes(same).values()}
        repeated: list[int] = []
        earlier: set[str] = set()
        for i, (node, group) in enumerate(zip(nodes, groups, strict=True)):
            text = _plain(node.text)
            taken = stored | earlier | self._texts | {_plain(m.text) for m in group}
            if text in taken:
                repeated.append(i)
            earlier.add(text)
        return repeated

    # --- the covering top level -------------------------------------------------------
    def _take_cover(self) -> dict[tuple[int, frozenset[str]], Node]:
        """Remove the covering top levels (rebuilt after the batch), keeping their nodes
        by (level, members) so an unchanged group keeps its summary without a call."""
        store = self.store
        old: dict[tuple[int, frozenset[str]], Node] = {}
        for level in sorted(store.levels(), reverse=True):
            ids = [n.id for n in store.nodes_at_level(level) if n.props.get(COVER)]
            if not ids:
                break
            members = store.members_of(ids)
            for node in store.get_nodes(ids, embeddings=True).values():
                old[(level, frozenset(members.get(node.id, ())))] = node
        if old:
            store.delete_nodes([n.id for n in old.values()])
        return old

    def _build_cover(
        self, old: dict[tuple[int, frozenset[str]], Node], report: BatchReport
    ) -> None:
        """Group the roots (nodes without a parent) into covering levels until one level
        of at most ``TOP_SIZE`` nodes holds every root below it (``graph.hierarchy``)."""
        s = self.settings
        roots = self.store.root_nodes(embeddings=True)
        if s.max_levels == 0 or not roots:
            return
        level = max(n.level for n in roots)
        while len(roots) > 1 and (len(roots) > TOP_SIZE or any(n.level != level for n in roots)):
            vectors = np.stack([_embedding(n) for n in roots])
            groups = group_roots(
                vectors,
                [n.doc_id for n in roots],
                [n.position for n in roots],
                groups=max(TOP_SIZE, math.ceil(len(roots) / s.max_cluster_size)),
                max_size=s.max_cluster_size,
                alpha=s.alpha,
            )
            level += 1
            roots = self._write_cover(level, [[roots[i] for i in g] for g in groups], old, report)
        report.top_nodes = len(roots)

    def _write_cover(
        self,
        level: int,
        groups: list[list[Node]],
        old: dict[tuple[int, frozenset[str]], Node],
        report: BatchReport,
    ) -> list[Node]:
        pairs: list[tuple[Node, list[Node]]] = []
        fresh: list[list[Node]] = []
        for group in groups:
            node = old.pop((level, frozenset(n.id for n in group)), None)
            if node is None:
                fresh.append(group)
            else:
                pairs.append((node, group))
        ids = [summary_id(label) for label in self.store.allocate_labels(level - 1, len(fresh))]
        written = self._summary_nodes(level, ids, fresh, report, {COVER: True})
        report.top_summaries_written += len(written)
        pairs.extend(zip(written, fresh, strict=True))
        self.store.upsert_nodes([node for node, _ in pairs])
        self.store.set_members({node.id: {m.id for m in g} for node, g in pairs}, level)
        return [node for node, _ in pairs]

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

    def _relink(self, level: int, summaries: set[str]) -> tuple[set[EdgeKey], set[EdgeKey]]:
        """Recompute the edges of ``summaries``; returns (appeared or vanished, re-weighted).

        Two summaries are linked when their clusters share members or an edge of the
        level below joins their members; the weight is the number of shared members
        plus the weights of those joining edges.
        """
        if not summaries:
            return set(), set()
        store = self.store
        members = store.members_of(summaries)
        all_members = {m for ms in members.values() for m in ms}
        below = store.neighbours(all_members)
        reach = all_members | {n for nbrs in below.values() for n in nbrs}
        parents = store.parents_of(reach)
        current = store.neighbours(summaries)
        changed: set[EdgeKey] = set()
        reweighted: set[EdgeKey] = set()
        upserts: list[Edge] = []
        deletes: list[EdgeKey] = []
        for sid in sorted(summaries):
            weights: dict[str, float] = {}
            for m in members.get(sid, set()):
                for other in parents.get(m, set()):
                    weights[other] = weights.get(other, 0.0) + 1.0
                for n, w in below.get(m, {}).items():
                    for other in parents.get(n, set()):
                        weights[other] = weights.get(other, 0.0) + w
            weights.pop(sid, None)
            now = current.get(sid, {})
            for other, weight in weights.items():
                if abs(now.get(other, -1.0) - weight) > _WEIGHT_EPSILON:
                    edge = Edge.make(sid, other, level, weight)
                    upserts.append(edge)
                    (reweighted if other in now else changed).add(edge.key)
            for other in now.keys() - weights.keys():
                key = Edge.make(sid, other, level, 0.0).key
                deletes.append(key)
                changed.add(key)
        store.upsert_edges(upserts)
        store.delete_edges(deletes)
        return changed, reweighted


def _plain(text: str) -> str:
    """Text compared for repeats: whitespace does not make two texts different."""
    return " ".join(text.split())


def _embedding(node: Node) -> np.ndarray:
    assert node.embedding is not None  # every node is embedded before it is stored
    return node.embedding


def _located(node: Node) -> Located:
    assert node.embedding is not None and node.position is not None
    return Located(node.id, node.doc_id or "", int(node.position), node.embedding)


def validate_chunk_nodes(nodes: Sequence[Node]) -> None:
    for n in nodes:
        if n.embedding is None or n.doc_id is None or n.position is None:
            raise ValueError(f"chunk {n.id} lacks an embedding, document or position")
