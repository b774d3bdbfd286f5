"""Where a piece of evidence is in the documents: its citation.

A chunk's citation is its document and the character offsets of its text in that
document's text as the memory read it (``Node.props`` ``start_char``/``end_char``,
written at ingest: text[start:end] is the chunk, word for word), and for a PDF the
pages it is on (``pages``: first and last). A summary quotes no one place: its
citation is the span of each document its chunks come from (first chunk's start to
last chunk's end), found by walking its members down to the chunks; a node the
memory cannot place (an adapter's page or memory state) cites its document, or ``-``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from cam_engine.store.base import RetrievalStore
from cam_engine.types import Node


@dataclass(frozen=True)
class Citation:
    document: str | None
    start_char: int | None = None  # chunks: text == document_text[start_char:end_char]
    end_char: int | None = None
    pages: list[int] | None = None  # PDF: every page the text is on
    # Summaries: document -> [start, end] of the chunks below it in that document.
    covers: dict[str, list[int]] = field(default_factory=dict)

    def label(self) -> str:
        """``pg84.txt:12345-13020``, ``paper.pdf:80-950 p.3``, a summary's
        ``summary of pg84.txt:0-5000; pg1342.txt:10-900``, or ``-``."""
        if self.covers:
            spans = "; ".join(f"{doc}:{a}-{b}" for doc, (a, b) in self.covers.items())
            return f"summary of {spans}"
        if self.document is None:
            return "-"
        where = self.document
        if self.start_char is not None and self.end_char is not None:
            where += f":{self.start_char}-{self.end_char}"
        if self.pages:
            first, last = self.pages[0], self.pages[-1]
            where += f" p.{first}" if first == last else f" pp.{first}-{last}"
        return where


def cite(store: RetrievalStore, nodes: Sequence[Node]) -> dict[str, Citation]:
    """The citation of each node, by id (summaries' chunks read in a few bulk reads)."""
    below = _chunks_below(store, [n.id for n in nodes if n.level > 0])
    wanted = {c for ids in below.values() for c in ids}
    chunks = store.get_nodes(wanted) if wanted else {}
    citations = {}
    for node in nodes:
        if node.level > 0:
            citations[node.id] = Citation(
                node.doc_id, covers=_spans(chunks[c] for c in below[node.id] if c in chunks)
            )
        else:
            citations[node.id] = _chunk_citation(node)
    return citations


def _chunk_citation(node: Node) -> Citation:
    start, end = node.props.get("start_char"), node.props.get("end_char")
    pages = node.props.get("pages")
    return Citation(
        node.doc_id,
        start if isinstance(start, int) else None,
        end if isinstance(end, int) else None,
        list(range(pages[0], pages[1] + 1)) if isinstance(pages, list) and pages else None,
    )


def _chunks_below(store: RetrievalStore, summary_ids: Sequence[str]) -> dict[str, set[str]]:
    """Each summary's chunks: its members, their members, ... down to the nodes that
    have none (a covering node's members may be of any level below it)."""
    below: dict[str, set[str]] = {s: set() for s in summary_ids}
    frontier = {s: {s} for s in summary_ids}  # summary -> its nodes not expanded yet
    while any(frontier.values()):
        members = store.members_of(sorted({i for ids in frontier.values() for i in ids}))
        for summary, ids in frontier.items():
            below[summary] |= {i for i in ids if i not in members and i != summary}
            frontier[summary] = {m for i in ids for m in members.get(i, ())}
    return below


def _spans(chunks: Iterable[Node]) -> dict[str, list[int]]:
    spans: dict[str, list[int]] = {}
    for chunk in sorted(chunks, key=lambda c: (c.doc_id or "", c.position or 0.0)):
        start, end = chunk.props.get("start_char"), chunk.props.get("end_char")
        if chunk.doc_id is None or not isinstance(start, int) or not isinstance(end, int):
            continue
        span = spans.setdefault(chunk.doc_id, [start, end])
        span[0], span[1] = min(span[0], start), max(span[1], end)
    return spans
