"""A document read from stdin streams: its chunks are committed batch by batch while the
input is still being read, whatever its line structure."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from cam_engine import Memory
from cam_engine.chunking import chunk_document, chunk_stream
from cam_engine.config import Settings
from cam_engine.embed import HashingEmbedder
from cam_engine.engine.ingest import STDIN_BLOCK
from cam_engine.errors import NotFoundError

EMBEDDER = HashingEmbedder(32)
SETTINGS = Settings(embed_model=EMBEDDER.name, chunk_tokens=16)


def _log(lines: int) -> str:
    """A log: one line per event, no blank line anywhere."""
    return "".join(
        f"2026-11-26T17:{i % 60:02d} GET /items/{i} status=200 took {i % 97}ms\n"
        for i in range(lines)
    )


class _LiveStdin(io.StringIO):
    """``text``, then a read that waits until ``ended`` is set: a log still being written."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.ended = threading.Event()

    def read(self, size: int | None = -1) -> str:
        got = super().read(size)
        if got:
            return got
        self.ended.wait(60)
        return ""


def test_a_batch_is_committed_while_stdin_is_still_open(tmp_path: Path) -> None:
    text = _log(400)  # no blank line: one paragraph of some 200 chunks
    stdin = _LiveStdin(text)
    committed = threading.Event()
    outcome: list[object] = []

    def ingest() -> None:
        with Memory.open(tmp_path / "m.db", "log", settings=SETTINGS, embedder=EMBEDDER) as memory:
            report = memory.ingest(
                "-", document="log", stdin=stdin, batch_size=8, on_batch=lambda _: committed.set()
            )
            outcome.append(report)

    worker = threading.Thread(target=ingest)
    worker.start()
    try:
        assert committed.wait(30), "no batch committed while stdin was open"
        assert not stdin.ended.is_set() and worker.is_alive()
        with Memory.open(tmp_path / "m.db", "log", embedder=EMBEDDER, create=False) as reader:
            assert reader.count_chunks() >= 8  # stored, seen by another connection
    finally:
        stdin.ended.set()
        worker.join(60)
    assert outcome, "the ingest did not end"
    with Memory.open(tmp_path / "m.db", "log", embedder=EMBEDDER, create=False) as memory:
        stored = [c.text for c in memory.document_chunks("log")]
    assert stored == [c.text for c in chunk_document("log", text, SETTINGS.chunk_tokens)]


def test_stdin_of_one_endless_line_is_read_in_blocks(tmp_path: Path) -> None:
    line = " ".join(f"w{i}" for i in range(60_000))  # 400 KB, no newline at all
    reads: list[int] = []

    class Counted(io.StringIO):
        def read(self, size: int | None = -1) -> str:
            got = super().read(size)
            reads.append(len(got))
            return got

    with Memory.open(tmp_path / "m.db", "log", settings=SETTINGS, embedder=EMBEDDER) as memory:
        memory.ingest("-", document="line", stdin=Counted(line), batch_size=512)
        stored = [c.text for c in memory.document_chunks("line")]
    assert max(reads) <= STDIN_BLOCK and len(reads) > 5
    assert stored == [c.text for c in chunk_document("line", line, SETTINGS.chunk_tokens)]


def test_each_chunk_of_a_stream_comes_within_a_block_of_its_end() -> None:
    """Chunks are yielded as soon as they are final: never more than two blocks of
    text read past a chunk's end before it comes out (the old chunker waited for a
    blank line, so a log came out only at its end)."""
    text = _log(30_000)  # 1.8 MB, no blank line
    block = 1 << 14
    read = 0

    def blocks() -> Iterator[str]:
        nonlocal read
        for start in range(0, len(text), block):
            read = min(start + block, len(text))
            yield text[start : start + block]

    behind = [read - c.end_char for c in chunk_stream("log", blocks(), 200)]
    assert len(behind) > 1000
    assert max(behind) <= 2 * block


def _stored_chunks(store: Path) -> int:
    try:
        with Memory.open(store, "default", embedder=HashingEmbedder(64), create=False) as memory:
            return memory.count_chunks()
    except NotFoundError:  # the first batch has not created it yet
        return 0


def test_cam_ingest_commits_a_live_log_while_its_pipe_is_still_open(tmp_path: Path) -> None:
    """`tail -f log | cam ingest -`: a real pipe that stays open after 30 KB, less than
    one block: the batches that filled are in the store while the command still reads."""
    store = tmp_path / "live.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAM_")}
    env |= {"CAM_EMBED_MODEL": "hashing:64", "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "cam_engine.cli", "ingest", "-", "--document", "log"]
    command += ["--store", str(store), "--batch-size", "8"]
    text = _log(500)  # 30 KB, some 40 chunks of the default 200 tokens
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    assert process.stdin is not None
    try:
        process.stdin.write(text.encode())
        process.stdin.flush()
        deadline = time.monotonic() + 60
        while _stored_chunks(store) < 8 and time.monotonic() < deadline:
            assert process.poll() is None, process.communicate()
            time.sleep(0.2)
        assert _stored_chunks(store) >= 8 and process.poll() is None
    finally:
        _, err = process.communicate(timeout=120)  # closes stdin: the end of the log
    assert process.returncode == 0, err.decode()
    with Memory.open(store, "default", embedder=HashingEmbedder(64), create=False) as memory:
        stored = [c.text for c in memory.document_chunks("log")]
    assert stored == [c.text for c in chunk_document("log", text, 200)]
