"""Moving a memory between stores: ``cam export`` writes one memory to a portable file,
``cam import`` reads it into any store (docs/storage.md, "Moving a memory").

The file is JSON Lines, gzip-compressed when its name ends in ``.gz``. Its first line is
a header: the format's name and version, the memory's name and settings, the size of
its vectors and its embedder, and how many records of each kind follow. Then the
records, one per line, kind after kind in the order an import writes them (each kind
refers only to kinds before it): documents, nodes (every level; a chunk lists the name
keys it mentions, the name graph), edges, replicas, members (each summary's), view
nodes (the adapters' pages, memos and memory states) and counters. A vector is the
base64 of its float32 values, little-endian.

Both directions stream: the memory is read page by page and the file line by line,
so memory use does not grow with the memory. An import writes in transactions of at
most ``BATCH_RECORDS`` records (or ``BATCH_CHARS`` characters of them), writes the
memory's settings last (until then no command sees a memory of that name), and on any
failure, a malformed line or Ctrl-C, removes what it wrote.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import io
import json
import logging
import math
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import numpy as np

from cam_engine.config import Settings, validate_memory_name
from cam_engine.errors import CamError, ConfigError, InputError, StoreError
from cam_engine.progress import Progress, ProgressCallback
from cam_engine.store.base import DocumentRecord, GraphStore
from cam_engine.store.structure import GENERATION
from cam_engine.types import CHUNK, VIEW_KINDS, Edge, Node, Replica, ViewNode

logger = logging.getLogger(__name__)

FORMAT = "cam-memory"
VERSION = 1
# The record kinds, in the order they appear in a file and are written on import.
KINDS = ("document", "node", "edge", "replica", "members", "view_node", "counter")
PAGE_SIZE = 500  # nodes read per store call on export
BATCH_RECORDS = 1000  # records written per transaction on import
BATCH_CHARS = 16 * 1024 * 1024  # ... or fewer, when their lines hold this many characters
# The longest line an import reads: a chunk or summary with its vector is a few KB; a
# line this long is not a record of ours, and reading it whole would cost its size.
MAX_LINE_CHARS = 32 * 1024 * 1024
MAX_DIMENSIONS = 1_000_000  # as Settings.embed_dim
MAX_COUNTERS = 100_000
GZIP_MAGIC = b"\x1f\x8b"
PROGRESS_EVERY = 5000  # records between two progress reports


@dataclass
class TransferReport:
    """What an export or import moved."""

    memory: str
    path: str
    store: str
    counts: dict[str, int]
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "memory": self.memory,
            "file": self.path,
            "store": self.store,
            "counts": self.counts,
            "seconds": round(self.seconds, 3),
        }


@dataclass
class Header:
    """The first line of an export file, checked."""

    memory: str
    settings: dict[str, Any]
    dimensions: int | None
    embed_model: str | None
    counts: dict[str, int]
    extra: dict[str, Any] = field(default_factory=dict)  # exported_at, cam_version

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "memory": self.memory,
            "settings": self.settings,
            "dimensions": self.dimensions,
            "embed_model": self.embed_model,
            "counts": self.counts,
            **self.extra,
        }


# --- export --------------------------------------------------------------------------------


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
        # mtime=0: the same memory exports to the same bytes.
        binary: IO[bytes] = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) if gzipped else raw
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
    counts = _counts(store)
    header = Header(
        memory=store.memory,
        settings=settings,
        dimensions=_dimensions(store, settings),
        embed_model=settings.get("embed_model"),
        counts=counts,
        extra={"exported_at": datetime.now(UTC).isoformat(), "cam_version": _cam_version()},
    )
    out.write(_line(header.to_json()))
    total = sum(counts.values())
    written = {kind: 0 for kind in KINDS}
    done = 0
    for kind, record in _records(store, page_size):
        out.write(_line(record))
        written[kind] += 1
        done += 1
        if on_progress is not None and done % PROGRESS_EVERY == 0:
            on_progress(Progress("export", "record", done, total))
    if written != counts:  # a store's reads and its counts disagree: say so, not a bad file
        raise StoreError(f"memory {store.memory!r}: counted {counts}, but read {written}")
    if on_progress is not None:
        on_progress(Progress("export", "record", done, total))
    return written


def _counts(store: GraphStore) -> dict[str, int]:
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
        yield "document", _document_record(document)
    for page in _node_pages(store, page_size, embeddings=True):
        names = store.names_of(n.id for n in page if n.kind == CHUNK)
        for node in page:
            yield "node", _node_record(node, names.get(node.id, []))
    # An edge is written with the page of its first node (src < dst): once.
    for page in _node_pages(store, page_size):
        ids = {n.id for n in page}
        for edge in sorted(store.edges_of(ids), key=lambda e: (e.src, e.dst)):
            if edge.src in ids:
                yield "edge", _edge_record(edge)
    for page in _node_pages(store, page_size):
        replicas = store.replicas_of(n.id for n in page)
        for node in page:
            for replica in sorted(replicas.get(node.id, []), key=lambda r: r.id):
                yield "replica", _replica_record(replica)
    for page in _node_pages(store, page_size):
        summaries = [n for n in page if n.level > 0]
        members = store.members_of(n.id for n in summaries)
        for node in summaries:
            yield "members", _members_record(node, members.get(node.id, set()))
    after = ""
    while views := store.view_nodes_page(after, page_size):
        for view in views:
            yield "view_node", _view_record(view)
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


def _document_record(d: DocumentRecord) -> dict[str, Any]:
    return {
        "record": "document",
        "id": d.id,
        "source": d.source,
        "sha256": d.sha256,
        "chunks": d.chunks,
        "total": d.total,
        "text_sha256": d.text_sha256,
        "version": d.version,
        "updated_at": d.updated_at,
    }


def _node_record(n: Node, names: Sequence[str]) -> dict[str, Any]:
    record = {
        "record": "node",
        "id": n.id,
        "level": n.level,
        "kind": n.kind,
        "doc_id": n.doc_id,
        "position": n.position,
        "text": n.text,
        "props": n.props,
        "vector": _encode(n.embedding),
    }
    if n.kind == CHUNK:
        record["names"] = sorted(names)
    return record


def _edge_record(e: Edge) -> dict[str, Any]:
    return {
        "record": "edge",
        "src": e.src,
        "dst": e.dst,
        "level": e.level,
        "score": e.score,
        "cosine": e.cosine,
        "proximity": e.proximity,
    }


def _replica_record(r: Replica) -> dict[str, Any]:
    return {
        "record": "replica",
        "id": r.id,
        "node_id": r.node_id,
        "level": r.level,
        "label": r.label,
        "members": sorted(r.members),
    }


def _members_record(summary: Node, members: set[str]) -> dict[str, Any]:
    return {
        "record": "members",
        "summary": summary.id,
        "level": summary.level,
        "members": sorted(members),
    }


def _view_record(v: ViewNode) -> dict[str, Any]:
    return {
        "record": "view_node",
        "id": v.id,
        "view": v.view,
        "kind": v.kind,
        "group": v.group,
        "seq": v.seq,
        "doc_id": v.doc_id,
        "text": v.text,
        "props": v.props,
        "vector": _encode(v.embedding),
        "chunk_ids": list(v.chunk_ids),
    }


def _encode(vector: np.ndarray | None) -> str | None:
    if vector is None:
        return None
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def _line(record: Mapping[str, Any]) -> str:
    # allow_nan=False: a NaN score would make a file no other JSON reader accepts.
    return json.dumps(record, ensure_ascii=False, allow_nan=False, separators=(",", ":")) + "\n"


def _cam_version() -> str:
    from cam_engine import __version__

    return __version__


# --- reading a file ---------------------------------------------------------------------------


class ExportFile:
    """An export file read line by line: the header checked on opening, then each
    record checked as it is read. Every problem is one ``InputError`` naming the file
    and the line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stream = _open_for_reading(path)
        self.line = 0
        try:
            self.header = self._read_header()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self._stream.close()

    def __enter__(self) -> ExportFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def records(self) -> Iterator[tuple[str, Any, int]]:
        """(kind, the record as the store takes it, its line's length), in file order;
        at the end, the counts are checked against the header's."""
        seen = {kind: 0 for kind in KINDS}
        order = 0
        while (found := self._next_object()) is not None:
            obj, size = found
            kind = obj.get("record")
            if kind not in KINDS:
                raise self._error(f"unknown record kind {_shown(kind)}")
            if KINDS.index(kind) < order:
                raise self._error(
                    f"a {kind} record after {KINDS[order]} records: records come kind by "
                    f"kind, in the order {', '.join(KINDS)}"
                )
            order = KINDS.index(kind)
            seen[kind] += 1
            if seen[kind] > self.header.counts[kind]:
                raise self._error(
                    f"more {kind} records than the header's {self.header.counts[kind]}"
                )
            yield kind, self._parse(kind, obj), size
        short = [f"{seen[k]} of {n} {k}" for k, n in self.header.counts.items() if seen[k] != n]
        if short:
            raise InputError(
                f"{self.path}: the file ends after line {self.line} with {', '.join(short)} "
                "records: it is truncated",
                str(self.path),
            )

    def _next_object(self) -> tuple[dict[str, Any], int] | None:
        try:
            text = self._stream.readline(MAX_LINE_CHARS + 1)
        except (OSError, EOFError, UnicodeDecodeError, gzip.BadGzipFile) as exc:
            raise self._error(f"cannot read the file: {exc}", after=True) from exc
        if not text:
            return None
        self.line += 1
        if len(text) > MAX_LINE_CHARS:
            raise self._error(f"the line is longer than {MAX_LINE_CHARS:,} characters")
        if not text.endswith("\n"):
            raise self._error(
                "the line is cut short (no newline at its end): the file is truncated"
            )
        try:
            obj = json.loads(text, parse_constant=_no_constant)
        except (ValueError, RecursionError) as exc:
            raise self._error(f"not a JSON record ({_short(exc)})") from exc
        if not isinstance(obj, dict):
            raise self._error("not a JSON object")
        return obj, len(text)

    def _read_header(self) -> Header:
        found = self._next_object()
        if found is None:
            raise InputError(f"{self.path}: the file is empty, not a cam export", str(self.path))
        try:
            return self._header(found[0])
        except _Invalid as exc:
            raise self._error(f"header: {exc}") from None

    def _header(self, obj: dict[str, Any]) -> Header:
        if obj.get("format") != FORMAT:
            raise self._error(
                f"not a cam export: the first line names format {_shown(obj.get('format'))}, "
                f"not {FORMAT!r}"
            )
        if obj.get("version") != VERSION:
            raise self._error(
                f"format version {_shown(obj.get('version'))} is not one this cam reads "
                f"({VERSION}): export it again with this version, or upgrade cam"
            )
        memory = _get(obj, "memory", str)
        try:
            validate_memory_name(memory)
            settings = _get(obj, "settings", dict)
            Settings.from_dict(dict(settings))
        except (ConfigError, TypeError, ValueError) as exc:
            raise self._error(f"header: {_short(exc)}") from exc
        dimensions = obj.get("dimensions")
        if dimensions is not None and not _is_int(dimensions, 1, MAX_DIMENSIONS):
            raise self._error(
                f"header: dimensions must be a whole number from 1 to {MAX_DIMENSIONS:,}"
            )
        recorded = settings.get("embed_dim")
        if recorded is not None and recorded != dimensions:
            raise self._error(
                f"header: dimensions {dimensions} differ from the settings' embed_dim {recorded}"
            )
        counts = obj.get("counts")
        if not isinstance(counts, dict) or set(counts) != set(KINDS):
            raise self._error(f"header: counts must give a number for each of {', '.join(KINDS)}")
        for kind, n in counts.items():
            if not _is_int(n, 0, None):
                raise self._error(f"header: the count of {kind} records must be a whole number")
        if counts["node"] and dimensions is None:
            raise self._error("header: a memory with nodes needs its dimensions")
        model = obj.get("embed_model")
        if model is not None and not isinstance(model, str):
            raise self._error("header: embed_model must be a string")
        return Header(memory, dict(settings), dimensions, model, dict(counts))

    # --- records ----------------------------------------------------------------------
    def _parse(self, kind: str, obj: dict[str, Any]) -> Any:
        try:
            return _PARSERS[kind](obj, self.header.dimensions)
        except _Invalid as exc:
            raise self._error(f"{kind} record: {exc}") from None

    def _error(self, message: str, *, after: bool = False) -> InputError:
        where = f"after line {self.line}" if after else f"line {self.line}"
        return InputError(f"{self.path}, {where}: {message}", str(self.path))


