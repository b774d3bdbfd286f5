"""LLM benchmark: what a real chat model costs the engine, and how it answers.

The model is named as everywhere else (``local:PATH.gguf``, ``openai``; see
llm/backends.py) and opened once with ``open_chat``; everything then goes through the
public API (``Memory``, ``run_eval``), as ``cam ingest --summarizer`` and ``cam eval
--llm`` would.

Figures (one JSON object):
- model: the spec, the label outputs carry (``backend``), seconds to open it
  (``open_s``: llama.cpp loading the file); for a GGUF file its name, bytes and
  sha256 (of the whole file up to 256 MiB, else of its first MiB: ``sha256_of``) and
  llama.cpp's threads, context and GPU layers and the xllamacpp version; for
  ``openai`` the endpoint's base URL and model.
- machine: CPUs this process may use, and the load average before and after.
- ingest: the book's first ``chunks`` chunks in batches of ``batch_size``, summaries
  by a ``ChatSummarizer`` with ``llm_concurrency`` calls in flight: summaries_per_s
  (summaries written over the ingest's wall seconds, embedding included),
  prompt_tokens_per_chunk and completion_tokens_per_chunk (as the endpoint counts
  them), llm_calls_per_batch (each batch's calls), seconds_per_call (the calls' own
  wall seconds over their number: with one call in flight, one call's time),
  llm_calls_per_summary (above 1 where a summary was rewritten or asked again, or
  written and replaced within the ingest),
  llm_share_of_wall, and the reply counters of ``Usage`` (``replies``) with
  malformed_share (see ``reply_figures``).
- questions (``questions`` > 0): ``cam eval hotpotqa``'s logic on the first questions
  of the file, each strategy's context answered by the same model: em, f1, sub_em
  per strategy with the LLM calls and seconds it took. The eval memory's summaries are
  extractive, as ``cam eval`` builds them: only the answers are the model's.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from cam_engine.chunking import chunk_document
from cam_engine.config import DEFAULT_EMBED_MODEL, Environment, Settings
from cam_engine.embed import load_embedder
from cam_engine.embed.caching import CachingEmbedder
from cam_engine.engine.reports import BatchReport
from cam_engine.errors import ConfigError, InputError
from cam_engine.llm import ChatSummarizer
from cam_engine.llm.backends import LLMSpec, open_chat, parse_llm_spec
from cam_engine.llm.base import ChatModel, Usage
from cam_engine.memory import Memory
from cam_engine.sources import clean_text, read_text

Progress = Callable[[str], None]  # one line of what is done so far
# 25 summary calls of SmolLM2-135M: 7.5-12 minutes on one CPU thread of this machine
# (docs/benchmarks.md); the first batch of 10 writes no summary.
CHUNKS = 20
BATCH_SIZE = 10
QUESTIONS = 10
STRATEGIES = ("prune-grow", "hybrid")
ANSWER_BUDGET = 1000  # context tokens per answer, as cam eval --answer-budget
WHOLE_FILE_HASH_BYTES = 256 << 20
HEAD_HASH_BYTES = 1 << 20
# How the replies a step parses turned out, as ``Usage`` counts them when it does
# (read with getattr: a ``Usage`` without these fields counts none of them). Parsed:
# usable as sent; the others were not (repaired by a second call, or unusable).
PARSED_REPLIES = "parsed_replies"
MALFORMED_COUNTERS = ("repaired_replies", "unusable_replies", "malformed_replies")


def reply_figures(usages: Sequence[Usage]) -> dict[str, Any]:
    """The reply counters the usages have, summed; malformed_share is the replies not
    usable as sent over the replies judged (parsed or not), or over the calls when no
    parsed count exists; None when nothing was judged (free-text replies, or a
    ``Usage`` without counters)."""
    samples = usages or [Usage()]
    names = [
        n for n in (PARSED_REPLIES, *MALFORMED_COUNTERS) if any(hasattr(u, n) for u in samples)
    ]
    counts = {n: sum(int(getattr(u, n, 0)) for u in usages) for n in names}
    malformed = sum(counts.get(n, 0) for n in MALFORMED_COUNTERS)
    if PARSED_REPLIES in counts:
        judged = counts[PARSED_REPLIES] + malformed
    else:
        judged = sum(u.calls for u in usages) if names else 0
    return {
        "replies": counts,
        "replies_judged": judged,
        "malformed_share": round(malformed / judged, 4) if judged else None,
    }


def ingest_figures(
    usages: Sequence[Usage], *, chunks: int, summaries: int, wall_s: float
) -> dict[str, Any]:
    """The ingest figures of the module docstring from each batch's ``Usage``, the
    chunks ingested, the summaries written and the ingest's wall seconds."""
    total = sum(usages, Usage())
    return {
        "chunks": chunks,
        "batches": len(usages),
        "summaries": summaries,
        "wall_s": round(wall_s, 3),
        "summaries_per_s": round(summaries / wall_s, 4) if wall_s > 0 else None,
        "llm_calls": total.calls,
        "llm_calls_per_batch": [u.calls for u in usages],
        "mean_llm_calls_per_batch": round(total.calls / len(usages), 3) if usages else None,
        "llm_calls_per_summary": round(total.calls / summaries, 3) if summaries else None,
        "prompt_tokens": total.prompt_tokens,
        "completion_tokens": total.completion_tokens,
        "prompt_tokens_per_chunk": round(total.prompt_tokens / chunks, 2) if chunks else None,
        "completion_tokens_per_chunk": round(total.completion_tokens / chunks, 2)
        if chunks
        else None,
        "llm_s": round(total.seconds, 3),
        "seconds_per_call": round(total.seconds / total.calls, 3) if total.calls else None,
        "llm_share_of_wall": round(total.seconds / wall_s, 3) if wall_s > 0 else None,
    } | reply_figures(usages)


