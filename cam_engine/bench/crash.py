"""Crash sweep: kill ``cam ingest`` (or its Neo4j server) at many points, resume, and
compare the memory row by row with a clean ingest of the same book.

    cam bench crash --points 50                   # SQLite
    cam bench crash --points 10 --store neo4j     # a private Neo4j
    cam bench crash --points 4 --base big.db      # into copies of a memory

Each point is one fresh memory: ``cam ingest`` runs in a subprocess with a fault knob
(cam_engine/faults.py) and dies by SIGKILL at a named checkpoint's Nth hit
(``embedded``, ``before_apply``, ``writing``, ``applied``, ``committed``), or after a
delay (``timer``). With ``--store neo4j`` the points rotate over four failures: the
ingest SIGKILLed; the server's JVM SIGKILLed while the ingest is paused at a
checkpoint (then restarted); and, through a proxy (bench/tcp_cut.py), the connection
between them cut at the pause (``drop``) or the next reply lost after its request
reached the server (``reply``: at ``applied``, the COMMIT is applied and the ingest
never hears so). Then the same command runs again (the resume) and the memory must equal the
clean one: nodes (vectors rounded), edges, replicas, memberships, documents, counters
and settings, and the levels of ``cam stats --json``. The counters include the
generation (committed batch writes): a killed batch never committed and a resumed
batch whose chunks are all stored writes nothing, so it too must match. When run from
a checkout, tests/invariants.py's ``check_memory`` runs on each resumed memory.

With ``--base`` every run (the clean one and each point) ingests the book into a fresh
copy of that SQLite memory (bench/base_memory.py) with the memory's stored settings.

It prints one JSON line (docs/reliability.md has the figures); ``--out`` also writes
every point's result.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cam_engine.bench.base_memory import BaseMemory, remove_copy, stored_settings
from cam_engine.bench.neo4j_private import PrivateNeo4j
from cam_engine.bench.tcp_cut import CuttableProxy
from cam_engine.config import Settings
from cam_engine.errors import CamError
from cam_engine.faults import CHECKPOINTS
from cam_engine.store.base import GraphStore, open_store

logger = logging.getLogger(__name__)

TIMER = "timer"
PHASES = (*CHECKPOINTS, TIMER)
# What fails at a point: the ingest process, the Neo4j server's JVM, or the connection
# between them (closed at once, or the next reply lost).
INGEST, SERVER, DROP, REPLY = "ingest", "server", "drop", "reply"
TARGETS = (INGEST, SERVER, DROP, REPLY)
CHECKOUT = Path(__file__).resolve().parents[2]  # the source checkout, when it is one
KINDS = ("nodes", "edges", "replicas", "memberships", "documents", "counters", "settings")

Rows = dict[str, set[Any]]  # by kind: rows as tuples, or their digests


@dataclass(frozen=True)
class Book:
    """What is ingested, and how: the same for the clean run and every crashed one."""

    path: Path
    batch_size: int = 32
    chunk_tokens: int = 200
    theta: float = 0.3  # the hashing embedder's vectors need a lower edge threshold
    embed_model: str = "hashing:64"
    # Into a memory that exists (--base): its stored settings and model apply, not these.
    stored_settings: bool = False

    def ingest_args(self, store: str, memory: str) -> list[str]:
        args = ["ingest", str(self.path), "--store", store, "--memory", memory]
        args += ["--batch-size", str(self.batch_size)]
        if self.stored_settings:
            return args
        return [
            *args,
            "--chunk-tokens",
            str(self.chunk_tokens),
            "--theta",
            str(self.theta),
            "--embed-model",
            self.embed_model,
        ]


@dataclass(frozen=True)
class Point:
    """Where one run fails: a checkpoint's Nth hit, or ``delay`` seconds in (timer);
    and what fails there (``target``, one of TARGETS; only the ingest has a timer)."""

    phase: str
    hit: int = 0
    delay: float = 0.0
    target: str = INGEST

    @property
    def label(self) -> str:
        where = f"{TIMER}:{self.delay:.2f}s" if self.phase == TIMER else f"{self.phase}:{self.hit}"
        return where if self.target == INGEST else f"{self.target}@{where}"


@dataclass
class PointResult:
    point: str
    killed: bool  # the ingest died or failed before it finished
    crash_rc: int | None
    resume_rc: int
    identical: bool
    stats_equal: bool
    invariants: bool | None  # None: tests/invariants.py not importable here
    lost: dict[str, int] = field(default_factory=dict)
    extra: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    note: str = ""
    failure: str = ""  # the failed ingest's last line (its error), when it printed one
    # Per document, the chunks stored when the ingest failed (before the resume).
    stored_at_failure: dict[str, int] = field(default_factory=dict)


# --- running cam ---------------------------------------------------------------------------


def child_env(**extra: str) -> dict[str, str]:
    """This environment without any CAM_* variable (a developer's shell, a knob left
    set), offline, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAM_")}
    env.update(HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    env.update(extra)
    return env


def cam_argv(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "cam_engine.cli.main", *args]


def cam(args: list[str], timeout: float = 600, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cam_argv(args),
        env=child_env(**extra),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def start_cam(args: list[str], **extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        cam_argv(args),
        env=child_env(**extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def stats_levels(store: str, memory: str) -> list[dict[str, Any]]:
    done = cam(["stats", "--store", store, "--memory", memory, "--json"])
    if done.returncode != 0:
        raise RuntimeError(f"cam stats failed: {done.stdout}{done.stderr}")
    levels: list[dict[str, Any]] = json.loads(done.stdout)["levels"]
    return levels


def batches_of(output: str) -> int:
    match = re.search(r"in (\d+) batch", output)
    if not match:
        raise RuntimeError(f"no batch count in cam ingest's output: {output!r}")
    return int(match.group(1))


# --- a memory row by row ---------------------------------------------------------------------


def _digest(row: tuple[Any, ...]) -> bytes:
    """A row's 16-byte digest (``memory_rows``' compact form)."""
    return hashlib.blake2b(repr(row).encode(), digest_size=16).digest()


def _node_rows(store: GraphStore, compact: bool) -> Iterator[tuple[Any, ...]]:
    """Each node as (id, level, kind, text, document, position, properties, vector
    rounded), or with ``compact`` as (id, level, digest of the rest); read level by
    level as the store streams them."""
    for level in store.levels():
        for n in store.nodes_at_level(level, embeddings=True):
            vector = None
            if n.embedding is not None:
                vector = np.round(np.asarray(n.embedding, dtype=np.float64), 5).tobytes()
            position = None if n.position is None else round(float(n.position), 6)
            props = json.dumps(n.props, sort_keys=True, default=str)
            rest = (n.kind, n.text, n.doc_id, position, props, vector)
            yield (n.id, n.level, _digest(rest)) if compact else (n.id, n.level, *rest)


def memory_rows(store: GraphStore, *, compact: bool = False) -> Rows:
    """Every row of a memory as hashable tuples, by kind (vectors and scores rounded).
    With ``compact``, nodes are (id, level, digest of the rest) and edges, replicas and
    memberships digests: a memory of 10^5 chunks then takes tens of MB, not GBs."""
    rows = store.read_structure()
    rows.nodes = []  # read again level by level, with the vectors

    def kept(row: tuple[Any, ...]) -> Any:
        return _digest(row) if compact else row

    return {
        "nodes": set(_node_rows(store, compact)),
        "edges": {kept((a, b, round(score, 6))) for a, b, score in rows.edges},
        "replicas": {
            kept((r.id, r.node_id, r.level, r.label, tuple(sorted(r.members))))
            for r in rows.replicas
        },
        "memberships": {kept(m) for m in rows.members},
        "documents": {(d.id, d.source, d.sha256, d.chunks, d.total) for d in rows.documents},
        "counters": set(rows.counters.items()),
        "settings": {(k, json.dumps(v, sort_keys=True)) for k, v in (rows.settings or {}).items()},
    }


def read_rows(location: str, memory: str) -> Rows:
    store = open_store(location, memory, create=False)
    try:
        return memory_rows(store, compact=True)
    finally:
        store.close()


def row_diff(clean: Rows, got: Rows) -> tuple[dict[str, int], dict[str, int]]:
    """Rows of ``clean`` missing from ``got`` (lost) and rows only ``got`` has (extra)."""
    lost = {k: len(clean[k] - got[k]) for k in KINDS if clean[k] - got[k]}
    extra = {k: len(got[k] - clean[k]) for k in KINDS if got[k] - clean[k]}
    return lost, extra


def _invariant_check() -> Callable[[GraphStore], None] | None:
    """tests/invariants.py's check_memory, when this runs from a checkout: read from
    the tests/ beside the package, whatever the working directory (the ``cam`` script
    does not put it on sys.path)."""
    path = CHECKOUT / "tests" / "invariants.py"
    spec = importlib.util.spec_from_file_location("cam_crash_invariants", path)
    if spec is None or spec.loader is None or not path.is_file():
        return None
    # loaded from its file: tests/ is not part of the package (nor of its type check)
    invariants = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(invariants)
    check_memory = invariants.check_memory
    size = Settings().max_cluster_size

    def check(store: GraphStore) -> None:
        check_memory(store, max_cluster_size=size)

    return check


def invariants_of(store: str, memory: str, *, wanted: bool = True) -> tuple[bool | None, str]:
    """Whether tests/invariants.py holds on the memory (None: not importable here, or
    not ``wanted``), and what broke when it does not."""
    check = _invariant_check() if wanted else None
    if check is None:
        return None, ""
    opened = open_store(store, memory, create=False)
    try:
        check(opened)
        return True, ""
    except AssertionError as exc:
        return False, str(exc)
    finally:
        opened.close()


# --- one point -------------------------------------------------------------------------------


@dataclass
class Reference:
    """The clean ingest every crashed one is compared with."""

    rows: Rows
    levels: list[dict[str, Any]]
    batches: int
    seconds: float


def clean_ingest(book: Book, store: str, memory: str) -> Reference:
    start = time.perf_counter()
    done = cam(book.ingest_args(store, memory))
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"the clean ingest failed: {done.stdout}{done.stderr}")
    return Reference(
        read_rows(store, memory), stats_levels(store, memory), batches_of(done.stdout), seconds
    )


def _crash_process(book: Book, store: str, memory: str, point: Point) -> tuple[bool, int | None]:
    """Run the ingest until it is killed at ``point``: (killed, its return code)."""
    args = book.ingest_args(store, memory)
    if point.phase == TIMER:
        process = start_cam(args)
        try:
            process.wait(timeout=point.delay)
            return False, process.returncode  # finished before the kill
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGKILL)
            return True, process.wait()
    process = start_cam(args, CAM_CRASH_AT=f"{point.phase}:{point.hit}")
    output, _ = process.communicate(timeout=600)
    if process.returncode != -signal.SIGKILL:
        raise RuntimeError(f"{point.label}: exit {process.returncode}, not SIGKILL:\n{output}")
    return True, process.returncode


def _fail_beside(
    book: Book, server: PrivateNeo4j, memory: str, point: Point, folder: Path
) -> tuple[bool, int | None, str]:
    """Pause the ingest at ``point``, fail what ``point.target`` names there (the
    server's JVM SIGKILLed, or the connection cut through a proxy), end the pause and
    let the ingest carry on or fail; then start the server again if it was killed.
    Returns (the ingest failed, its return code, its output)."""
    proxy = None
    if point.target in (DROP, REPLY):
        proxy = CuttableProxy("127.0.0.1", int(server.uri.rsplit(":", 1)[1]))
    marker = folder / f"pause-{uuid.uuid4().hex}"
    try:
        process = start_cam(
            book.ingest_args(proxy.uri() if proxy else server.uri, memory),
            CAM_PAUSE_AT=f"{point.phase}:{point.hit}",
            CAM_PAUSE_FILE=str(marker),
        )
        deadline = time.monotonic() + 600
        while not marker.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        if not marker.exists():
            output = process.communicate(timeout=60)[0] if process.poll() is not None else ""
            process.kill()
            raise RuntimeError(f"{point.label}: the ingest never paused:\n{output}")
        if point.target == SERVER:
            server.kill()
        elif proxy is not None:
            proxy.drop() if point.target == DROP else proxy.lose_next_reply()
        marker.unlink()
        output = process.communicate(timeout=600)[0]
    finally:
        if proxy is not None:
            proxy.close()
    if point.target == SERVER:
        server.start()
    return process.returncode != 0, process.returncode, output


def run_point(
    book: Book,
    store: str,
    memory: str,
    point: Point,
    reference: Reference,
    *,
    server: PrivateNeo4j | None = None,
    folder: Path | None = None,
    invariants: bool = True,
) -> PointResult:
    """Fail at ``point``, resume, compare with ``reference`` (and, with ``invariants``,
    check tests/invariants.py on the resumed memory)."""
    start = time.perf_counter()
    output = ""
    if point.target != INGEST:
        if server is None or folder is None:
            raise ValueError(f"a {point.target} point needs the server and a folder")
        killed, crash_rc, output = _fail_beside(book, server, memory, point, folder)
    else:
        killed, crash_rc = _crash_process(book, store, memory, point)
    lines = [line for line in output.splitlines() if line.strip()]
    stored = _stored_chunks(store, memory)  # before the resume changes it
    result = resume(
        book, store, memory, reference, point.label, killed, crash_rc, start, invariants
    )
    result.failure = lines[-1] if killed and lines else ""
    result.stored_at_failure = stored
    return result


def resume(
    book: Book,
    store: str,
    memory: str,
    reference: Reference,
    label: str,
    killed: bool,
    crash_rc: int | None,
    start: float,
    invariants: bool = True,
) -> PointResult:
    """Run the same ingest again after a failed one, and compare the memory with
    ``reference`` (``start``: when the point began, on ``time.perf_counter``)."""
    resumed = cam(book.ingest_args(store, memory))
    note = "" if resumed.returncode == 0 else (resumed.stdout + resumed.stderr)[-2000:]
    got = read_rows(store, memory)
    lost, extra = row_diff(reference.rows, got)
    holds, broken = invariants_of(store, memory, wanted=invariants)
    if broken:
        note = f"{note} invariants: {broken}".strip()
    return PointResult(
        point=label,
        killed=killed,
        crash_rc=crash_rc,
        resume_rc=resumed.returncode,
        identical=not lost and not extra,
        stats_equal=stats_levels(store, memory) == reference.levels,
        invariants=holds,
        lost=lost,
        extra=extra,
        seconds=round(time.perf_counter() - start, 2),
        note=note,
    )


def _stored_chunks(store: str, memory: str) -> dict[str, int]:
    """Per document, the chunks its committed batches hold (none: no memory yet)."""
    try:
        opened = open_store(store, memory, create=False)
    except CamError:
        return {}
    try:
        return {d.id: d.chunks for d in opened.documents()}
    finally:
        opened.close()


# --- the sweep -------------------------------------------------------------------------------


def spread_points(
    count: int, batches: int, seconds: float, *, targets: tuple[str, ...] = (INGEST,)
) -> list[Point]:
    """``count`` points, round-robin over ``targets`` and, within each, over its phases
    (the ingest's include the timer); each (target, phase)'s hits spread evenly from the
    first batch to the last (timer delays from 10% to 95% of a clean run)."""
    kinds: list[tuple[str, str]] = []
    for i in range(count):
        target = targets[i % len(targets)]
        phases = PHASES if target == INGEST else CHECKPOINTS
        kinds.append((phases[(i // len(targets)) % len(phases)], target))
    totals = Counter(kinds)
    seen: Counter[tuple[str, str]] = Counter()
    points = []
    for phase, target in kinds:
        k, m = seen[(phase, target)], totals[(phase, target)]
        seen[(phase, target)] += 1
        share = k / (m - 1) if m > 1 else 0.5
        if phase == TIMER:
            points.append(Point(TIMER, delay=round(seconds * (0.1 + 0.85 * share), 2)))
        else:
            points.append(Point(phase, hit=1 + round(share * (batches - 1)), target=target))
    return points


def summarize(results: list[PointResult], store: str, book: Book, reference: Reference) -> dict:
    by_phase = Counter(r.point.split(":")[0] for r in results)
    return {
        "store": store,
        "book": book.path.name,
        "batch_size": book.batch_size,
        "chunk_tokens": book.chunk_tokens,
        "batches": reference.batches,
        "points": len(results),
        "by_phase": dict(sorted(by_phase.items())),
        "killed_mid_ingest": sum(r.killed for r in results),
        "identical": sum(r.identical for r in results),
        "stats_equal": sum(r.stats_equal for r in results),
        "invariants_ok": sum(r.invariants is True for r in results),
        "resume_failed": sum(r.resume_rc != 0 for r in results),
        "rows_lost": sum(sum(r.lost.values()) for r in results),
        "rows_extra": sum(sum(r.extra.values()) for r in results),
        "not_identical": [r.point for r in results if not r.identical or not r.stats_equal],
        "clean_ingest_seconds": round(reference.seconds, 2),
        "seconds": round(sum(r.seconds for r in results), 1),
    }


@contextmanager
def _target(kind: str, folder: Path) -> Iterator[tuple[Callable[[int], str], PrivateNeo4j | None]]:
    """Where point ``i``'s memory lives, and the server when it is Neo4j."""
    if kind == "sqlite":
        yield (lambda i: str(folder / f"crash{i}.db")), None
        return
    home = folder / "neo4j"
    home.mkdir()
    server = PrivateNeo4j(home)
    server.start()
    try:
        yield (lambda i: server.uri), server
    finally:
        server.stop()


KILL_CHOICES = {"all": TARGETS, "both": (INGEST, SERVER), "process": (INGEST,)}


def sweep(
    book: Book, kind: str, count: int, *, kill: str = "all", invariants: bool = True
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="cam-crash-") as tmp:
        folder = Path(tmp)
        with _target(kind, folder) as (location, server):
            reference = clean_ingest(book, location(-1), "clean")
            points = spread_points(
                count,
                reference.batches,
                reference.seconds,
                targets=KILL_CHOICES[kill] if server is not None else (INGEST,),
            )
            results = []
            for i, point in enumerate(points):
                memory = f"crash{i}" if server is not None else "crash"
                result = run_point(
                    book,
                    location(i),
                    memory,
                    point,
                    reference,
                    server=server,
                    folder=folder,
                    invariants=invariants,
                )
                logger.info("%s", json.dumps(asdict(result)))
                results.append(result)
    summary = summarize(results, kind, book, reference)
    summary["results"] = [asdict(r) for r in results]
    return summary


def sweep_base(
    book: Book, base: BaseMemory, count: int, *, invariants: bool = True
) -> dict[str, Any]:
    """The SQLite sweep into copies of ``base``: the clean ingest and each point start
    from a fresh copy (``book.stored_settings``: the memory's own settings apply)."""
    with tempfile.TemporaryDirectory(prefix="cam-crash-") as tmp:
        folder = Path(tmp)
        start = time.perf_counter()
        clean = base.copy_into(folder / "clean")
        copy_s = time.perf_counter() - start
        settings = stored_settings(clean, base.memory)
        base_documents = _stored_chunks(str(clean), base.memory)
        reference = clean_ingest(book, str(clean), base.memory)
        # A base built elsewhere may break an invariant before any crash: the clean
        # memory's verdict is what each resumed one's is compared with.
        clean_invariants = invariants_of(str(clean), base.memory, wanted=invariants)
        remove_copy(clean)
        points = spread_points(count, reference.batches, reference.seconds)
        results = []
        for i, point in enumerate(points):
            copy = base.copy_into(folder / f"point{i}")
            result = run_point(
                book, str(copy), base.memory, point, reference, invariants=invariants
            )
            remove_copy(copy)
            stored = result.stored_at_failure.items()  # the book's, not the base's thousands
            result.stored_at_failure = {k: n for k, n in stored if k not in base_documents}
            logger.info("%s", json.dumps(asdict(result)))
            results.append(result)
    summary = summarize(results, "sqlite", book, reference)
    summary |= {
        "base": str(base.path),
        "memory": base.memory,
        "base_chunks": settings["chunks"],
        "chunk_tokens": settings.get("chunk_tokens"),
        "embed_model": settings.get("embed_model"),
        "copy_s": round(copy_s, 2),
        "clean_invariants": clean_invariants[0],
        "clean_invariants_broken": clean_invariants[1],
        "results": [asdict(r) for r in results],
    }
    return summary


def run(
    book_path: Path,
    *,
    points: int = 50,
    store: str = "sqlite",
    batch_size: int = 32,
    chunk_tokens: int = 200,
    kill: str = "all",
    base: Path | None = None,
    memory: str = "scale",
    invariants: bool = True,
) -> dict[str, Any]:
    """The sweep of ``cam bench crash``: its summary, every point's result under
    "results". With ``base``, into copies of that SQLite memory (``store`` unused).
    ``invariants``: check tests/invariants.py on each resumed memory (on a base of
    10^5 chunks that check takes longer than the sweep)."""
    book = Book(book_path.resolve(), batch_size, chunk_tokens, stored_settings=base is not None)
    if base is not None:
        return sweep_base(book, BaseMemory(base.resolve(), memory), points, invariants=invariants)
    return sweep(book, store, points, kill=kill, invariants=invariants)


def passed(summary: dict[str, Any]) -> bool:
    """Every point resumed to the clean memory."""
    ok = summary["identical"] == summary["points"] == summary["stats_equal"]
    return bool(ok and not summary["resume_failed"])
