"""Plain records that flow between the engine's parts.

They carry no behaviour beyond small derived values, so every module (pure graph
code, stores, CLI) can share them without importing each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

CHUNK = "chunk"
SUMMARY = "summary"
# Marks a summary of the covering top levels (in its props): it groups roots, not a
# cluster (engine/summaries.py).
COVER = "cover"


@dataclass(frozen=True)
class Chunk:
    """A piece of one document, the unit of level 0."""

    id: str
    doc_id: str
    position: int  # 0-based index of the chunk inside its document
    text: str
    start_char: int  # offsets into the document text, so nothing is lost or moved
    end_char: int
    pages: tuple[int, int] | None = None  # PDF: the first and last page it is on
    # What its format says about it, stored with its node (a conversation's chunk: its
    # turns, speakers, session and date): not part of its identity.
    props: Mapping[str, Any] | None = field(default=None, compare=False, hash=False)


@dataclass
class Node:
    """A memory node of any level: a chunk (level 0) or a summary (level >= 1)."""

    id: str
    level: int
    kind: str  # CHUNK or SUMMARY
    text: str
    doc_id: str | None = None
    position: float | None = None  # chunks: index in document; summaries: mean of members
    embedding: np.ndarray | None = None
    props: dict[str, Any] = field(default_factory=dict)
    # Chunks: the keys of the names the text mentions (cam_engine.names), when found
    # ahead (ingest, before the batch's transaction); None: the store finds them as it
    # writes.
    names: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Edge:
    """An undirected weighted edge between two nodes of the same level (src < dst)."""

    src: str
    dst: str
    level: int
    score: float
    cosine: float | None = None  # level 0 only: the two parts of the composite score
    proximity: float | None = None

    @staticmethod
    def make(a: str, b: str, level: int, score: float, **parts: float | None) -> Edge:
        src, dst = (a, b) if a < b else (b, a)
        return Edge(src, dst, level, score, **parts)

    @property
    def key(self) -> tuple[str, str]:
        return (self.src, self.dst)


@dataclass(frozen=True)
class Replica:
    """One role of a node: the node as seen from one connected component of its ego-network.

    ``members`` are the neighbours of ``node_id`` in that component; every edge of the
    node leads to exactly one of its replicas.
    """

    id: str
    node_id: str
    level: int
    label: str  # cluster label from label propagation
    members: frozenset[str]


# --- adapter views (ReadAgent, MemAgent, GAM) over the same memory ----------------------
PAGE = "page"  # ReadAgent episode page with its gist; GAM page-store page
MEMO = "memo"  # GAM session abstract
MEMORY_STATE = "memory_state"  # MemAgent's overwritten memory after one step
VIEW_KINDS = (PAGE, MEMO, MEMORY_STATE)


@dataclass
class ViewNode:
    """A node of an adapter's view: a sequence (``group``, ordered by ``seq``) of texts
    that cover or read level-0 chunks of the same memory.

    ``group`` is what the sequence belongs to: a document id for pages and memos, a
    question run for memory states. ``props`` holds the view's own fields (a page's
    gist, a state's token count); values are plain JSON scalars.
    """

    id: str
    view: str  # the adapter that wrote it: "readagent", "gam" or "memagent"
    kind: str  # PAGE, MEMO or MEMORY_STATE
    group: str
    seq: int
    text: str
    doc_id: str | None = None
    props: dict[str, Any] = field(default_factory=dict)
    embedding: np.ndarray | None = None
    chunk_ids: tuple[str, ...] = ()  # level-0 chunks it covers (pages) or read (states)
