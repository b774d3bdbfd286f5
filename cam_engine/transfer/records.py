"""The records of an export file: the header, each kind's JSON object written from a
store's values, and read back into them with every field checked (``InvalidRecord``
names the field; the reader adds the file and line)."""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cam_engine.store.base import DocumentRecord
from cam_engine.types import CHUNK, SUMMARY, VIEW_KINDS, Edge, Node, Replica, ViewNode

FORMAT = "cam-memory"
VERSION = 1
# The record kinds, in the order they appear in a file and are written on import.
KINDS = ("document", "node", "edge", "replica", "members", "view_node", "counter")
MAX_DIMENSIONS = 1_000_000  # as Settings.embed_dim


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


def document_record(d: DocumentRecord) -> dict[str, Any]:
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


def node_record(n: Node, names: Sequence[str]) -> dict[str, Any]:
    record = {
        "record": "node",
        "id": n.id,
        "level": n.level,
        "kind": n.kind,
        "doc_id": n.doc_id,
        "position": n.position,
        "text": n.text,
        "props": n.props,
        "vector": encode_vector(n.embedding),
    }
    if n.kind == CHUNK:
        record["names"] = sorted(names)
    return record


def edge_record(e: Edge) -> dict[str, Any]:
    return {
        "record": "edge",
        "src": e.src,
        "dst": e.dst,
        "level": e.level,
        "score": e.score,
        "cosine": e.cosine,
        "proximity": e.proximity,
    }


def replica_record(r: Replica) -> dict[str, Any]:
    return {
        "record": "replica",
        "id": r.id,
        "node_id": r.node_id,
        "level": r.level,
        "label": r.label,
        "members": sorted(r.members),
    }


def members_record(summary: Node, members: set[str]) -> dict[str, Any]:
    return {
        "record": "members",
        "summary": summary.id,
        "level": summary.level,
        "members": sorted(members),
    }


def view_record(v: ViewNode) -> dict[str, Any]:
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
        "vector": encode_vector(v.embedding),
        "chunk_ids": list(v.chunk_ids),
    }


def encode_vector(vector: np.ndarray | None) -> str | None:
    if vector is None:
        return None
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def json_line(record: Mapping[str, Any]) -> str:
    # allow_nan=False: a NaN score would make a file no other JSON reader accepts.
    return json.dumps(record, ensure_ascii=False, allow_nan=False, separators=(",", ":")) + "\n"


class InvalidRecord(Exception):
    """A record's field is missing or of the wrong kind (made one InputError by the reader)."""


def no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number JSON allows")


def field_of(
    obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], *, null: bool = False
) -> Any:
    if key not in obj:
        raise InvalidRecord(f"{key!r} is missing")
    value = obj[key]
    if value is None and null:
        return None
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _types(kind)):
        raise InvalidRecord(f"{key!r} must be {_kind_name(kind)}{' or null' if null else ''}")
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
    kinds = [k for k in _types(kind) if not (k is int and float in _types(kind))]
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _number(obj: Mapping[str, Any], key: str) -> float:
    value = _number_or_none(obj, key, null=False)
    assert value is not None  # null=False
    return value


def _number_or_none(obj: Mapping[str, Any], key: str, *, null: bool = True) -> float | None:
    """A finite number (an int stays an int: a chunk's position is one)."""
    value = field_of(obj, key, (int, float), null=null)
    if value is not None and not math.isfinite(value):
        raise InvalidRecord(f"{key!r} must be a finite number")
    return value


def _id(obj: Mapping[str, Any], key: str) -> str:
    """An id: a string, not empty (a page of a memory starts after "")."""
    value: str = field_of(obj, key, str)
    if not value:
        raise InvalidRecord(f"{key!r} must not be empty")
    return value


def _strings(obj: Mapping[str, Any], key: str) -> list[str]:
    values = field_of(obj, key, list)
    if not all(isinstance(v, str) for v in values):
        raise InvalidRecord(f"{key!r} must be a list of strings")
    return values


def _level(obj: Mapping[str, Any]) -> int:
    level = field_of(obj, "level", int)
    if not 0 <= level <= 1000:
        raise InvalidRecord("'level' must be from 0 to 1000")
    return level


