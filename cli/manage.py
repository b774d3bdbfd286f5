"""``cam memories`` and ``cam delete``: list the memories of a store, remove one or
some of its documents."""

from __future__ import annotations

import click

from cam_engine import Environment, Memory
from cam_engine.api import BatchReport, memories_in
from cam_engine.cli.options import echo_json, json_option, memory_options, open_memory, plural
from cam_engine.cli.terminal import printable
from cam_engine.errors import CamError


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
        click.echo(printable(name))
    if not names:
        click.echo("no memories yet (cam ingest PATH creates one)", err=True)


@click.command()
@memory_options
@click.option(
    "--document",
    "documents",
    multiple=True,
    metavar="ID",
    help="Delete this document (repeatable; ids as cam stats lists them) instead of the "
    "whole memory.",
)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option
def delete(
    store: str | None,
    memory_name: str | None,
    documents: tuple[str, ...],
    yes: bool,
    as_json: bool,
) -> None:
    """Delete a memory: its chunks, summaries, views, documents and settings; or, with
    --document, only those documents.

    Other memories in the same store are left as they are. On SQLite deleting a memory
    is one transaction: it happens whole or not at all. On Neo4j it takes transactions
    of bounded size, the settings last: a delete cut short leaves the memory listed,
    and deleting it again finishes. Deleting a document is one
    transaction per document: its chunks and views go, and only the summaries above
    them are redone. Every id is checked before any document is deleted.
    """
    memory = open_memory(store, memory_name)
    with memory:
        if documents:
            _delete_documents(memory, list(dict.fromkeys(documents)), yes, as_json)
            return
        name, where = memory.name, memory.location
        count = len(memory.documents())
        _confirm(yes, f"delete memory {name!r} ({plural(count, 'document')}) from {where}?")
        try:
            memory.delete()
        except CamError as exc:
            raise click.ClickException(str(exc)) from exc
    if as_json:
        echo_json({"deleted": "memory", "memory": name, "store": where})
    else:
        click.echo(printable(f"deleted memory {name!r} from {where}"))


def _delete_documents(memory: Memory, doc_ids: list[str], yes: bool, as_json: bool) -> None:
    """Delete documents of the memory, one line (or JSON object) each as it commits."""
    try:
        memory.require_documents(doc_ids)
    except CamError as exc:
        raise click.ClickException(str(exc)) from exc
    named = ", ".join(doc_ids)
    _confirm(
        yes,
        f"delete {plural(len(doc_ids), 'document')} ({named}) from memory "
        f"{memory.name!r} in {memory.location}?",
    )

    def deleted(report: BatchReport) -> None:
        if as_json:
            echo_json({"deleted": "document", "memory": memory.name, **report.to_dict()})
            return
        click.echo(
            printable(
                f"deleted document {report.document!r}: {plural(report.chunks_removed, 'chunk')} "
                f"removed; {plural(report.summaries_written, 'summary')} written, "
                f"{report.summaries_removed} removed"
            )
        )

    try:
        memory.delete_documents(doc_ids, on_deleted=deleted)
    except CamError as exc:
        raise click.ClickException(str(exc)) from exc


def _confirm(yes: bool, question: str) -> None:
    if not yes and not click.confirm(printable(question), err=True):
        raise click.Abort()
