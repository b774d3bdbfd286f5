"""MCP load benchmark: clients asking through ``cam mcp`` over HTTP while one ingests.

    cam bench mcp-load [--seconds 30] [--clients 8] [--embed-model hashing:64]
    cam bench mcp-load --base big.db [--memory scale]

A book (Frankenstein by default) is ingested into a fresh SQLite memory in a temporary
folder (``--cached-vectors`` keeps its vectors between runs, as in bench/mcp.py); or,
with ``--base``, a copy of that SQLite memory (bench/base_memory.py) is served instead,
with its own settings and model. Then ``cam mcp --http`` is started on it as a
subprocess on loopback. One client sends a second book (Moby Dick by default) with
``ingest_text``, part after part (each part a document of its own, in batches of
``--batch-size``), while ``--clients`` others ask the questions of bench/mcp.py in a
loop, each client its own MCP session, every fourth ask followed by ``stats``. After
``--seconds`` no new call starts; those in flight end.

What must hold ("half-written" counts each observation that breaks it):
- every ``stats`` shows each document with all its chunks or a whole number of
  batches, and as many level-0 nodes as the documents hold chunks (one commit's
  state); the chunks a client sees never decrease;
- every chunk an answer quotes exists once the run is over, with the same document,
  position and text (chunks are never deleted; a quoted summary may since have been
  replaced by a later batch, so summaries are not checked);
- with ``--hold-batch N`` the server's Nth batch is held written but uncommitted (the
  fault checkpoint applied:N, cam_engine/faults.py) until every asking client has had
  ``--asks-while-held`` answers: those answers must all see the same committed state,
  none of the held batch's chunks, and the batch must commit once released. An answer
  that waited for the ingest would never come: the hold ends after ``HOLD_LIMIT_S``
  with an error instead.

Figures (one JSON line): clients, seconds, asks, errors, p50/p95/max ms of asks as the
client times them, asks answered while an ingest call was in flight, ingest parts,
batches and chunks committed during the run, half_written (with the first violations),
and the memory's size before and after. The exit status is 1 if errors or half_written
is not 0. Timings on a shared machine are noisy: compare runs, not single figures.
"""

from __future__ import annotations

import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from cam_engine.bench.base_memory import BaseMemory, stored_settings
from cam_engine.bench.mcp import QUESTIONS
from cam_engine.bench.stores import percentile
from cam_engine.config import DEFAULT_EMBED_MODEL, Settings
from cam_engine.embed import load_embedder
from cam_engine.embed.caching import CachingEmbedder
from cam_engine.errors import CamError, InputError
from cam_engine.memory import Memory
from cam_engine.types import Node

MEMORY = "load"
STATS_EVERY = 4  # asks between two stats calls of one client
HOLD_LIMIT_S = 120.0  # how long a held batch waits for the readers' answers at most
READY_LIMIT_S = 180.0  # for the server to listen and load the memory
VIOLATIONS_SHOWN = 5


def parts_of(text: str, words: int, prefix: str) -> list[tuple[str, str]]:
    """The text as (document id, text) parts of about ``words`` words, cut between
    paragraphs, in order."""
    parts: list[tuple[str, str]] = []
    current: list[str] = []
    count = 0
    for paragraph in re.split(r"\n\s*\n", text):
        if not paragraph.strip():
            continue
        current.append(paragraph)
        count += len(paragraph.split())
        if count >= words:
            parts.append((f"{prefix}-{len(parts) + 1:03d}", "\n\n".join(current)))
            current, count = [], 0
    if current:
        parts.append((f"{prefix}-{len(parts) + 1:03d}", "\n\n".join(current)))
    return parts