def _vector(obj: Mapping[str, Any], dimensions: int | None) -> np.ndarray | None:
    text = field_of(obj, "vector", str, null=True)
    if text is None:
        return None
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidRecord(f"'vector' is not base64 ({exc})") from None
    if dimensions is None or len(raw) != 4 * dimensions:
        raise InvalidRecord(
            f"'vector' holds {len(raw) / 4:g} float32 values, not the header's "
            f"{dimensions} dimensions"
        )
    vector = np.frombuffer(raw, dtype="<f4").astype(np.float32)
    if not np.isfinite(vector).all():
        raise InvalidRecord("'vector' holds a value that is not a finite number")
    return vector


def _parse_document(obj: Mapping[str, Any], _: int | None) -> DocumentRecord:
    return DocumentRecord(
        id=_id(obj, "id"),
        source=field_of(obj, "source", str),
        sha256=field_of(obj, "sha256", str, null=True),
        chunks=field_of(obj, "chunks", int),
        total=field_of(obj, "total", int, null=True),
        text_sha256=field_of(obj, "text_sha256", str, null=True),
        version=field_of(obj, "version", int),
        updated_at=field_of(obj, "updated_at", str, null=True),
    )


def _parse_node(obj: Mapping[str, Any], dimensions: int | None) -> Node:
    kind = field_of(obj, "kind", str)
    if kind not in (CHUNK, SUMMARY):
        raise InvalidRecord(f"'kind' must be {CHUNK!r} or {SUMMARY!r}")
    level = _level(obj)
    if (kind == CHUNK) != (level == 0):
        raise InvalidRecord(f"a {kind!r} node at level {level}: chunks are level 0, and only they")
    names = _strings(obj, "names") if kind == CHUNK else None
    return Node(
        id=_id(obj, "id"),
        level=level,
        kind=kind,
        text=field_of(obj, "text", str),
        doc_id=field_of(obj, "doc_id", str, null=True),
        position=_number_or_none(obj, "position"),
        embedding=_vector(obj, dimensions),
        props=field_of(obj, "props", dict),
        names=None if names is None else tuple(names),
    )


def _parse_edge(obj: Mapping[str, Any], _: int | None) -> Edge:
    return Edge(
        src=_id(obj, "src"),
        dst=_id(obj, "dst"),
        level=_level(obj),
        score=_number(obj, "score"),
        cosine=_number_or_none(obj, "cosine"),
        proximity=_number_or_none(obj, "proximity"),
    )


def _parse_replica(obj: Mapping[str, Any], _: int | None) -> Replica:
    return Replica(
        id=_id(obj, "id"),
        node_id=_id(obj, "node_id"),
        level=_level(obj),
        label=field_of(obj, "label", str),
        members=frozenset(_strings(obj, "members")),
    )


def _parse_members(obj: Mapping[str, Any], _: int | None) -> tuple[str, int, list[str]]:
    return _id(obj, "summary"), _level(obj), _strings(obj, "members")


def _parse_view(obj: Mapping[str, Any], dimensions: int | None) -> ViewNode:
    kind = field_of(obj, "kind", str)
    if kind not in VIEW_KINDS:
        raise InvalidRecord(f"'kind' must be one of {', '.join(VIEW_KINDS)}")
    return ViewNode(
        id=_id(obj, "id"),
        view=field_of(obj, "view", str),
        kind=kind,
        group=field_of(obj, "group", str),
        seq=field_of(obj, "seq", int),
        text=field_of(obj, "text", str),
        doc_id=field_of(obj, "doc_id", str, null=True),
        props=field_of(obj, "props", dict),
        embedding=_vector(obj, dimensions),
        chunk_ids=tuple(_strings(obj, "chunk_ids")),
    )


def _parse_counter(obj: Mapping[str, Any], _: int | None) -> tuple[str, int]:
    return field_of(obj, "name", str), field_of(obj, "value", int)


PARSERS: dict[str, Callable[[Mapping[str, Any], int | None], Any]] = {
    "document": _parse_document,
    "node": _parse_node,
    "edge": _parse_edge,
    "replica": _parse_replica,
    "members": _parse_members,
    "view_node": _parse_view,
    "counter": _parse_counter,
}


def is_int(value: Any, low: int, high: int | None) -> bool:
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and value >= low
        and (high is None or value <= high)
    )


def shown(value: Any, limit: int = 60) -> str:
    """A value from the file as an error quotes it: its repr, cut to ``limit``."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def short(exc: BaseException) -> str:
    """An exception's message on one line, cut to 160 characters."""
    text = " ".join(str(exc).split())
    if not text:
        return type(exc).__name__
    return text if len(text) <= 160 else text[:159] + "…"