def _open_for_reading(path: Path) -> IO[str]:
    try:
        raw = open(path, "rb")  # noqa: SIM115 - owned by the returned stream
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}", str(path)) from exc
    try:
        gzipped = raw.read(2) == GZIP_MAGIC  # by its bytes: a renamed file still reads
        raw.seek(0)
    except OSError as exc:
        raw.close()
        raise InputError(f"cannot read {path}: {exc.strerror or exc}", str(path)) from exc
    binary: IO[bytes] = gzip.GzipFile(fileobj=raw, mode="rb") if gzipped else raw
    # newline="\n": a stray carriage return inside a line is its text, not a line end.
    return io.TextIOWrapper(binary, encoding="utf-8", errors="strict", newline="\n")


class _Invalid(Exception):
    """A record's field is missing or of the wrong kind (made one InputError by the reader)."""


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number JSON allows")


def _get(
    obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], *, null: bool = False
) -> Any:
    if key not in obj:
        raise _Invalid(f"{key!r} is missing")
    value = obj[key]
    if value is None and null:
        return None
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _types(kind)):
        raise _Invalid(f"{key!r} must be {_kind_name(kind)}{' or null' if null else ''}")
    return value


def _types(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {
        str: "a string",
        int: "a whole number",
        float: "a number",
        dict: "an object",
        list: "a list",
    }
    return " or ".join(names.get(k, k.__name__) for k in _types(kind))


def _number(obj: Mapping[str, Any], key: str) -> float:
    value = _number_or_none(obj, key, null=False)
    assert value is not None  # null=False
    return value


def _number_or_none(obj: Mapping[str, Any], key: str, *, null: bool = True) -> float | None:
    """A finite number (an int stays an int: a chunk's position is one)."""
    value = _get(obj, key, (int, float), null=null)
    if value is not None and not math.isfinite(value):
        raise _Invalid(f"{key!r} must be a finite number")
    return value  # type: ignore[no-any-return]


def _strings(obj: Mapping[str, Any], key: str) -> list[str]:
    values = _get(obj, key, list)
    if not all(isinstance(v, str) for v in values):
        raise _Invalid(f"{key!r} must be a list of strings")
    return values  # type: ignore[no-any-return]


def _level(obj: Mapping[str, Any]) -> int:
    level = _get(obj, "level", int)
    if not 0 <= level <= 1000:
        raise _Invalid("'level' must be from 0 to 1000")
    return level  # type: ignore[no-any-return]


def _vector(obj: Mapping[str, Any], dimensions: int | None) -> np.ndarray | None:
    text = _get(obj, "vector", str, null=True)
    if text is None:
        return None
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise _Invalid(f"'vector' is not base64 ({exc})") from None
    if dimensions is None or len(raw) != 4 * dimensions:
        raise _Invalid(
            f"'vector' holds {len(raw) / 4:g} float32 values, not the header's "
            f"{dimensions} dimensions"
        )
    vector = np.frombuffer(raw, dtype="<f4").astype(np.float32)
    if not np.isfinite(vector).all():
        raise _Invalid("'vector' holds a value that is not a finite number")
    return vector


def _parse_document(obj: Mapping[str, Any], _: int | None) -> DocumentRecord:
    return DocumentRecord(
        id=_get(obj, "id", str),
        source=_get(obj, "source", str),
        sha256=_get(obj, "sha256", str, null=True),
        chunks=_get(obj, "chunks", int),
        total=_get(obj, "total", int, null=True),
        text_sha256=_get(obj, "text_sha256", str, null=True),
        version=_get(obj, "version", int),
        updated_at=_get(obj, "updated_at", str, null=True),
    )


def _parse_node(obj: Mapping[str, Any], dimensions: int | None) -> Node:
    kind = _get(obj, "kind", str)
    level = _level(obj)
    if (kind == CHUNK) != (level == 0):
        raise _Invalid(f"a {kind!r} node at level {level}: chunks are level 0, and only they")
    names = _strings(obj, "names") if kind == CHUNK else None
    return Node(
        id=_get(obj, "id", str),
        level=level,
        kind=kind,
        text=_get(obj, "text", str),
        doc_id=_get(obj, "doc_id", str, null=True),
        position=_number_or_none(obj, "position"),
        embedding=_vector(obj, dimensions),
        props=_get(obj, "props", dict),
        names=None if names is None else tuple(names),
    )


def _parse_edge(obj: Mapping[str, Any], _: int | None) -> Edge:
    return Edge(
        src=_get(obj, "src", str),
        dst=_get(obj, "dst", str),
        level=_level(obj),
        score=_number(obj, "score"),
        cosine=_number_or_none(obj, "cosine"),
        proximity=_number_or_none(obj, "proximity"),
    )


def _parse_replica(obj: Mapping[str, Any], _: int | None) -> Replica:
    return Replica(
        id=_get(obj, "id", str),
        node_id=_get(obj, "node_id", str),
        level=_level(obj),
        label=_get(obj, "label", str),
        members=frozenset(_strings(obj, "members")),
    )


def _parse_members(obj: Mapping[str, Any], _: int | None) -> tuple[str, int, list[str]]:
    return _get(obj, "summary", str), _level(obj), _strings(obj, "members")


def _parse_view(obj: Mapping[str, Any], dimensions: int | None) -> ViewNode:
    kind = _get(obj, "kind", str)
    if kind not in VIEW_KINDS:
        raise _Invalid(f"'kind' must be one of {', '.join(VIEW_KINDS)}")
    return ViewNode(
        id=_get(obj, "id", str),
        view=_get(obj, "view", str),
        kind=kind,
        group=_get(obj, "group", str),
        seq=_get(obj, "seq", int),
        text=_get(obj, "text", str),
        doc_id=_get(obj, "doc_id", str, null=True),
        props=_get(obj, "props", dict),
        embedding=_vector(obj, dimensions),
        chunk_ids=tuple(_strings(obj, "chunk_ids")),
    )


def _parse_counter(obj: Mapping[str, Any], _: int | None) -> tuple[str, int]:
    return _get(obj, "name", str), _get(obj, "value", int)


_PARSERS: dict[str, Callable[[Mapping[str, Any], int | None], Any]] = {
    "document": _parse_document,
    "node": _parse_node,
    "edge": _parse_edge,
    "replica": _parse_replica,
    "members": _parse_members,
    "view_node": _parse_view,
    "counter": _parse_counter,
}


def _is_int(value: Any, low: int, high: int | None) -> bool:
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and value >= low
        and (high is None or value <= high)
    )


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def _short(exc: BaseException) -> str:
    return _shown(" ".join(str(exc).split()))[1:-1] if str(exc) else type(exc).__name__


