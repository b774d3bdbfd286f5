"""cam bench ingest --cross-memory on a small stand-in for ../shared/data."""

from __future__ import annotations

from pathlib import Path

from cam_engine.bench.ingest import cross_memory_locality
from cam_engine.chunking import chunk_document
from cam_engine.embed import HashingEmbedder


def write(path: Path, topic: str, paragraphs: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "\n\n".join(
            f"Paragraph {i} tells of {topic} and the sea, at length and in detail, "
            "as old books do when they have the time."
            for i in range(paragraphs)
        )
    )


def test_frankenstein_is_timed_into_an_empty_and_a_full_memory(tmp_path: Path) -> None:
    write(tmp_path / "haystacks" / "gutenberg" / "pg84.txt", "the creature", 40)
    write(tmp_path / "haystacks" / "gutenberg" / "pg2701.txt", "the whale", 30)
    write(tmp_path / "haystacks" / "paul_graham" / "gap.txt", "startups", 10)
    figures = cross_memory_locality(tmp_path, HashingEmbedder(32), batch_size=2)
    times = figures["cross_memory_median_batch_s"]
    assert times["empty"] > 0 and times["full"] > 0
    ratio = figures["cross_memory_locality"]
    assert abs(ratio - times["full"] / times["empty"]) < 0.1 * ratio  # rounded apart
    # The full memory held the other book and the essay before Frankenstein came in.
    files = sorted(tmp_path.rglob("*.txt"))
    chunks = sum(len(chunk_document(p.name, p.read_text(), 200)) for p in files)
    assert figures["cross_memory_chunks"] == chunks
