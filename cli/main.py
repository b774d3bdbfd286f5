"""Entry point of the ``cam`` command."""

from __future__ import annotations

import logging
from typing import Any

import click

from cam_engine import __version__
from cam_engine.cli.ask import ask
from cam_engine.cli.bench import bench
from cam_engine.cli.browse import browse
from cam_engine.cli.eval import eval_command
from cam_engine.cli.ingest import ingest
from cam_engine.cli.inspect import show, stats
from cam_engine.cli.interrupts import end_process_if_interrupted, exit_interrupted
from cam_engine.cli.manage import delete, memories
from cam_engine.cli.mcp import mcp
from cam_engine.cli.terminal import PrintableFormatter, printable
from cam_engine.cli.transfer import export, import_command
from cam_engine.errors import CamError


class CamGroup(click.Group):
    """Every command's engine error is one ``Error:`` line, never a traceback: a
    command that does not catch a ``CamError`` itself (a damaged store found mid-read)
    still ends the way the errors it expects do, its control characters escaped (a
    document id or path in it cannot forge a line: ``cli/terminal.py``). Ctrl-C ends
    every command with one ``interrupted`` line and exit status 130 (click's own
    handling says "Aborted!" and exits 1)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except CamError as exc:
            raise click.ClickException(printable(str(exc))) from exc
        except click.ClickException as exc:
            if type(exc) is not click.ClickException:  # usage errors: click's own words
                raise
            raise click.ClickException(printable(exc.message)) from exc.__cause__
        except KeyboardInterrupt:
            exit_interrupted()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The process's entry point (the ``cam`` script, ``python -m cam_engine.cli``);
        click's test runner calls ``main`` instead and keeps its process."""
        try:
            return self.main(*args, **kwargs)
        except SystemExit as exc:
            end_process_if_interrupted(exc)
            raise


@click.group(cls=CamGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="cam")
@click.option("-v", "--verbose", is_flag=True, help="Log progress details to stderr.")
def cli(verbose: bool) -> None:
    """CAM Engine: read long documents into a hierarchical graph memory.

    Chunks become graph nodes linked by similarity and position; overlapping
    clusters are summarized level after level. Summaries come from the offline
    extractive backend unless --summarizer openai is given. The same memory can hold
    ReadAgent, MemAgent and GAM views (cam ingest --view, cam ask --strategy); cam
    eval measures retrieval against BM25 and dense baselines on real data; cam mcp
    serves a memory to agents over the Model Context Protocol; cam export and cam
    import move a memory from one store to another (SQLite to Neo4j, or back).
    """
    handler = logging.StreamHandler()
    handler.setFormatter(PrintableFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, handlers=[handler])
    if not verbose:
        # pypdf warns of each repair it makes to a slightly malformed PDF (most real ones);
        # a PDF it cannot read still gets its one-line error.
        logging.getLogger("pypdf").setLevel(logging.ERROR)
        # The Neo4j driver logs a failed connection ("Unable to retrieve routing
        # information") before raising it, and the store's one-line error says it again
        # with the URI and how to start a server. -v shows the driver's own lines.
        logging.getLogger("neo4j").setLevel(logging.CRITICAL)


cli.add_command(ingest)
cli.add_command(ask)
cli.add_command(stats)
cli.add_command(show)
cli.add_command(memories)
cli.add_command(delete)
cli.add_command(export)
cli.add_command(import_command)
cli.add_command(bench)
cli.add_command(browse)
cli.add_command(eval_command)
cli.add_command(mcp)


if __name__ == "__main__":
    cli()