def file_identity(path: Path) -> dict[str, Any]:
    """Name, size and sha256 of a model file (of its first MiB when it is large)."""
    size = path.stat().st_size
    whole = size <= WHOLE_FILE_HASH_BYTES
    digest = hashlib.sha256()
    with path.open("rb") as f:
        if whole:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        else:
            digest.update(f.read(HEAD_HASH_BYTES))
    return {
        "file": path.name,
        "bytes": size,
        "sha256": digest.hexdigest(),
        "sha256_of": "file" if whole else "first MiB",
    }


def model_identity(spec: LLMSpec, env: Environment) -> dict[str, Any]:
    """What the model is, as far as this process can tell (module docstring)."""
    identity: dict[str, Any] = {"kind": spec.kind}
    if spec.kind == "llamacpp" and spec.path is not None:
        from cam_engine.llm.llamacpp import LlamaCppSettings, default_threads

        identity |= file_identity(spec.path)
        identity["threads"] = env.llm_threads or default_threads()
        identity["context_tokens"] = env.llm_context_tokens or LlamaCppSettings.context_tokens
        identity["gpu_layers"] = (
            LlamaCppSettings.gpu_layers if env.llm_gpu_layers is None else env.llm_gpu_layers
        )
        identity["xllamacpp"] = _version("xllamacpp")
    elif spec.kind == "transformers" and spec.path is not None:
        identity["directory"] = spec.path.name
    elif spec.kind == "openai":
        identity["base_url"] = env.llm_base_url
        identity["model"] = env.llm_model
    return identity


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def machine() -> dict[str, Any]:
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return {"cpus": cpus, "cpu_count": os.cpu_count(), "load_before": _load()}


def _load() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def first_chunks(book: Path, chunks: int, chunk_tokens: int) -> str:
    """The book's text (cleaned as ``cam ingest`` cleans it) up to the end of its
    ``chunks``-th chunk."""
    text = clean_text(read_text(book)[0])
    pieces = chunk_document("book", text, chunk_tokens)[:chunks]
    if not pieces:
        raise InputError(f"{book}: no text to ingest")
    return text[: pieces[-1].end_char]


