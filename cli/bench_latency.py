"""``cam bench`` commands that time one part of the engine: stores, mcp,
embed-runtimes, ann, names."""

from __future__ import annotations

import json
from pathlib import Path

import click

from cam_engine.api import DEFAULT, STRATEGIES
from cam_engine.cli.bench_options import (
    FRANKENSTEIN,
    book_option,
    cached_vectors_option,
    out_option,
    shared_data_option,
)
from cam_engine.cli.options import device_option
from cam_engine.errors import CamError

SCALE_VECTORS = Path.home() / ".cache" / "cam-engine" / "scale-vectors.npz"


@click.command("stores", short_help="One book into SQLite and into Neo4j: times, queries.")
@book_option(FRANKENSTEIN, "Text to ingest (default: Frankenstein from ../shared/data).")
@click.option(
    "--batch-size",
    default=64,
    show_default=True,
    type=click.IntRange(min=1),
    help="Chunks per batch.",
)
@click.option(
    "--neo4j",
    envvar="CAM_NEO4J_URI",
    default="bolt://127.0.0.1:7687",
    show_default=True,
    help="The Neo4j server [$CAM_NEO4J_URI].",
)
def bench_stores(book: Path, batch_size: int, neo4j: str) -> None:
    """Ingest one book into SQLite and into Neo4j; compare times and queries."""
    from cam_engine.bench import print_figures, stores

    try:
        figures = stores.run(book, batch_size=batch_size, neo4j_uri=neo4j)
    except CamError as exc:
        raise click.ClickException(str(exc)) from exc
    print_figures(figures)


@click.command("mcp", short_help="Latency of ask through cam mcp over stdio.")
@book_option(FRANKENSTEIN, "Book to ingest (default: Frankenstein from ../shared/data).")
@click.option("--strategy", type=click.Choice(list(STRATEGIES)), default=DEFAULT, show_default=True)
@device_option
@cached_vectors_option
@out_option()
def bench_mcp(
    book: Path,
    strategy: str,
    device: str | None,
    cached_vectors: Path | None,
    out: Path | None,
) -> None:
    """Latency of ask through `cam mcp` over stdio, on a book in SQLite."""
    from cam_engine.bench import mcp, print_figures

    try:
        figures = mcp.run(book, strategy=strategy, device=device, cached_vectors=cached_vectors)
    except CamError as exc:
        raise click.ClickException(str(exc)) from exc
    print_figures(figures, out)


@click.command("embed-runtimes", short_help="The default model on the CPU: numpy against torch.")
@book_option(FRANKENSTEIN, "Book to chunk (default: Frankenstein from ../shared/data).")
@click.option(
    "--repeats",
    default=3,
    show_default=True,
    type=click.IntRange(min=1),
    help="Loads and batches per runtime.",
)
@out_option()
def bench_embed_runtimes(book: Path, repeats: int, out: Path | None) -> None:
    """The default embedding model on the CPU: numpy against torch."""
    from cam_engine.bench import embed_runtimes, print_figures

    print_figures(embed_runtimes.run(book, repeats), out)


@click.command("structure", short_help="What a writer holds between batches: MB per chunk.")
@click.argument("store")
@click.option(
    "--memory",
    "memory_name",
    default="scale",
    show_default=True,
    help="The memory in STORE (cam bench scale's is named scale).",
)
def bench_structure(store: str, memory_name: str) -> None:
    """Read an existing memory's structure as a writer's first batch does, search each
    level once, and print the time and resident memory each took (STORE: a SQLite
    file, or a bolt:// or neo4j:// URI)."""
    from cam_engine import Memory
    from cam_engine.bench import structure_memory

    if not Memory.is_neo4j_location(store) and not Path(store).is_file():
        raise click.BadParameter(f"no SQLite file at {store}", param_hint="STORE")
    try:
        click.echo(json.dumps(structure_memory.run(store, memory_name)))
    except CamError as exc:
        raise click.ClickException(str(exc)) from exc


@click.command("ann", short_help="The approximate vector index alone: recall@10, latency.")
@click.option(
    "--vectors",
    default=100_000,
    show_default=True,
    type=click.IntRange(min=100),
    help="Vectors in the index (copies of the shared data's, with noise).",
)
@shared_data_option
@click.option(
    "--vector-cache",
    type=click.Path(dir_okay=False, path_type=Path),
    default=SCALE_VECTORS,
    show_default=True,
    help="The real MiniLM vectors of the shared data's chunks (as cam bench scale keeps).",
)
@click.option(
    "--expansion",
    help="Search expansions (ef) to measure, comma-separated (default: 128, 256, the "
    "store's own below and from 300,000 vectors).",
)
@click.option(
    "--precision",
    type=click.Choice(["f16", "i8"]),
    help="Of the vectors the index keeps: half precision or 8 bits (default: the store's, "
    "half precision).",
)
def bench_ann(
    vectors: int, data: Path, vector_cache: Path, expansion: str | None, precision: str | None
) -> None:
    """The approximate vector index alone: recall@10 and latency against exact search."""
    from cam_engine.bench import ann

    try:
        expansions = [int(ef) for ef in (expansion or ann.DEFAULT_EXPANSIONS).split(",")]
    except ValueError:
        raise click.BadParameter(f"not integers: {expansion}", param_hint="--expansion") from None
    click.echo(
        json.dumps(ann.run(data, vectors, vector_cache, expansions, precision or ann.PRECISION))
    )


@click.command("names", short_help="Name extraction on a book: names per chunk, speed.")
@click.argument("book", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--chunk-tokens", default=200, show_default=True, type=click.IntRange(min=1))
@click.option(
    "--sample",
    default=5,
    show_default=True,
    type=click.IntRange(min=0),
    help="Chunks whose names are printed, to read.",
)
def bench_names(book: Path, chunk_tokens: int, sample: int) -> None:
    """Name extraction on a book: names per chunk, and how fast."""
    from cam_engine.bench import names

    click.echo(json.dumps(names.run(book, chunk_tokens, sample), ensure_ascii=False))
