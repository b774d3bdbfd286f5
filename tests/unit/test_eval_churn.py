"""cam eval --churn: a built memory loses a random share of its documents and gets them
back through the public API; --paired-with compares the run with one built once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cam_engine.cli.main import cli
from cam_engine.config import Settings
from cam_engine.embed import HashingEmbedder
from cam_engine.errors import ConfigError, InputError
from cam_engine.eval.churn import churn, churned_documents
from cam_engine.eval.compare import load_results
from cam_engine.eval.dataset import EvalDocument, write_jsonl
from cam_engine.eval.runner import run_eval
from cam_engine.memory import Memory
from tests.conftest import shared_file
from tests.invariants import check_memory
from tests.unit.test_eval_runner import essays_set

EMBEDDER = HashingEmbedder(64)
ENV = {"CAM_EMBED_MODEL": "hashing:64"}


@pytest.fixture(scope="module")
def essays() -> Path:
    return shared_file("haystacks/paul_graham")


def essay_documents(folder: Path, count: int) -> list[EvalDocument]:
    """``count`` real essays, each cut to a few chunks."""
    paths = sorted(folder.glob("*.txt"))[:count]
    return [EvalDocument(p.name, p.read_text()[:3000]) for p in paths]


def contents(memory: Memory) -> tuple[list[str], list[tuple[str, ...]]]:
    """The memory's document ids and, per document, its chunk texts in reading order."""
    ids = sorted(d.id for d in memory.documents())
    return ids, [tuple(c.text for c in memory.document_chunks(d)) for d in ids]


def test_churn_gives_back_the_same_documents_and_chunks(essays: Path, tmp_path: Path) -> None:
    documents = essay_documents(essays, 8)
    texts = {d.id: d.text for d in documents}
    settings = Settings(embed_model=EMBEDDER.name)
    with Memory.open(tmp_path / "m.db", "pool", settings=settings, embedder=EMBEDDER) as memory:
        memory.ingest_documents(list(texts.items()), batch_size=16)
        before = contents(memory)
        chunks_before = sorted(c.text for c in memory.chunks())
        picked = churned_documents(list(texts), 0.5, seed=3)
        assert len(picked) == 4
        report = churn(memory, picked, texts, batch_size=16)
        # The half was really deleted and ingested again, chunk for chunk.
        assert report.documents == 4
        assert report.chunks_removed == report.chunks_added > 0
        assert contents(memory) == before
        assert sorted(c.text for c in memory.chunks()) == chunks_before
        assert memory.stats()["partial_documents"] == []
        check_memory(memory.store, max_cluster_size=memory.settings.max_cluster_size)


def test_churned_documents_are_a_seeded_share() -> None:
    ids = [f"d{i}" for i in range(10)]
    picked = churned_documents(ids, 0.5, seed=1)
    assert len(picked) == 5 and picked == churned_documents(ids, 0.5, seed=1)
    assert picked == [d for d in ids if d in picked]  # in the order given
    assert picked != churned_documents(ids, 0.5, seed=2)
    assert churned_documents(ids, 0.01, seed=1) != []  # at least one
    assert churned_documents(ids, 1.0, seed=1) == ids
    with pytest.raises(ConfigError, match="churn fraction"):
        churned_documents(ids, 0.0, seed=1)


