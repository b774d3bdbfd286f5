"""A question kept to some documents (``cam ask --document``): which nodes a scope holds.

A node is in a scope when everything it says comes from the scope's documents: a chunk
of one of them, or a summary whose ``doc_id`` is one of them. The builder gives a
summary a ``doc_id`` only when all its members have that one, so all the chunks below
it are of that document. A summary spanning several documents (the covering top level
of a memory of two books, say) is left out of every scope: its text may quote any of
them, so it is never evidence there, and a walk down a scope starts from the scope's
own roots instead (``RetrievalStore.roots_within``). A scope holding every document of
the memory is no scope (``Memory.ask`` drops it), so such summaries are not lost there.

The stores search a scope itself (``nearest`` and ``search_text`` take ``documents``):
the k best of the scope, not the survivors of a top-k of everything. Growth (along
neighbours, which may cross documents) is kept to the scope with ``within``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from cam_engine.types import Node

Documents = Sequence[str] | None  # None: every document of the memory


def in_scope(node: Node, documents: Documents) -> bool:
    return documents is None or node.doc_id in documents


def within(nodes: Iterable[Node], documents: Documents) -> list[Node]:
    """The nodes in the scope, in their order."""
    return [n for n in nodes if in_scope(n, documents)]
