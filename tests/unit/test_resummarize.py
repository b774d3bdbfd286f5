"""Which summaries are written again when their cluster's members change
(``summaries.must_rewrite``, ``Settings.resummarize_drift``)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from cam_engine import Memory, Settings
from cam_engine.bench.ingest import summary_call_figures
from cam_engine.cli.main import cli
from cam_engine.embed import HashingEmbedder
from cam_engine.engine.reports import BatchReport, LevelReport
from cam_engine.engine.summaries import WRITTEN_FROM, must_rewrite
from cam_engine.errors import ConfigError
from cam_engine.llm import ExtractiveSummarizer
from tests.conftest import shared_file
from tests.invariants import check_memory, check_written_from

EMBEDDER = HashingEmbedder(64)
# As tests/unit/test_builder.py: the hashing embedder's cosines are low.
SETTINGS = Settings(embed_model=EMBEDDER.name, alpha=0.6, theta=0.3, chunk_tokens=60)
EIGHT = {f"c{i}" for i in range(8)}


def test_a_cluster_of_eight_gaining_one_keeps_its_summary() -> None:
    assert not must_rewrite(EIGHT, EIGHT | {"c8"}, 0.25)


def test_small_gains_add_up_to_a_rewrite() -> None:
    # Written from 8 members; one more each batch: 1/9, 2/10, then 3/11 > 0.25.
    grown = [EIGHT | {f"n{j}" for j in range(k)} for k in (1, 2, 3)]
    assert [must_rewrite(EIGHT, members, 0.25) for members in grown] == [False, False, True]


def test_a_member_swapped_counts_twice() -> None:
    swapped = (EIGHT - {"c0"}) | {"n0"}
    assert not must_rewrite(EIGHT, swapped, 0.25)  # 2 of 8
    assert must_rewrite(EIGHT, (swapped - {"c1"}) | {"n1"}, 0.25)  # 4 of 8


SETS = st.sets(st.sampled_from([f"c{i}" for i in range(12)]), min_size=2)


@given(SETS, SETS)
def test_drift_zero_rewrites_on_any_change(written: set[str], members: set[str]) -> None:
    assert must_rewrite(written, members, 0.0) == (written != members)


@given(SETS, SETS, st.floats(0, 1), st.floats(0, 1))
def test_a_larger_drift_never_rewrites_more(
    written: set[str], members: set[str], low: float, high: float
) -> None:
    low, high = sorted((low, high))
    assert not must_rewrite(written, written, high)
    assert must_rewrite(written, members, high) <= must_rewrite(written, members, low)


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), "0.2"])
def test_the_drift_is_a_share(bad: object) -> None:
    with pytest.raises(ConfigError, match=r"resummarize_drift must be a number in \[0, 1\]"):
        Settings(resummarize_drift=bad)  # type: ignore[arg-type]


class Counting(ExtractiveSummarizer):
    def __init__(self) -> None:
        self.calls = 0

    def summarize(self, texts, *, max_words):  # type: ignore[no-untyped-def]
        self.calls += 1
        return super().summarize(texts, max_words=max_words)


def _ingest(tmp_path: Path, text: str, drift: float) -> tuple[list[BatchReport], int]:
    """The essay in batches of 8 chunks; checks the memory after each batch."""
    summarizer = Counting()
    settings = replace(SETTINGS, resummarize_drift=drift)
    db = tmp_path / f"drift-{drift}.db"
    with Memory.open(db, "m", settings=settings, embedder=EMBEDDER, summarizer=summarizer) as m:

        def check(_: BatchReport) -> None:
            check_written_from(m.store, drift=drift)

        reports = m.ingest_text(text, "founders", batch_size=8, on_batch=check).batches
        check_memory(m.store, max_cluster_size=settings.max_cluster_size)
        check_written_from(m.store, drift=drift)
    return reports, summarizer.calls


def test_a_drift_writes_fewer_summaries_and_each_stays_within_it(tmp_path: Path) -> None:
    essay = shared_file("haystacks/paul_graham/gap.txt").read_text()[:12000]
    every, every_calls = _ingest(tmp_path, essay, 0.0)
    drifting, drifting_calls = _ingest(tmp_path, essay, 0.5)
    kept = [
        sum(lv.summaries_kept for r in reports for lv in r.levels) for reports in (every, drifting)
    ]
    assert kept[0] == 0 and kept[1] > 0
    assert drifting_calls < every_calls
    # Every call is counted, whatever it was for.
    assert every_calls == sum(r.summary_calls for r in every)
    assert drifting_calls == sum(r.summary_calls for r in drifting)


def test_summaries_record_what_they_were_written_from(tmp_path: Path) -> None:
    essay = shared_file("haystacks/paul_graham/gap.txt").read_text()[:6000]
    with Memory.open(tmp_path / "m.db", "m", settings=SETTINGS, embedder=EMBEDDER) as memory:
        memory.ingest_text(essay, "founders")  # one batch: written from their members
        summaries = [n for n in memory.store.nodes_at_level(1)]
        members = memory.store.members_of([n.id for n in summaries])
    assert summaries
    assert all(set(n.props[WRITTEN_FROM]) == members[n.id] for n in summaries)


def test_cam_ingest_sets_the_drift_of_a_new_memory(tmp_path: Path) -> None:
    text = tmp_path / "gap.txt"
    text.write_text(shared_file("haystacks/paul_graham/gap.txt").read_text()[:3000])
    env = {"CAM_STORE": str(tmp_path / "cli.db"), "CAM_EMBED_MODEL": EMBEDDER.name}
    bad = CliRunner().invoke(cli, ["ingest", str(text), "--resummarize-drift", "1.5"], env=env)
    assert bad.exit_code == 2 and "resummarize_drift must be a number in [0, 1]" in bad.output
    good = CliRunner().invoke(cli, ["ingest", str(text), "--resummarize-drift", "0.1"], env=env)
    assert good.exit_code == 0, good.output
    with Memory.open(tmp_path / "cli.db", "default", embedder=EMBEDDER) as memory:
        assert memory.settings.resummarize_drift == 0.1


def test_bench_ingest_counts_summarize_calls_per_100_chunks() -> None:
    first = BatchReport("book", 0, chunks_added=64, summary_calls=40, summaries_rewritten=3)
    first.levels = [LevelReport(0, summaries_written=30, summaries_new=30)]
    first.top_summaries_written = 7
    second = BatchReport("book", 1, chunks_added=36, summary_calls=20)
    second.levels = [LevelReport(0, summaries_written=15, summaries_new=9, summaries_kept=4)]
    figures = summary_call_figures([first, second], 100)
    assert figures["summary_calls_per_100_chunks"] == 60.0
    assert figures["llm_calls_per_100_chunks"] == 0.0  # the extractive summarizer's
    assert figures["summary_calls"] == {
        "total": 60,
        "cluster": 45,
        "cover": 7,
        "repeat_rewrites": 3,
    }
    assert figures["cluster_summaries"] == {"new": 39, "rewritten": 6, "kept": 4}
