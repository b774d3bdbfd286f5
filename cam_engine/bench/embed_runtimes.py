"""The default model's two CPU runtimes side by side: numpy and torch
(sentence-transformers).

    cam bench embed-runtimes [--book PATH] [--repeats N] [--out FILE]

Figures (one JSON line), per runtime: seconds to import it and load the model in a
fresh process (median of ``--repeats``); milliseconds per question (median of 20,
one question per call, as ``cam ask`` embeds); seconds per batch of 64 chunks of the
book (200-token chunks, as a memory is built; median of ``--repeats``, the runtimes
interleaved so that a busy machine slows both alike); and the largest cosine distance
between the two runtimes' vectors of those texts.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from cam_engine.chunking import chunk_document
from cam_engine.config import Settings
from cam_engine.embed.base import Embedder
from cam_engine.sources import read_text

MODEL = "all-MiniLM-L6-v2"
BATCH = 64
QUESTIONS = ["Who is Elizabeth Lavenza?", "How did Henry Clerval die?"]
# Each runtime imported and loaded in a fresh process; prints the seconds it took.
LOAD = {
    "numpy": "from cam_engine.embed.minilm_numpy import MiniLMNumpyEmbedder as E\n"
    "from cam_engine.embed.sentence_transformers import resolve_model_path as r\n"
    "from pathlib import Path\ne = E({model!r}, Path(r({model!r})))",
    "torch": "from cam_engine.embed.sentence_transformers import SentenceTransformerEmbedder "
    "as E\ne = E({model!r}, device='cpu')",
}
_TIMED = "import time\nt = time.perf_counter()\n{load}\ne.dim\nprint(time.perf_counter() - t)"


def load_seconds(runtime: str) -> float:
    """Import and load time of ``runtime`` in a fresh interpreter."""
    code = _TIMED.format(load=LOAD[runtime].format(model=MODEL))
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return float(done.stdout.strip().splitlines()[-1])


def embedders() -> dict[str, Embedder]:
    from cam_engine.embed.minilm_numpy import MiniLMNumpyEmbedder
    from cam_engine.embed.sentence_transformers import (
        SentenceTransformerEmbedder,
        resolve_model_path,
    )

    return {
        "numpy": MiniLMNumpyEmbedder(MODEL, Path(resolve_model_path(MODEL))),
        "torch": SentenceTransformerEmbedder(MODEL, device="cpu"),
    }


def seconds(model: Embedder, texts: list[str]) -> float:
    start = time.perf_counter()
    model.embed(texts)
    return time.perf_counter() - start


def run(book: Path, repeats: int) -> dict[str, Any]:
    text, _ = read_text(book)
    chunks = [c.text for c in chunk_document(book.name, text, Settings().chunk_tokens)]
    batches = [chunks[i * BATCH : (i + 1) * BATCH] for i in range(repeats)]
    models = embedders()
    loads: dict[str, list[float]] = {name: [] for name in models}
    for _ in range(repeats):
        for name in models:
            loads[name].append(load_seconds(name))
    batch_s: dict[str, list[float]] = {name: [] for name in models}
    question_ms: dict[str, list[float]] = {name: [] for name in models}
    for model in models.values():
        model.embed(QUESTIONS)  # load and warm up, untimed
    for batch in batches:
        for name, model in models.items():
            batch_s[name].append(seconds(model, batch))
    for i in range(20):
        for name, model in models.items():
            question = [QUESTIONS[i % len(QUESTIONS)]]
            question_ms[name].append(1000 * seconds(model, question))
    texts = [*QUESTIONS, *batches[0]]
    vectors = {name: model.embed(texts) for name, model in models.items()}
    distance = 1.0 - np.sum(vectors["numpy"] * vectors["torch"], axis=1)
    return {
        "benchmark": "embed-runtimes",
        "book": book.name,
        "batch": BATCH,
        "repeats": repeats,
        "runtimes": {
            name: {
                "import_and_load_s": round(statistics.median(loads[name]), 3),
                "question_ms": round(statistics.median(question_ms[name]), 1),
                "batch_s": round(statistics.median(batch_s[name]), 2),
                "chunks_per_s": round(BATCH / statistics.median(batch_s[name]), 1),
            }
            for name in models
        },
        "max_cosine_distance": float(distance.max()),
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
