"""Structural invariants every memory must satisfy after any batch sequence."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from cam_engine.engine.summaries import (
    COVER,
    INHERITED_FROM,
    TOP_SIZE,
    WRITTEN_FROM,
    must_rewrite,
    summary_id,
)
from cam_engine.graph.ego_split import ego_components
from cam_engine.names import names_in
from cam_engine.store.base import GraphStore
from cam_engine.store.sqlite import SqliteStore
from cam_engine.store.structure import GraphStructure

SUMMARY_ID = re.compile(r"s\d+-\d+")


def check_memory(store: GraphStore, *, max_cluster_size: int) -> None:
    stats = store.stats()
    levels = [row["level"] for row in stats["levels"]]
    if not levels:  # an empty memory (every document deleted) holds nothing at all
        assert stats["documents"] == 0 and stats["roots"] == 0
        return
    top = max(levels, default=0)
    # Levels made of covering nodes (groups of roots) sit above the clustered ones.
    covering = [lv for lv in levels if all(n.props.get(COVER) for n in store.nodes_at_level(lv))]
    clustered = [lv for lv in levels if lv not in covering]
    assert covering == list(range(max(clustered) + 1, top + 1)), "covering levels on top"
    for level in covering:
        ids = [n.id for n in store.nodes_at_level(level)]
        held = store.members_of(ids)
        empty = [i for i in ids if not held.get(i)]
        assert not empty, f"covering nodes without members at level {level}: {empty[:5]}"
    for level in clustered:
        nodes = {n.id: n for n in store.nodes_at_level(level)}
        adjacency = store.neighbours(nodes)
        replicas = store.replicas_of(nodes)
        # Ego-splitting: the replicas of a node are exactly its ego-network's components.
        for node_id in nodes:
            expected = set(
                ego_components(node_id, adjacency | store.neighbours(adjacency[node_id]))
            )
            got = {r.members for r in replicas.get(node_id, [])}
            assert got == (expected or {frozenset()}), f"replicas of {node_id} at level {level}"
        clusters: dict[str, set[str]] = defaultdict(set)
        for reps in replicas.values():
            for r in reps:
                clusters[r.label].add(r.node_id)
        # Every node is in at least one cluster; clusters are capped in size.
        assert set(nodes) <= {n for members in clusters.values() for n in members}
        for label, members in clusters.items():
            assert len(members) <= max_cluster_size, f"cluster {label} has {len(members)} nodes"
        # A cluster of one member (or of members with one text) has no summary: it
        # would be a copy of its member.
        clusters = {
            label: ms
            for label, ms in clusters.items()
            if len({" ".join(nodes[m].text.split()) for m in ms}) > 1
        }
        if level < max(clustered):
            # Each summary of the next level is one cluster with exactly its members. A
            # cluster may lack one: a summary that could only repeat another node's text
            # is not kept, and its members stay roots (checked by check_top).
            summaries = {n.id for n in store.nodes_at_level(level + 1)}
            assert summaries <= {summary_id(label) for label in clusters}
            clusters = {a: ms for a, ms in clusters.items() if summary_id(a) in summaries}
            stored = store.members_of(summaries)
            for label, members in clusters.items():
                assert stored[summary_id(label)] == members, f"members of {summary_id(label)}"
            # Summaries are linked when their clusters share members or an edge joins them.
            expected_links = {
                tuple(sorted((summary_id(a), summary_id(b))))
                for a, ma in clusters.items()
                for b, mb in clusters.items()
                if a < b and (ma & mb or any(v in mb for u in ma for v in adjacency[u]))
            }
            upper = store.neighbours(summaries)
            links = {tuple(sorted((s, t))) for s, nbrs in upper.items() for t in nbrs}
            assert links == expected_links, f"links of level {level + 1}"
    # Every summary has two or more members, and every member exists.
    for level in levels[1:]:
        summaries = [n.id for n in store.nodes_at_level(level)]
        stored = store.members_of(summaries)
        for sid in summaries:
            assert len(stored.get(sid, ())) >= 2, f"summary {sid} has fewer than two members"
            assert store.existing_ids(stored[sid]) == stored[sid]
    check_top(store)
    check_mentions(store)


def check_mentions(store: GraphStore) -> None:
    """Each chunk mentions exactly the names of its text, each name's chunks are the
    chunks that mention it, and the store holds no name no chunk mentions (a Name node
    left behind on Neo4j would count in ``stats``)."""
    chunks = {n.id: n.text for n in store.nodes_at_level(0)}
    expected = {i: sorted(names_in(t)) for i, t in chunks.items() if names_in(t)}
    assert store.names_of(chunks) == expected, "the names chunks mention"
    naming: dict[str, list[str]] = defaultdict(list)
    for chunk_id in sorted(expected):
        for name in expected[chunk_id]:
            naming[name].append(chunk_id)
    assert store.chunks_naming(naming, max_chunks=len(chunks)) == naming, "chunks of names"
    stats = store.stats()
    assert stats["names"] == len(naming), "names no chunk mentions are stored"
    assert stats["mentions"] == sum(len(ids) for ids in naming.values()), "mentions stored"


def check_top(store: GraphStore) -> None:
    """The top level is small, only it has nodes without a parent, and every node is
    reachable from it (what ``traverse`` relies on)."""
    levels = store.levels()
    if not levels:
        return
    top = [n.id for n in store.nodes_at_level(max(levels))]
    assert len(top) <= TOP_SIZE, f"{len(top)} nodes at the top level"
    check_covering_levels(store)
    nodes = [n for lv in levels for n in store.nodes_at_level(lv)]
    everything = {n.id for n in nodes}
    roots = everything - store.parents_of(everything).keys()
    assert roots == set(top), "roots below the top level"
    seen, frontier = set(top), set(top)
    while frontier:
        children = store.members_of(frontier)
        frontier = {c for cs in children.values() for c in cs} - seen
        seen |= frontier
    # No summary repeats another node's text (chunks may repeat each other: that is
    # the documents' text, and each is evidence of its own document).
    texts: dict[str, str] = {}
    for n in sorted(nodes, key=lambda n: n.level):
        text = " ".join(n.text.split())
        assert n.level == 0 or text not in texts, f"{n.id} repeats the text of {texts.get(text)}"
        texts.setdefault(text, n.id)
    assert seen == everything, f"{len(everything - seen)} nodes unreachable from the top"


def check_covering_levels(store: GraphStore) -> None:
    """A covering level has fewer nodes than the roots it groups, and roots that already
    fit the top (``TOP_SIZE`` or fewer) get one covering node."""
    for level in sorted(store.levels()):
        nodes = [n.id for n in store.nodes_at_level(level)]
        if not nodes or not all(n.props.get(COVER) for n in store.nodes_at_level(level)):
            continue
        grouped = {m for ms in store.members_of(nodes).values() for m in ms}
        assert len(nodes) < len(grouped), f"level {level}: {len(nodes)} covering {len(grouped)}"
        if len(grouped) <= TOP_SIZE:
            assert len(nodes) == 1, f"level {level}: {len(nodes)} nodes for {len(grouped)} roots"


def structure_view(structure: GraphStructure) -> dict[str, object]:
    """What a structure holds, in a form two structures can be compared by."""
    ids, matrix = (
        structure.chunk_vectors.matrix() if structure.chunk_vectors is not None else ([], None)
    )
    return {
        "nodes": structure.nodes,
        "by_level": {k: v for k, v in structure.by_level.items() if v},
        "chunk_at": structure.chunk_at,
        "by_text": structure.by_text,
        "adjacency": {k: v for k, v in structure.adjacency.items() if v},
        "replicas": structure.replicas,
        "of_node": {k: v for k, v in structure.of_node.items() if v},
        "by_label": structure.by_label,
        "labels_by_level": {k: v for k, v in structure.labels_by_level.items() if v},
        "members": structure.members,
        "parents": structure.parents,
        "roots": structure.roots,
        "cover_by_level": {k: v for k, v in structure.cover_by_level.items() if v},
        "cover_by_text": structure.cover_by_text,
        "cover_members": {k: v for k, v in structure.cover_members.items() if v},
        "cover_parent": structure.cover_parent,
        "counters": structure.counters,
        "documents": structure.documents,
        "settings": structure.settings,
        "generation": structure.generation,
        "chunk_vectors": {
            node_id: np.round(matrix[row], 5).tobytes() for row, node_id in enumerate(ids)
        }
        if matrix is not None
        else {},
    }


def check_structure_is_stored(held: GraphStructure | None, store: GraphStore) -> None:
    """The structure a writer holds between batches equals the store's, read afresh."""
    assert held is not None, "the writer holds no structure"
    with store.transaction():
        generation = store.lock_generation()
        stored = GraphStructure.from_rows(store.read_structure())
    stored.generation = generation
    for structure in (held, stored):  # the roots kept up: no parent, not covering
        assert structure.roots == {
            i for i in structure.nodes if not structure.parents.get(i) and not structure.is_cover(i)
        }
    mine, theirs = structure_view(held), structure_view(stored)
    for key in mine:
        assert mine[key] == theirs[key], f"held structure differs from the store in {key}"


