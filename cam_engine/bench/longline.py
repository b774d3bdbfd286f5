"""One long line: ``cam ingest -`` of generated one-line documents of growing size.

    cam bench longline [--sizes 0.5,1,2,4] [--punctuation]

Each document is random words of a fixed vocabulary joined by single spaces, with no
newline anywhere (``--punctuation``: a sentence end about every 15 words). Each size
is ingested by its own ``cam ingest - --embed-model hashing:64`` process into a fresh
SQLite memory, as a user would pipe it; the hashing embedder ties random words to
almost nothing, so nearly every chunk stays a root and the covering levels
(engine/summaries.py) hold them all: the case that used to make ingest quadratic.

Figures (one JSON line): startup_s, the seconds of the same command on a line of ten
words (imports, opening the store); and per size: mb, seconds (the whole process),
seconds_per_mb (less startup_s), chunks, max_chunk_tokens (the budget must hold),
summaries (written over the ingest, the covering ones included) and top_summaries
(covering ones only). Compare seconds_per_mb across the sizes of one run: ingest is
linear in the length of the line when it stays flat (from about 1 MB on: below
``REGROUP_ROOTS`` roots the covering levels are regrouped in every batch).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path
from typing import Any

from cam_engine.chunking import count_tokens
from cam_engine.store.sqlite import SqliteStore

EMBED = "hashing:64"
VOCABULARY = 5000
SENTENCE_WORDS = 15  # with --punctuation: a sentence end every 15 words on average


def one_line(megabytes: float, *, punctuation: bool, seed: int = 7) -> bytes:
    """About ``megabytes`` MiB of words on one line, cut at a space."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocabulary = ["".join(rng.choices(letters, k=rng.randint(2, 9))) for _ in range(VOCABULARY)]
    size = int(megabytes * 2**20)
    words = rng.choices(vocabulary, k=size // 5)
    if punctuation:
        words = [w + "." if rng.random() < 1 / SENTENCE_WORDS else w for w in words]
    line = " ".join(words).encode()[:size]
    return line[: line.rfind(b" ")]


def measure(line: bytes, folder: Path, chunk_tokens: int, startup: float = 0.0) -> dict[str, Any]:
    db = Path(tempfile.mkdtemp(dir=folder)) / "line.db"  # a fresh memory for every run
    command = [sys.executable, "-m", "cam_engine.cli.main", "ingest", "-", "--store", str(db)]
    command += ["--embed-model", EMBED, "--chunk-tokens", str(chunk_tokens), "--json"]
    start = time.perf_counter()
    done = subprocess.run(command, input=line, capture_output=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(done.stderr.decode(errors="replace"))
    batches = [json.loads(row) for row in done.stdout.splitlines() if row.startswith(b"{")]
    batches = [b for b in batches if "top_summaries_written" in b]
    with closing(SqliteStore(db, "default")) as store:
        tokens = [count_tokens(n.text) for n in store.nodes_at_level(0)]
    mb = len(line) / 2**20
    return {
        "mb": round(mb, 2),
        "seconds": round(seconds, 2),
        "seconds_per_mb": round((seconds - startup) / mb, 2),
        "chunks": len(tokens),
        "max_chunk_tokens": max(tokens),
        "summaries": sum(b["summaries_written"] for b in batches),
        "top_summaries": sum(b["top_summaries_written"] for b in batches),
    }


def run(
    sizes: list[float], *, punctuation: bool = False, chunk_tokens: int = 200
) -> dict[str, Any]:
    """The figures of ``cam bench longline``: startup, then one run per size in MiB."""
    with tempfile.TemporaryDirectory(prefix="cam-longline-") as folder:
        startup = measure(b"one two three four five six seven eight nine ten", Path(folder), 16)
        runs = [
            measure(
                one_line(mb, punctuation=punctuation),
                Path(folder),
                chunk_tokens,
                startup["seconds"],
            )
            for mb in sizes
        ]
    return {
        "embed_model": EMBED,
        "punctuation": punctuation,
        "chunk_tokens": chunk_tokens,
        "startup_s": startup["seconds"],
        "runs": runs,
    }
