"""Two processes ingesting into one SQLite file build what one process would."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from cam_engine import Memory, Settings
from cam_engine.embed import HashingEmbedder

EMBEDDER = HashingEmbedder(64)
SETTINGS = Settings(embed_model=EMBEDDER.name, theta=0.2, chunk_tokens=40)
WHALES = " ".join(
    f"The whale number {i} swam through the cold grey sea past the ship." for i in range(12)
)
SHIPS = " ".join(
    f"The ship number {i} sailed through the cold grey sea after the whale." for i in range(12)
)


def _edges_across(memory: Memory) -> int:
    """Level-0 edges between a chunk of one document and a chunk of the other."""
    chunks = {n.id: n.doc_id for n in memory.store.nodes_at_level(0)}
    edges = memory.store.edges_of(chunks)
    return sum(1 for e in edges if e.level == 0 and chunks.get(e.src) != chunks.get(e.dst))


def test_an_ingest_sees_what_another_process_committed_meanwhile(tmp_path: Path) -> None:
    sequential_db, shared_db = tmp_path / "one.db", tmp_path / "two.db"
    with Memory.open(sequential_db, "m", settings=SETTINGS, embedder=EMBEDDER) as alone:
        alone.ingest_text(WHALES, "whales", batch_size=4)
        alone.ingest_text(SHIPS, "ships", batch_size=4)
        expected_stats, expected_across = alone.stats()["levels"], _edges_across(alone)
    assert expected_across > 0  # the two documents are meant to link

    with Memory.open(shared_db, "m", settings=SETTINGS, embedder=EMBEDDER) as mine:
        mine.ask("whale")  # an empty memory is cached in this process...
        # ...while another process ingests the first document into the same file.
        child = textwrap.dedent(
            f"""
            from cam_engine import Memory, Settings
            from cam_engine.embed import HashingEmbedder
            e = HashingEmbedder(64)
            s = Settings(embed_model=e.name, theta=0.2, chunk_tokens=40)
            with Memory.open({str(shared_db)!r}, "m", settings=s, embedder=e) as m:
                m.ingest_text({WHALES!r}, "whales", batch_size=4)
            """
        )
        subprocess.run([sys.executable, "-c", child], check=True, timeout=120)
        mine.ingest_text(SHIPS, "ships", batch_size=4)
        assert _edges_across(mine) == expected_across
        assert mine.stats()["levels"] == expected_stats