# --- import ---------------------------------------------------------------------------------


def import_memory(
    source: ExportFile,
    store: GraphStore,
    *,
    on_progress: ProgressCallback | None = None,
    batch_records: int = BATCH_RECORDS,
) -> TransferReport:
    """Write the memory ``source`` holds into ``store`` (opened for the memory's new
    name), which must not hold a memory of that name. On any failure what was written
    is removed and the error raised."""
    start = time.perf_counter()
    header = source.header
    if store.load_settings() is not None:
        raise ConfigError(
            f"memory {store.memory!r} already exists in {store.location}: import under "
            "another name (--as NAME), or delete it first (cam delete)"
        )
    _remove_unfinished(store)
    if header.dimensions is not None:
        store.prepare(header.dimensions)
    try:
        counts = _write_records(source, store, on_progress, batch_records)
        _check_written(store, header)
    except BaseException:
        _remove(store)
        raise
    return TransferReport(
        store.memory, str(source.path), store.location, counts, time.perf_counter() - start
    )


def _remove_unfinished(store: GraphStore) -> None:
    """A memory with no settings but with nodes or documents is what an import killed
    before its end (kill -9, a power cut) leaves: it was never a memory; remove it."""
    if store.nodes_page("", 1) or store.documents() or store.counters():
        logger.warning(
            "memory %r in %s has records but no settings (an unfinished import): removing them",
            store.memory,
            store.location,
        )
        store.drop_memory()


