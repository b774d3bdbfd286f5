"""`cam mcp` under load (cam_engine/bench/mcp_load.py, short): a real server over HTTP on
loopback, four clients asking while one ingests, with the hashing embedder.

The server holds its second batch written and uncommitted (fault checkpoint applied:2)
until every asking client has had two answers: so answers certainly came while an
ingest was in flight and held the write lock, without any timing threshold. None of
them may quote the held batch, every stats call must show whole batches, and no call
may fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from cam_engine.bench.mcp_load import LoadOptions, run
from tests.conftest import shared_file

pytestmark = [pytest.mark.realdata]

CLIENTS = 4
BATCH = 4


def test_asks_beside_an_ingest_answer_from_whole_batches(tmp_path: Path) -> None:
    frankenstein = shared_file("haystacks/gutenberg/pg84.txt").read_text(encoding="utf-8")
    seed = tmp_path / "frankenstein-part.txt"
    seed.write_text(frankenstein[:60_000], encoding="utf-8")  # a tenth of the book: quick
    options = LoadOptions(
        seconds=2.0,
        clients=CLIENTS,
        model="hashing:128",
        batch_size=BATCH,
        part_words=1500,  # about 10 chunks: 3 batches per ingest_text call
        hold_batch=2,
        answers_while_held=2,
    )
    figures = run(seed, shared_file("haystacks/gutenberg/pg2701.txt"), options, tmp_path)

    assert figures["errors"] == 0, figures["error_samples"]
    assert figures["half_written"] == 0, figures["violation_samples"]
    # The first part's first batch committed, its second held: readers saw 4 chunks.
    assert figures["held_document"] == "pg2701-001"
    assert figures["held_committed_chunks"] == BATCH
    assert figures["asks_while_held"] >= 2 * CLIENTS
    assert figures["asks_during_ingest"] >= figures["asks_while_held"]
    assert figures["ingest_batches_committed"] >= 2  # the held one too, once released
    assert figures["chunks_after"] == figures["seed_chunks"] + figures["ingest_chunks_added"]
    assert "Traceback" not in (tmp_path / "server.log").read_text()
