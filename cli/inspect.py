"""``cam stats`` and ``cam show``: look at a memory."""

from __future__ import annotations

from typing import Any

import click

from cam_engine.api import CHUNK
from cam_engine.cli.options import echo_json, json_option, memory_options, open_memory, plural
from cam_engine.cli.terminal import printable

SHOWN = 20  # documents listed by name in cam stats' text output


@click.command()
@memory_options
@json_option
def stats(store: str | None, memory_name: str | None, as_json: bool) -> None:
    """Documents, nodes/edges/clusters per level, overlap and settings of a memory.

    Each document is listed with its id, chunks stored, version (raised each time
    an ingest changed its text), the start of its sha256, when its text last changed
    (UTC) and source (a file path or <stdin>); --json has them all under
    document_list (id, source, chunks, total, version, sha256, updated_at)."""
    with open_memory(store, memory_name) as memory:
        data = memory.stats()
    if as_json:
        echo_json(data)
        return
    click.echo(printable(f"memory {data['memory']!r} in {data['store']}"))
    click.echo(f"documents: {data['documents']}")
    for line in _document_lines(data["document_list"]):
        click.echo(printable(f"  {line}"))
    click.echo(
        f"{'level':>5} {'nodes':>7} {'edges':>7} {'clusters':>8} {'replicas':>8} "
        f"{'single':>6}  cluster sizes (members: clusters)"
    )
    for row in data["levels"]:
        sizes = " ".join(f"{size}:{n}" for size, n in row["cluster_sizes"].items())
        single = f"{row['single_member_share']:.0%}" if sizes else "-"
        click.echo(
            f"{row['level']:>5} {row['nodes']:>7} {row['edges']:>7} "
            f"{row['clusters']:>8} {row['replicas']:>8} {single:>6}  {sizes or '-'}"
        )
    click.echo("single: share of clusters with one member (they get no summary)")
    if data["levels"]:
        top = data["levels"][-1]
        below = data["roots"] - top["nodes"]
        click.echo(
            f"top: {plural(top['nodes'], 'node')} at level {top['level']}"
            + (f", and {plural(below, 'node')} without a parent below it" if below else "")
            + f"; repeated texts: {data['repeated_texts']} "
            f"({data['repeated_summary_texts']} involving a summary)"
        )
    click.echo(
        f"overlap: {data['overlap']:.1%} of chunks belong to 2+ clusters "
        f"({data['nodes_in_two_or_more_clusters']})"
    )
    click.echo(
        f"names: {plural(data['names'], 'name')} mentioned "
        f"{plural(data['mentions'], 'time')} by the chunks"
    )
    backends = ", ".join(f"{n} by {b}" for b, n in data["summaries_by_backend"].items())
    click.echo(f"summaries: {backends or 'none yet'}")
    views = "; ".join(
        f"{view} ({', '.join(plural(n, kind) for kind, n in kinds.items())})"
        for view, kinds in data.get("views", {}).items()
    )
    click.echo(printable(f"views: {views or 'none (cam ingest --view readagent|gam)'}"))
    settings = ", ".join(f"{k}={v}" for k, v in data["settings"].items())
    click.echo(printable(f"settings: {settings}"))
    embedder = data["embedder"]
    if embedder["device"] == "api":
        line = f"embedding: {embedder['model']} through its API (CAM_EMBED_BASE_URL)"
    else:
        line = (
            f"embedding: {embedder['model']} on {embedder['device']} (--device / CAM_EMBED_DEVICE)"
        )
    click.echo(printable(line))


HASH_SHOWN = 12  # hex digits of a document's sha256 in cam stats' table


def _document_lines(documents: list[dict[str, Any]]) -> list[str]:
    """A table of the documents: id, chunks stored (of its total when it was
    interrupted), version, the start of its hash, when its text last changed, and
    source. Past SHOWN documents, only interrupted ones are listed, then a count."""
    rows: list[tuple[str, ...]] = []
    notes: list[str] = []
    hidden = 0
    for doc in documents:
        partial = doc["total"] is not None and doc["chunks"] < doc["total"]
        if len(rows) >= SHOWN and not partial:
            hidden += 1
            continue
        chunks = f"{doc['chunks']} of {doc['total']}" if partial else str(doc["chunks"])
        sha = (doc.get("sha256") or "-")[:HASH_SHOWN]
        updated = doc.get("updated_at") or "-"
        rows.append((doc["id"], chunks, str(doc.get("version", 1)), sha, updated, doc["source"]))
        notes.append(
            " (interrupted; running the same ingest again completes it)" if partial else ""
        )
    if not rows:
        return []
    header = ("id", "chunks", "version", "hash", "updated", "source")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header) - 1)]
    right = (False, True, True, False, False)  # numbers to the right

    def line(row: tuple[str, ...]) -> str:
        cells = [
            cell.rjust(width) if numeric else cell.ljust(width)
            for cell, width, numeric in zip(row, widths, right, strict=False)
        ]
        return "  ".join([*cells, row[-1]])

    lines = [line(header)] + [line(row) + note for row, note in zip(rows, notes, strict=True)]
    if hidden:
        lines.append(f"... and {plural(hidden, 'more document')} (--json lists them all)")
    return lines


@click.command()
@click.argument("node_id")
@memory_options
@json_option
@click.option("--width", default=300, show_default=True, help="Characters of text shown per node.")
def show(
    node_id: str, store: str | None, memory_name: str | None, as_json: bool, width: int
) -> None:
    """Text, level, parents, children and neighbours of one node."""
    with open_memory(store, memory_name) as memory:
        view = memory.node(node_id)
        if view is None:
            like = memory.ids_like(node_id)
            hint = f"; ids like it: {', '.join(like)}" if like else ""
            raise click.ClickException(f"no node {node_id!r} in memory {memory.name!r}{hint}")
    node = view.node
    if as_json:
        echo_json(view.to_dict())
        return

    def clip(text: str) -> str:
        flat = " ".join(text.split())
        return printable(flat if len(flat) <= width else flat[: width - 1] + "…")

    if node.doc_id is None:
        where = "several documents"
    elif node.kind == CHUNK:
        where = f"{node.doc_id} #{node.position:g}"
    else:  # a summary's position is the mean of its members'
        where = f"{node.doc_id} around #{round(node.position or 0)}"
    backend = node.props.get("backend")
    kind = f"{node.kind} ({backend})" if backend else node.kind
    click.echo(printable(f"{node.id}  level {node.level}  {kind}  {where}"))
    click.echo(clip(node.text))
    click.echo(printable(f"cluster labels (level.number): {', '.join(view.clusters) or '-'}"))
    for title, nodes in (("parents", view.parents), ("children", view.children)):
        click.echo(f"{title} ({len(nodes)}):")
        for n in nodes:
            click.echo(f"  {printable(n.id)}  {clip(n.text)[:80]}")
    click.echo(f"neighbours ({len(view.neighbours)}):")
    for n, weight in view.neighbours:
        click.echo(f"  {printable(n.id)}  {weight:.3f}  {clip(n.text)[:70]}")