def ingest(
    chat: ChatModel,
    embedder: CachingEmbedder,
    book: Path,
    *,
    chunks: int,
    batch_size: int,
    llm_concurrency: int,
    workdir: Path,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """The book's first chunks into a new memory under ``workdir``, summaries by
    ``chat``; a line to ``progress`` after each batch."""
    settings = Settings(embed_model=embedder.name)
    text = first_chunks(book, chunks, settings.chunk_tokens)
    reports: list[BatchReport] = []
    started = time.perf_counter()

    def on_batch(report: BatchReport) -> None:
        reports.append(report)
        if progress is not None:
            calls = sum(r.usage.calls for r in reports)
            progress(
                f"batch {len(reports)}: {sum(r.chunks_added for r in reports)} chunks, "
                f"{calls} LLM calls, {time.perf_counter() - started:.0f} s"
            )

    with Memory.open(
        workdir / "bench-llm.db",
        "bench",
        settings=settings,
        embedder=embedder,
        summarizer=ChatSummarizer(chat),
        llm_concurrency=llm_concurrency,
    ) as memory:
        started = time.perf_counter()
        memory.ingest_text(text, book.stem, batch_size=batch_size, on_batch=on_batch)
        wall_s = time.perf_counter() - started
    figures = ingest_figures(
        [r.usage for r in reports],
        chunks=sum(r.chunks_added for r in reports),
        summaries=sum(r.summaries_written for r in reports),
        wall_s=wall_s,
    )
    return {
        "book": book.name,
        "batch_size": batch_size,
        "llm_concurrency": llm_concurrency,
        "summarizer": reports[0].summarizer if reports else None,
        # Asked again with a larger budget (they repeated a member's text); read with
        # getattr, as the builder's re-summarizing is its own to change.
        "summaries_rewritten": sum(getattr(r, "summaries_rewritten", 0) for r in reports),
    } | figures


def answer_quality(
    chat: ChatModel,
    embedder: CachingEmbedder,
    questions_file: Path,
    *,
    questions: int,
    strategies: Sequence[str],
    answer_budget: int,
    workdir: Path,
) -> dict[str, Any]:
    """``cam eval hotpotqa --llm`` on the first ``questions``: answer scores and LLM
    calls per strategy."""
    from cam_engine.eval.contexts import strategy_names
    from cam_engine.eval.loaders import load
    from cam_engine.eval.runner import run_eval
    from cam_engine.llm.tasks import ChatAnswerer

    evalset = load("hotpotqa", questions_file, questions)
    evalset.questions = evalset.questions[:questions]
    run = run_eval(
        evalset,
        embedder=embedder,
        workdir=workdir,
        strategies=strategy_names(list(strategies), pooled=True),
        budgets=[answer_budget],
        answerer=ChatAnswerer(chat),
        answer_budget=answer_budget,
    )
    by_strategy: dict[str, Any] = {}
    for row in run.answer_summary():
        mine = [r for r in run.results if r.strategy == row["strategy"]]
        by_strategy[row["strategy"]] = {
            "em": round(row["em"], 4),
            "f1": round(row["f1"], 4),
            "sub_em": round(row["sub_em"], 4),
            "questions": row["questions"],
            "llm_calls": sum(r.llm_calls + r.answer_llm_calls for r in mine),
            "answer_seconds_per_question": round(row["answer_seconds_per_question"], 3),
            "answer_tokens_per_question": round(row["tokens_per_question"], 1),
        }
    return {
        "file": questions_file.name,
        "questions": run.questions,
        "answer_budget": answer_budget,
        "build_llm_calls": run.build["llm_calls"],
        "build_summarizer": run.build["summarizer"],
        "strategies": by_strategy,
    }


def run(
    llm: str,
    *,
    book: Path,
    chunks: int = CHUNKS,
    batch_size: int = BATCH_SIZE,
    llm_concurrency: int = 1,
    questions: int = QUESTIONS,
    questions_file: Path | None = None,
    strategies: Sequence[str] = STRATEGIES,
    answer_budget: int = ANSWER_BUDGET,
    embed_model: str | None = None,
    device: str | None = None,
    cached_vectors: Path | None = None,
    env: Environment | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """The figures of the module docstring for the model ``llm`` names; a line to
    ``progress`` after each batch ingested and before the questions."""
    env = env or Environment.from_env()
    spec = parse_llm_spec(llm)
    if not spec.is_model:
        raise ConfigError("cam bench llm measures a model: give --llm local:PATH.gguf or openai")
    if questions and questions_file is None:
        raise ConfigError("questions need a HotpotQA file (--questions-file)")
    figures: dict[str, Any] = {"llm": llm, "model": model_identity(spec, env)}
    figures["machine"] = machine()
    inner = load_embedder(
        embed_model or env.embed_model or DEFAULT_EMBED_MODEL,
        device=device or env.embed_device,
        batch_size=env.embed_batch_size,
        environment=env,
    )
    embedder = CachingEmbedder(inner, cached_vectors)
    started = time.perf_counter()
    with open_chat(spec, env) as chat, tempfile.TemporaryDirectory(prefix="cam-bench-llm-") as tmp:
        assert chat is not None  # a model, checked above
        figures["model"]["backend"] = chat.name
        figures["model"]["open_s"] = round(time.perf_counter() - started, 3)
        figures["ingest"] = ingest(
            chat,
            embedder,
            book,
            chunks=chunks,
            batch_size=batch_size,
            llm_concurrency=llm_concurrency,
            workdir=Path(tmp),
            progress=progress,
        )
        if questions and questions_file is not None:
            if progress is not None:
                progress(f"answering {questions} questions with {', '.join(strategies)}")
            figures["questions"] = answer_quality(
                chat,
                embedder,
                questions_file,
                questions=questions,
                strategies=strategies,
                answer_budget=answer_budget,
                workdir=Path(tmp) / "eval",
            )
    embedder.save()  # a no-op without cached_vectors
    figures["machine"]["load_after"] = _load()
    figures["embed_model"] = embedder.name
    return figures


def table(figures: dict[str, Any]) -> str:
    """The headline figures, one per line, for a terminal."""
    model, done = figures["model"], figures["ingest"]
    name = model.get("file") or model.get("model") or figures["llm"]
    lines = [
        f"model           {name} ({model['kind']}"
        + (f", {model['threads']} threads" if "threads" in model else "")
        + f"), opened in {model['open_s']} s",
        f"ingest          {done['chunks']} chunks, {done['batches']} batches, "
        f"{done['summaries']} summaries in {done['wall_s']} s",
        f"summaries/s     {done['summaries_per_s']}",
        f"calls/batch     {done['mean_llm_calls_per_batch']} ({done['llm_calls']} calls)",
        f"s/call          {done['seconds_per_call']}",
        f"tokens/chunk    {done['prompt_tokens_per_chunk']} prompt, "
        f"{done['completion_tokens_per_chunk']} completion",
        f"malformed       {done['malformed_share']} of {done['replies_judged']} replies judged",
    ]
    for strategy, row in figures.get("questions", {}).get("strategies", {}).items():
        lines.append(
            f"{strategy:<15} EM {row['em']}, F1 {row['f1']} over {row['questions']} "
            f"questions, {row['llm_calls']} LLM calls"
        )
    return "\n".join(lines)
