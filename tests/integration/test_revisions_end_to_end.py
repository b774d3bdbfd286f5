"""Deleting and updating documents of a memory of real essays, seen by a reader:
what ``ask`` returns as evidence, and what full-text search finds."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cam_engine import Memory, Settings
from cam_engine.embed import HashingEmbedder
from cam_engine.memory import AskResult
from tests.conftest import shared_file
from tests.invariants import check_memory

pytestmark = pytest.mark.realdata

EMBEDDER = HashingEmbedder(256)
SETTINGS = Settings(embed_model=EMBEDDER.name, theta=0.3, chunk_tokens=80)
STRATEGIES = ["prune-grow", "global", "dense", "hybrid"]
ESSAYS = ("nft.txt", "island.txt", "sun.txt", "addiction.txt")

# Only nft.txt tells of Noora Health's babies.
NOORA = "For every 1000 live births, how many babies does Noora Health save?"
# island.txt names the maker of the notebooks; the update names another.
OLD = "The best notebooks I've found are made by a company called Miquelrius."
NEW = "The best notebooks I've found are made by a company called Leuchtturm."
NOTEBOOKS = "Which company makes the best notebooks?"


@pytest.fixture()
def essays(tmp_path: Path) -> list[Path]:
    """The essays, copied where a test may rewrite them."""
    copies = []
    for name in ESSAYS:
        copy = tmp_path / name
        shutil.copy(shared_file(f"haystacks/paul_graham/{name}"), copy)
        copies.append(copy)
    return copies


def documents_of(result: AskResult) -> set[str]:
    """The documents an answer's evidence comes from (a summary's: those it covers)."""
    return {e.document for e in result.evidence if e.document} | {
        doc for e in result.evidence for doc in e.covers
    }


def evidence_text(result: AskResult) -> str:
    return " ".join(" ".join(e.text.split()) for e in result.evidence)


def test_a_deleted_document_is_no_ones_evidence(tmp_path: Path, essays: list[Path]) -> None:
    with Memory.open(tmp_path / "m.db", "essays", settings=SETTINGS, embedder=EMBEDDER) as m:
        m.ingest(essays, batch_size=8)
        nft = next(d.id for d in m.documents() if d.source.endswith("nft.txt"))
        before = {s: m.ask(NOORA, strategy=s) for s in STRATEGIES}
        assert all(nft in documents_of(r) for r in before.values()), "nft.txt answers first"
        report = m.delete_document(nft)
        assert report.chunks_removed > 0 and nft not in {d.id for d in m.documents()}
        check_memory(m.store, max_cluster_size=SETTINGS.max_cluster_size)
        for strategy in STRATEGIES:
            after = m.ask(NOORA, strategy=strategy)
            assert after.evidence, strategy  # the other essays still answer something
            assert nft not in documents_of(after), strategy
            assert "Noora" not in evidence_text(after) and "Noora" not in after.answer
        assert m.store.search_text(None, "Noora", 10) == []


def test_an_updated_sentence_is_found_and_the_old_one_is_not(
    tmp_path: Path, essays: list[Path]
) -> None:
    island = essays[1]
    with Memory.open(tmp_path / "m.db", "essays", settings=SETTINGS, embedder=EMBEDDER) as m:
        m.ingest(essays, batch_size=8)
        assert OLD in evidence_text(m.ask(NOTEBOOKS))
        text = island.read_text()
        assert text.count(OLD) == 1
        island.write_text(text.replace(OLD, NEW))
        report = m.ingest([island], batch_size=8)
        # One chunk replaced; the rest of the essay kept (not embedded again).
        assert report.chunks_added == 1 and report.chunks_removed == 1
        record = next(d for d in m.documents() if d.source == str(island))
        assert record.version == 2
        check_memory(m.store, max_cluster_size=SETTINGS.max_cluster_size)
        for strategy in STRATEGIES:
            result = m.ask(NOTEBOOKS, strategy=strategy)
            assert NEW in evidence_text(result), strategy
            assert "Miquelrius" not in evidence_text(result), strategy
        assert "Leuchtturm" in m.ask(NOTEBOOKS).answer
        assert m.store.search_text(None, "Miquelrius", 10) == []
        found = m.store.search_text(None, "Leuchtturm", 10)
        assert found and all("Leuchtturm" in m.node(i).node.text for i, _ in found)  # type: ignore[union-attr]