def _remove(store: GraphStore) -> None:
    try:
        store.drop_memory()
    except CamError as exc:  # the first error is the one to report
        logger.error(
            "could not remove the partly imported memory %r from %s: %s (cam delete removes it)",
            store.memory,
            store.location,
            exc,
        )


def _write_records(
    source: ExportFile,
    store: GraphStore,
    on_progress: ProgressCallback | None,
    batch_records: int,
) -> dict[str, int]:
    header = source.header
    total = sum(header.counts.values())
    written = {kind: 0 for kind in KINDS}
    counters: dict[str, int] = {}
    batch: list[Any] = []
    batch_kind = ""
    chars = 0
    done = 0

    def flush() -> None:
        nonlocal batch, chars
        if batch:
            with store.transaction():
                _WRITERS[batch_kind](store, batch)
        batch, chars = [], 0
        if on_progress is not None:
            on_progress(Progress("import", "record", done, total))

    for kind, record, size in source.records():
        if kind == "counter":
            if len(counters) >= MAX_COUNTERS:
                raise InputError(f"{source.path}: more than {MAX_COUNTERS:,} counters")
            name, value = record
            counters[name] = value
        else:
            if kind != batch_kind or len(batch) >= batch_records or chars + size > BATCH_CHARS:
                flush()
                batch_kind = kind
            batch.append(record)
            chars += size
        written[kind] += 1
        done += 1
    flush()
    # The settings last, with the counters: until this commits, no command sees the memory.
    with store.transaction():
        store.set_counters(counters)
        store.save_settings(header.settings)
    return written