def seed(
    book: Path, store: Path, model: str, device: str | None, cached_vectors: Path | None
) -> dict[str, Any]:
    """The book into memory MEMORY of ``store`` with ``model`` and the extractive
    summarizer."""
    inner = load_embedder(model, device=device)
    embedder = CachingEmbedder(inner, cached_vectors)
    start = time.perf_counter()
    settings = Settings(embed_model=model)
    with Memory.open(store, MEMORY, settings=settings, embedder=embedder) as memory:
        report = memory.ingest([book])
        if report.errors:
            raise InputError(report.errors[0].message)
        chunks = memory.count_chunks()
    embedder.save()
    return {"seed_chunks": chunks, "seed_s": round(time.perf_counter() - start, 2)}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def serve_http(
    store: Path,
    log: Path,
    *,
    readers: int | None,
    device: str | None,
    env: dict[str, str],
    memory: str = MEMORY,
) -> Iterator[str]:
    """``cam mcp --http`` on memory ``memory`` of ``store`` in a subprocess, its stderr
    in ``log``; yields its URL once it listens, and stops it afterwards."""
    port = free_port()
    command = [sys.executable, "-m", "cam_engine.cli", "mcp", "--store", str(store)]
    command += ["--memory", memory, "--http", str(port)]
    if readers is not None:
        command += ["--readers", str(readers)]
    if device:
        command += ["--device", device]
    with log.open("wb") as errors:
        server = subprocess.Popen(
            command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors
        )
    try:
        deadline = time.monotonic() + READY_LIMIT_S
        while True:
            if server.poll() is not None:
                raise CamError(f"cam mcp exited with {server.returncode}: {log.read_text()}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise CamError(f"cam mcp did not listen on port {port}") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def server_env(hold: Path | None, hold_batch: int | None) -> dict[str, str]:
    """The server's environment: this one's model and device variables, offline, and the
    fault checkpoint that holds a batch when asked for (no other CAM_ setting)."""
    keep: tuple[str, ...] = ("CAM_EMBED_DEVICE", "CAM_EMBED_BATCH_SIZE", "HF_", "TORCH", "OMP")
    keep += ("CUDA", "PATH", "LD_LIBRARY_PATH", "HOME")
    env = {k: v for k, v in os.environ.items() if k.startswith(keep)}
    env |= {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    if hold is not None and hold_batch is not None:
        env |= {"CAM_PAUSE_AT": f"applied:{hold_batch}", "CAM_PAUSE_FILE": str(hold)}
    return env


@dataclass
class Ask:
    client: int
    start: float
    end: float
    quoted: list[dict[str, Any]]  # the level-0 evidence: node_id, document, position, text


@dataclass
class Load:
    """What the clients did and saw. They share one event loop: no locks needed."""

    batch_size: int
    expect_hold: bool = False
    ready: int = 0  # clients connected (askers: with one untimed answer)
    asks: list[Ask] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    ingest_calls: list[tuple[float, float]] = field(default_factory=list)
    reports: list[dict[str, Any]] = field(default_factory=list)
    ingesting: str | None = None  # the part being sent
    ingest_done: bool = False
    # The held batch (--hold-batch): its document, that document's committed chunks,
    # and the answers each client had while it was held.
    held_document: str | None = None
    held_chunks: int = 0
    holding: bool = False
    released: bool = False
    asks_while_held: dict[int, int] = field(default_factory=dict)

    def violation(self, text: str) -> None:
        self.violations.append(text)

    def check_stats(self, stats: dict[str, Any], client: int, seen: list[int]) -> None:
        """One stats observation: whole batches, one commit's counts, never fewer."""
        documents = {d["id"]: (d["chunks"], d["total"]) for d in stats["document_list"]}
        for doc_id, (chunks, total) in documents.items():
            if chunks != total and chunks % self.batch_size:
                self.violation(f"client {client}: {doc_id} holds {chunks} of {total} chunks")
        level0 = next((row["nodes"] for row in stats["levels"] if row["level"] == 0), 0)
        if level0 != sum(chunks for chunks, _ in documents.values()):
            self.violation(f"client {client}: {level0} chunk nodes, documents {documents}")
        if seen and level0 < seen[-1]:
            self.violation(f"client {client}: {level0} chunk nodes after {seen[-1]}")
        seen.append(level0)
        if self.holding and not self.released and self.held_document is not None:
            held = documents.get(self.held_document, (0, None))[0]
            if held != self.held_chunks:
                self.violation(
                    f"client {client}: {self.held_document} holds {held} chunks while its "
                    f"batch is held (committed: {self.held_chunks})"
                )

    def check_held(self, ask: Ask) -> None:
        """An answer that came while the batch was held quotes none of its chunks."""
        for node in ask.quoted:
            if node["document"] == self.held_document and node["position"] >= self.held_chunks:
                self.violation(
                    f"client {ask.client}: quoted {node['node_id']} ({self.held_document} "
                    f"position {node['position']}) of the batch held uncommitted"
                )


async def call(session: Any, tool: str, arguments: dict[str, Any], load: Load) -> Any:
    """A tool's result, or None with the failure counted as an error."""
    try:
        result = await session.call_tool(tool, arguments)
    except Exception as exc:  # a transport failure is an error of the run, not a crash
        load.errors.append(f"{tool}: {type(exc).__name__}: {exc}")
        return None
    if result.is_error or result.structured_content is None:
        load.errors.append(f"{tool}: {result.content}")
        return None
    return result.structured_content


async def asker(url: str, client: int, load: Load, go: anyio.Event, until: list[float]) -> None:
    from mcp import Client

    seen: list[int] = []
    turn = client
    async with Client(url) as session:
        await call(session, "ask", {"question": QUESTIONS[turn % len(QUESTIONS)]}, load)
        load.ready += 1
        await go.wait()
        # Past the deadline too while a batch is held: the hold ends on their answers.
        while time.perf_counter() < until[0] or (load.expect_hold and not load.released):
            turn += 1
            held_from_start = load.holding and not load.released
            start = time.perf_counter()
            answer = await call(
                session, "ask", {"question": QUESTIONS[turn % len(QUESTIONS)]}, load
            )
            end = time.perf_counter()
            if answer is None:
                continue
            quoted = [
                {key: e[key] for key in ("node_id", "document", "position", "text")}
                for e in answer["evidence"]
                if e["level"] == 0
            ]
            ask = Ask(client, start, end, quoted)
            load.asks.append(ask)
            held = load.holding and not load.released  # the batch cannot have committed
            if held:
                load.check_held(ask)
                if held_from_start:
                    load.asks_while_held[client] = load.asks_while_held.get(client, 0) + 1
            if held or turn % STATS_EVERY == 0:
                stats = await call(session, "stats", {}, load)
                if stats is not None:
                    load.check_stats(stats, client, seen)


async def ingester(
    url: str, parts: Sequence[tuple[str, str]], load: Load, go: anyio.Event, until: list[float]
) -> None:
    from mcp import Client

    async with Client(url) as session:
        load.ready += 1
        await go.wait()
        for document, text in parts:
            if time.perf_counter() >= until[0]:
                break
            load.ingesting = document
            arguments = {"text": text, "document": document, "batch_size": load.batch_size}
            start = time.perf_counter()
            report = await call(session, "ingest_text", arguments, load)
            load.ingest_calls.append((start, time.perf_counter()))
            if report is not None:
                load.reports.append(report)
    load.ingest_done = True


async def holder(url: str, marker: Path, load: Load, clients: int, answers: int) -> None:
    """Wait for the server to hold its batch; note what is committed of its document;
    release it once every asking client has had ``answers`` answers meanwhile."""
    from mcp import Client

    async with Client(url) as session:
        while not marker.exists():
            if load.ingest_done:
                load.errors.append("the ingest ended before the batch to hold")
                load.released = True
                return
            await anyio.sleep(0.05)
        document = load.ingesting
        stats = await call(session, "stats", {}, load)
        if stats is not None and document is not None:
            committed = {d["id"]: d["chunks"] for d in stats["document_list"]}
            load.held_document, load.held_chunks = document, committed.get(document, 0)
        load.holding = True
        with anyio.move_on_after(HOLD_LIMIT_S) as waited:
            while (
                len(load.asks_while_held) < clients or min(load.asks_while_held.values()) < answers
            ):
                await anyio.sleep(0.05)
        if waited.cancelled_caught:
            load.errors.append(
                f"answers while the batch was held {HOLD_LIMIT_S:g} s, by client: "
                f"{load.asks_while_held} (reads waited for the ingest)"
            )
        load.released = True
        marker.unlink()


async def drive(
    url: str,
    parts: Sequence[tuple[str, str]],
    load: Load,
    *,
    clients: int,
    seconds: float,
    hold: Path | None,
    answers_while_held: int,
) -> float:
    """Every client connected (each asker with one untimed answer), then ``seconds`` of
    load; returns the seconds until the last call ended."""
    go = anyio.Event()
    until = [float("inf")]
    async with anyio.create_task_group() as group:
        for client in range(clients):
            group.start_soon(asker, url, client, load, go, until)
        group.start_soon(ingester, url, parts, load, go, until)
        while load.ready < clients + 1:
            await anyio.sleep(0.05)
        if hold is not None:
            group.start_soon(holder, url, hold, load, clients, answers_while_held)
        start = time.perf_counter()
        until[0] = start + seconds
        go.set()
    return time.perf_counter() - start


def quoted_chunks(asks: Sequence[Ask], memory: Memory) -> list[Node]:
    """The chunks the answers quote, as stored now (only those: a memory may be large)."""
    return list(memory.store.get_nodes({n["node_id"] for ask in asks for n in ask.quoted}).values())


def quoted_check(asks: Sequence[Ask], chunks: Sequence[Node]) -> list[str]:
    """Every chunk quoted exists, with the document, position and text quoted."""
    stored = {c.id: (c.doc_id, c.position, c.text) for c in chunks}
    problems = []
    for ask in asks:
        for node in ask.quoted:
            if stored.get(node["node_id"]) != (node["document"], node["position"], node["text"]):
                problems.append(f"client {ask.client}: quoted {node['node_id']}, not stored so")
    return problems


@dataclass(frozen=True)
class LoadOptions:
    seconds: float = 30.0  # of load; calls in flight then are waited for
    clients: int = 8  # asking
    model: str = DEFAULT_EMBED_MODEL  # of the memory
    batch_size: int = 16  # chunks per ingest batch
    part_words: int = 6000  # words per ingest_text call
    readers: int | None = None  # cam mcp --readers (None: its default)
    device: str | None = None
    cached_vectors: Path | None = None  # the seed book's vectors, kept between runs
    hold_batch: int | None = None  # hold the server's Nth batch uncommitted
    answers_while_held: int = 2  # answers each client has before the hold ends
    base: BaseMemory | None = None  # serve a copy of this memory instead of seeding one


def run(
    book: Path, ingest_book: Path, options: LoadOptions, folder: Path | None = None
) -> dict[str, Any]:
    """The whole benchmark (module docstring) in ``folder`` (a temporary one if None)."""
    if folder is None:
        with tempfile.TemporaryDirectory(prefix="cam-bench-mcp-load-") as temporary:
            return run(book, ingest_book, options, Path(temporary))
    o = options
    if o.base is not None:
        store, memory_name, seeded = from_base(o.base, folder)
    else:
        store, memory_name = folder / "load.db", MEMORY
        seeded = seed(book, store, o.model, o.device, o.cached_vectors)
    parts = parts_of(ingest_book.read_text(encoding="utf-8"), o.part_words, ingest_book.stem)
    hold = folder / "held" if o.hold_batch is not None else None
    load = Load(o.batch_size, expect_hold=hold is not None)
    log = folder / "server.log"
    env = server_env(hold, o.hold_batch)
    served = serve_http(store, log, readers=o.readers, device=o.device, env=env, memory=memory_name)
    with served as url:
        wall = anyio.run(
            lambda: drive(
                url,
                parts,
                load,
                clients=o.clients,
                seconds=o.seconds,
                hold=hold,
                answers_while_held=o.answers_while_held,
            )
        )
    with Memory.open(store, memory_name, create=False) as memory:
        stats = memory.stats()
        load.violations += quoted_check(load.asks, quoted_chunks(load.asks, memory))
    tracebacks = log.read_text(errors="replace").count("Traceback")
    if tracebacks:
        load.errors.append(f"{tracebacks} traceback(s) in the server's log")
    if load.held_document is not None:
        committed = {d["id"]: d["chunks"] for d in stats["document_list"]}
        if committed.get(load.held_document, 0) <= load.held_chunks:
            load.violations.append(f"the held batch of {load.held_document} never committed")
    return figures(load, wall, stats, o) | seeded


def from_base(base: BaseMemory, folder: Path) -> tuple[Path, str, dict[str, Any]]:
    """A copy of ``base`` in ``folder``: its path, its memory's name, and figures about
    it (the model it was built with, its chunks, the seconds the copy took)."""
    start = time.perf_counter()
    store = base.copy_into(folder / "base")
    copy_s = round(time.perf_counter() - start, 2)
    settings = stored_settings(store, base.memory)
    return (
        store,
        base.memory,
        {
            "base": str(base.path),
            "base_chunks": settings["chunks"],
            "embedder": settings.get("embed_model"),  # the memory's, not --embed-model
            "copy_s": copy_s,
        },
    )


def figures(load: Load, wall: float, stats: dict[str, Any], o: LoadOptions) -> dict[str, Any]:
    latencies = [1000 * (a.end - a.start) for a in load.asks]
    during = [
        a for a in load.asks if any(start <= a.end <= end for start, end in load.ingest_calls)
    ]
    batches = [b for r in load.reports for b in r["batches"]]
    return {
        "clients": o.clients,
        "seconds": o.seconds,
        "wall_s": round(wall, 2),
        "embedder": o.model,
        "readers": o.readers,
        "batch_size": o.batch_size,
        "asks": len(load.asks),
        "errors": len(load.errors),
        "error_samples": load.errors[:VIOLATIONS_SHOWN],
        "p50_ms": percentile(latencies, 50) if latencies else None,
        "p95_ms": percentile(latencies, 95) if latencies else None,
        "max_ms": round(max(latencies), 3) if latencies else None,
        "mean_ms": round(statistics.mean(latencies), 3) if latencies else None,
        "asks_per_s": round(len(load.asks) / wall, 2) if wall else None,
        "asks_during_ingest": len(during),
        "ingest_calls": len(load.ingest_calls),
        "ingest_batches_committed": sum(1 for b in batches if b["chunks_added"]),
        "ingest_chunks_added": sum(r["chunks_added"] for r in load.reports),
        "ingest_busy_s": round(sum(end - start for start, end in load.ingest_calls), 2),
        "half_written": len(load.violations),
        "violation_samples": load.violations[:VIOLATIONS_SHOWN],
        "held_document": load.held_document,
        "held_committed_chunks": load.held_chunks if load.held_document else None,
        "asks_while_held": sum(load.asks_while_held.values()),
        "chunks_after": next(row["nodes"] for row in stats["levels"] if row["level"] == 0),
        "documents_after": stats["documents"],
    }
