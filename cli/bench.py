"""``cam bench``: benchmarks that print figures (not tests)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from cam_engine import Environment
from cam_engine.api import EVAL, require_extra
from cam_engine.bench import shared_data_dir
from cam_engine.cli.bench_latency import (
    bench_ann,
    bench_embed_runtimes,
    bench_mcp,
    bench_names,
    bench_stores,
    bench_structure,
)
from cam_engine.cli.bench_options import (
    FRANKENSTEIN,
    MOBY_DICK,
    book_option,
    default_when_read,
    embedding_options,
    existing_file_or_absent_default,
    out_option,
)
from cam_engine.cli.bench_reliability import (
    bench_crash,
    bench_diskfull,
    bench_longline,
    bench_mcp_load,
    bench_readers,
)
from cam_engine.cli.bench_tuning import bench_graph_parameters, bench_play_dialogue, bench_tuning
from cam_engine.cli.options import MODEL_SPEC, echo_json


@click.group()
def bench() -> None:
    """Benchmarks and measurements that print figures (not tests)."""
    # the tokenizers library warns once a process forks after it ran (the benchmarks
    # start `cam` subprocesses); its threads are not what they measure
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@bench.command("ingest", short_help="Ingest a book in batches, rebuild it: time, locality.")
@click.option(
    "--book",
    type=click.Path(dir_okay=False),
    default=str(MOBY_DICK),
    callback=existing_file_or_absent_default,
    show_default=True,
    help="Text to ingest (default: Moby Dick from ../shared/data beside the checkout).",
)
@click.option("--batch-size", default=64, show_default=True)
@click.option(
    "--store",
    "store_dir",
    help="Folder for the benchmark's SQLite file (default: a temp dir), or a bolt:// or "
    "neo4j:// URI to measure Neo4j (a memory bench-PID, deleted afterwards).",
)
@embedding_options
@click.option(
    "--cross-memory",
    is_flag=True,
    help="Also measure cross_memory_locality: Frankenstein into a memory holding the other "
    "shared books and the essays, against into an empty one (slow the first time).",
)
@click.option(
    "--resummarize-drift",
    type=click.FloatRange(0.0, 1.0),
    help="The memory's resummarize_drift (default: the Settings default).",
)
def bench_ingest(
    book: str,
    batch_size: int,
    store_dir: str | None,
    embed_model: str | None,
    device: str | None,
    cached_vectors: Path | None,
    cross_memory: bool,
    resummarize_drift: float | None,
) -> None:
    """Ingest a book in batches, then rebuild it; print timing and locality ratios."""
    from cam_engine.bench.ingest import run
    from cam_engine.errors import CamError

    try:
        figures = run(
            book,
            batch_size=batch_size,
            store_dir=store_dir,
            embed_model=embed_model,
            device=device or Environment.from_env().embed_device,
            cached_vectors=cached_vectors,
            cross_memory_data=shared_data_dir() if cross_memory else None,
            resummarize_drift=resummarize_drift,
        )
        echo_json(figures)
    except CamError as exc:
        raise click.ClickException(str(exc)) from exc


@bench.command("lifecycle", short_help="Update and delete documents in a memory: cost.")
@click.option("--batch-size", default=64, show_default=True)
@click.option(
    "--store",
    "store",
    help="Folder for the benchmark's SQLite files (default: a temp dir), or a bolt:// or "
    "neo4j:// URI to measure Neo4j (memories bench-lifecycle-PID*, deleted afterwards).",
)
@embedding_options
def bench_lifecycle(
    batch_size: int,
    store: str | None,
    embed_model: str | None,
    device: str | None,
    cached_vectors: Path | None,
) -> None:
    """Update a paragraph of Moby Dick and delete Frankenstein in a memory of the shared
    books and essays; print seconds, summaries rewritten and ratios to ingest."""
    from cam_engine.bench.lifecycle import run
    from cam_engine.errors import CamError

    try:
        figures = run(
            shared_data_dir(),
            batch_size=batch_size,
            store=store,
            embed_model=embed_model,
            device=device or Environment.from_env().embed_device,
            cached_vectors=cached_vectors,
        )
    except CamError as exc:
        raise click.ClickException(str(exc)) from exc
    echo_json(figures)


@bench.command("ask", short_help="Latency of asking: cold process, or the engine's part.")
@click.option(
    "--cold",
    is_flag=True,
    help="Time `cam ask` as a fresh process, N times per strategy (prune-grow, and bm25 "
    "as the floor): imports and model loading included. Without it: the engine's part "
    "of Memory.ask per memory, store and strategy, on SQLite and Neo4j.",
)
@book_option(FRANKENSTEIN, "Book to ask about (default: Frankenstein from ../shared/data).")
@click.option(
    "--cached-vectors",
    type=click.Path(dir_okay=False, path_type=Path),
    help="--cold: read and save the book's vectors in this .npz (building the memory "
    "then embeds nothing the second time).",
)
@click.option(
    "--store",
    "store_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="--cold: SQLite file to build the memory in and keep (default: a temp dir).",
)
@click.option(
    "--runs", default=10, type=click.IntRange(min=1), show_default=True, help="--cold: asks."
)
@click.option(
    "--cam",
    "cams",
    multiple=True,
    help="--cold: command that stands for `cam` (repeatable, measured interleaved; "
    "default: this installation's).",
)
@click.option(
    "--neo4j",
    envvar="CAM_NEO4J_URI",
    default="bolt://127.0.0.1:7687",
    show_default=True,
    help="Without --cold: the Neo4j server [$CAM_NEO4J_URI].",
)
@click.option(
    "--questions",
    default=100,
    type=click.IntRange(min=1),
    show_default=True,
    help="Without --cold: HotpotQA questions whose paragraphs are pooled and asked.",
)
@click.option(
    "--hotpot",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Without --cold: the HotpotQA questions (JSONL; default: "
    "hotpotqa/hotpotqa_dev_200.jsonl in ../shared/data).",
)
@click.option(
    "--profile", is_flag=True, help="Without --cold: cProfile the slowest case (to stderr)."
)
@out_option("Also write the JSON line to this file.")
def bench_ask(
    cold: bool,
    book: Path,
    cached_vectors: Path | None,
    store_file: Path | None,
    runs: int,
    cams: tuple[str, ...],
    neo4j: str,
    questions: int,
    hotpot: Path | None,
    profile: bool,
    out: Path | None,
) -> None:
    """Latency of asking: cold (a fresh `cam ask` process) or the engine's part."""
    from cam_engine.bench import print_figures
    from cam_engine.errors import CamError

    try:
        if cold:
            from cam_engine.bench import cold_ask

            figures = cold_ask.run(
                book=book,
                runs=runs,
                cams=cams,
                cached_vectors=cached_vectors,
                store=store_file,
            )
        else:
            from cam_engine.bench import ask

            default = shared_data_dir() / "hotpotqa" / "hotpotqa_dev_200.jsonl"
            figures = ask.run(
                book=book,
                hotpot=hotpot or default_when_read("hotpot", default),
                n_questions=questions,
                neo4j_uri=neo4j,
                profile=profile,
            )
    except CamError as exc:
        raise click.ClickException(str(exc)) from exc
    print_figures(figures, out)


