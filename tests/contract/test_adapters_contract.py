"""The adapters on every store: views and answers that hold for the book, and on Neo4j
the same views and answers as on a SQLite memory (keyword search ranks differently on
Neo4j's full-text index, so GAM research is checked for finding the page, not for
identical scores)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest

from cam_engine import Memory, Settings
from cam_engine.adapters import gam, memagent, readagent
from cam_engine.embed import HashingEmbedder
from cam_engine.types import MEMORY_STATE, PAGE
from tests.conftest import shared_file

EMBEDDER = HashingEmbedder(32)
SETTINGS = Settings(embed_model=EMBEDDER.name, theta=0.3)
QUESTION = "To which town did Beaufort retreat with his daughter?"


@pytest.fixture(scope="module")
def text() -> str:
    return shared_file("haystacks/gutenberg/pg84.txt").read_text()[:40000]


def run_adapters(memory: Memory) -> dict[str, Any]:
    readagent.build_view(memory, None, None)
    gam.build_view(memory, None, None, session_tokens=1024)
    return {
        "pages": [
            (p.seq, p.chunk_ids, p.props["gist"]) for p in memory.view_nodes("readagent", PAGE)
        ],
        "gam_pages": [(p.seq, p.chunk_ids) for p in memory.view_nodes("gam", PAGE)],
        "lookup": readagent.lookup(memory, QUESTION, None).answer,
        "lookup_seq": readagent.lookup_sequential(memory, QUESTION, None).answer,
        "memagent": memagent.answer(memory, QUESTION, None, chunk_tokens=2000).answer,
        "states": len(memory.view_nodes("memagent", MEMORY_STATE)),
        "research": gam.research(memory, QUESTION, None, output="sources"),
    }


def test_adapters_build_their_views_and_find_the_town_on_every_store(
    store_location: str, memory_name: str, text: str
) -> None:
    with Memory.open(store_location, memory_name, settings=SETTINGS, embedder=EMBEDDER) as m:
        m.ingest_text(text, "frankenstein", batch_size=32)
        got = run_adapters(m)
        assert set(m.stats()["views"]) == {"readagent", "gam", "memagent"}
    assert got["pages"] and got["gam_pages"] and got["states"] >= 2
    found = " ".join(s.text for s in got["research"].sources)
    assert "Lucerne" in found


def test_adapters_give_the_same_views_and_answers_on_neo4j_as_on_sqlite(
    neo4j_location: str, memory_name: str, text: str
) -> None:
    """Neo4j only: the reference is a SQLite memory, which compared with itself would
    test nothing."""
    with Memory.open(neo4j_location, memory_name, settings=SETTINGS, embedder=EMBEDDER) as m:
        m.ingest_text(text, "frankenstein", batch_size=32)
        got = run_adapters(m)
    with (
        tempfile.TemporaryDirectory() as folder,
        Memory.open(Path(folder) / "r.db", "r", settings=SETTINGS, embedder=EMBEDDER) as ref,
    ):
        ref.ingest_text(text, "frankenstein", batch_size=32)
        expected = run_adapters(ref)
    for key in ("pages", "gam_pages", "lookup", "lookup_seq", "memagent", "states"):
        assert got[key] == expected[key], key