# --- documents that change ----------------------------------------------------------------
Placed = tuple[int, str, int | None, int | None]  # a chunk's position, text and offsets


def check_removed(
    store: GraphStore, gone: Iterable[str], words: Iterable[str], names: Iterable[str] = ()
) -> None:
    """Nothing of chunks that were deleted survives: no node, edge, replica,
    membership or mention, none of ``names`` (found only in their text) in the name
    graph, and none of ``words`` (found only in their text) in the full-text
    index. On SQLite the FTS table itself is asked too, not only ``search_text`` (which
    joins the nodes left, and would hide an index row of a deleted node)."""
    gone = sorted(gone)
    assert store.existing_ids(gone) == set(), "a deleted chunk is still a node"
    assert store.edges_of(gone) == [], "a deleted chunk still has edges"
    assert store.replicas_of(gone) == {}, "a deleted chunk still has replicas"
    assert store.parents_of(gone) == {}, "a deleted chunk is still a summary's member"
    assert store.names_of(gone) == {}, "a deleted chunk still mentions names"
    assert store.chunks_naming(names, max_chunks=len(gone) + 1) == {}, "a name left behind"
    summaries = [n.id for lv in store.levels() if lv > 0 for n in store.nodes_at_level(lv)]
    held = {m for ms in store.members_of(summaries).values() for m in ms}
    assert not held & set(gone), "a summary keeps a deleted member"
    for word in sorted(words):
        assert store.search_text(None, word, 5) == [], f"full-text search still finds {word!r}"
        if isinstance(store, SqliteStore):
            rows = store._conn.execute(
                "SELECT COUNT(*) FROM node_text WHERE node_text MATCH ?", (f'"{word}"',)
            ).fetchone()
            assert rows[0] == 0, f"the FTS table still indexes {word!r}"