@bench.command("hostile", short_help="Adversarial inputs and clients: time, RSS, outcome.")
@click.option(
    "--case",
    "cases",
    multiple=True,
    metavar="NAME",
    help="Run only this case (repeatable; default: all; an unknown name lists the known ones).",
)
@click.option(
    "--timeout",
    default=180.0,
    show_default=True,
    help="Seconds after which a case's process is killed (and the case missed).",
)
@out_option("Also write the figures here (indented JSON).")
def bench_hostile(cases: tuple[str, ...], timeout: float, out: Path | None) -> None:
    """Adversarial input and clients: seconds, peak RSS and outcome of each case, one
    line each, then a JSON line. Exit status 1 if a case missed its targets (60 s,
    1 GiB, nothing read outside --allow)."""
    from cam_engine.bench import hostile, print_figures

    unknown = sorted(set(cases) - set(hostile.CASES))
    if unknown:
        raise click.BadParameter(
            f"unknown case {', '.join(unknown)}; known: {', '.join(hostile.CASES)}",
            param_hint="--case",
        )
    figures = hostile.run(list(cases or hostile.CASES), timeout)
    print_figures(figures, out, details={})
    if figures["missed"]:
        raise SystemExit(1)


@bench.command("llm", short_help="A real model's cost per summary and its answers.")
@click.option(
    "--llm",
    type=MODEL_SPEC,
    envvar="CAM_LLM",
    help="The model to measure: local:PATH.gguf (llama.cpp in-process) or openai (the "
    "endpoint at CAM_LLM_BASE_URL serving CAM_LLM_MODEL). Default: $CAM_LLM.",
)
@book_option(
    FRANKENSTEIN,
    "Text whose first chunks are summarized (default: Frankenstein from ../shared/data).",
)
@click.option(
    "--chunks",
    default=20,
    show_default=True,
    type=click.IntRange(min=1),
    help="Ingest the book's first N chunks (20: about 25 summary calls, 8-12 minutes of "
    "a 135M model on one CPU thread).",
)
@click.option("--batch-size", default=10, show_default=True, type=click.IntRange(min=1))
@click.option(
    "--llm-concurrency",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="Summary calls in flight at once (1: seconds per call is one call's own time; "
    "cam ingest's default is 4).",
)
@click.option(
    "--questions",
    default=10,
    show_default=True,
    type=click.IntRange(min=0),
    help="Also answer the first K HotpotQA questions with each strategy (0: none).",
)
@click.option(
    "--questions-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=str(shared_data_dir() / "hotpotqa" / "hotpotqa_dev_200.jsonl"),
    show_default=True,
    help="HotpotQA questions (JSONL, as cam eval hotpotqa reads).",
)
@click.option(
    "--strategies",
    default="prune-grow,hybrid",
    show_default=True,
    help="Comma-separated `cam ask --strategy` names whose contexts are answered.",
)
@click.option(
    "--answer-budget",
    default=1000,
    show_default=True,
    type=click.IntRange(min=1),
    help="Context tokens each answer gets.",
)
@embedding_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON line instead of a table.")
def bench_llm(
    llm: str | None,
    book: Path,
    chunks: int,
    batch_size: int,
    llm_concurrency: int,
    questions: int,
    questions_file: Path,
    strategies: str,
    answer_budget: int,
    embed_model: str | None,
    device: str | None,
    cached_vectors: Path | None,
    as_json: bool,
) -> None:
    """What a real model costs and how it answers: the book's first chunks summarized
    by it (summaries/s, tokens per chunk, calls per batch, s/call, malformed replies),
    then HotpotQA answers by it (EM/F1 per strategy). The model: --llm local:PATH.gguf
    (llama.cpp; CAM_LLM_THREADS, CAM_LLM_CONTEXT, CAM_LLM_GPU_LAYERS) or openai
    (CAM_LLM_BASE_URL, CAM_LLM_MODEL)."""
    from cam_engine.bench import llm as bench
    from cam_engine.errors import CamError

    if llm is None:
        raise click.BadParameter("give the model to measure (or set CAM_LLM)", param_hint="--llm")
    try:
        figures = bench.run(
            llm,
            book=book,
            chunks=chunks,
            batch_size=batch_size,
            llm_concurrency=llm_concurrency,
            questions=questions,
            questions_file=questions_file,
            strategies=[s.strip() for s in strategies.split(",") if s.strip()],
            answer_budget=answer_budget,
            embed_model=embed_model,
            device=device,
            cached_vectors=cached_vectors,
            progress=lambda line: click.echo(f"cam bench llm: {line}", err=True),
        )
    except CamError as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        echo_json(figures)
    else:
        click.echo(bench.table(figures))


