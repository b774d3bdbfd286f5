"""An update that moves chunks leaves the edges whose score did not change as stored."""

from __future__ import annotations

from pathlib import Path

from cam_engine.config import Settings
from cam_engine.embed import load_embedder
from cam_engine.memory import Memory

TOPICS = (
    "whale harpoon ship sea captain sail mast deck ocean wave crew voyage",
    "garden rose soil seed water bloom leaf root spring weed spade flower",
)


def paragraph(topic: int, n: int, extra: str = "") -> str:
    words = TOPICS[topic].split()
    picked = [words[(n * 5 + k * 7) % len(words)] for k in range(16)]
    return f"Note {n}{extra} on {words[0]}: " + " ".join(picked) + "."


def chunk_edges(db: Path) -> dict[tuple[str, str], tuple[float, float]]:
    """Each edge between two chunks: (score, distance between their positions)."""
    with Memory.open(db, "m", embedder=load_embedder("hashing:64")) as memory:
        rows = memory.store.read_structure()
        at = {n.id: n.position for n in rows.nodes if n.level == 0 and n.position is not None}
    return {(a, b): (w, at[b] - at[a]) for a, b, w in rows.edges if a in at and b in at}


def update(db: Path, folder: Path, paragraphs: list[str]) -> None:
    path = folder / "notes.txt"
    path.write_text("\n\n".join(paragraphs) + "\n", encoding="utf-8")
    settings = Settings(chunk_tokens=24, theta=0.3, embed_model="hashing:64")
    with Memory.open(db, "m", settings=settings, embedder=load_embedder("hashing:64")) as memory:
        report = memory.ingest([path], batch_size=8)
        assert not report.errors


def test_chunks_moved_by_an_edit_keep_their_edges_exactly(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    first = [paragraph(i % 2, i) for i in range(16)]
    update(db, tmp_path, first)
    before = chunk_edges(db)
    # A longer text in paragraph 2 (the same chunks, the offsets after it move) and one
    # paragraph inserted before the last four (those move one position, together).
    edited = [*first[:2], paragraph(0, 2, " (revised, longer)"), *first[3:12]]
    edited += [paragraph(1, 99), *first[12:]]
    update(db, tmp_path, edited)
    after = chunk_edges(db)
    # Both ends moved by the same number of positions, or by none: the score is the
    # same, and the edge stays as stored (not rewritten with rounding noise).
    same = {key: v for key, v in before.items() if key in after and after[key][1] == v[1]}
    assert len(same) >= 20, "edges whose ends kept their distance"
    assert {key: after[key] for key in same} == same
