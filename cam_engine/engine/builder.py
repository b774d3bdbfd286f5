"""Memory development (CAM Section 4.1), one batch at a time.

A batch of new chunks enters level 0 (network expansion); then each level runs the
same three steps on the part of the graph the batch touched, and hands what it
changed to the level above:

1. re-split the affected nodes into replicas (ego-splitting),
2. propagate labels from the affected replicas (the ripple is capped),
3. keep changed clusters connected and small (a replica left alone joins a
   neighbouring cluster with room), re-summarize the clusters of two or more members
   whose membership drifted past ``Settings.resummarize_drift`` from what their
   summary was written from (or whose summary may hold removed text), give the others
   their new members, drop vanished ones, and relink the summaries of the next level.

It stops at ``max_levels`` or at a level whose clusters would keep more than
``MIN_SHRINK`` of its nodes. Then what has no parent is grouped into the covering top
level (``summaries.SummaryWriter.build_cover``). The builder works on the batch's
``BatchStore`` (store/batch.py): its reads of the structure cost no store call, and
what it writes reaches the store at the end of the batch, in one transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from cam_engine.config import Settings
from cam_engine.embed.base import Embedder
from cam_engine.engine.reports import BatchReport, LevelReport
from cam_engine.engine.summaries import (
    INHERITED_FROM,
    WRITTEN_FROM,
    SummaryWriter,
    label_of,
    must_rewrite,
    provenance,
    summary_id,
    written_from,
)
from cam_engine.engine.timing import PhaseClock
from cam_engine.graph.ego_split import resplit
from cam_engine.graph.hierarchy import absorb_singletons
from cam_engine.graph.propagation import propagate
from cam_engine.graph.similarity import Located, composite, expand, window_radius
from cam_engine.graph.split import split_cluster
from cam_engine.llm.base import Summarizer
from cam_engine.store.batch import BatchStore
from cam_engine.types import Edge, Node, Replica

logger = logging.getLogger(__name__)

EdgeKey = tuple[str, str]
_WEIGHT_EPSILON = 1e-9
# A chunk edge scored again from its float32 vectors differs from its stored score in
# the last bits (another summation order than the batch's matrix product): a change
# this small is no change, or every moved chunk's edges would be rewritten and re-split.
_SCORE_TOLERANCE = 1e-6
# A level is built only when its clusters are at most this share of the nodes below:
# a level that barely shrinks adds summaries that mostly restate their members.
MIN_SHRINK = 0.75


@dataclass
class LevelChange:
    """What changed at one level, which the level's update must absorb."""

    level: int
    added: set[str] = field(default_factory=set)
    removed: set[str] = field(default_factory=set)
    changed_edges: set[EdgeKey] = field(default_factory=set)  # appeared or vanished
    reweighted: set[EdgeKey] = field(default_factory=set)  # same edge, new weight
    removed_replicas: list[Replica] = field(default_factory=list)  # of removed nodes
    # Summaries of the next level to write again whatever their members: their text may
    # hold text of a removed chunk (written from it, or from a summary written again or
    # deleted because of it, or inherited from one: ``MemoryBuilder._readers``). Text
    # of a removed chunk must not live on in a summary above it.
    stale: set[str] = field(default_factory=set)
    # Summaries of the next level that lost a member deleted in this batch: their stored
    # members already lack it, so only this says that their membership changed.
    shrunk: set[str] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(
            self.added or self.removed or self.changed_edges or self.reweighted or self.stale
        )


class ReplicaGraph:
    """The replica graph around some replicas, read from the batch's store (for label
    propagation, cluster splits and lone replicas)."""

    def __init__(self, store: BatchStore) -> None:
        self._store = store

    def neighbours(self, replica_ids: Sequence[str]) -> dict[str, dict[str, float]]:
        return self.edges_of(list(self._store.replicas_by_id(replica_ids).values()))

    def edges_of(self, replicas: Sequence[Replica]) -> dict[str, dict[str, float]]:
        """As ``graph.ego_split.replica_edges``, with the far ends looked up in the
        store's index of which replica holds which member."""
        adjacency = self._store.neighbours({r.node_id for r in replicas})
        edges: dict[str, dict[str, float]] = {}
        for r in replicas:
            ends = edges[r.id] = {}
            for v in sorted(r.members):
                far = self._store.replica_holder(v, r.node_id)
                if far is not None:
                    ends[far] = float(adjacency[r.node_id][v])
        return edges

    def labels(self, replica_ids: Sequence[str]) -> dict[str, str]:
        return {rid: r.label for rid, r in self._store.replicas_by_id(replica_ids).items()}