@bench.command("scale", short_help="Grow one memory to 10^6 chunks: cost, size, latency.")
@click.option(
    "--chunks",
    type=click.IntRange(min=100),
    default=100_000,
    show_default=True,
    help="Grow the memory to this many chunks; figures at each decade (10^4, 10^5, 10^6) "
    "and at the end.",
)
@click.option(
    "--store",
    "store_dir",
    help="Folder for the memory's SQLite file, kept afterwards (default: a temp dir), or a "
    "bolt:// or neo4j:// URI (a memory scale-PID, deleted afterwards).",
)
@click.option(
    "--vector-cache",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path.home() / ".cache" / "cam-engine" / "scale-vectors.npz",
    show_default=True,
    help="The real MiniLM vectors of the shared data's chunks, computed on the first run.",
)
@click.option("--batch-size", default=64, show_default=True, type=click.IntRange(min=1))
@click.option(
    "--seed", default=0, show_default=True, help="Seed of the copies' shuffles and noise."
)
@click.option(
    "--resume",
    is_flag=True,
    help="Go on growing the memory a run before left in --store (on Neo4j: the memory "
    "named scale, then kept) rather than starting anew.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also append each JSON line to this file.",
)
@click.option(
    "--plot",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Draw the cost curve (engine ms per chunk and RSS against chunks) of the lines in "
    "--out, this run's included, into this PNG.",
)
def bench_scale(
    chunks: int,
    store_dir: str | None,
    vector_cache: Path,
    batch_size: int,
    seed: int,
    resume: bool,
    out: Path | None,
    plot: Path | None,
) -> None:
    """Grow one memory from copies of the shared data's text (extractive summaries) and
    print a JSON line of cost, size and latency at each decade; progress on stderr."""
    from cam_engine.bench import scale
    from cam_engine.errors import CamError

    data = shared_data_dir()
    if not (data / "hotpotqa").is_dir():
        raise click.ClickException(
            f"cam bench scale needs the shared data folder; not found: {data}"
        )
    if resume and store_dir is None:
        raise click.UsageError("--resume needs --store: the memory to go on growing")
    vector_cache.parent.mkdir(parents=True, exist_ok=True)

    def append(line: dict[str, Any]) -> None:
        if out is not None:
            with out.open("a", encoding="utf-8") as file:
                file.write(json.dumps(line) + "\n")

    def emit(line: dict[str, Any]) -> None:
        click.echo(json.dumps(line))
        append(line)

    def progress(point: dict[str, Any]) -> None:
        click.echo(scale.describe_progress(point), err=True)
        append(point)

    if plot is not None:  # said before the run, not after it
        require_extra("matplotlib", EVAL, "cam bench scale --plot")
    try:
        lines = scale.run(
            chunks,
            shared_data=data,
            store=store_dir,
            vector_cache=vector_cache,
            batch_size=batch_size,
            seed=seed,
            resume=resume,
            emit=emit,
            progress=progress,
        )
    except CamError as exc:
        raise click.ClickException(str(exc)) from exc
    if plot is not None:
        from cam_engine.eval.plots import scale_plot

        if out is not None:
            lines = [json.loads(row) for row in out.read_text(encoding="utf-8").splitlines() if row]
        scale_plot(lines, plot)


for command in (
    bench_crash,
    bench_diskfull,
    bench_readers,
    bench_longline,
    bench_mcp_load,
    bench_stores,
    bench_mcp,
    bench_embed_runtimes,
    bench_ann,
    bench_structure,
    bench_names,
    bench_graph_parameters,
    bench_tuning,
    bench_play_dialogue,
):
    bench.add_command(command)
