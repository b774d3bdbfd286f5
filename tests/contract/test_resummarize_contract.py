"""Summaries that keep their text under changed members (``resummarize_drift``), on
every store: what they were written from is stored with them, and the text of a
removed chunk lives on in none of them, even one the chunk had already left.

Each paragraph is one chunk and starts with a word of its own; the summarizer puts the
first word of every text it summarizes at the head of its summary, so a summary shows
which chunks it was written from.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager

from cam_engine import Memory, Settings
from cam_engine.embed import HashingEmbedder
from cam_engine.engine.reports import BatchReport
from cam_engine.engine.summaries import COVER, INHERITED_FROM, WRITTEN_FROM
from cam_engine.llm import ExtractiveSummarizer, SummaryResult
from cam_engine.types import Node
from tests.invariants import SUMMARY_ID, check_memory, check_written_from

EMBEDDER = HashingEmbedder(32)
# One paragraph a chunk (16 tokens); a drift of 1: a summary is written again only when
# it is new, a member's text was removed, or its members changed past their count. In
# batches of 2, some chunks leave a cluster whose summary keeps the text written from them.
SETTINGS = Settings(
    embed_model=EMBEDDER.name, theta=0.25, chunk_tokens=16, max_cluster_size=4,
    resummarize_drift=1.0,
)  # fmt: skip
BATCH = 2


def _paragraphs(count: int) -> list[str]:
    rng = random.Random(5)
    vocabulary = "river stone harbour lantern winter orchard copper signal meadow engine "
    vocabulary += "letter bridge window garden market thunder silver forest candle valley"
    words = vocabulary.split()
    own = ["Q" + "".join(rng.choices("bcdfghjklmnpqrstvwxz", k=7)) for _ in range(count)]
    return [" ".join([own[i], *rng.choices(words, k=12)]) + "." for i in range(count)]


PARAGRAPHS = _paragraphs(60)


class Heading(ExtractiveSummarizer):
    """Extractive summaries headed by the first word of each text summarized."""

    def summarize(self, texts, *, max_words):  # type: ignore[no-untyped-def]
        result = super().summarize(texts, max_words=max_words)
        heads = " ".join(t.split()[0] for t in texts)
        return SummaryResult(f"{heads}: {result.text}", result.backend, result.usage)


@contextmanager
def opened(location: str, name: str) -> Iterator[Memory]:
    memory = Memory.open(location, name, settings=SETTINGS, embedder=EMBEDDER, summarizer=Heading())
    try:
        yield memory
    finally:
        memory.close()


def _summaries(memory: Memory) -> list[Node]:
    store = memory.store
    return [n for lv in store.levels() if lv > 0 for n in store.nodes_at_level(lv)]


def _departed(memory: Memory) -> set[str]:
    """Chunks that summaries were written from but no longer hold."""
    summaries = [n for n in _summaries(memory) if not n.props.get(COVER)]
    members = memory.store.members_of([n.id for n in summaries])
    written = {i for n in summaries for i in set(n.props[WRITTEN_FROM]) - members[n.id]}
    return {i for i, node in memory.store.get_nodes(written).items() if node.level == 0}


def _inherited(memory: Memory) -> set[str]:
    """Chunks whose text summaries hold through a member that was deleted."""
    return {
        i
        for n in _summaries(memory)
        for i in n.props.get(INHERITED_FROM, ())
        if not SUMMARY_ID.fullmatch(i)
    }


def test_kept_summaries_are_stored_with_what_they_were_written_from(
    store_location: str, memory_name: str
) -> None:
    reports: list[BatchReport] = []
    with opened(store_location, memory_name) as memory:
        text = "\n\n".join(PARAGRAPHS)
        memory.ingest_text(text, "doc", batch_size=BATCH, on_batch=reports.append)
    assert sum(level.summaries_kept for r in reports for level in r.levels) > 0
    with opened(store_location, memory_name) as memory:  # read back from the store
        store = memory.store
        summaries = [
            n for lv in store.levels() if lv > 0 for n in store.nodes_at_level(lv)
            if not n.props.get(COVER)
        ]  # fmt: skip
        members = store.members_of([n.id for n in summaries])
        assert all(WRITTEN_FROM in n.props for n in summaries)
        # Some summary keeps a text written from other members than it has now.
        assert any(set(n.props[WRITTEN_FROM]) != members[n.id] for n in summaries)
        check_written_from(store, drift=SETTINGS.resummarize_drift)


def _remove_and_check(memory: Memory, gone: set[str]) -> None:
    """Ingest the document without the chunks ``gone``; no summary may hold their text."""
    chunks = {n.id: n.text for n in memory.store.nodes_at_level(0)}
    heads = {chunks[i].split()[0] for i in gone}
    assert any(head in n.text for n in _summaries(memory) for head in heads)
    kept = [p for p in PARAGRAPHS if p.split()[0] not in heads]
    report = memory.ingest_text("\n\n".join(kept), "doc", batch_size=BATCH)
    assert report.chunks_removed == len(gone)
    check_memory(memory.store, max_cluster_size=SETTINGS.max_cluster_size)
    check_written_from(memory.store, drift=SETTINGS.resummarize_drift)
    left = sorted({head for head in heads for n in _summaries(memory) if head in n.text})
    assert left == [], f"summaries still hold removed chunks' text: {left}"


def test_a_chunk_removed_after_it_left_a_cluster_lives_on_in_no_summary(
    store_location: str, memory_name: str
) -> None:
    with opened(store_location, memory_name) as memory:
        memory.ingest_text("\n\n".join(PARAGRAPHS), "doc", batch_size=BATCH)
        departed = _departed(memory)
        assert departed  # the case at stake: chunks that left a summary written from them
        _remove_and_check(memory, departed)
        if store_location.startswith("bolt"):
            memory.delete()


def test_a_chunk_removed_under_a_dissolved_cluster_lives_on_in_no_summary(
    store_location: str, memory_name: str
) -> None:
    with opened(store_location, memory_name) as memory:
        memory.ingest_text("\n\n".join(PARAGRAPHS), "doc", batch_size=BATCH)
        inherited = _inherited(memory)
        # The case at stake: a summary kept its text when a member whose text it holds
        # was deleted (its cluster dissolved), then a chunk under that member goes.
        assert inherited
        _remove_and_check(memory, inherited)
        if store_location.startswith("bolt"):
            memory.delete()
