"""A stand-in for the store's name index until the store keeps one (delete this file
then, and pass the store itself where ``name_index(store)`` is called).

``names_in`` is a small heuristic: runs of capitalized words (leading function words
dropped: "The Diamond Head Classic" -> "diamond head classic"), acronyms, years and
other numbers of three digits or more, casefolded. ``name_index`` builds a
``NameIndex`` from a memory's chunks once and keeps it while their number stays the
same.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from cam_engine.retrieval.name_graph import NameIndex
from cam_engine.stopwords import STOPWORDS
from cam_engine.store.base import RetrievalStore
from cam_engine.types import Node

_WORD = r"[A-Z](?:[\w'’-]|\.(?=\w))*"  # "U.S" of "U.S.", not a sentence's full stop
_CAPITALIZED_RUN = re.compile(rf"{_WORD}(?:\s+(?:{_WORD}|of|de|la|von|van))*")
_NUMBER = re.compile(r"\b\d{1,3}(?:,\d{3})+\b|\b\d{3,}\b")  # years, counts: not "7" or "30"


def names_in(text: str) -> list[str]:
    """The distinct name keys of ``text``, in order of first mention."""
    found: list[str] = []
    for match in _CAPITALIZED_RUN.finditer(text):
        words = match.group().split()
        while words and words[0].casefold() in STOPWORDS:
            words = words[1:]  # "The", "In": a sentence's first word, not a name
        while words and words[-1].casefold() in STOPWORDS:
            words = words[:-1]
        if words:
            found.append(" ".join(words).casefold())
    found += [m.group().replace(",", "") for m in _NUMBER.finditer(text)]
    return list(dict.fromkeys(found))


class ChunkNames:
    """A ``NameIndex`` over chunks held in memory."""

    def __init__(self, chunks: Iterable[Node]) -> None:
        self._names: dict[str, list[str]] = {}
        self._chunks: dict[str, list[str]] = {}
        self._document: dict[str, str] = {}
        for chunk in chunks:
            self._names[chunk.id] = names_in(chunk.text)
            self._document[chunk.id] = chunk.doc_id or ""
            for name in self._names[chunk.id]:
                self._chunks.setdefault(name, []).append(chunk.id)

    def names_of(self, chunk_ids: Iterable[str]) -> dict[str, list[str]]:
        return {i: self._names[i] for i in chunk_ids if i in self._names}

    def chunks_naming(
        self,
        names: Iterable[str],
        *,
        max_chunks: int,
        documents: Sequence[str] | None = None,
    ) -> dict[str, list[str]]:
        kept = None if documents is None else set(documents)
        found: dict[str, list[str]] = {}
        for name in names:
            ids = [
                i for i in self._chunks.get(name, []) if kept is None or self._document[i] in kept
            ]
            if 0 < len(ids) <= max_chunks:  # counted within the documents, as the stores do
                found[name] = ids
        return found


_BUILT: dict[tuple[str, str], tuple[int, ChunkNames]] = {}


def name_index(store: RetrievalStore) -> NameIndex:
    """The store's name index: built from its chunks on first use, rebuilt when their
    number changes."""
    key, count = (str(store.location), store.memory), store.count_nodes(0)
    if key not in _BUILT or _BUILT[key][0] != count:
        _BUILT[key] = (count, ChunkNames(store.nodes_at_level(0)))
    return _BUILT[key][1]
