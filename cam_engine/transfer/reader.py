"""Reading an export file line by line: the header checked on opening, then each record
as it is read, with a bound on a line's length; every problem one ``InputError`` naming
the file and the line."""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

from cam_engine.config import Settings, validate_memory_name
from cam_engine.errors import ConfigError, InputError
from cam_engine.transfer.records import (
    FORMAT,
    KINDS,
    MAX_DIMENSIONS,
    PARSERS,
    VERSION,
    Header,
    InvalidRecord,
    field_of,
    is_int,
    no_constant,
    short,
    shown,
)

# The longest line an import reads: a chunk or summary with its vector is a few KB; a
# line this long is not a record of ours, and reading it whole would cost its size.
MAX_LINE_CHARS = 32 * 1024 * 1024
GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True)
class Record:
    """One record of the file, as the store takes it (a ``Node``, an ``Edge``, ...)."""

    kind: str  # one of KINDS
    value: Any
    line: int  # where it is in the file, for errors about it
    size: int  # characters of its line


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

    def records(self) -> Iterator[Record]:
        """The records in file order, each checked and made what the store takes; at
        the end, their counts are checked against the header's."""
        seen = {kind: 0 for kind in KINDS}
        order = 0
        while (found := self._next_object()) is not None:
            obj, size = found
            kind = obj.get("record")
            if kind not in KINDS:
                raise self._error(f"unknown record kind {shown(kind)}")
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
            yield Record(kind, self._parse(kind, obj), self.line, size)
        missing = [f"{seen[k]} of {n} {k}" for k, n in self.header.counts.items() if seen[k] != n]
        if missing:
            raise InputError(
                f"{self.path}: the file ends after line {self.line} with {', '.join(missing)} "
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
            obj = json.loads(text, parse_constant=no_constant)
        except (ValueError, RecursionError) as exc:
            raise self._error(f"not a JSON record ({short(exc)})") from exc
        if not isinstance(obj, dict):
            raise self._error("not a JSON object")
        return obj, len(text)

    def _read_header(self) -> Header:
        found = self._next_object()
        if found is None:
            raise InputError(f"{self.path}: the file is empty, not a cam export", str(self.path))
        try:
            return self._header(found[0])
        except InvalidRecord as exc:
            raise self._error(f"header: {exc}") from None

    def _header(self, obj: dict[str, Any]) -> Header:
        if obj.get("format") != FORMAT:
            raise self._error(
                f"not a cam export: the first line names format {shown(obj.get('format'))}, "
                f"not {FORMAT!r}"
            )
        if obj.get("version") != VERSION:
            raise self._error(
                f"format version {shown(obj.get('version'))} is not one this cam reads "
                f"({VERSION}): export it again with this version, or upgrade cam"
            )
        memory = field_of(obj, "memory", str)
        try:
            validate_memory_name(memory)
            settings = field_of(obj, "settings", dict)
            Settings.from_dict(dict(settings))
        except (ConfigError, TypeError, ValueError) as exc:
            raise self._error(f"header: {short(exc)}") from exc
        dimensions = obj.get("dimensions")
        if dimensions is not None and not is_int(dimensions, 1, MAX_DIMENSIONS):
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
            if not is_int(n, 0, None):
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
            return PARSERS[kind](obj, self.header.dimensions)
        except InvalidRecord as exc:
            raise self._error(f"{kind} record: {exc}") from None

    def _error(self, message: str, *, after: bool = False) -> InputError:
        return self.error_at(self.line, message, after=after)

    def error_at(self, line: int, message: str, *, after: bool = False) -> InputError:
        """An error about line ``line`` (or what follows it) of this file."""
        where = f"after line {line}" if after else f"line {line}"
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
    binary = cast(IO[bytes], gzip.GzipFile(fileobj=raw, mode="rb")) if gzipped else raw
    # newline="\n": a stray carriage return inside a line is its text, not a line end.
    return io.TextIOWrapper(binary, encoding="utf-8", errors="strict", newline="\n")
