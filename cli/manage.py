"""``cam memories`` and ``cam delete``: list the memories of a store, remove one."""

from __future__ import annotations

import click

from cam_engine import Environment
from cam_engine.cli.options import echo_json, json_option, memory_options, open_memory, plural
from cam_engine.errors import CamError
from cam_engine.memory import memories_in


@click.command()
@click.option("--store", metavar="PATH|URI", help="The store to list (default: as for ingest).")
@json_option
def memories(store: str | None, as_json: bool) -> None:
    """The names of the memories a store holds."""
    try:
        names = memories_in(store, Environment.from_env())
    except CamError as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        echo_json(names)
        return
    for name in names:
        click.echo(name)
    if not names:
        click.echo("no memories yet (cam ingest PATH creates one)", err=True)


@click.command()
@memory_options
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def delete(store: str | None, memory_name: str | None, yes: bool) -> None:
    """Delete a memory: its chunks, summaries, views, documents and settings.

    Other memories in the same store are left as they are. The deletion is one
    transaction: it happens whole or not at all.
    """
    memory = open_memory(store, memory_name)
    name, where = memory.name, memory.location
    with memory:
        documents = len(memory.documents())
        if not yes and not click.confirm(
            f"delete memory {name!r} ({plural(documents, 'document')}) from {where}?", err=True
        ):
            raise click.Abort()
        try:
            memory.delete()
        except CamError as exc:
            raise click.ClickException(str(exc)) from exc
    click.echo(f"deleted memory {name!r} from {where}")
