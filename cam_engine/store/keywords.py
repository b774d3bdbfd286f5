"""Keyword search for the embedded store: BM25 with rank-bm25 (Okapi, its defaults)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rank_bm25 import BM25Okapi

from cam_engine.stopwords import STOPWORDS

_WORD = re.compile(r"\w+")
# Terms one keyword search is given: the first of its query's. Lucene (Neo4j's
# full-text index) refuses a query of more than 1,024 clauses (TooManyClauses), and
# both stores take the same terms so that they answer alike; a real question has
# fewer than 50 words.
MAX_QUERY_TERMS = 256


def tokenize(text: str) -> list[str]:
    """Lower-cased word characters: the same rule for documents and queries."""
    return _WORD.findall(text.lower())


class BM25Index:
    """A BM25 index over (id, text) documents, built once and queried many times."""

    def __init__(self, docs: Sequence[tuple[str, str]]) -> None:
        self._ids = [doc_id for doc_id, _ in docs]
        tokens = [tokenize(text) or [""] for _, text in docs]
        self._words = [set(t) for t in tokens]
        self._bm25 = BM25Okapi(tokens) if docs else None

    def top_k(self, query: str, k: int) -> list[tuple[str, float]]:
        """The ``k`` best (id, score) among the documents sharing a word with ``query``,
        best first, ties by id so the order is stable.

        Matching decides what is found, the score only the order: in a corpus of two or
        three pages Okapi's idf is 0 (or floored) for a word in half of them, and a
        "score > 0" rule would hide the one page that has the word.
        """
        terms = keyword_terms(query)
        if self._bm25 is None or not terms or k < 1:
            return []
        wanted = set(terms)
        scores = self._bm25.get_scores(terms)
        ranked = sorted(
            (
                (float(score), doc_id)
                for doc_id, score, words in zip(self._ids, scores, self._words, strict=True)
                if words & wanted
            ),
            key=lambda pair: (-pair[0], pair[1]),
        )
        return [(doc_id, score) for score, doc_id in ranked[:k]]


def query_terms(text: str) -> list[str]:
    """The distinct words of a query worth searching: no stopwords, no single letters.
    Each is plain word characters, so it can be quoted into a full-text query safely."""
    return list(dict.fromkeys(w for w in tokenize(text) if w not in STOPWORDS and len(w) > 1))


def search_terms(text: str) -> list[str]:
    """The terms a node search is given: the first ``MAX_QUERY_TERMS`` of ``query_terms``."""
    return query_terms(text)[:MAX_QUERY_TERMS]


def keyword_terms(text: str) -> list[str]:
    """The terms a view search is given: the query's words, repeats kept (BM25 weighs
    them), the first ``MAX_QUERY_TERMS``."""
    return tokenize(text)[:MAX_QUERY_TERMS]


def bm25_top_k(docs: Sequence[tuple[str, str]], query: str, k: int) -> list[tuple[str, float]]:
    """One query against a throw-away index (page-stores are small)."""
    return BM25Index(docs).top_k(query, k)
