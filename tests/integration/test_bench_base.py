"""The benchmarks' ``--base``: the crash sweep and the MCP load run on copies of an
existing SQLite memory (cam_engine/bench/base_memory.py), never on the memory itself.

The base here is small (part of Romeo and Juliet, the hashing embedder, chunks of 60
tokens) but has what a memory of 10^5 chunks has: an approximate index of its chunk
level saved in its .vectors folder (the index threshold lowered while it is built),
which every copy must carry, and settings of its own, which every ingest into a copy
must use.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from cam_engine import Memory, Settings
from cam_engine.bench import crash
from cam_engine.bench.base_memory import BaseMemory, remove_copy, stored_settings
from cam_engine.bench.mcp_load import LoadOptions, run
from cam_engine.cli.main import cli
from cam_engine.embed import HashingEmbedder
from cam_engine.store import sqlite_vectors
from tests.conftest import shared_file

pytestmark = [pytest.mark.realdata]

MEMORY = "scale"
EMBEDDER = HashingEmbedder(64)
SETTINGS = Settings(embed_model=EMBEDDER.name, chunk_tokens=60, theta=0.3)
# The Simple Sabotage Field Manual: 242 chunks of 60 tokens, 16 batches of 16 (with the
# crash harness's own 200 tokens it would be 5 batches).
BOOK = "haystacks/gutenberg/pg26184.txt"


def digest(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` and its content's hash."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BaseMemory]:
    text = shared_file("haystacks/gutenberg/pg1513.txt").read_text(encoding="utf-8")
    path = tmp_path_factory.mktemp("base") / "scale.db"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sqlite_vectors, "ANN_MIN", 40)  # level 0 indexed, as at 10^5
        patch.setattr(sqlite_vectors, "SAVE_ON_CLOSE", 1)
        with Memory.open(path, MEMORY, settings=SETTINGS, embedder=EMBEDDER) as memory:
            memory.ingest_text(text[:40_000], "romeo", batch_size=32)
    assert list(Path(f"{path}.vectors").rglob("L0-*.usearch")), "no index saved"
    yield BaseMemory(path, MEMORY)


def test_a_copy_holds_the_database_and_its_vector_indexes(base: BaseMemory, tmp_path: Path) -> None:
    copy = base.copy_into(tmp_path / "copy")
    assert copy == tmp_path / "copy" / "scale.db"
    assert digest(Path(f"{copy}.vectors")) == digest(Path(f"{base.path}.vectors"))
    settings = stored_settings(copy, MEMORY)
    assert settings["chunk_tokens"] == 60 and settings["embed_model"] == EMBEDDER.name
    assert settings["chunks"] > 40
    remove_copy(copy)
    assert not list((tmp_path / "copy").iterdir())


def test_a_copy_without_the_memory_is_refused(base: BaseMemory, tmp_path: Path) -> None:
    args = ["bench", "crash", "--base", str(base.path), "--memory", "other", "--points", "1"]
    result = CliRunner().invoke(cli, [*args, "--book", str(shared_file(BOOK))])
    assert (result.exit_code, result.output) == (1, "Error: --base holds no memory 'other'\n")


def test_crashes_into_copies_of_a_base_resume_to_the_clean_memory(base: BaseMemory) -> None:
    before = digest(base.path.parent)
    book = crash.Book(shared_file(BOOK), batch_size=16, stored_settings=True)
    summary = crash.sweep_base(book, base, 2)
    assert summary["batches"] == 16  # the base's 60-token chunks, not the Book's 200
    assert summary["chunk_tokens"] == 60 and summary["embed_model"] == EMBEDDER.name
    assert summary["killed_mid_ingest"] == summary["points"] == 2
    assert summary["identical"] == summary["stats_equal"] == summary["invariants_ok"] == 2
    assert summary["resume_failed"] == 0 and summary["not_identical"] == []
    assert summary["clean_invariants"] is True
    for result in summary["results"]:  # the book's chunks at the kill, not the base's
        assert set(result["stored_at_failure"]) <= {"pg26184.txt"}, result
    assert digest(base.path.parent) == before  # the base itself is never written


def test_mcp_load_serves_a_copy_of_a_base(base: BaseMemory, tmp_path: Path) -> None:
    before = digest(base.path.parent)
    options = LoadOptions(
        seconds=2.0,
        clients=2,
        model="hashing:128",  # not used: the base's own model serves
        batch_size=4,
        part_words=1500,
        hold_batch=2,
        base=base,
    )
    figures = run(Path("unused"), shared_file("haystacks/gutenberg/pg2701.txt"), options, tmp_path)
    assert figures["errors"] == 0, figures["error_samples"]
    assert figures["half_written"] == 0, figures["violation_samples"]
    assert figures["embedder"] == EMBEDDER.name
    assert figures["asks_while_held"] >= 2 * 2
    assert figures["chunks_after"] == figures["base_chunks"] + figures["ingest_chunks_added"]
    assert figures["documents_after"] > 1
    assert digest(base.path.parent) == before


def test_the_compact_rows_tell_what_the_full_rows_tell(base: BaseMemory, tmp_path: Path) -> None:
    """Digests, not texts and vectors, yet a node changed in any column, and an edge,
    counts as lost and extra, as with the full rows."""
    copy = base.copy_into(tmp_path / "copy")
    before = crash.read_rows(str(copy), MEMORY)
    assert all(len(row) == 3 for row in before["nodes"])  # (id, level, digest)
    with sqlite3.connect(copy) as conn:
        conn.execute("UPDATE nodes SET text = text || '.' WHERE id = (SELECT MIN(id) FROM nodes)")
        conn.execute(
            "UPDATE nodes SET embedding = zeroblob(length(embedding)) WHERE id = "
            "(SELECT MAX(id) FROM nodes WHERE level = 0)"
        )
        conn.execute(
            "UPDATE edges SET score = score / 2 WHERE rowid = (SELECT MIN(rowid) FROM edges)"
        )
    lost, extra = crash.row_diff(before, crash.read_rows(str(copy), MEMORY))
    assert lost == extra == {"nodes": 2, "edges": 1}
