"""The document formats a file can be read as, by name: each one's extensions, content
signature and reader, registered with ``register_format``.

``formats.py`` registers the built-in ones (text, pdf, epub, html, conversation) through
the same call a new format uses; import ``register_format`` from there, so that they are
registered first. Detection, ``cam ingest --format`` and ``sources.load_document`` all
ask this registry; nothing else names a format.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cam_engine.conversation import Conversation
from cam_engine.errors import ConfigError
from cam_engine.limits import Limits

# A file that no format claims (by signature, extension or guess) is read as this one.
DEFAULT_FORMAT = "text"


@dataclass(frozen=True)
class FileBytes:
    """A file handed to a reader: its name (for errors), its bytes (already within
    ``limits.file_bytes``), the limits its reading must keep to, and ``text()``: the
    bytes decoded in the caller's encoding, refused as one line naming the file when
    binary, undecodable or empty (what a text file is read by)."""

    path: Path
    data: bytes
    limits: Limits
    decode: Callable[[], str]

    def text(self) -> str:
        return self.decode()


@dataclass(frozen=True)
class Extracted:
    """What a reader returns when plain text is not all: a PDF's page starts, or a
    conversation's turns (its ``text`` then its plain rendering, chunked by turns)."""

    text: str
    # (page number from 1, offset in ``text`` where the page starts), for each page.
    page_starts: tuple[tuple[int, int], ...] = ()
    conversation: Conversation | None = None


Reader = Callable[[FileBytes], "str | Extracted"]
# Whether a file (its name, its first bytes: at least 64 KiB, or the whole file) is of
# the format. A guess may instead raise InputError for a file it knows cannot be read.
Check = Callable[[Path, bytes], bool]
# Refuses, with InputError naming the file, a first block the reader would refuse.
HeadCheck = Callable[[Path, bytes], None]


@dataclass(frozen=True)
class DocumentFormat:
    """One format: how a file is recognized as it and how its text is read.

    ``read`` turns the file into blank-line-separated paragraphs (a ``str``), or an
    ``Extracted``; it raises ``InputError`` with one line naming the file for one it
    cannot read, and keeps to ``FileBytes.limits``. What it returns then goes through
    what every document does (byte order mark and Project Gutenberg's header and licence
    cut, chunking).
    """

    name: str
    extensions: tuple[str, ...]  # lower case, with the dot: (".csv",)
    read: Reader
    # Checked before any extension: a match wins over the file's name (a PDF's %PDF-).
    signature: Check | None = None
    # Checked only for a file whose extension no format claims (an HTML page's start).
    guess: Check | None = None
    # Its bytes are text in the caller's encoding: a binary first block is refused
    # before the rest is read.
    reads_text: bool = False
    head_check: HeadCheck | None = None
    # False: stdin cannot be read as this format (otherwise stdin is read as text).
    reads_stdin: bool = True


_FORMATS: dict[str, DocumentFormat] = {}
_BY_EXTENSION: dict[str, DocumentFormat] = {}


def register_format(document_format: DocumentFormat) -> DocumentFormat:
    """Adds a format; a ``ConfigError`` naming the clash for a name or an extension
    already registered (nothing is registered then)."""
    name = document_format.name
    if not name or name == "auto" or name != name.strip():
        raise ConfigError(f"format name {name!r}: give a word such as csv ('auto' is taken)")
    if name in _FORMATS:
        raise ConfigError(f"format {name!r} is already registered")
    for extension in document_format.extensions:
        if not extension.startswith(".") or extension != extension.lower() or len(extension) < 2:
            raise ConfigError(
                f"format {name!r}: extension {extension!r} must be lower case, after a dot (.csv)"
            )
        owner = _BY_EXTENSION.get(extension)
        if owner is not None:
            raise ConfigError(
                f"format {name!r}: extension {extension} is already format {owner.name!r}'s"
            )
    if len(set(document_format.extensions)) != len(document_format.extensions):
        raise ConfigError(f"format {name!r}: an extension is given twice")
    _FORMATS[name] = document_format
    for extension in document_format.extensions:
        _BY_EXTENSION[extension] = document_format
    return document_format


def unregister_format(name: str) -> None:
    """Removes a format and its extensions (a test's, or a plugin's being unloaded)."""
    removed = _FORMATS.pop(name, None)
    if removed is None:
        raise ConfigError(f"format {name!r} is not registered")
    for extension in removed.extensions:
        del _BY_EXTENSION[extension]


def format_names() -> tuple[str, ...]:
    """The registered formats' names, in the order they were registered."""
    return tuple(_FORMATS)


def format_named(name: str) -> DocumentFormat:
    """The format called ``name``; a ``ConfigError`` listing the known ones otherwise."""
    found = _FORMATS.get(name)
    if found is None:
        raise ConfigError(f"unknown document format {name!r} (known: {', '.join(_FORMATS)})")
    return found


def detect_format(path: Path, data: bytes) -> DocumentFormat:
    """The format of a file, from its first bytes and its extension: the first format
    whose signature matches (in the order they were registered); else the one that
    claims the extension (any case); else the first whose guess matches; else text."""
    for candidate in _FORMATS.values():
        if candidate.signature is not None and candidate.signature(path, data):
            return candidate
    by_name = _BY_EXTENSION.get(path.suffix.lower())
    if by_name is not None:
        return by_name
    for candidate in _FORMATS.values():
        if candidate.guess is not None and candidate.guess(path, data):
            return candidate
    return _FORMATS[DEFAULT_FORMAT]
