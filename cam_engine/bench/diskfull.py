"""Full disk: ``cam ingest`` into SQLite runs out of room part-way, then runs again
with room, and the memory must equal a clean ingest row by row.

    cam bench diskfull --points 20
    cam bench diskfull --points 20 --seed OTHER_BOOK

The room is a file size limit (RLIMIT_FSIZE, ``ulimit -f``) on the ``cam`` process,
with SIGXFSZ ignored so that a write past it fails with EFBIG instead of killing the
process. SQLite reports that as "disk I/O error" (or "database or disk is full" when
part of the write fit), as it reports a full disk. The limit is per file: in WAL mode a
batch's pages are appended to the -wal file, and the database file grows only when a
checkpoint copies them in (every 1000 pages, about 4 MB of WAL, and when the last
connection closes). So a limit caps the WAL first; a limit above the WAL's size at the
automatic checkpoint caps that checkpoint's growth of the database file instead. The
-shm file (32 KiB per 4096 WAL frames) stays far below any limit that lets a batch fit.

The limits are spread from 5% to 100% of the smallest limit under which the whole
ingest fits (found first, by bisection). On a fresh store a limit can only strike
before the first automatic checkpoint: after it the WAL is reused from its start, and
the database file stays smaller than the WAL was. With ``--seed`` every store first
holds another book (memory "seed", checked unchanged after each point) in a database
file larger than the WAL at its checkpoint, and the limits run from that file's size
up: checkpoints then fail (SQLite ignores that and keeps appending to the WAL), and
the WAL reaches the limit later in the ingest. Each failed run must
exit non-zero with one line on stderr (no traceback) and keep only whole batches; the
rerun without a limit must resume to the clean memory (crash.py's ``resume``: rows,
``cam stats`` levels and tests/invariants.py). It prints one JSON line
(docs/reliability.md has the figures); ``--out`` also writes every point's result.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from cam_engine.bench.crash import (
    Book,
    PointResult,
    Reference,
    cam_argv,
    child_env,
    clean_ingest,
    read_rows,
    resume,
)

logger = logging.getLogger(__name__)

SEED_MEMORY = "seed"
# Bisection for the smallest limit that fits a whole ingest stops at this precision.
BISECT_STEP_BYTES = 16 << 10


def file_size_limit(limit: int) -> Callable[[], None]:
    """A ``preexec_fn`` that caps every file the child writes at ``limit`` bytes."""
    import resource  # POSIX only, like RLIMIT_FSIZE itself

    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of death (kept on exec)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def limited_ingest(
    book: Book, store: str, memory: str, limit: int
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cam_argv(book.ingest_args(store, memory)),
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        preexec_fn=file_size_limit(limit),
    )


@dataclass
class FullResult:
    """One limit: the failed run, what it kept, and the resume (crash.py's result)."""

    limit: int
    rc: int
    stderr_lines: list[str]
    chunks_kept: int  # chunks in the memory after the failed run (0: none, or no memory)
    resumed: PointResult

    @property
    def one_line_error(self) -> bool:
        lines = self.stderr_lines
        return len(lines) == 1 and lines[0].startswith("Error: ") and "Traceback" not in lines[0]


def chunks_in(store: str, memory: str) -> int:
    if not Path(store).exists():
        return 0
    return sum(1 for row in read_rows(store, memory)["nodes"] if row[1] == 0)


def run_limit(book: Book, store: str, memory: str, limit: int, reference: Reference) -> FullResult:
    """Ingest under ``limit``, then resume without it and compare with ``reference``."""
    start = time.perf_counter()
    done = limited_ingest(book, store, memory, limit)
    kept = chunks_in(store, memory)
    resumed = resume(
        book,
        store,
        memory,
        reference,
        f"fsize:{limit}",
        done.returncode != 0,
        done.returncode,
        start,
    )
    return FullResult(limit, done.returncode, done.stderr.splitlines(), kept, resumed)


def new_store(path: Path, template: Path | None) -> None:
    """A fresh store at ``path``: nothing, or a copy of ``template`` (a seeded store
    closed cleanly, so its WAL is checkpointed and gone)."""
    if template is not None:
        shutil.copyfile(template, path)


def smallest_fitting_limit(book: Book, folder: Path, template: Path | None, high: int) -> int:
    """The smallest file size limit (to ``BISECT_STEP_BYTES``) under which the whole
    ingest succeeds; ``high`` must be one under which it does."""
    low = template.stat().st_size if template is not None else 0
    for i in range(64):
        if high - low <= BISECT_STEP_BYTES:
            break
        middle = (low + high) // 2
        store = folder / f"bisect{i}.db"
        new_store(store, template)
        if limited_ingest(book, str(store), "m", middle).returncode == 0:
            high = middle
        else:
            low = middle
        for path in folder.glob(f"bisect{i}.db*"):
            path.unlink()
    return high


def seeded(book: Book, seed: Path, folder: Path) -> Path:
    """A store holding ``seed`` (same settings) as memory "seed"."""
    template = folder / "seed.db"
    done = subprocess.run(
        cam_argv(replace(book, path=seed).ingest_args(str(template), SEED_MEMORY)),
        env=child_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"seeding failed: {done.stderr[-2000:]}")
    return template


def sweep(book: Book, count: int, seed: Path | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="cam-diskfull-") as tmp:
        folder = Path(tmp)
        reference = clean_ingest(book, str(folder / "clean.db"), "m")
        template = seeded(book, seed, folder) if seed is not None else None
        seed_rows = read_rows(str(template), SEED_MEMORY) if template is not None else None
        base = template.stat().st_size if template is not None else 0
        fits = smallest_fitting_limit(book, folder, template, high=1 << 30)
        # Fresh: 5% to 100% of what fits. Seeded: from the seeded file's size on.
        low = base if template is not None else 0.05 * fits
        limits = [round(low + (fits - low) * i / max(count - 1, 1)) for i in range(count)]
        results, others_intact = [], 0
        for i, limit in enumerate(limits):
            store = folder / f"full{i}.db"
            new_store(store, template)
            result = run_limit(book, str(store), "m", limit, reference)
            logger.info("%s", json.dumps(asdict(result)))
            results.append(result)
            if seed_rows is not None:
                others_intact += read_rows(str(store), SEED_MEMORY) == seed_rows
    total = sum(1 for row in reference.rows["nodes"] if row[1] == 0)
    resumed = [r.resumed for r in results]
    summary: dict[str, Any] = {
        "store": "sqlite",
        "book": book.path.name,
        "batch_size": book.batch_size,
        "chunk_tokens": book.chunk_tokens,
        "batches": reference.batches,
        "chunks": total,
        "seed": None if seed is None else {"book": seed.name, "file_bytes": base},
        "seed_memory_intact": others_intact if seed is not None else None,
        "smallest_fitting_limit": fits,
        "points": len(results),
        "failed_mid_ingest": sum(r.rc != 0 and 0 < r.chunks_kept < total for r in results),
        "failed_before_any_batch": sum(r.rc != 0 and r.chunks_kept == 0 for r in results),
        "finished": sum(r.rc == 0 for r in results),
        "one_line_errors": sum(r.one_line_error for r in results if r.rc != 0),
        "identical": sum(r.identical for r in resumed),
        "stats_equal": sum(r.stats_equal for r in resumed),
        "invariants_ok": sum(r.invariants is True for r in resumed),
        "resume_failed": sum(r.resume_rc != 0 for r in resumed),
        "rows_lost": sum(sum(r.lost.values()) for r in resumed),
        "rows_extra": sum(sum(r.extra.values()) for r in resumed),
        "errors": sorted({_shape(r.stderr_lines) for r in results if r.rc != 0}),
        "seconds": round(sum(r.seconds for r in resumed), 1),
        "results": [{**asdict(r), "one_line_error": r.one_line_error} for r in results],
    }
    return summary


def _shape(lines: list[str]) -> str:
    """An error line with its numbers and paths blanked, to count its kinds."""
    text = " | ".join(lines)[:400]
    return re.sub(r"\d+", "N", re.sub(r"/\S+\.db", "STORE", text))


def run(
    book_path: Path,
    *,
    points: int = 20,
    batch_size: int = 32,
    chunk_tokens: int = 200,
    seed: Path | None = None,
) -> dict[str, Any]:
    """The sweep of ``cam bench diskfull``: its summary, every point's result under
    "results"."""
    book = Book(book_path.resolve(), batch_size, chunk_tokens)
    return sweep(book, points, seed.resolve() if seed else None)


def passed(summary: dict[str, Any]) -> bool:
    """Every point resumed to the clean memory, and each failed run said so in one line."""
    failed = summary["points"] - summary["finished"]
    ok = summary["identical"] == summary["points"] == summary["stats_equal"]
    ok = ok and summary["seed_memory_intact"] in (None, summary["points"])
    return bool(ok and summary["one_line_errors"] == failed and not summary["resume_failed"])
