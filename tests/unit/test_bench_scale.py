"""``cam bench scale``'s data: copies of real text that are new texts, vectors that keep
the structure of the real ones, and the decades it reports at."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from cam_engine.bench.scale import checkpoints, documents_left
from cam_engine.bench.scale_data import (
    UNITS_PER_DOCUMENT,
    PerturbedEmbedder,
    Pool,
    copy_documents,
    read_pool,
)
from cam_engine.eval.plots import scale_plot
from cam_engine.llm.extractive import split_sentences
from tests.conftest import shared_file

UNITS = [
    "The whale rose beside the ship. The sailors shouted. Ahab stood at the bow.",
    "Elizabeth read the letter twice. Darcy had written it at night. She wept.",
    "The creature watched the cottage. It learned their words. Winter came early.",
    "Startups grow fast or die. Founders should talk to users. Ideas are cheap.",
]


def _pool() -> tuple[Pool, np.ndarray]:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((len(UNITS) + 1, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return Pool(UNITS, ["Who stood at the bow?"]), vectors


def test_the_decades_up_to_the_target_and_the_target() -> None:
    assert checkpoints(10_000) == [10_000]
    assert checkpoints(250_000) == [10_000, 100_000, 250_000]
    assert checkpoints(1_000_000) == [10_000, 100_000, 1_000_000]


def test_a_resumed_run_goes_on_from_the_last_document_held() -> None:
    pool, _ = _pool()
    sequence = list(itertools.islice(copy_documents(pool, seed=1), 8))
    held = {doc_id for doc_id, _ in sequence[:5]}
    # The fifth may be part-written: it is ingested again, then the rest in order.
    left = list(itertools.islice(documents_left(copy_documents(pool, seed=1), held), 4))
    assert left == sequence[4:8]
    assert list(itertools.islice(documents_left(iter(sequence), set()), 3)) == sequence[:3]


def test_copies_are_new_texts_of_real_sentences() -> None:
    pool, _ = _pool()
    documents = list(itertools.islice(copy_documents(pool, seed=1), 12))
    assert len({doc_id for doc_id, _ in documents}) == 12
    # Four units make one document per copy (up to UNITS_PER_DOCUMENT per document).
    assert documents[0][0] == "copy000/doc0000" and documents[1][0] == "copy001/doc0000"
    assert sorted(documents[0][1].split("\n\n")) == sorted(UNITS)  # copy 0: as they are
    real = {s for unit in UNITS for s in split_sentences(unit)}
    later = [t for _, text in documents[1:] for t in text.split("\n\n")]
    assert all(t not in UNITS for t in later)  # each lost a sentence
    assert all(set(split_sentences(t)) <= real for t in later)
    again = list(itertools.islice(copy_documents(pool, seed=1), 12))
    assert again == documents  # seeded


def test_a_copy_lands_near_its_unit_and_a_summary_near_its_members() -> None:
    pool, vectors = _pool()
    embedder = PerturbedEmbedder(pool, vectors, "model", seed=0)
    copy = " ".join(split_sentences(UNITS[0])[1:])
    got = embedder.embed([copy, copy, UNITS[1], pool.questions[0]])
    assert got[0] @ vectors[0] > 0.6  # near its unit...
    assert max(abs(got[0] @ vectors[i]) for i in (1, 2, 3)) < 0.6  # ...not the others
    assert np.allclose(got[0], got[1])  # a text's vector is a function of the text
    assert got[3] @ vectors[len(UNITS)] == pytest.approx(1.0, abs=1e-5)  # questions: real
    summary = f"{split_sentences(UNITS[0])[0]} {split_sentences(UNITS[2])[1]}"
    mixed = embedder.embed([summary])[0]
    assert mixed @ vectors[0] > 0.4 and mixed @ vectors[2] > 0.4
    assert embedder.unmatched == 0
    embedder.embed(["Nothing of the pool here at all."])
    assert embedder.unmatched == 1


def test_the_pool_of_the_shared_data() -> None:
    if not shared_file("hotpotqa/hotpotqa_dev_200.jsonl").exists():
        pytest.skip("shared data not found: ../shared/data")
    pool = read_pool(shared_file("hotpotqa").parent, 200)
    assert len(pool.units) > 5_000 and len(set(pool.units)) == len(pool.units)
    assert len(pool.questions) == 100
    assert UNITS_PER_DOCUMENT * 100 > 1_000  # a copy is many documents


def test_the_cost_curve_is_drawn(tmp_path: Path) -> None:
    lines = [
        {
            "store": "sqlite",
            "kind": "progress",
            "chunks": 6_400,
            "seconds": 20.0,
            "engine_ms_per_chunk_last100": 2.6,
            "rss_mb": 300.0,
        },
        {"store": "sqlite", "chunks": 10_000, "engine_ms_per_chunk_last10": 3.0, "rss_mb": 400.0},
        {"store": "sqlite", "chunks": 100_000, "engine_ms_per_chunk_last10": 3.5, "rss_mb": 900.0},
    ]
    path = scale_plot(lines, tmp_path / "cost.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