def test_run_eval_with_churn_scores_the_same_chunks(essays: Path, tmp_path: Path) -> None:
    evalset = essays_set(essays, pooled=True)
    strategies = ["bm25", "prune-grow", "prune-grow-no-flexibility"]
    once = run_eval(evalset, embedder=EMBEDDER, workdir=tmp_path / "a", strategies=strategies)
    stages: list[tuple[str, int, int]] = []
    churned = run_eval(
        evalset,
        embedder=EMBEDDER,
        workdir=tmp_path / "b",
        strategies=strategies,
        churn_fraction=0.5,
        churn_seed=0,
        progress=lambda stage, done, total: stages.append((stage, done, total)),
    )
    # Each delete is reported: they take seconds on a large memory.
    churn_steps = [step for step in stages if step[0] == "churn"]
    assert churn_steps[:2] == [("churn", 1, 2), ("churn", 2, 2)] and len(churn_steps) >= 4
    assert "churn" not in once.build
    # Three documents: two churned, in the main memory and in the ablation's.
    assert churned.build["churn"] | {"delete_seconds": 0, "ingest_seconds": 0} == {
        "fraction": 0.5,
        "seed": 0,
        "memories": 2,
        "documents": 4,
        "chunks_removed": churned.build["churn"]["chunks_added"],
        "chunks_added": churned.build["churn"]["chunks_added"],
        "llm_calls": 0,
        "delete_seconds": 0,
        "ingest_seconds": 0,
    }
    assert churned.build["chunks"] == once.build["chunks"]
    # BM25 reads only the chunks: the same chunks give the same scores.
    bm25 = [(r.question_id, r.scores) for r in once.results if r.strategy == "bm25"]
    assert bm25 == [(r.question_id, r.scores) for r in churned.results if r.strategy == "bm25"]


def test_cam_eval_churn_and_paired_with(essays: Path, tmp_path: Path) -> None:
    data = tmp_path / "own.jsonl"
    write_jsonl(essays_set(essays, pooled=True), data)
    base = ["eval", "jsonl", str(data), "--strategies", "bm25,prune-grow", "--budgets",
            "200,1000"]  # fmt: skip
    once = CliRunner().invoke(cli, [*base, "--out", str(tmp_path / "once")], env=ENV)
    assert once.exit_code == 0, once.output
    args = [*base, "--churn", "0.5", "--seed", "7", "--paired-with", str(tmp_path / "once")]
    churned = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "churned")], env=ENV)
    assert churned.exit_code == 0, churned.output
    assert "2 documents then deleted and ingested again" in churned.stdout
    assert "this run minus" in churned.stdout and "| prune-grow | " in churned.stdout
    saved = json.loads((tmp_path / "churned" / "results.json").read_text())
    assert saved["build"]["churn"]["seed"] == 7 and saved["build"]["churn"]["documents"] == 2
    rows = saved["paired_with"]["rows"]
    assert {(r["strategy"], r["budget"]) for r in rows} == {
        (s, b) for s in ("bm25", "prune-grow") for b in (200, 1000)
    }
    assert all(r["questions"] == 3 and r["low"] <= r["difference"] <= r["high"] for r in rows)
    # bm25 reads only chunks, which churn gives back: no question moves.
    assert all(r["difference"] == 0 for r in rows if r["strategy"] == "bm25")
    assert "this run minus" in (tmp_path / "churned" / "table.md").read_text()


def test_churn_progress_lines_name_the_stage() -> None:
    from cam_engine.cli.eval import _Ticker

    lines: list[str] = []
    ticker = _Ticker(lines.append, interval=0.0)
    ticker("churn", 3, 10)
    assert lines[0].startswith(
        "cam eval: deleting documents and ingesting them again, 3/10 documents done"
    )


def test_cam_eval_churn_options_are_checked(essays: Path, tmp_path: Path) -> None:
    data = tmp_path / "own.jsonl"
    write_jsonl(essays_set(essays, pooled=True), data)
    base = ["eval", "jsonl", str(data), "--strategies", "bm25"]
    zero = CliRunner().invoke(cli, [*base, "--churn", "0"], env=ENV)
    assert zero.exit_code == 2 and "--churn" in zero.output
    over = CliRunner().invoke(cli, [*base, "--churn", "1.5"], env=ENV)
    assert over.exit_code == 2 and "--churn" in over.output
    (tmp_path / "notes.txt").write_text("not results")
    bad = CliRunner().invoke(cli, [*base, "--paired-with", str(tmp_path / "notes.txt")], env=ENV)
    assert bad.exit_code == 1 and "not a cam eval results.json" in bad.output
    assert "Traceback" not in bad.output
    with pytest.raises(InputError, match="no per-question results"):
        (tmp_path / "other.json").write_text("{}")
        load_results(tmp_path / "other.json")
