"""``cam export`` and ``cam import``: move a memory to another store through a file."""

from __future__ import annotations

import sys

import click

from cam_engine import Environment, Memory
from cam_engine.api import TransferReport
from cam_engine.cli.options import echo_json, json_option, open_memory, plural
from cam_engine.cli.progress import ProgressLines
from cam_engine.cli.terminal import printable
from cam_engine.errors import CamError

STORE_HELP = (
    "SQLite file, or a bolt:// or neo4j:// URI (default: $CAM_STORE, else $CAM_NEO4J_URI, "
    "else $XDG_DATA_HOME/cam/memory.db when it is absolute, else ~/.local/share/cam/memory.db)."
)


@click.command()
@click.argument("memory_name", metavar="MEMORY")
@click.argument("file", type=click.Path(dir_okay=False, writable=True))
@click.option("--store", metavar="PATH|URI", help=f"The store to read. {STORE_HELP}")
@json_option
def export(memory_name: str, file: str, store: str | None, as_json: bool) -> None:
    """Write memory MEMORY to FILE, which cam import reads into any store.

    FILE is JSON Lines (gzip when its name ends in .gz): a header (format version,
    settings, vector size, counts), then every document, node with its vector, edge,
    replica, membership, name mention, view node and counter. It is written whole or not
    at all, and an existing FILE is not overwritten.
    """
    memory = open_memory(store, memory_name)
    progress = ProgressLines(terminal=not as_json and sys.stderr.isatty())
    with memory:
        try:
            report = memory.export(file, on_progress=progress)
        except CamError as exc:
            raise click.ClickException(str(exc)) from exc
        finally:
            progress.close()
    _print(report, "exported", "to", as_json)


@click.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--as",
    "as_name",
    metavar="NAME",
    help="The name of the memory in the store (default: the name it was exported under).",
)
@click.option("--store", metavar="PATH|URI", help=f"The store to write. {STORE_HELP}")
@json_option
def import_command(file: str, as_name: str | None, store: str | None, as_json: bool) -> None:
    """Read a memory that cam export wrote in FILE into a store.

    The memory must not exist there yet. It answers cam ask, stats and show as the
    exported one did, with the same node ids, and takes further cam ingest batches.
    Each record is checked; it is written in transactions of bounded size, and a failed
    or interrupted import removes what it wrote.
    """
    progress = ProgressLines(terminal=not as_json and sys.stderr.isatty())
    try:
        report = Memory.import_from(
            file, store, as_name, environment=Environment.from_env(), on_progress=progress
        )
    except CamError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        progress.close()
    _print(report, "imported", "into", as_json)


def _print(report: TransferReport, done: str, where: str, as_json: bool) -> None:
    if as_json:
        echo_json(report.to_dict())
        return
    counts = report.counts
    click.echo(
        printable(
            f"{done} memory {report.memory!r} {where} "
            f"{report.path if done == 'exported' else report.store}: "
            f"{plural(counts['document'], 'document')}, {plural(counts['node'], 'node')}, "
            f"{plural(counts['edge'], 'edge')}, {plural(counts['view_node'], 'view node')} "
            f"in {report.seconds:.1f} s"
        )
    )
