"""The incremental builder on real text with the model-free hashing embedder."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cam_engine import Memory, Settings
from cam_engine.embed import HashingEmbedder
from cam_engine.engine.summaries import REGROUP_ROOTS
from cam_engine.errors import ConfigError, InputError, LLMError
from cam_engine.llm import ExtractiveSummarizer, SummaryResult
from tests.conftest import shared_file
from tests.invariants import check_memory

EMBEDDER = HashingEmbedder(64)
# Low theta: the hashing embedder's cosines are lower than a neural model's.
SETTINGS = Settings(embed_model=EMBEDDER.name, alpha=0.6, theta=0.3, chunk_tokens=60)


def open_memory(path: Path, **kwargs: object) -> Memory:
    return Memory.open(path / "m.db", "test", settings=SETTINGS, embedder=EMBEDDER, **kwargs)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def essay() -> str:
    return shared_file("haystacks/paul_graham/gap.txt").read_text()[:12000]


def test_batches_build_a_consistent_hierarchy(tmp_path: Path, essay: str) -> None:
    with open_memory(tmp_path) as memory:
        report = memory.ingest_text(essay, "founders", batch_size=8)
        check_memory(memory.store, max_cluster_size=SETTINGS.max_cluster_size)
        stats = memory.stats()
    assert len(report.batches) > 3
    levels = stats["levels"]
    assert levels[0]["nodes"] == sum(b.chunks_added for b in report.batches)
    assert len(levels) >= 3, "a dozen chunks or more should give at least two summary levels"
    sizes = [row["nodes"] for row in levels]
    assert sizes == sorted(sizes, reverse=True) and sizes[-1] < sizes[0]


def test_reingest_is_a_no_op(tmp_path: Path, essay: str) -> None:
    with open_memory(tmp_path) as memory:
        memory.ingest_text(essay, "founders", batch_size=16)
        before = memory.stats()
        again = memory.ingest_text(essay, "founders", batch_size=16)
        assert memory.stats() == before
    assert again.chunks_added == 0
    assert all(b.chunks_skipped > 0 and not b.levels for b in again.batches)


def test_reopen_and_continue(tmp_path: Path, essay: str) -> None:
    half = len(essay) // 2
    with open_memory(tmp_path) as memory:
        memory.ingest_text(essay[:half], "first", batch_size=8)
    with Memory.open(tmp_path / "m.db", "test", embedder=EMBEDDER) as memory:
        assert memory.settings == SETTINGS  # settings come back from the store
        memory.ingest_text(essay[half:], "second", batch_size=8)
        check_memory(memory.store, max_cluster_size=SETTINGS.max_cluster_size)
        assert memory.stats()["documents"] == 2


def test_changed_settings_are_refused(tmp_path: Path, essay: str) -> None:
    with open_memory(tmp_path) as memory:
        memory.ingest_text(essay[:3000], "a")
    with pytest.raises(ConfigError, match=r"built with .*theta=0\.3, asked 0\.5"):
        Memory.open(
            tmp_path / "m.db",
            "test",
            settings=Settings(embed_model=EMBEDDER.name, theta=0.5),
            embedder=EMBEDDER,
        )


class FailingSummarizer(ExtractiveSummarizer):
    """Fails on the n-th call, like an endpoint going down in the middle of a batch."""

    def __init__(self, fail_at: int) -> None:
        self.calls = 0
        self.fail_at = fail_at

    def summarize(self, texts, *, max_words):  # type: ignore[no-untyped-def]
        self.calls += 1
        if self.calls == self.fail_at:
            raise LLMError("endpoint went away")
        return super().summarize(texts, max_words=max_words)


def test_a_failed_batch_leaves_no_trace_and_rerun_completes(tmp_path: Path, essay: str) -> None:
    with open_memory(tmp_path) as memory:
        memory.ingest_text(essay[:4000], "intro", batch_size=8)
        before = memory.stats()
    failing = FailingSummarizer(fail_at=3)
    with open_memory(tmp_path, summarizer=failing) as memory:
        with pytest.raises(LLMError):
            memory.ingest_text(essay, "doc", batch_size=200)
        assert memory.stats() == before
        check_memory(memory.store, max_cluster_size=SETTINGS.max_cluster_size)
    with open_memory(tmp_path) as memory:
        memory.ingest_text(essay, "doc", batch_size=200)
        check_memory(memory.store, max_cluster_size=SETTINGS.max_cluster_size)
        assert memory.stats()["levels"][0]["nodes"] > before["levels"][0]["nodes"]


def test_rebuild_gives_a_consistent_memory_of_the_same_chunks(tmp_path: Path, essay: str) -> None:
    with open_memory(tmp_path) as memory:
        memory.ingest_text(essay, "founders", batch_size=8)
        incremental = memory.stats()
        memory.rebuild()
        check_memory(memory.store, max_cluster_size=SETTINGS.max_cluster_size)
        rebuilt = memory.stats()
    assert rebuilt["levels"][0]["nodes"] == incremental["levels"][0]["nodes"]
    assert rebuilt["levels"][0]["edges"] == incremental["levels"][0]["edges"]


def test_only_changed_clusters_are_resummarized(tmp_path: Path, essay: str) -> None:
    class Counting(ExtractiveSummarizer):
        calls = 0

        def summarize(self, texts, *, max_words):  # type: ignore[no-untyped-def]
            Counting.calls += 1
            return super().summarize(texts, max_words=max_words)

    with open_memory(tmp_path, summarizer=Counting()) as memory:
        reports = memory.ingest_text(essay, "founders", batch_size=8).batches
        total_summaries = sum(row["nodes"] for row in memory.stats()["levels"][1:])
    # One call per summary written, and one per summary written again because its text
    # repeated another node's.
    assert Counting.calls == sum(r.summaries_written + r.summaries_rewritten for r in reports)
    # The last batch re-summarizes far fewer clusters than the memory holds.
    assert reports[-1].summaries_written < total_summaries / 2


def test_summaries_say_they_are_extractive(tmp_path: Path, essay: str) -> None:
    with open_memory(tmp_path) as memory:
        memory.ingest_text(essay[:5000], "doc", batch_size=8)
        top = max(row["level"] for row in memory.stats()["levels"])
        node = next(iter(memory.store.nodes_at_level(top)))
        view = memory.node(node.id)
    assert view is not None and view.node.props["backend"] == "extractive"
    # A node of the covering top level may group roots of several levels below it.
    assert view.children and all(c.level < top for c in view.children)


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    sizes=st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=5),
    start=st.integers(min_value=0, max_value=6000),
)
def test_any_batch_sequence_keeps_the_invariants(
    tmp_path_factory: pytest.TempPathFactory, essay: str, sizes: list[int], start: int
) -> None:
    path = tmp_path_factory.mktemp("seq")
    text = essay[start : start + 5000]
    with open_memory(path) as memory:
        offset = 0
        for i, size in enumerate(sizes):
            piece = text[offset : offset + size * 300]
            offset += size * 300
            if piece.strip():
                memory.ingest_text(piece, f"part{i}", batch_size=size)
            check_memory(memory.store, max_cluster_size=SETTINGS.max_cluster_size)


def test_summary_failure_type_is_not_swallowed() -> None:
    result = ExtractiveSummarizer().summarize(["One. Two."], max_words=5)
    assert isinstance(result, SummaryResult) and result.backend == "extractive"


def test_without_ego_splitting_clusters_do_not_overlap(tmp_path: Path, essay: str) -> None:
    """The paper's "w/o flexibility" ablation: one replica per node, so every chunk is
    in exactly one cluster, where the default splits bridges into several."""
    flat = Settings(**{**SETTINGS.to_dict(), "ego_split": False})
    with Memory.open(tmp_path / "flat.db", "t", settings=flat, embedder=EMBEDDER) as memory:
        memory.ingest_text(essay, "founders", batch_size=8)
        stats = memory.stats()
        replicas = memory.store.replicas_of(n.id for n in memory.store.nodes_at_level(0))
    assert stats["overlap"] == 0.0
    assert all(len(rs) == 1 for rs in replicas.values())
    assert stats["levels"][0]["clusters"] < stats["levels"][0]["nodes"]
    with open_memory(tmp_path) as memory:
        memory.ingest_text(essay, "founders", batch_size=8)
        assert memory.stats()["overlap"] > 0.0


def test_ego_split_must_be_a_boolean() -> None:
    with pytest.raises(ConfigError, match="ego_split"):
        Settings(ego_split="no")  # type: ignore[arg-type]


def test_many_short_documents_share_batches(tmp_path: Path, essay: str) -> None:
    paragraphs = [p for p in essay.split(".  ") if len(p.split()) > 5][:30]
    documents = [(f"p{i}", text) for i, text in enumerate(paragraphs)]
    with open_memory(tmp_path) as memory:
        report = memory.ingest_documents(documents, batch_size=8)
        check_memory(memory.store, max_cluster_size=SETTINGS.max_cluster_size)
        stored = {d.id: d.chunks for d in memory.store.documents()}
        assert len(report.batches) < len(documents)  # several documents per batch
        assert stored == {doc_id: len(memory.document_chunks(doc_id)) for doc_id, _ in documents}
        assert all(n >= 1 for n in stored.values())
        before = memory.stats()
        again = memory.ingest_documents(documents, batch_size=8)
        assert again.chunks_added == 0 and memory.stats() == before
        with pytest.raises(InputError, match="'empty' is empty"):
            memory.ingest_documents([("empty", "  ")])


def test_pooled_short_documents_end_in_a_small_top_that_covers_them(tmp_path: Path) -> None:
    """Sixty one-chunk documents about unrelated things: most stay alone in level 0
    (no summary copies them), and the covering top level groups them all."""
    rng = random.Random(7)
    vocabulary = [f"w{i}" for i in range(3000)]
    docs = [(f"doc{i}", " ".join(rng.choices(vocabulary, k=40)) + ".") for i in range(60)]
    with open_memory(tmp_path) as memory:
        reports = memory.ingest_documents(docs, batch_size=16).batches
        check_memory(memory.store, max_cluster_size=SETTINGS.max_cluster_size)
        stats = memory.stats()
        top = stats["levels"][-1]
        assert 1 <= top["nodes"] <= 10 and stats["roots"] == top["nodes"]
        assert reports[-1].top_nodes == top["nodes"]
        assert stats["repeated_texts"] == 0
        summaries = sum(row["nodes"] for row in stats["levels"][1:])
        assert summaries < 60 / 2, "a few covering groups, not one summary per document"


def test_a_line_that_does_not_cluster_rewrites_a_bounded_part_of_its_top(tmp_path: Path) -> None:
    """Random words on one line, at the default theta: almost no chunk has an edge, so
    every chunk stays a root and the covering levels hold them all (1,280 here). Past
    ``REGROUP_ROOTS`` roots a batch places its new roots among the kept groups; it used
    to regroup them all in every batch (a summary, or an LLM call, per covering node:
    95 to 117 in each of the last five batches here, against 21 to 31 now), which made
    such a document quadratic to ingest. Not a timing: the covering summaries written
    per batch must not grow with the memory."""
    rng = random.Random(3)
    vocabulary = [
        "".join(rng.choices("abcdefghijklmnop", k=rng.randint(2, 9))) for _ in range(2000)
    ]
    line = " ".join(rng.choices(vocabulary, k=16 * 1280))  # 1,280 chunks of 16 tokens
    settings = Settings(embed_model=EMBEDDER.name, chunk_tokens=16)
    batch = 64
    with Memory.open(tmp_path / "m.db", "t", settings=settings, embedder=EMBEDDER) as memory:
        reports = memory.ingest_text(line, "line", batch_size=batch).batches
        check_memory(memory.store, max_cluster_size=settings.max_cluster_size)
        stats = memory.stats()
    assert len(reports) == 20
    assert stats["levels"][0]["edges"] < 20, "random words do not cluster"
    assert stats["roots"] == stats["levels"][-1]["nodes"] <= 10
    assert 16 * batch > REGROUP_ROOTS  # the last five batches: past the regrouping limit
    assert max(r.top_summaries_written for r in reports[-5:]) <= batch
