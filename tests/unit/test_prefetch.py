"""Embedding the next batch while the current one is written."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from cam_engine import Memory, Settings
from cam_engine.chunking import chunk_document
from cam_engine.embed import HashingEmbedder
from cam_engine.engine.prefetch import prefetched
from cam_engine.errors import EmbeddingError
from cam_engine.types import Chunk


def chunk(i: int) -> Chunk:
    return Chunk(f"c{i}", "d", i, f"text {i}", i, i + 1)


def batches(n: int, size: int = 2) -> Iterator[tuple[list[Chunk], float]]:
    for start in range(0, n, size):
        yield [chunk(i) for i in range(start, min(n, start + size))], 0.0


def test_batches_arrive_in_order_with_their_vectors_and_skipped_chunks_unembedded() -> None:
    embedded: list[str] = []

    def embed(texts: Sequence[str]) -> np.ndarray:
        embedded.extend(texts)
        return np.ones((len(texts), 4), dtype=np.float32)

    out = list(prefetched(batches(5), embed, skip=lambda c: c.id == "c2"))
    assert [[c.id for c in b.chunks] for b in out] == [["c0", "c1"], ["c2", "c3"], ["c4"]]
    assert set(out[1].vectors) == {"c3"} and "text 2" not in embedded


def test_the_next_batch_is_embedded_while_the_caller_works() -> None:
    """The worker embeds batch 2 while the caller still holds batch 1."""
    second_embedded = threading.Event()

    def embed(texts: Sequence[str]) -> np.ndarray:
        if "text 2" in texts:
            second_embedded.set()
        return np.ones((len(texts), 4), dtype=np.float32)

    stream = prefetched(batches(4), embed)
    first = next(stream)
    assert [c.id for c in first.chunks] == ["c0", "c1"]
    assert second_embedded.wait(timeout=10)  # while the caller has not asked for it
    assert [c.id for c in next(stream).chunks] == ["c2", "c3"]


def test_a_worker_failure_is_raised_at_its_batch() -> None:
    def embed(texts: Sequence[str]) -> np.ndarray:
        if "text 2" in texts:
            raise EmbeddingError("the model fell over")
        return np.ones((len(texts), 4), dtype=np.float32)

    stream = prefetched(batches(6), embed)
    assert [c.id for c in next(stream).chunks] == ["c0", "c1"]
    with pytest.raises(EmbeddingError, match="fell over"):
        next(stream)


def test_closing_waits_for_the_embedding_in_progress_and_starts_no_other() -> None:
    """A worker still inside the model when the interpreter shuts down (after Ctrl-C)
    aborts the process, so closing the stream waits for its embedding to end."""
    embedding, release = threading.Event(), threading.Event()
    calls: list[Sequence[str]] = []

    def embed(texts: Sequence[str]) -> np.ndarray:
        calls.append(texts)
        if "text 2" in texts:
            embedding.set()
            release.wait(timeout=30)
        return np.ones((len(texts), 4), dtype=np.float32)

    stream = prefetched(batches(8), embed)
    next(stream)
    assert embedding.wait(timeout=10)
    closing = threading.Thread(target=stream.close)
    closing.start()
    closing.join(timeout=0.5)
    assert closing.is_alive()  # still waiting for the embedding of batch 2
    release.set()
    closing.join(timeout=10)
    assert not closing.is_alive() and len(calls) == 2


class Failing(HashingEmbedder):
    """Fails on the chunk holding paragraph 6, in the prefetch worker."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if any("Paragraph 6 " in t for t in texts):
            raise EmbeddingError("disk on fire")
        return super().embed(texts)


def test_an_embedding_failure_keeps_the_batches_before_it_and_nothing_after(
    tmp_path: Path,
) -> None:
    embedder = Failing(32)
    settings = Settings(embed_model=embedder.name, chunk_tokens=20, theta=0.2)
    text = "\n\n".join(f"Paragraph {i} is about the whale and the sea." for i in range(12))
    with Memory.open(tmp_path / "m.db", "m", settings=settings, embedder=embedder) as memory:
        with pytest.raises(EmbeddingError, match="disk on fire"):
            memory.ingest_text(text, "doc", batch_size=2)
        pieces = chunk_document("doc", text, settings.chunk_tokens)
        failing = next(i for i, c in enumerate(pieces) if "Paragraph 6 " in c.text)
        committed = pieces[: failing - failing % 2]  # the whole batches before it
        assert committed  # the text is long enough for some batches to succeed first
        stored = sorted(n.id for n in memory.store.nodes_at_level(0))
        assert stored == sorted(c.id for c in committed)
    # Run again with a working embedder: it resumes after the committed batches.
    with Memory.open(tmp_path / "m.db", "m", embedder=HashingEmbedder(32)) as memory:
        memory.ingest_text(text, "doc", batch_size=2)
        assert memory.store.count_nodes(0) == len(pieces)


class Counting(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__(32)
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += len(texts)
        return super().embed(texts)


def test_reingesting_a_document_embeds_nothing(tmp_path: Path) -> None:
    embedder = Counting()
    settings = Settings(embed_model=embedder.name, chunk_tokens=20)
    text = "\n\n".join(f"Paragraph {i} is about the whale and the sea." for i in range(12))
    with Memory.open(tmp_path / "m.db", "m", settings=settings, embedder=embedder) as memory:
        memory.ingest_text(text, "doc", batch_size=2)
        first = embedder.texts
        again = memory.ingest_text(text, "doc", batch_size=2)
        assert first > 0 and embedder.texts == first
        assert sum(b.chunks_skipped for b in again.batches) == memory.store.count_nodes(0)
        memory.ingest_documents([("doc", text)], batch_size=2)
        assert embedder.texts == first
