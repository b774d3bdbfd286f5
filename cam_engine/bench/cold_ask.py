"""Cold ask benchmark: the wall time of ``cam ask`` as a fresh process, as a user
typing the command meets it (imports, opening the memory and the model, the ask).

    cam bench ask --cold [--book PATH] [--cached-vectors FILE] [--runs N] [--cam CMD]...

A memory of the book (Frankenstein by default) is built in a SQLite file (a temporary
folder, or ``--store FILE`` to keep it and reuse it: ingesting the same book again
adds nothing) with the default model, through ``--cached-vectors`` when given. Then
``cam ask "<question>"`` runs ``--runs`` times as a subprocess for each strategy
(prune-grow, the default; bm25, which embeds nothing, as the floor of what a process
costs), cycling over several questions, the strategies interleaved so that a busy
machine slows both alike. Each ``--cam`` is a command that stands for ``cam`` (default:
this installation's), so two versions are measured in one run: figures per command
and strategy, median and p95 wall seconds. The machine's load average is recorded
before and after, since on a shared machine it moves every figure.
"""

from __future__ import annotations

import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cam_engine.bench.stores import percentile
from cam_engine.config import Settings
from cam_engine.embed import embedding_device, load_embedder
from cam_engine.embed.caching import CachingEmbedder
from cam_engine.errors import CamError
from cam_engine.memory import Memory

MODEL = "all-MiniLM-L6-v2"
MEMORY = "cold"
STRATEGIES = ("prune-grow", "bm25")
TARGET_S = 3.0  # median and p95 of the default strategy
QUESTIONS = [
    "Who is Elizabeth Lavenza?",
    "How did Victor create the creature?",
    "Why was Justine Moritz executed?",
    "What books did the creature find and read?",
    "How did Henry Clerval die?",
]
# Variables that would point the asked process at another memory or model.
_CLEARED = ("CAM_STORE", "CAM_MEMORY", "CAM_EMBED_MODEL", "CAM_EMBED_DEVICE", "CAM_NEO4J_URI")


def default_cam() -> str:
    """This installation's ``cam``: the script beside the interpreter, else ``-m``."""
    script = Path(sys.executable).with_name("cam")
    if script.exists():
        return shlex.quote(str(script))
    return f"{shlex.quote(sys.executable)} -m cam_engine.cli"


def build(store: Path, book: Path, cached_vectors: Path | None) -> dict[str, Any]:
    """The book's memory in ``store`` (nothing added when it is there already)."""
    embedder = CachingEmbedder(load_embedder(MODEL), cached_vectors)
    start = time.perf_counter()
    with Memory.open(store, MEMORY, settings=Settings(embed_model=MODEL), embedder=embedder) as m:
        result = m.ingest([book])
        if result.errors:
            raise CamError(f"{book}: {result.errors[0].message}")
        chunks = m.count_chunks()
    embedder.save()
    return {
        "chunks": chunks,
        "build_s": round(time.perf_counter() - start, 2),
        "texts_embedded": embedder.computed,
        "build_device": embedding_device(embedder),
    }


def ask_once(cam: Sequence[str], store: Path, question: str, strategy: str) -> float:
    """Wall seconds of one ``cam ask`` process."""
    env = {k: v for k, v in os.environ.items() if k not in _CLEARED}
    env["HF_HUB_OFFLINE"] = "1"  # as a user with the bundled model: never the network
    command = [*cam, "ask", question, "--store", str(store), "--memory", MEMORY]
    start = time.perf_counter()
    done = subprocess.run(
        [*command, "--strategy", strategy], env=env, capture_output=True, text=True
    )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise CamError(f"{shlex.join(command)} failed ({done.returncode}): {last}")
    return seconds


def summary(seconds: list[float]) -> dict[str, Any]:
    return {
        "runs": len(seconds),
        "median_s": round(statistics.median(seconds), 3),
        "p95_s": percentile(seconds, 95),
        "min_s": round(min(seconds), 3),
        "max_s": round(max(seconds), 3),
    }


def run(
    *,
    book: Path,
    runs: int,
    cams: Sequence[str],
    cached_vectors: Path | None = None,
    store: Path | None = None,
) -> dict[str, Any]:
    commands = {cam: shlex.split(cam) for cam in cams or [default_cam()]}
    with tempfile.TemporaryDirectory(prefix="cam-bench-cold-") as folder:
        location = store or Path(folder) / "cold.db"
        memory = build(location, book, cached_vectors)
        load_before = os.getloadavg()
        seconds: dict[str, list[float]] = {}
        for i in range(runs):
            question = QUESTIONS[i % len(QUESTIONS)]
            for cam, command in commands.items():
                for strategy in STRATEGIES:
                    wall = ask_once(command, location, question, strategy)
                    seconds.setdefault(f"{cam} | {strategy}", []).append(wall)
                    print(f"{cam} | {strategy} | {question}: {wall:.2f} s", file=sys.stderr)
        load_after = os.getloadavg()
    cases = {label: summary(values) for label, values in seconds.items()}
    first = cases[f"{next(iter(commands))} | {STRATEGIES[0]}"]
    return {
        "benchmark": "ask-cold",
        "book": book.name,
        "memory": memory,
        "questions": len(QUESTIONS),
        "cases": cases,
        "target_s": TARGET_S,
        "meets_target": max(first["median_s"], first["p95_s"]) <= TARGET_S,
        "cpus": os.cpu_count(),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
    }
