"""MCP benchmark: latency of ``ask`` through ``cam mcp`` over stdio, as an agent sees it.

    cam bench mcp [--book PATH] [--cached-vectors FILE] [--out FILE]

A book (Frankenstein by default) is ingested into a SQLite memory in a temporary folder
with the default embedder (MiniLM) and the extractive summarizer; ``--cached-vectors``
keeps the chunk and summary vectors in an .npz between runs, so a second run does not
embed the book again. Then ``cam mcp`` is started on that memory as a subprocess and
the SDK's own client talks to it over stdio: it waits until the server has loaded the
memory and warmed its model, asks WARM_UP untimed questions, then asks the 50 questions
below once each and times every ``ask`` round trip on the client (question embedding,
retrieval, extractive answer, JSON over the pipe: the whole offline path).

Figures (one JSON line): p50/p95/mean/max ms of those asks, the target (p95 <= 100 ms)
and whether it was met, seconds to the server's first reply and until the memory was
ready, evidence nodes per answer, the book's chunks and the ingest's seconds. Timings
on a shared machine are noisy: compare runs, not single figures.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

from cam_engine.bench.ask import BOOK_QUESTIONS
from cam_engine.bench.stores import percentile
from cam_engine.config import Settings
from cam_engine.embed import embedding_device, load_embedder
from cam_engine.embed.caching import CachingEmbedder
from cam_engine.errors import CamError, InputError
from cam_engine.memory import Memory
from cam_engine.retrieval.strategies import DEFAULT

WARM_UP = 5
TARGET_P95_MS = 100.0
MEMORY = "book"

# Thirty more about Frankenstein, so that no question is asked twice.
MORE_QUESTIONS = [
    "Who is Margaret Saville?",
    "What does Walton hope to discover near the pole?",
    "Why does Walton long for a friend on his voyage?",
    "How did the crew first see the creature on the ice?",
    "What state was Victor in when Walton's ship took him aboard?",
    "Who was Caroline Beaufort and how did she meet Alphonse Frankenstein?",
    "How did Victor's mother die?",
    "Which authors did young Victor read about alchemy?",
    "What did Victor see happen to the oak tree during the storm?",
    "Who is Ernest Frankenstein?",
    "What did Professor Krempe think of Victor's reading?",
    "How long did Victor work on his creation?",
    "Who nursed Victor through his illness after the creation?",
    "What evidence was found on Justine after William's death?",
    "What did Victor see on the mountains near Chamounix?",
    "Where did the creature hide while he watched the cottagers?",
    "Who is Safie and why did she come to the cottage?",
    "Why were the De Lacey family exiled from France?",
    "What did the creature do to the De Lacey cottage after they left?",
    "How was the creature rewarded for saving a girl from drowning?",
    "Where did Victor go to build the second creature?",
    "Why did Victor travel to England with Clerval?",
    "Who was accused of murdering Clerval?",
    "Who is Mr. Kirwin?",
    "Where was Victor imprisoned after Clerval's death?",
    "How did Victor's father die?",
    "Where did Victor pursue the creature at the end?",
    "What did Walton's crew demand of him?",
    "What did the creature say over Victor's body?",
    "What did Victor ask Walton to do after his death?",
]
QUESTIONS = [*BOOK_QUESTIONS, *MORE_QUESTIONS]


def ingest(
    book: Path, store: Path, device: str | None, cached_vectors: Path | None
) -> dict[str, Any]:
    """The book into memory MEMORY of ``store``, with MiniLM and the extractive summarizer."""
    settings = Settings()
    embedder = CachingEmbedder(load_embedder(settings.embed_model, device=device), cached_vectors)
    start = time.perf_counter()
    with Memory.open(store, MEMORY, settings=settings, embedder=embedder) as memory:
        report = memory.ingest([book])
        if report.errors:
            raise InputError(report.errors[0].message)
        chunks = memory.count_chunks()
    embedder.save()
    return {
        "chunks": chunks,
        "ingest_s": round(time.perf_counter() - start, 2),
        "device": embedding_device(embedder),
        "cached_vectors": None
        if cached_vectors is None
        else ("used" if embedder.computed == 0 else "filled"),
    }


async def ask_through_server(
    store: Path, strategy: str, device: str | None, questions: Sequence[str]
) -> dict[str, Any]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    args = ["-m", "cam_engine.cli", "mcp", "--store", str(store), "--memory", MEMORY]
    if device:
        args += ["--device", device]
    env = {k: v for k, v in os.environ.items() if k.startswith(("CAM_", "HF_", "TORCH", "OMP"))}
    env |= {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    params = StdioServerParameters(command=sys.executable, args=args, env=env)
    started = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        handshake_s = time.perf_counter() - started
        stats = await session.call_tool("stats", {})  # answered once the memory is loaded
        if stats.is_error:
            raise CamError(str(stats.content))
        ready_s = time.perf_counter() - started
        latencies: list[float] = []
        evidence: list[int] = []
        for i, question in enumerate([*questions[:WARM_UP], *questions]):
            arguments = {"question": question, "strategy": strategy}
            start = time.perf_counter()
            result = await session.call_tool("ask", arguments)
            elapsed = time.perf_counter() - start
            if result.is_error or result.structured_content is None:
                raise CamError(f"ask failed: {result.content}")
            if i >= WARM_UP:
                latencies.append(1000 * elapsed)
                evidence.append(len(result.structured_content["evidence"]))
    return {
        "server_handshake_s": round(handshake_s, 2),
        "server_ready_s": round(ready_s, 2),
        "latencies_ms": latencies,
        "evidence_per_answer": round(statistics.mean(evidence), 1),
    }


def run(
    book: Path,
    *,
    strategy: str = DEFAULT,
    device: str | None = None,
    cached_vectors: Path | None = None,
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="cam-bench-mcp-") as folder:
        store = Path(folder) / "bench.db"
        built = ingest(book, store, device, cached_vectors)
        served = anyio.run(ask_through_server, store, strategy, device, QUESTIONS)
    latencies = served.pop("latencies_ms")
    p95 = percentile(latencies, 95)
    return {
        "book": book.name,
        "store": "sqlite",
        "transport": "stdio",
        "strategy": strategy,
        "backend": "extractive",
        "warm_up_asks": WARM_UP,
        "asks": len(latencies),
        "p50_ms": percentile(latencies, 50),
        "p95_ms": p95,
        "mean_ms": round(statistics.mean(latencies), 3),
        "max_ms": round(max(latencies), 3),
        "target_p95_ms": TARGET_P95_MS,
        "meets_target": p95 <= TARGET_P95_MS,
        **served,
        **built,
    }
