"""Faults beneath the engine, for real, in ``cam`` subprocesses: a SQLite store whose
disk fills up part-way through ``cam ingest`` (a file size limit, RLIMIT_FSIZE), and a
store that cannot be written (a read-only file, a read-only folder).

A full disk must roll the batch in flight back, keep the committed ones, say so in one
line, and let the same command resume to the memory a clean ingest builds, row by row
(cam_engine/bench/diskfull.py, which also sweeps many limits for docs/reliability.md).
A read-only store must be refused before the document is read or embedded, in one line
naming the file; reading it still works where SQLite can.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from cam_engine.bench.crash import (
    Book,
    PointResult,
    Reference,
    cam,
    cam_argv,
    child_env,
    clean_ingest,
    read_rows,
)
from cam_engine.bench.diskfull import FullResult, run_limit
from tests.conftest import shared_file
from tests.support.unprivileged import Unprivileged, unprivileged

# The Simple Sabotage Field Manual: 242 chunks of 60 tokens, 16 batches of 16.
BOOK = "haystacks/gutenberg/pg26184.txt"
ESSAY = "haystacks/paul_graham/addiction.txt"  # 33 chunks: a small store to seed or lock
BATCH, CHUNK_TOKENS = 16, 60


@pytest.fixture(scope="module")
def book() -> Book:
    return Book(shared_file(BOOK), batch_size=BATCH, chunk_tokens=CHUNK_TOKENS)


@pytest.fixture(scope="module")
def essay() -> Book:
    return Book(shared_file(ESSAY), batch_size=BATCH, chunk_tokens=CHUNK_TOKENS)


@pytest.fixture(scope="module")
def clean(book: Book, tmp_path_factory: pytest.TempPathFactory) -> tuple[Reference, int]:
    """The clean ingest, and the size of its database file (its WAL is gone on close)."""
    store = tmp_path_factory.mktemp("full-clean") / "clean.db"
    reference = clean_ingest(book, str(store), "m")
    assert reference.batches == 16
    return reference, store.stat().st_size


def chunks(reference: Reference) -> int:
    return sum(1 for row in reference.rows["nodes"] if row[1] == 0)


def assert_resumed_as_clean(result: PointResult) -> None:
    assert result.resume_rc == 0, result.note
    assert result.lost == {} and result.extra == {}, result
    assert result.identical and result.stats_equal, result
    assert result.invariants is True, result.note


def assert_failed_mid_ingest(result: FullResult, store: Path, total: int) -> None:
    """One line, naming the store and the limit; only whole batches kept, some not all."""
    assert result.rc == 1, result.stderr_lines
    assert result.stderr_lines == [
        f"Error: cannot write to SQLite store {store}: the file size limit (ulimit -f) of "
        f"{result.limit} bytes is reached (disk I/O error); {result.chunks_kept} new chunks "
        "from the batches committed so far are kept; run the same command again to resume"
    ]
    assert 0 < result.chunks_kept < total
    assert result.chunks_kept % BATCH == 0, "a batch was kept in part"


# --- a full disk ------------------------------------------------------------------------------


def test_sqlite_ingest_on_a_full_disk_keeps_whole_batches_and_resumes_to_the_clean_memory(
    book: Book, clean: tuple[Reference, int], tmp_path: Path
) -> None:
    reference, size = clean
    store = tmp_path / "full.db"
    # The limit is per file, and a batch's pages go to the -wal file first; this book's
    # WAL reaches about six times its final database file before the last batch, so
    # twice the database file is reached about half-way through the ingest.
    result = run_limit(book, str(store), "m", 2 * size, reference)
    assert_failed_mid_ingest(result, store, chunks(reference))
    assert_resumed_as_clean(result.resumed)


def test_a_full_disk_leaves_the_other_memories_of_the_file_as_they_were(
    book: Book, essay: Book, clean: tuple[Reference, int], tmp_path: Path
) -> None:
    reference, _ = clean
    store = tmp_path / "seeded.db"
    seeded = cam(essay.ingest_args(str(store), "seed"))
    assert seeded.returncode == 0, seeded.stderr
    seed_rows = read_rows(str(store), "seed")
    # A file already near the limit: the WAL and the checkpoint into the database
    # file both run into it.
    result = run_limit(book, str(store), "m", store.stat().st_size + (256 << 10), reference)
    assert_failed_mid_ingest(result, store, chunks(reference))
    assert_resumed_as_clean(result.resumed)
    assert read_rows(str(store), "seed") == seed_rows


def test_a_full_disk_while_the_store_is_created_is_one_line_and_the_rerun_builds_it(
    book: Book, clean: tuple[Reference, int], tmp_path: Path
) -> None:
    reference, _ = clean
    store = tmp_path / "new.db"
    # Less than the schema's migrations write: the store cannot even be set up.
    result = run_limit(book, str(store), "m", 32 << 10, reference)
    assert (result.rc, result.chunks_kept) == (1, 0)
    assert result.stderr_lines == [
        f"Error: cannot open SQLite store {store}: the file size limit (ulimit -f) of "
        f"{32 << 10} bytes is reached (disk I/O error)"
    ]
    assert_resumed_as_clean(result.resumed)


# --- a store that cannot be written -------------------------------------------------------------


@pytest.fixture
def store(essay: Book) -> Iterator[Path]:
    """A store holding memory "m", in a folder every user can enter (pytest's own
    temporary folders are 0700, which ``nobody`` could not)."""
    folder = Path(tempfile.mkdtemp(prefix="cam-readonly-"))
    folder.chmod(0o755)
    path = folder / "lib" / "memory.db"
    built = cam(essay.ingest_args(str(path), "m"))
    assert built.returncode == 0, built.stderr
    path.parent.chmod(0o755)
    try:
        yield path
    finally:
        for item in (folder, *folder.rglob("*")):
            item.chmod(item.stat().st_mode | stat.S_IWUSR | stat.S_IXUSR)
        shutil.rmtree(folder)


def runner_for(store: Path) -> Unprivileged:
    """A child process that ``store`` (made read-only here) really refuses a write."""
    store.chmod(0o444)
    how = unprivileged(store)
    store.chmod(0o644)
    if isinstance(how, str):
        pytest.skip(how)
    return how


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def error_lines(done: subprocess.CompletedProcess[str]) -> list[str]:
    return done.stderr.splitlines()


def test_ingest_into_a_read_only_store_file_is_refused_before_the_document_is_read(
    book: Book, store: Path
) -> None:
    runner = runner_for(store)
    store.chmod(0o444)
    before, rows = digest(store), read_rows(str(store), "m")
    # The first embedded batch would SIGKILL the process (cam_engine/faults.py): the
    # refusal must come before any document is read, chunked or embedded.
    env = child_env(CAM_CRASH_AT="embedded:1")
    done = runner.run(cam_argv(book.ingest_args(str(store), "m")), env)
    assert done.returncode == 1, (runner.how, done.returncode, done.stderr[-2000:])
    assert error_lines(done) == [
        f"Error: cannot write to SQLite store {store}: the file is read-only for this process "
        "(check its permissions and its folder's) (attempt to write a readonly database)"
    ]
    assert done.stdout == ""
    assert digest(store) == before and read_rows(str(store), "m") == rows


def test_a_read_only_store_file_can_still_be_read(store: Path) -> None:
    runner = runner_for(store)
    store.chmod(0o444)
    where = ["--store", str(store), "--memory", "m"]
    stats = runner.run(cam_argv(["stats", *where, "--json"]), child_env())
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["levels"][0]["nodes"] == 33
    asked = runner.run(cam_argv(["ask", "why are things more addictive", *where]), child_env())
    assert asked.returncode == 0, asked.stderr
    assert "addiction.txt" in asked.stdout


def test_a_store_in_a_read_only_folder_is_refused_in_one_line(book: Book, store: Path) -> None:
    runner = runner_for(store)
    store.parent.chmod(0o555)  # the file stays 0644: SQLite cannot make its -wal and -shm
    line = (
        f"Error: cannot open SQLite store {store}: its folder {store.parent} is not writable, "
        "and SQLite must create memory.db-wal and memory.db-shm there (WAL mode), even to "
        "read (attempt to write a readonly database)"
    )
    done = runner.run(cam_argv(book.ingest_args(str(store), "m")), child_env())
    assert (done.returncode, error_lines(done)) == (1, [line]), done.stderr[-2000:]
    stats = runner.run(cam_argv(["stats", "--store", str(store), "--memory", "m"]), child_env())
    assert (stats.returncode, error_lines(stats)) == (1, [line]), stats.stderr[-2000:]
    assert sorted(p.name for p in store.parent.iterdir()) == ["memory.db"]


# --- a damaged store file ----------------------------------------------------------------


def test_a_damaged_store_file_is_one_error_line_for_every_command(
    essay: Book, tmp_path: Path
) -> None:
    """Pages of the database overwritten (a bad disk, a copy cut short): every command
    that reads them says the store is damaged, in one line, and writes nothing."""
    store = tmp_path / "damaged.db"
    done = cam(essay.ingest_args(str(store), "m"))
    assert done.returncode == 0, done.stdout + done.stderr
    data = bytearray(store.read_bytes())
    page = 4096
    for start in range(2 * page, len(data), page):  # the schema page kept: it opens
        data[start + 100 : start + 400] = b"\xff" * 300
    store.write_bytes(bytes(data))
    before = hashlib.sha256(store.read_bytes()).hexdigest()
    where = ["--store", str(store), "--memory", "m"]
    for args in (
        ["stats", *where],
        ["ask", "What is addiction?", *where],
        essay.ingest_args(str(store), "m"),
    ):
        result = cam(args)
        lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
        assert result.returncode == 1, (args, lines)
        assert lines == [
            f"Error: SQLite store {store} is damaged (database disk image is malformed); "
            f"`sqlite3 {store} 'PRAGMA integrity_check'` says where"
        ], (args[0], lines)
    assert hashlib.sha256(store.read_bytes()).hexdigest() == before
