"""``cam bench`` commands that break an ingest or load a server and check what is left:
crash, diskfull, readers, longline, mcp-load. Each exits 1 when its check fails."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import click

from cam_engine.cli.bench_options import (
    FRANKENSTEIN,
    MOBY_DICK,
    Command,
    book_option,
    data_file_option,
    default_when_read,
    embedding_options,
    out_option,
    verbose_option,
)
from cam_engine.errors import CamError

EXISTING_BASE = click.Path(exists=True, dir_okay=False, path_type=Path)
POINTS_OUT = "Also write every point's result here (JSON)."


def base_options(what: str) -> Callable[[Command], Command]:
    """--base and --memory: a SQLite memory whose copies the benchmark works in."""

    def decorate(command: Command) -> Command:
        command = click.option(
            "--memory", default="scale", show_default=True, help="The --base's memory."
        )(command)
        return click.option("--base", type=EXISTING_BASE, help=what)(command)

    return decorate


@click.command("crash", short_help="cam ingest killed at many points, resumed, compared.")
@click.option(
    "--points", default=50, show_default=True, type=click.IntRange(min=1), help="Kill points."
)
@click.option(
    "--store",
    type=click.Choice(["sqlite", "neo4j"]),
    default="sqlite",
    show_default=True,
    help="neo4j: a private server, started and stopped here.",
)
@book_option(FRANKENSTEIN, "The book ingested (default: Frankenstein from ../shared/data).")
@click.option("--batch-size", default=32, show_default=True, type=click.IntRange(min=1))
@click.option("--chunk-tokens", default=200, show_default=True, type=click.IntRange(min=1))
@click.option(
    "--kill",
    type=click.Choice(["all", "both", "process"]),
    default="all",
    show_default=True,
    help="neo4j: what fails, in turn: the ingest, the server's JVM and the connection "
    "(dropped, or a reply lost) (all); the ingest and the JVM (both); the ingest (process).",
)
@base_options(
    "sqlite: a SQLite memory to start from: each run ingests the book into a fresh copy of "
    "it (its file, -wal, -shm and .vectors folder), with the memory's stored settings and "
    "model (--chunk-tokens is not used)."
)
@click.option(
    "--invariants/--no-invariants",
    default=True,
    show_default=True,
    help="Check tests/invariants.py on each resumed memory, from a checkout (it reads "
    "every node: over ten minutes per memory on a base of 10^5 chunks).",
)
@out_option(POINTS_OUT)
@verbose_option
def bench_crash(
    points: int,
    store: str,
    book: Path,
    batch_size: int,
    chunk_tokens: int,
    kill: str,
    base: Path | None,
    memory: str,
    invariants: bool,
    out: Path | None,
) -> None:
    """Kill `cam ingest` (or its Neo4j server) at many points, resume, and compare the
    memory row by row with a clean ingest. Exit status 1 if one differs."""
    from cam_engine.bench import crash, print_figures

    if base is not None and store != "sqlite":
        raise click.UsageError("--base is a SQLite memory: it needs --store sqlite")
    try:
        summary = crash.run(
            book,
            points=points,
            store=store,
            batch_size=batch_size,
            chunk_tokens=chunk_tokens,
            kill=kill,
            base=base,
            memory=memory,
            invariants=invariants,
        )
    except CamError as exc:
        raise click.ClickException(str(exc)) from exc
    results = summary.pop("results")
    print_figures(summary, out, {"results": results})
    if not crash.passed(summary):
        raise SystemExit(1)


@click.command("diskfull", short_help="cam ingest under a file size limit: error, resume.")
@click.option(
    "--points",
    default=20,
    show_default=True,
    type=click.IntRange(min=1),
    help="File size limits tried.",
)
@book_option(FRANKENSTEIN, "The book ingested (default: Frankenstein from ../shared/data).")
@click.option("--batch-size", default=32, show_default=True, type=click.IntRange(min=1))
@click.option("--chunk-tokens", default=200, show_default=True, type=click.IntRange(min=1))
@click.option(
    "--seed",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="First ingest this book into memory 'seed' of every store, and spread the limits "
    "from that file's size: checkpoints then run into the limit too.",
)
@out_option(POINTS_OUT)
@verbose_option
def bench_diskfull(
    points: int,
    book: Path,
    batch_size: int,
    chunk_tokens: int,
    seed: Path | None,
    out: Path | None,
) -> None:
    """`cam ingest` into SQLite under a file size limit (a full disk): one-line error,
    whole batches kept, the rerun resumes to the clean memory. Exit status 1 if not."""
    from cam_engine.bench import diskfull, print_figures

    summary = diskfull.run(
        book, points=points, batch_size=batch_size, chunk_tokens=chunk_tokens, seed=seed
    )
    results = summary.pop("results")
    print_figures(summary, out, {"results": results})
    if not diskfull.passed(summary):
        raise SystemExit(1)


@click.command("readers", short_help="cam stats beside an ingest: reads mixing two commits.")
@click.option("--store", help="A Neo4j URI (default: a fresh SQLite file).")
@book_option(FRANKENSTEIN, "The book ingested (default: Frankenstein from ../shared/data).")
@click.option("--batch-size", default=8, show_default=True, type=click.IntRange(min=1))
@click.option("--unprotected", is_flag=True, help="Read without store.read_snapshot.")
def bench_readers(store: str | None, book: Path, batch_size: int, unprotected: bool) -> None:
    """`cam stats` in a loop beside an ingest: how many reads mix two commits. Exit
    status 1 if one did (reads protected) or the ingest failed."""
    from cam_engine.bench import readers

    result = readers.run(book, store=store, batch_size=batch_size, unprotected=unprotected)
    click.echo(json.dumps(result))
    if not readers.passed(result):
        raise SystemExit(1)


@click.command("longline", short_help="Ingest time of one very long line, at growing sizes.")
@click.option("--sizes", default="0.5,1,2,4", show_default=True, help="MiB, comma-separated.")
@click.option("--punctuation", is_flag=True, help="Sentence ends in the line.")
@click.option("--chunk-tokens", default=200, show_default=True, type=click.IntRange(min=1))
def bench_longline(sizes: str, punctuation: bool, chunk_tokens: int) -> None:
    """Ingest time of one very long line (`cam ingest -`), at growing sizes."""
    from cam_engine.bench import longline

    try:
        megabytes = [float(size) for size in sizes.split(",")]
    except ValueError:
        raise click.BadParameter(f"not numbers: {sizes}", param_hint="--sizes") from None
    click.echo(
        json.dumps(longline.run(megabytes, punctuation=punctuation, chunk_tokens=chunk_tokens))
    )


@click.command("mcp-load", short_help="Clients asking through cam mcp while one ingests.")
@click.option(
    "--book",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Book seeded first, without --base (default: Frankenstein from ../shared/data).",
)
@data_file_option(
    "--ingest-book",
    default=MOBY_DICK,
    help="Book ingested meanwhile (default: Moby Dick from ../shared/data; /dev/null: none).",
)
@click.option("--seconds", default=30.0, show_default=True, help="Of load.")
@click.option(
    "--clients", default=8, show_default=True, type=click.IntRange(min=1), help="Clients asking."
)
@click.option(
    "--batch-size",
    default=16,
    show_default=True,
    type=click.IntRange(min=1),
    help="Chunks per ingest batch.",
)
@click.option(
    "--part-words",
    default=6000,
    show_default=True,
    type=click.IntRange(min=1),
    help="Words per ingest_text call.",
)
@embedding_options
@click.option("--readers", type=int, help="cam mcp --readers (default: its own).")
@click.option(
    "--hold-batch",
    type=click.IntRange(min=1),
    help="Hold the server's Nth batch written and uncommitted until every client has had "
    "--answers-while-held answers.",
)
@click.option("--answers-while-held", default=2, show_default=True)
@base_options(
    "Serve a copy of this SQLite memory (file, -wal, -shm, .vectors) instead of seeding "
    "--book; its stored settings and model apply (--embed-model is not used)."
)
@out_option()
def bench_mcp_load(
    book: Path | None,
    ingest_book: Path,
    seconds: float,
    clients: int,
    batch_size: int,
    part_words: int,
    embed_model: str | None,
    device: str | None,
    cached_vectors: Path | None,
    readers: int | None,
    hold_batch: int | None,
    answers_while_held: int,
    base: Path | None,
    memory: str,
    out: Path | None,
) -> None:
    """Clients asking through `cam mcp` over HTTP while one ingests: errors, answers
    from a half-written batch, latency. Exit status 1 if there was either."""
    from cam_engine.api import DEFAULT_EMBED_MODEL
    from cam_engine.bench import mcp_load, print_figures
    from cam_engine.bench.base_memory import BaseMemory

    options = mcp_load.LoadOptions(
        seconds=seconds,
        clients=clients,
        model=embed_model or DEFAULT_EMBED_MODEL,
        batch_size=batch_size,
        part_words=part_words,
        readers=readers,
        device=device,
        cached_vectors=cached_vectors,
        hold_batch=hold_batch,
        answers_while_held=answers_while_held,
        base=None if base is None else BaseMemory(base.resolve(), memory),
    )
    try:
        if book is None:  # only read when seeding: a --base run needs no book
            book = FRANKENSTEIN if base else default_when_read("book", FRANKENSTEIN)
        result = mcp_load.run(book, ingest_book, options)
    except CamError as exc:
        raise click.ClickException(str(exc)) from exc
    print_figures(result, out)
    if result["errors"] or result["half_written"]:
        raise SystemExit(1)
