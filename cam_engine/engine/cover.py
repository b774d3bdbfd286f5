"""The covering levels kept between batches, past ``REGROUP_ROOTS`` roots.

Below that many roots, each batch takes the covering levels down before the clustered
levels change and groups every root again after (``SummaryWriter.build_cover``): the
top-down walk (``traverse``) needs groups that follow similarity over the whole memory.
Past it, that regrouping read every root with its vector, placed every root and
rewrote every covering node in every batch: in proportion to the memory, not the batch
(58% of a batch at 53,000 chunks). So the covering levels stay; the store's structure
keeps them apart from the clustered levels, which update as if they were gone
(store/structure.py); and after the clustered levels, each covering level changes only
where the batch reached it:

- a node of the level below that left (deleted, or now under a cluster) leaves its
  group; a new one joins its best group with room (``graph.hierarchy.KeptGroups``,
  scored as ``_placed`` scores), or a new group of such nodes when every group is full;
- a group left with one member joins its most similar group; an empty one goes;
- a group whose members changed, that holds a summary written again for a removal
  (``refreshed``), or whose text a node of this batch now has, is written again under
  a new id, and that change is what the level above sees.

The group sums are held in memory between batches (``BatchStore.cover_cache``, dropped
with the structure) and built from the stored groups on a process's first batch. The
small levels at the top (at most ``TOP_SIZE * max_cluster_size`` nodes below them) are
grouped again in every batch, as below ``REGROUP_ROOTS``. When the clustered levels
grew or shrank by a level, every covering level would move: the levels are taken down
and grouped from the kept groups as before (``Cover``), once, each level starting from
its old groups (``SummaryWriter.group``).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Set
from typing import TYPE_CHECKING, Any

import numpy as np

from cam_engine.config import Settings
from cam_engine.engine.reports import BatchReport
from cam_engine.graph.hierarchy import KeptGroups, unit
from cam_engine.store.batch import BatchStore, root_order
from cam_engine.store.structure import NodeInfo
from cam_engine.types import COVER, Node

if TYPE_CHECKING:
    from cam_engine.engine.summaries import Cover, SummaryWriter

# Past this many roots the covering levels are kept between batches (see above).
REGROUP_ROOTS = 1000
# The covering top level has at most this many nodes (more roots get more levels).
TOP_SIZE = 10


def keeps_cover(store: BatchStore, max_levels: int) -> bool:
    """Whether the covering levels stay through the batch about to start."""
    levels, clustered = store.cover_levels(), store.levels()
    return (
        max_levels > 0
        and bool(levels)
        and bool(clustered)
        and levels[0] == clustered[-1] + 1
        and len(store.root_ids()) > REGROUP_ROOTS
    )


def update_kept_cover(
    writer: SummaryWriter, report: BatchReport, refreshed: Collection[str]
) -> Cover | None:
    """Bring the kept covering levels up to date after the clustered levels changed.
    Returns None when done, or the covering levels taken down (``Cover``) when they must
    be grouped again from them (``SummaryWriter.build_cover`` does that)."""
    store, settings = writer.store, writer.settings
    changed, shrunk = store.take_root_changes()
    if not keeps_cover(store, settings.max_levels):
        return writer.take_down(store.cover_levels(), report)
    levels = store.cover_levels()
    groups_by_level: dict[int, KeptGroups] = store.cover_cache or {}
    store.cover_cache = groups_by_level
    below = store.root_ids()  # views: the cover's update changes neither
    written_keys = store.written_text_keys()
    for step, level in enumerate(levels):
        if math.ceil(len(below) / settings.max_cluster_size) <= TOP_SIZE:
            # The small top: grouped again from its kept groups, as below REGROUP_ROOTS.
            for upper in levels[step:]:
                groups_by_level.pop(upper, None)
            old = writer.take_down(levels[step:], report)
            nodes = store.nodes_in_order(below, embeddings=True)
            writer.group(nodes, level - 1, old, report, refreshed, regroup=False)
            report.top_summaries_removed += len(old)
            return None
        if level not in groups_by_level:
            groups_by_level[level] = _kept_groups(store, level, below, settings)
        level_update = _LevelUpdate(writer, level, groups_by_level[level], below)
        fresh = level_update.run(changed, shrunk, refreshed, written_keys, report)
        written_keys |= set(store.text_keys(fresh).values())
        changed, shrunk = store.take_root_changes()
        changed |= fresh
        below = store.cover_set(level)
    top = store.nodes_in_order(below, embeddings=True)
    writer.group(top, levels[-1], {}, report, refreshed, regroup=False)
    return None


class _LevelUpdate:
    """One kept covering level brought up to date (see the module docstring)."""

    def __init__(
        self, writer: SummaryWriter, level: int, groups: KeptGroups, below: Set[str]
    ) -> None:
        self.writer = writer
        self.store = writer.store
        self.level = level
        self.groups = groups
        self.below = below  # the level below's nodes, as they are now
        self.members: dict[str, set[str]] = {}  # group -> members, for the groups touched

    def run(
        self,
        changed: set[str],
        shrunk: set[str],
        refreshed: Collection[str],
        written_keys: set[bytes],
        report: BatchReport,
    ) -> set[str]:
        """Returns the ids of the covering nodes written (the level above's change)."""
        store, level = self.store, self.level
        here = store.cover_set(level)
        parents = store.cover_parents(changed | set(refreshed))
        touched = {g for g in shrunk if g in here}
        touched |= {parents[i] for i in refreshed if parents.get(i) in here}
        touched |= store.covers_with_text(written_keys) & here
        infos = store.infos(changed & self.below)
        new: list[str] = []
        for node in changed:
            group = parents.get(node)
            if node in self.below:
                info = infos[node]
                self.groups.add_node(node, info.doc_id, _reading_key(info))
                if group is None:
                    new.append(node)
            else:
                self.groups.drop_node(node)
                if group is not None and group in here:
                    self._member_set(group).discard(node)
                    touched.add(group)
        # One read for the vectors of every touched group's members (each group's sum
        # below reads them again from the batch's store, not the store).
        self._vectors({m for group in touched for m in self._member_set(group)})
        for group in sorted(touched):
            members = self._member_set(group)
            if members:
                self.groups.set_group(group, self._stacked(members))
            else:
                self.groups.drop_group(group)
        overflow = self._place(sorted(new, key=lambda i: root_order(infos[i])), infos)
        size = self.writer.settings.max_cluster_size
        new_groups = [set(overflow[i : i + size]) for i in range(0, len(overflow), size)]
        self._join_singletons(new_groups)
        return self._write(new_groups, report)

    def _place(self, new: list[str], infos: dict[str, NodeInfo]) -> list[str]:
        """Each new node into its best group with room; returns those that found none."""
        if not new:
            return []
        vectors = self._vectors(new)
        places = [(infos[i].doc_id, _reading_key(infos[i])) for i in new]
        chosen = self.groups.place(new, np.stack([vectors[i] for i in new]), places, self._group_of)
        overflow: list[str] = []
        for node, group in zip(new, chosen, strict=True):
            if group is None:
                overflow.append(node)
            else:
                self._member_set(group).add(node)
        return overflow

    def _member_set(self, group: str) -> set[str]:
        if group not in self.members:
            self.members[group] = set(self.store.members_of([group]).get(group, ()))
        return self.members[group]

    def _group_of(self, node: str) -> str | None:
        return self.store.cover_parents([node]).get(node)

    def _join_singletons(self, new_groups: list[set[str]]) -> None:
        """A group of one joins the group of two or more most similar to it (over the
        size cap if it must): no covering node is a copy of its one member. New groups
        of two or more are candidates too; centroids are taken before any joins."""
        singles = [ms for ms in [*self.members.values(), *new_groups] if len(ms) == 1]
        if not singles:
            return
        fresh = [ms for ms in new_groups if len(ms) > 1]
        fresh_units = [unit(self._stacked(ms).sum(axis=0)) for ms in fresh]
        # (the single's set, the kept group or the new group it joins)
        choices: list[tuple[set[str], str | set[str]]] = []
        for ms in singles:
            (node,) = ms
            vector = self._vectors([node])[node]
            target, score = self.groups.most_similar(vector)
            best: str | set[str] | None = target
            direction = unit(vector)
            for candidate, centroid in zip(fresh, fresh_units, strict=True):
                similarity = float(centroid @ direction)
                if best is None or similarity > score:
                    best, score = candidate, similarity
            if best is not None:
                choices.append((ms, best))
        for ms, best in choices:
            (self._member_set(best) if isinstance(best, str) else best).update(ms)
            ms.clear()

    def _write(self, new_groups: list[set[str]], report: BatchReport) -> set[str]:
        """Delete the touched groups' nodes, write a node for each group with members."""
        store, level = self.store, self.level
        old = sorted(self.members)
        groups = [ms for ms in [*self.members.values(), *new_groups] if ms]
        for group in old:
            self.groups.drop_group(group)
        store.delete_nodes(old)
        report.top_summaries_removed += len(old)
        if not groups:
            return set()
        infos = store.infos({m for ms in groups for m in ms})
        groups.sort(key=lambda ms: min(root_order(infos[m]) for m in ms))
        members = store.get_nodes({m for ms in groups for m in ms}, embeddings=True)
        ordered = [[members[m] for m in ms] for ms in groups]
        ids = self.writer.new_ids(level, len(groups))
        written = self.writer.nodes(level, ids, ordered, report, {COVER: True}, keep_repeats=True)
        report.top_summaries_written += len(written)
        store.upsert_nodes(written)
        store.set_members({n.id: set(ms) for n, ms in zip(written, groups, strict=True)}, level)
        for node, ms in zip(written, groups, strict=True):
            self.groups.set_group(node.id, self._stacked(ms))
        return {n.id for n in written}

    def _vectors(self, ids: Iterable[str]) -> dict[str, np.ndarray]:
        nodes = self.store.get_nodes(ids, embeddings=True)
        return {i: _vector(n) for i, n in nodes.items()}

    def _stacked(self, members: Collection[str]) -> np.ndarray:
        """The members' vectors in id order: a group's sum does not depend on the order
        it was built in, so every process holds the same sums."""
        ordered = sorted(members)
        vectors = self._vectors(ordered)
        return np.stack([vectors[m] for m in ordered])


def _kept_groups(store: BatchStore, level: int, below: Set[str], settings: Settings) -> KeptGroups:
    """A covering level's groups as stored (a process's first batch past the limit)."""
    ids = store.cover_ids(level)
    members = store.members_of(ids)
    nodes = store.get_nodes({m for ms in members.values() for m in ms}, embeddings=True)
    dims = next(len(_vector(n)) for n in nodes.values())
    groups = KeptGroups(dims, alpha=settings.alpha, max_size=settings.max_cluster_size)
    for group in ids:
        ordered = sorted(m for m in members.get(group, ()) if m in nodes)
        if ordered:
            groups.set_group(group, np.stack([_vector(nodes[m]) for m in ordered]))
    for node, info in store.infos(below).items():
        groups.add_node(node, info.doc_id, _reading_key(info))
    return groups


def _vector(node: Node) -> np.ndarray:
    assert node.embedding is not None
    return np.asarray(node.embedding, dtype=np.float64)


def _reading_key(info: Node | NodeInfo) -> tuple[Any, ...]:
    """A node's place in its document's reading order (``hierarchy._ranks``)."""
    return (info.position or 0.0, info.level, info.position is not None, info.id)