def _write_documents(store: GraphStore, documents: list[DocumentRecord]) -> None:
    for document in documents:
        store.upsert_document(document)


def _write_nodes(store: GraphStore, nodes: list[Node]) -> None:
    store.upsert_nodes(nodes)  # a chunk's names are the record's (Node.names), not found again


def _write_members(store: GraphStore, rows: list[tuple[str, int, list[str]]]) -> None:
    store.replace_members({summary: (level, members) for summary, level, members in rows})


_WRITERS: dict[str, Callable[[GraphStore, list[Any]], None]] = {
    "document": _write_documents,
    "node": _write_nodes,
    "edge": lambda store, edges: store.upsert_edges(edges),
    "replica": lambda store, replicas: store.upsert_replicas(replicas),
    "members": _write_members,
    "view_node": lambda store, views: store.upsert_view_nodes(views),
}


def _check_written(store: GraphStore, header: Header) -> None:
    """The store's figures against the file's: a record naming a node the file does not
    hold (an edge, a member, a replica) is dropped by Neo4j's MATCH, silently."""
    held = _counts(store)
    differ = [
        f"{kind} {header.counts[kind]} in the file, {held[kind]} written"
        for kind in KINDS
        if held[kind] != header.counts[kind]
    ]
    if differ:
        raise InputError(
            f"the imported memory does not match the file ({'; '.join(differ)}): some record "
            "names a node or document the file does not hold",
        )
