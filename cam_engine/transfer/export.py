"""``cam export``: one memory written to a file, page by page."""

from __future__ import annotations

import gzip
import io
import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, cast

from cam_engine.errors import ConfigError, StoreError
from cam_engine.progress import Progress, ProgressCallback
from cam_engine.store.base import GraphStore
from cam_engine.store.structure import GENERATION
from cam_engine.transfer.records import (
    KINDS,
    Header,
    TransferReport,
    document_record,
    edge_record,
    json_line,
    members_record,
    node_record,
    replica_record,
    view_record,
)
from cam_engine.types import CHUNK, Node

PAGE_SIZE = 500  # nodes read per store call
PROGRESS_EVERY = 5000  # records between two progress reports


def export_memory(
    store: GraphStore,
    path: Path,
    *,
    on_progress: ProgressCallback | None = None,
    page_size: int = PAGE_SIZE,
) -> TransferReport:
    """Write ``store``'s memory to ``path`` (gzip when it ends in ``.gz``), through a
    temporary file beside it that is renamed when complete: a failed export leaves no
    file. The memory is read as of one commit: in one read transaction on SQLite; on
    Neo4j, whose reads are not isolated, an export during which a batch committed is
    an error, to be run again."""
    if path.exists():
        raise ConfigError(f"{path} exists: give a new file name, or remove it first")
    settings = store.load_settings()
    if settings is None:
        raise StoreError(f"no memory {store.memory!r} in {store.location}")
    start = time.perf_counter()
    partial = path.with_name(f".{path.name}.partial-{os.getpid()}")
    try:
        with _open_for_writing(partial, gzipped=path.name.endswith(".gz")) as out:
            if store.isolated_snapshots:
                counts = store.read_snapshot(
                    lambda: _write_memory(store, settings, out, on_progress, page_size)
                )
            else:
                before = store.counters().get(GENERATION, 0)
                counts = _write_memory(store, settings, out, on_progress, page_size)
                if store.counters().get(GENERATION, 0) != before:
                    raise StoreError(
                        f"memory {store.memory!r} changed while it was exported (an ingest "
                        "committed a batch): export it again when no ingest is running"
                    )
        partial.replace(path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return TransferReport(
        store.memory, str(path), store.location, counts, time.perf_counter() - start
    )


@contextmanager
def _open_for_writing(path: Path, *, gzipped: bool) -> Iterator[IO[str]]:
    try:
        raw = open(path, "xb")  # noqa: SIM115 - closed below, after the gzip layer
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from exc
    try:
        # mtime=0: no time in the gzip header (the header line says when it was exported).
        binary = (
            cast(IO[bytes], gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0))
            if gzipped
            else raw
        )
        with io.TextIOWrapper(binary, encoding="utf-8", newline="\n") as text:
            yield text
    finally:
        raw.close()


def _write_memory(
    store: GraphStore,
    settings: dict[str, Any],
    out: IO[str],
    on_progress: ProgressCallback | None,
    page_size: int,
) -> dict[str, int]:
    counts = memory_counts(store)
    header = Header(
        memory=store.memory,
        settings=settings,
        dimensions=_dimensions(store, settings),
        embed_model=settings.get("embed_model"),
        counts=counts,
        extra={"exported_at": datetime.now(UTC).isoformat(), "cam_version": _cam_version()},
    )
    out.write(json_line(header.to_json()))
    total = sum(counts.values())
    written = {kind: 0 for kind in KINDS}
    done = 0
    for kind, record in _records(store, page_size):
        out.write(json_line(record))
        written[kind] += 1
        done += 1
        if on_progress is not None and done % PROGRESS_EVERY == 0:
            on_progress(Progress("export", "record", done, total))
    if written != counts:  # a store's reads and its counts disagree: say so, not a bad file
        raise StoreError(f"memory {store.memory!r}: counted {counts}, but read {written}")
    if on_progress is not None:
        on_progress(Progress("export", "record", done, total))
    return written


def memory_counts(store: GraphStore) -> dict[str, int]:
    """Records of each kind the export writes, from the store's own figures."""
    stats = store.stats()
    levels = stats["levels"]
    return {
        "document": int(stats["documents"]),
        "node": sum(int(lv["nodes"]) for lv in levels),
        "edge": sum(int(lv["edges"]) for lv in levels),
        "replica": sum(int(lv["replicas"]) for lv in levels),
        "members": sum(int(lv["nodes"]) for lv in levels if lv["level"] > 0),
        "view_node": sum(n for kinds in stats["views"].values() for n in kinds.values()),
        "counter": len(store.counters()),
    }


def _dimensions(store: GraphStore, settings: Mapping[str, Any]) -> int | None:
    recorded = settings.get("embed_dim")
    if isinstance(recorded, int):
        return recorded
    first = store.nodes_page("", 1, embeddings=True)  # a memory older than embed_dim
    return None if not first or first[0].embedding is None else len(first[0].embedding)


def _records(store: GraphStore, page_size: int) -> Iterator[tuple[str, dict[str, Any]]]:
    for document in store.documents():
        yield "document", document_record(document)
    for page in _node_pages(store, page_size, embeddings=True):
        names = store.names_of(n.id for n in page if n.kind == CHUNK)
        for node in page:
            yield "node", node_record(node, names.get(node.id, []))
    # An edge is written with the page of its first node (src < dst): once.
    for page in _node_pages(store, page_size):
        ids = {n.id for n in page}
        for edge in sorted(store.edges_of(ids), key=lambda e: (e.src, e.dst)):
            if edge.src in ids:
                yield "edge", edge_record(edge)
    for page in _node_pages(store, page_size):
        replicas = store.replicas_of(n.id for n in page)
        for node in page:
            for replica in sorted(replicas.get(node.id, []), key=lambda r: r.id):
                yield "replica", replica_record(replica)
    for page in _node_pages(store, page_size):
        summaries = [n for n in page if n.level > 0]
        members = store.members_of(n.id for n in summaries)
        for node in summaries:
            yield "members", members_record(node, members.get(node.id, set()))
    after = ""
    while views := store.view_nodes_page(after, page_size):
        for view in views:
            yield "view_node", view_record(view)
        after = views[-1].id
    for name, value in sorted(store.counters().items()):
        yield "counter", {"record": "counter", "name": name, "value": value}


def _node_pages(
    store: GraphStore, page_size: int, *, embeddings: bool = False
) -> Iterator[list[Node]]:
    after = ""
    while page := store.nodes_page(after, page_size, embeddings=embeddings):
        yield page
        after = page[-1].id


def _cam_version() -> str:
    from cam_engine import __version__

    return __version__
