"""Reading input documents: files, folders and stdin, with one-line errors for bad input."""

from __future__ import annotations

import codecs
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cam_engine import formats
from cam_engine.errors import InputError

STDIN = "-"


@dataclass(frozen=True)
class Source:
    """One document to ingest: a file, or stdin (``path`` is None)."""

    doc_id: str
    path: Path | None

    @property
    def label(self) -> str:
        return str(self.path) if self.path is not None else "<stdin>"


def expand_paths(paths: list[str], *, document: str | None = None) -> Iterator[Source | InputError]:
    """Sources for the given paths; folders give their files (sorted, hidden ones skipped).

    A file's document id is its name, or its path inside the folder it was found in,
    so two runs over the same tree name documents the same way.
    """
    if document is not None and (len(paths) != 1 or Path(paths[0]).is_dir()):
        yield InputError("--document names one document: give exactly one file or '-'")
        return
    for raw in paths:
        if raw == STDIN:
            yield Source(document or "stdin", None)
            continue
        if not raw.strip():  # Path("") is ".": an empty argument would read this folder
            yield InputError("an empty path: give a file, a folder or -", raw)
            continue
        path = Path(raw)
        if path.is_dir():
            try:
                files = sorted(
                    p
                    for p in path.rglob("*")
                    if p.is_file()
                    and not any(part.startswith(".") for part in p.relative_to(path).parts)
                )
            except OSError as exc:
                yield InputError(f"{raw}: cannot read the folder ({exc})", raw)
                continue
            if not files:
                yield InputError(f"{raw}: folder has no files", raw)
            for f in files:
                yield Source(f.relative_to(path).as_posix(), f)
        elif path.is_file():
            yield Source(document or path.name, path)
        else:
            yield InputError(f"{raw}: no such file or folder", raw)


@dataclass(frozen=True)
class DocumentText:
    """A document's text as the memory keeps it, and where it came from in the file."""

    text: str  # what is chunked: the file's text without a Gutenberg header and licence
    sha256: str  # of the file's bytes
    # Where ``text`` starts in the file's whole text (UTF-8 decoded, a BOM dropped, line
    # ends as they are; a PDF's, EPUB's or HTML page's extracted text): citations count
    # from the file's start, so file_text[start:end] is the passage.
    offset: int = 0
    # PDF: (page number from 1, offset in the file's whole text where the page starts),
    # for each page with text; empty for other formats.
    page_starts: tuple[tuple[int, int], ...] = ()


def read_document(path: Path) -> tuple[str, str]:
    """(text, sha256) of a text, Markdown, PDF, EPUB or HTML file: ``load_document``'s
    text and hash."""
    document = load_document(path)
    return document.text, document.sha256


def load_document(path: Path) -> DocumentText:
    """The text of a text, Markdown, PDF, EPUB or HTML file (formats.detect says
    which), without a Project Gutenberg header and licence, with a PDF's page starts;
    InputError naming the file otherwise.

    The hash is of the file's bytes, not of the text taken out of them: a file keeps its
    hash whatever the extraction does, so re-ingesting it is still recognized (its
    chunks, not its hash, then say whether the text changed), and a text file keeps the
    hash memories recorded before there were other formats.
    """
    data = _read_bytes(path)
    kind = formats.detect(path, data)
    starts: list[tuple[int, int]] = []
    if kind == "pdf":
        pages = formats.pdf_pages(path, data)
        text = "\n\n".join(page for _, page in pages)
        starts = formats.page_starts(pages)
    elif kind == "epub":
        text = formats.epub_text(path, data)
    elif kind == "html":
        text = formats.html_text(data)
        if not text:
            raise InputError(f"{path}: no text in the HTML (scripts, styles or navigation only)")
    else:
        text = _decode(path, data)
    cut, end = formats.gutenberg_bounds(text)
    text = text[cut:end]
    if not text.strip():
        raise InputError(f"{path}: no text between its Project Gutenberg START and END lines")
    return DocumentText(text, hashlib.sha256(data).hexdigest(), cut, tuple(starts))


def read_text(path: Path) -> tuple[str, str]:
    """(text, sha256) of a UTF-8 text file, as it is; InputError naming the file otherwise."""
    data = _read_bytes(path)
    return _decode(path, data), hashlib.sha256(data).hexdigest()


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from exc


def _decode(path: Path, data: bytes) -> str:
    # Anywhere in the file, as on stdin: a NUL past the first page is no text either.
    if b"\x00" in data:
        raise InputError(f"{path}: looks binary (NUL bytes), not a text document")
    bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        text = data[bom:].decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = bom + exc.start
        raise InputError(
            f"{path}: not valid UTF-8 (byte 0x{data[offset]:02x} at offset {offset})"
        ) from exc
    if not text.strip():
        raise InputError(f"{path}: file is empty")
    return text