def check_written_from(store: GraphStore, *, drift: float) -> None:
    """Every cluster summary records the members its text was written from, no further
    from its members now than ``drift`` allows (``Settings.resummarize_drift``), and no
    chunk its text holds (written from, or inherited from a member since deleted) was
    removed; a summary it holds may have been deleted (its cluster dissolved)."""
    summaries = [
        n
        for lv in store.levels()
        if lv > 0
        for n in store.nodes_at_level(lv)
        if not n.props.get(COVER)
    ]
    members = store.members_of([n.id for n in summaries])
    held = {
        n.id: set(n.props[WRITTEN_FROM]) | set(n.props.get(INHERITED_FROM, ())) for n in summaries
    }
    existing = store.existing_ids({i for ids in held.values() for i in ids})
    for node in summaries:
        removed = sorted(i for i in held[node.id] - existing if not SUMMARY_ID.fullmatch(i))
        assert not removed, f"{node.id} holds text of removed chunks {removed}"
        written = node.props[WRITTEN_FROM]
        assert not must_rewrite(written, members[node.id], drift), f"{node.id} drifted"


def check_summary_documents(store: GraphStore) -> None:
    """A summary names a document exactly when all its members name that one (a scope
    by document trusts it: ``retrieval/scope.py``), also a summary that kept its text
    under new members."""
    summaries = [n for lv in store.levels() if lv > 0 for n in store.nodes_at_level(lv)]
    members = store.members_of([n.id for n in summaries])
    nodes = store.get_nodes({m for ms in members.values() for m in ms})
    for node in summaries:
        docs = {nodes[m].doc_id for m in members[node.id]}
        expected = docs.pop() if len(docs) == 1 else None
        assert node.doc_id == expected, f"{node.id} names {node.doc_id!r}, not {expected!r}"


def check_no_repeated_offers(store: GraphStore) -> None:
    """No node a question could be offered repeats a summary's text: ``stats`` counts
    copies in groups of equal texts that hold a summary (two equal chunks are the
    documents' own text, each evidence of its document, and ask drops the copy)."""
    assert store.stats()["repeated_summary_texts"] == 0, "a summary repeats another node"


def check_documents(store: GraphStore, expected: Mapping[str, Sequence[Placed]]) -> None:
    """The store lists exactly the documents ``expected`` holds, each with its chunk
    count, and each document's chunks read by position are exactly its chunks
    (position, text, offsets): those of its latest text."""
    records = {d.id: d for d in store.documents()}
    assert sorted(records) == sorted(expected), "documents listed"
    by_doc: dict[str, list[Placed]] = defaultdict(list)
    for n in store.nodes_at_level(0):
        assert n.doc_id in expected, f"chunk {n.id} of a document not held"
        place = (int(n.position or 0), n.text, n.props.get("start_char"), n.props.get("end_char"))
        by_doc[n.doc_id].append(place)
    for doc_id, chunks in expected.items():
        assert records[doc_id].chunks == len(chunks), f"chunk count of {doc_id}"
        assert sorted(by_doc[doc_id]) == list(chunks), f"chunks of {doc_id} by position"
