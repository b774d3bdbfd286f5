"""Everything a memory holds, read through the store's ordinary verbs (not the bulk pages
``cam export`` reads), in a form two memories can be compared by."""

from __future__ import annotations

from typing import Any

from cam_engine import Memory
from cam_engine.store.base import GraphStore
from cam_engine.types import CHUNK

QUESTIONS = (
    "Who killed Tybalt?",
    "Where does Romeo meet Juliet?",
    "What does the friar give Juliet?",
)


def memory_contents(store: GraphStore) -> dict[str, Any]:
    rows = store.read_structure()
    ids = [n.id for n in rows.nodes]
    nodes = store.get_nodes(ids, embeddings=True)
    return {
        "settings": rows.settings,
        "counters": rows.counters,
        "documents": sorted(rows.documents, key=lambda d: d.id),
        "nodes": {
            i: (
                n.level,
                n.kind,
                n.doc_id,
                n.position,
                n.text,
                n.props,
                None if n.embedding is None else n.embedding.tolist(),
            )
            for i, n in sorted(nodes.items())
        },
        "edges": sorted(store.edges_of(ids), key=lambda e: e.key),
        "replicas": sorted(rows.replicas, key=lambda r: r.id),
        "members": sorted(rows.members),
        "names": store.names_of(n.id for n in rows.nodes if n.kind == CHUNK),
        "views": {
            (view, kind): [
                (v.id, v.group, v.seq, v.doc_id, v.text, v.props, v.chunk_ids, _listed(v.embedding))
                for v in store.view_nodes(view, kind, embeddings=True)
            ]
            for view, kinds in store.stats()["views"].items()
            for kind in kinds
        },
    }


def _listed(vector: Any) -> list[float] | None:
    return None if vector is None else vector.tolist()


def answers(memory: Memory) -> dict[str, Any]:
    """What ``cam ask`` shows for each question: the answer and its evidence."""
    found = {}
    for question in QUESTIONS:
        result = memory.ask(question)
        found[question] = (
            result.answer,
            [(e.node_id, e.citation, e.start_char, e.end_char) for e in result.evidence],
        )
    return found


def comparable_stats(memory: Memory) -> dict[str, Any]:
    """``cam stats`` less where the memory is and what it is called."""
    stats = memory.stats()
    return {k: v for k, v in stats.items() if k not in ("memory", "store")}