class MemoryBuilder:
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
        self.replica_graph = ReplicaGraph(store)
        self.writer = SummaryWriter(
            store, embedder, summarizer, settings, clock, llm_concurrency=llm_concurrency
        )
        # Summaries written again because text under them was removed: a covering node
        # over one of them is written again too (``SummaryWriter.build_cover``).
        self.refreshed: set[str] = set()
        # Summaries of a level the update has not reached yet that must be written again
        # (by level): they inherited text of a removed node (``_readers``).
        self.stale_ahead: dict[int, set[str]] = {}

    # --- level 0 ------------------------------------------------------------------------
    def assimilate(
        self, chunks: Sequence[Node], report: BatchReport, *, stored: bool = False
    ) -> None:
        """Store new chunk nodes and link them into level 0, then develop every level.

        ``stored``: the chunks are in the store already (a rebuild), so the vector
        search must look past them.
        """
        self.revise(chunks, report, stored=stored)

    def revise(
        self,
        added: Sequence[Node],
        report: BatchReport,
        *,
        removed: Collection[str] = (),
        moved: Sequence[Node] = (),
        stored: bool = False,
    ) -> None:
        """Change level 0, then develop every level from what changed.

        ``removed`` chunks go with their edges, replicas and memberships; ``moved``
        chunks (kept by an updated document, at a new position) are written again and
        the proximity part of their edges follows their new distance; ``added`` chunks
        are linked in as ``assimilate`` does. Each level then re-splits, re-propagates
        and re-summarizes only the clusters these changes reach: a cluster that lost
        members is summarized again, one left with a single member is dissolved.
        """
        validate_chunk_nodes(added)
        validate_chunk_nodes(moved)
        store = self.store
        with self.clock.phase("summaries"):
            # Taken before any removal: a covering node is then kept only when its
            # members are all still there (``SummaryWriter.take_cover``).
            cover = self.writer.take_cover()
        change = LevelChange(0, added={c.id for c in added})
        with self.clock.phase("edges"):
            gone = sorted(store.existing_ids(removed))
            if gone:
                change.removed = set(gone)
                change.stale = self._stale_readers(gone, 1)
                change.changed_edges |= {e.key for e in store.edges_of(gone)}
                change.removed_replicas += [
                    r for rs in store.replicas_of(gone).values() for r in rs
                ]
                store.delete_nodes(gone)
            if moved:
                # Only a chunk whose position changes needs its edges scored again: an
                # edge's proximity part depends on positions, not on offsets, which
                # move for every chunk after an edit that changed the text's length.
                was = store.infos([n.id for n in moved])
                shifted = [n for n in moved if n.id not in was or was[n.id].position != n.position]
                store.place_chunks(moved)
                if shifted:
                    vanished, reweighted = self._rescore_moved(shifted)
                    change.changed_edges |= vanished
                    change.reweighted |= reweighted
            if added:
                # Candidates first, while the store holds only older chunks: a top-k
                # then needs no room for the batch's own chunks.
                pool = self._candidates(added, stored=stored)
                if not stored:
                    store.upsert_nodes(added)
                edges = self._expand(added, pool)
                store.upsert_edges(edges)
                report.edges_added = len(edges)
                change.changed_edges |= {e.key for e in edges}
        change.reweighted -= change.changed_edges
        if store.count_nodes(0) == 0:
            # The last chunk went: nothing is left to summarize.
            self._drop_levels_above(0, report)
            if cover is None:  # kept through the batch: nothing is left to cover
                cover = self.writer.take_down(store.cover_levels(), report)
            report.top_summaries_removed += len(cover)
            return
        while change or self._stale_ahead_of(change.level):
            change = self._update_level(change, report)
        with self.clock.phase("summaries"):
            self.writer.build_cover(cover, report, refreshed=self.refreshed)

    def _rescore_moved(self, moved: Sequence[Node]) -> tuple[set[EdgeKey], set[EdgeKey]]:
        """Score again the edges of chunks that moved, with their new distance.

        The cosine part stays; the proximity part follows the new positions (a chunk
        inserted or removed between two chunks moves them apart or together). An edge
        whose score falls below theta goes. Returns (edges gone, edges re-weighted).
        """
        s, store = self.settings, self.store
        moved_ids = {n.id for n in moved}
        pairs = {tuple(sorted((a, b))) for a in moved_ids for b in store.neighbours([a])[a]}
        ends = sorted({x for pair in pairs for x in pair})
        nodes = store.get_nodes(ends, embeddings=True)
        vanished: set[EdgeKey] = set()
        reweighted: list[Edge] = []
        for a, b in sorted(pairs):
            x, y = nodes.get(a), nodes.get(b)
            if x is None or y is None or x.level != 0 or y.level != 0:
                continue
            assert x.embedding is not None and y.embedding is not None
            cosine = float(np.dot(x.embedding, y.embedding))
            same = x.doc_id == y.doc_id and x.position is not None and y.position is not None
            delta = float((x.position or 0.0) - (y.position or 0.0)) if same else 0.0
            score, prox = composite(
                np.array([cosine]), np.array([delta]), np.array([same]), s.alpha, s.sigma
            )
            if score[0] < s.theta:
                vanished.add((a, b))
            elif abs(float(score[0]) - store.neighbours([a])[a][b]) > _SCORE_TOLERANCE:
                reweighted.append(
                    Edge.make(a, b, 0, float(score[0]), cosine=cosine, proximity=float(prox[0]))
                )
        store.delete_edges(sorted(vanished))
        store.upsert_edges(reweighted)
        return vanished, {e.key for e in reweighted}

    def _candidates(self, chunks: Sequence[Node], *, stored: bool) -> list[Node]:
        """Older chunks worth scoring against the new ones: each new chunk's vector
        top-``candidate_k`` and the chunks within the positional window."""
        s = self.settings
        new_ids = {c.id for c in chunks}
        vectors = np.stack([c.embedding for c in chunks if c.embedding is not None])
        pool_ids: set[str] = set()
        # In a rebuild the batch's chunks are stored already and among the hits, so
        # ask for room to skip them; when the batch is every chunk, there are no
        # older ones to look for.
        if not stored or self.store.count_nodes(0) > len(chunks):
            k = s.candidate_k + (len(chunks) if stored else 0)
            for row in self.store.nearest(0, vectors, k):
                older = [node_id for node_id, _ in row if node_id not in new_ids]
                pool_ids.update(older[: s.candidate_k])
        radius = window_radius(s.sigma)
        for c in chunks:
            assert c.doc_id is not None and c.position is not None
            base = int(c.position)
            pool_ids |= self.store.chunk_ids_near(c.doc_id, range(base - radius, base + radius + 1))
        return list(self.store.get_nodes(sorted(pool_ids - new_ids), embeddings=True).values())

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
            # Clusters whose summary is stale are summarized again, and only that: they
            # are not re-split (a cluster nothing else touched keeps its shape).
            touched |= {label_of(sid) for sid in change.stale | change.shrunk}

        n_nodes, n_clusters = store.count_nodes(level), store.count_labels(level)
        if level + 1 > self.settings.max_levels or n_clusters > MIN_SHRINK * n_nodes:
            # This level is the top: whatever was built above it no longer belongs.
            self._drop_levels_above(level, report)
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

    def _affected(self, change: LevelChange) -> tuple[set[str], dict[str, Mapping[str, float]]]:
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

    def _drop_levels_above(self, level: int, report: BatchReport) -> None:
        for upper in range(level + 1, self.settings.max_levels + 2):
            ids = [n.id for n in self.store.infos_at_level(upper)]
            if not ids:
                break
            self.store.delete_nodes(ids)
            report.top_summaries_removed += len(ids)

    # --- summaries of the next level ------------------------------------------------
    def _update_summaries(
        self, change: LevelChange, touched: set[str], lrep: LevelReport, report: BatchReport
    ) -> LevelChange:
        level, store = change.level, self.store
        up = LevelChange(level + 1, stale=self.stale_ahead.pop(level + 2, set()))
        members: dict[str, set[str]] = {}
        for r in store.replicas_with_labels(touched):
            members.setdefault(summary_id(r.label), set()).add(r.node_id)
        # A cluster of one member gets no summary: it would be a copy of its member,
        # which stays a root where it is (the covering top level picks it up). Members
        # that all have one text (a paragraph in two pooled documents) count as one.
        members = {sid: ms for sid, ms in members.items() if len(ms) > 1}
        keys = store.text_keys({m for ms in members.values() for m in ms})
        members = {sid: ms for sid, ms in members.items() if len({keys[m] for m in ms}) > 1}
        candidates = {summary_id(label) for label in touched}
        stored = store.members_of(candidates)
        existing = store.existing_ids(candidates)
        vanished = sorted(sid for sid in candidates if sid not in members and sid in existing)
        changed = sorted(
            sid
            for sid, ms in members.items()
            if stored.get(sid) != ms or sid in change.stale or sid in change.shrunk
        )
        # Of the clusters whose membership changed, only those that never had a summary,
        # lost a member's text (stale) or drifted too far from the members their summary
        # was written from are re-summarized (an LLM call each); the others keep their
        # text under their new members. A summary's text is not refreshed when a
        # member's text changes.
        write = [sid for sid in changed if self._must_write(sid, members[sid], stored, change)]
        keep = sorted(set(changed) - set(write))

        self._remove(vanished, up, change.stale)
        self._keep_summaries(level + 1, keep, members)
        if write:
            written = self._write_summaries(level + 1, write, members, report)
            # A summary that could only repeat another node's text is not kept: as for a
            # cluster of one, its members stay roots where they are.
            declined = [sid for sid in write if sid not in written]
            self._remove([sid for sid in declined if sid in existing], up, change.stale)
            vanished += declined
            write = [sid for sid in write if sid in written]
        # A summary written again for a removal makes its own parents stale in turn.
        rewritten = [sid for sid in write if sid in change.stale]
        self.refreshed.update(rewritten)
        up.stale |= self._stale_readers(rewritten, level + 2)
        up.added = {sid for sid in write if sid not in existing}
        lrep.clusters_changed = len(write) + len(keep) + len(vanished)
        lrep.summaries_written = len(write)
        lrep.summaries_new = len(up.added)
        lrep.summaries_kept = len(keep)
        lrep.summaries_removed = len(vanished)

        # Relink: summaries whose membership changed, and those holding the ends of a
        # changed edge of this level (a new edge between members links their clusters).
        moved = set(write) | set(keep)
        ends = {x for key in change.changed_edges for x in key}
        ends |= {x for key in change.reweighted for x in key}
        holders = {p for ps in store.parents_of(ends).values() for p in ps}
        structural, reweighted = self._relink(level + 1, (moved | holders) - up.removed)
        up.changed_edges |= structural
        up.reweighted = reweighted - structural
        return up

    def _must_write(
        self, sid: str, members: set[str], stored: Mapping[str, set[str]], change: LevelChange
    ) -> bool:
        """Whether the summary of a cluster whose membership changed is written (again)."""
        info = self.store.infos([sid]).get(sid)
        if info is None or sid in change.stale:
            return True
        written = written_from(info.props, stored.get(sid, set()))
        return must_rewrite(written, members, self.settings.resummarize_drift)

    def _keep_summaries(self, level: int, ids: list[str], members: dict[str, set[str]]) -> None:
        """Give these summaries their new members without writing their text again: the
        members they were written from stay in their props (so a later change adds to
        the drift), while their document and position follow the members they have now
        (a summary with a document holds only that document's chunks below it)."""
        if not ids:
            return
        store = self.store
        nodes = store.get_nodes(ids, embeddings=True)
        stored = store.members_of(ids)
        children = store.infos({m for sid in ids for m in members[sid]})
        kept: list[Node] = []
        for sid in ids:
            node = nodes[sid]
            below = [children[m] for m in members[sid] if m in children]
            docs = {c.doc_id for c in below}
            positions = [c.position for c in below if c.position is not None]
            props = dict(node.props)
            props[WRITTEN_FROM] = sorted(written_from(node.props, stored.get(sid, set())))
            props["members"] = len(below)
            kept.append(
                replace(
                    node,
                    doc_id=docs.pop() if len(docs) == 1 else None,
                    position=sum(positions) / len(positions) if positions else None,
                    props=props,
                )
            )
        store.upsert_nodes(kept)
        store.set_members({sid: members[sid] for sid in ids}, level)

    def _readers(self, ids: Collection[str], level: int) -> set[str]:
        """The summaries whose text may hold text of ``ids`` (nodes of ``level`` - 1):
        their parents, the summaries of ``level`` still written from them after they
        left (a change too small to rewrite a summary keeps its text), and those of
        any level that inherited their text from a deleted member."""
        if not ids:
            return set()
        store = self.store
        readers = {p for ps in store.parents_of(ids).values() for p in ps}
        wanted = set(ids)
        for at in [at for at in store.levels() if at >= level]:
            for info in store.infos_at_level(at):
                held = list(info.props.get(INHERITED_FROM, ()))
                if at == level:
                    held += info.props.get(WRITTEN_FROM, ())
                if not wanted.isdisjoint(held):
                    readers.add(info.id)
        return readers

    def _stale_readers(self, ids: Collection[str], level: int) -> set[str]:
        """``_readers`` of ``ids``: those of ``level`` are returned, those further up
        are kept in ``stale_ahead`` until the update reaches their level."""
        readers = self._readers(ids, level)
        infos = self.store.infos(readers)
        for sid in readers:
            if infos[sid].level > level:
                self.stale_ahead.setdefault(infos[sid].level, set()).add(sid)
        return {sid for sid in readers if infos[sid].level == level}

    def _stale_ahead_of(self, level: int) -> bool:
        """Whether summaries above the next level still wait to be written again."""
        for at in [at for at in self.stale_ahead if at <= level + 1]:
            del self.stale_ahead[at]  # their levels were dropped: nothing is left to write
        return any(self.store.existing_ids(ids) for ids in self.stale_ahead.values())

    def _remove(self, summaries: list[str], up: LevelChange, stale: Collection[str]) -> None:
        """Delete the summaries of clusters that dissolved (or whose summary was
        declined). What was written from one that was ``stale`` (its text may hold
        text of a removed chunk) is written again; what was written from another one
        keeps its text and inherits what that text was written from, so a later
        removal still finds it. Either way the members' change reaches the summaries
        above them as any change does (the drift rule)."""
        if not summaries:
            return
        store = self.store
        up.shrunk |= {p for ps in store.parents_of(summaries).values() for p in ps}
        tainted = [s for s in summaries if s in stale]
        up.stale |= self._stale_readers(tainted, up.level + 1)
        self._inherit([s for s in summaries if s not in stale], up.level + 1, up.stale)
        up.changed_edges |= {e.key for e in store.edges_of(summaries)}
        up.removed_replicas += [r for rs in store.replicas_of(summaries).values() for r in rs]
        store.delete_nodes(summaries)
        up.removed.update(summaries)

    def _inherit(self, deleted: list[str], level: int, stale: Collection[str]) -> None:
        """Add to the summaries that hold the text of ``deleted`` summaries (nodes of
        ``level`` - 1) what that text was written from."""
        if not deleted:
            return
        store = self.store
        held = {d: provenance(i.props, ()) for d, i in store.infos(deleted).items()}
        stored = store.members_of(deleted)
        held = {d: ids or stored.get(d, set()) for d, ids in held.items()}
        updated: list[Node] = []
        for reader_id in sorted(self._readers(deleted, level) - set(stale)):
            node = store.get_nodes([reader_id], embeddings=True)[reader_id]
            sources = provenance(node.props, store.members_of([reader_id]).get(reader_id, ()))
            extra = set().union(*(held[d] for d in deleted if d in sources))
            if extra:
                inherited = set(node.props.get(INHERITED_FROM, ())) | extra
                props = {**node.props, INHERITED_FROM: sorted(inherited)}
                updated.append(replace(node, props=props))
        store.upsert_nodes(updated)

    def _write_summaries(
        self, level: int, ids: list[str], members: dict[str, set[str]], report: BatchReport
    ) -> set[str]:
        """Write the summaries of these clusters; returns the ids written (see
        ``SummaryWriter.nodes`` for those it declines)."""
        store = self.store
        children = store.get_nodes({m for sid in ids for m in members[sid]})
        groups = [[children[m] for m in members[sid] if m in children] for sid in ids]
        nodes = self.writer.nodes(level, ids, groups, report, keep_repeats=False)
        for node in nodes:
            node.props[WRITTEN_FROM] = sorted(members[node.id])
        store.upsert_nodes(nodes)
        store.set_members({n.id: members[n.id] for n in nodes}, level)
        return {n.id for n in nodes}

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


def _located(node: Node) -> Located:
    assert node.embedding is not None and node.position is not None
    return Located(node.id, node.doc_id or "", int(node.position), node.embedding)


def validate_chunk_nodes(nodes: Sequence[Node]) -> None:
    for n in nodes:
        if n.embedding is None or n.doc_id is None or n.position is None:
            raise ValueError(f"chunk {n.id} lacks an embedding, document or position")
