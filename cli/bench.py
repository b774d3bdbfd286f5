"""``cam bench``: benchmarks that print figures (not tests)."""

from __future__ import annotations

import click

from cam_engine.cli.options import echo_json


@click.group()
def bench() -> None:
    """Benchmarks; each prints one JSON line of figures."""


@bench.command("ingest")
@click.option(
    "--book",
    default="../shared/data/haystacks/gutenberg/pg2701.txt",
    show_default=True,
    help="Text to ingest (default: Moby Dick from the shared data).",
)
@click.option("--batch-size", default=64, show_default=True)
@click.option(
    "--store", "store_dir", help="Folder for the benchmark's SQLite file (default: a temp dir)."
)
@click.option("--embed-model", default=None, help="Embedding model (default: the memory default).")
def bench_ingest(
    book: str, batch_size: int, store_dir: str | None, embed_model: str | None
) -> None:
    """Ingest a book in batches, then rebuild it; print timing and locality ratios."""
    from cam_engine.bench.ingest import run

    echo_json(run(book, batch_size=batch_size, store_dir=store_dir, embed_model=embed_model))
