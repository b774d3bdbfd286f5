"""Name extraction on a book: how many names a chunk gets, and how fast.

    cam bench names BOOK [--chunk-tokens 200] [--sample 5]

The book is chunked as an ingest chunks it; each chunk goes through
``cam_engine.names.names_in``. Figures (one JSON line): chunks, chars, names per chunk
(mean, median, max, share of chunks at the cap), distinct names, the share of names
mentioned by one chunk only, ms per chunk and chars per second (the best of three
passes), and the names of ``--sample`` chunks spread over the book, to read.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any

from cam_engine.chunking import chunk_document
from cam_engine.names import MAX_NAMES, names_in
from cam_engine.sources import clean_text

PASSES = 3


def measure(text: str, chunk_tokens: int, sample: int) -> dict[str, Any]:
    texts = [c.text for c in chunk_document("book", clean_text(text), chunk_tokens)]
    best = float("inf")
    names: list[list[str]] = []
    for _ in range(PASSES):
        start = time.perf_counter()
        names = [names_in(t) for t in texts]
        best = min(best, time.perf_counter() - start)
    counts = [len(n) for n in names]
    chunks_of = Counter(key for keys in names for key in keys)
    chars = sum(len(t) for t in texts)
    step = max(1, len(texts) // max(1, sample))
    return {
        "chunks": len(texts),
        "chars": chars,
        "names_per_chunk_mean": round(statistics.fmean(counts), 2),
        "names_per_chunk_median": statistics.median(counts),
        "names_per_chunk_max": max(counts),
        "chunks_at_cap": sum(1 for n in counts if n >= MAX_NAMES),
        "distinct_names": len(chunks_of),
        "names_in_one_chunk_share": round(
            sum(1 for n in chunks_of.values() if n == 1) / max(1, len(chunks_of)), 3
        ),
        "ms_per_chunk": round(1000 * best / len(texts), 3),
        "chars_per_s": round(chars / best),
        "most_mentioned": chunks_of.most_common(15),
        "sample": [names[i] for i in range(0, len(texts), step)][:sample],
    }


def run(book: Path, chunk_tokens: int = 200, sample: int = 5) -> dict[str, Any]:
    """The figures of ``cam bench names`` on a book file."""
    return measure(book.read_text(encoding="utf-8"), chunk_tokens, sample)
