"""Reading input documents: files, folders and stdin, with one-line errors for bad input."""

from __future__ import annotations

import codecs
import errno
import hashlib
import os
import stat
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from cam_engine import formats
from cam_engine.conversation import Conversation
from cam_engine.errors import ConfigError, InputError
from cam_engine.limits import MIB, Limits, refusal

STDIN = "-"
UTF8 = "utf-8"
_DEFAULT = Limits()


@dataclass(frozen=True)
class OptionNames:
    """How an error names the option that would fix it, in the caller's own words: a
    keyword argument of ``Memory`` or of an MCP tool (``API_OPTIONS``), or a flag of
    the CLI (``CLI_OPTIONS``)."""

    flags: bool = False

    def name(self, option: str) -> str:
        """``option`` as a keyword (``document_prefix``) or as a flag (``--document-prefix``)."""
        return f"--{_flag(option)}" if self.flags else f"`{option}`"

    def given(self, option: str, value: str) -> str:
        return f"--{_flag(option)} {value}" if self.flags else f"{option}={value!r}"


def _flag(option: str) -> str:
    return option.replace("_", "-")


API_OPTIONS = OptionNames()
CLI_OPTIONS = OptionNames(flags=True)


# A document id is stored on every node of the document, and printed in every
# citation: ids are names (a path inside a folder at most), never text.
MAX_DOCUMENT_ID_CHARS = 1024


def check_document_id(doc_id: str) -> str:
    """``doc_id`` if it can name a document; one-line InputError otherwise."""
    if not doc_id.strip():
        raise InputError("the document id is empty: name the document")
    if len(doc_id) > MAX_DOCUMENT_ID_CHARS:
        raise InputError(
            f"document id {doc_id[:40]!r}...: {len(doc_id):,} characters; an id names a "
            f"document in at most {MAX_DOCUMENT_ID_CHARS:,}"
        )
    return doc_id


@dataclass(frozen=True)
class Source:
    """One document to ingest: a file, or stdin (``path`` is None)."""

    doc_id: str
    path: Path | None

    @property
    def label(self) -> str:
        return str(self.path) if self.path is not None else "<stdin>"


def expand_paths(
    paths: list[str],
    *,
    document: str | None = None,
    document_prefix: str | None = None,
    options: OptionNames = API_OPTIONS,
    max_files: int = _DEFAULT.folder_files,
) -> Iterator[Source | InputError]:
    """Sources for the given paths; folders give their files (sorted, hidden ones skipped).
    A folder of more than ``max_files`` files is one error, before any file is read.

    A file's document id is its name, or its path inside the folder it was found in,
    so two runs over the same tree name documents the same way. ``document_prefix``
    goes before those ids, joined by "/" (``notes`` or ``notes/``: ``notes/a.md``).
    """
    if document is not None and (len(paths) != 1 or Path(paths[0]).is_dir()):
        yield InputError(
            f"{options.name('document')} names one document: give exactly one file or '-'"
        )
        return
    prefix = _prefix(document, document_prefix, paths, options)
    if isinstance(prefix, InputError):
        yield prefix
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
                files = sorted(folder_files(path, max_files))
            except InputError as exc:
                yield InputError(str(exc), raw)
                continue
            except OSError as exc:
                yield InputError(f"{raw}: cannot read the folder ({exc})", raw)
                continue
            except RecursionError:  # pathlib walks a tree recursively
                yield InputError(f"{raw}: the folder is nested too deep to walk", raw)
                continue
            if not files:
                yield InputError(f"{raw}: folder has no files", raw)
            for f in files:
                yield _unnamed(f) or Source(prefix + f.relative_to(path).as_posix(), f)
        elif path.is_file():
            yield _unnamed(path) or Source(document or prefix + path.name, path)
        else:
            yield InputError(f"{raw}: no such file or folder", raw)


def _unnamed(path: Path) -> InputError | None:
    """The error for a file whose name is not UTF-8 (Python holds its bytes as lone
    surrogates, which no store, log or terminal takes), naming it with those bytes
    escaped; None for any other file. The file is skipped, the others read."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        shown = os.fsencode(path).decode("utf-8", "backslashreplace")
        return InputError(
            f"{shown}: the file name is not valid UTF-8 (rename the file to ingest it)", shown
        )
    return None


def folder_files(folder: Path, max_files: int = _DEFAULT.folder_files) -> Iterator[Path]:
    """The files under ``folder`` that ``cam ingest FOLDER`` reads (hidden ones skipped);
    a refusal once there are more than ``max_files``, before the walk goes further."""
    count = 0
    for path in folder.rglob("*"):
        if path.is_file() and not any(
            part.startswith(".") for part in path.relative_to(folder).parts
        ):
            count += 1
            if count > max_files:
                raise refusal(f"{folder}: more files than that", "folder_files", max_files)
            yield path


def _prefix(
    document: str | None, document_prefix: str | None, paths: list[str], options: OptionNames
) -> str | InputError:
    """What goes before each file's id: the prefix and "/", or nothing."""
    if document_prefix is None:
        return ""
    flag = options.name("document_prefix")
    stem = document_prefix.strip().rstrip("/")
    if not stem:
        return InputError(f"{flag} is empty: give a name such as notes (ids become notes/a.md)")
    if document is not None:
        return InputError(
            f"{flag} names the documents of folders and files; {options.name('document')} "
            "names one document: give one of them"
        )
    if STDIN in paths:
        return InputError(
            f"{flag} is for files and folders: name stdin with {options.name('document')}"
        )
    return stem + "/"


def unique_sources(
    items: Iterable[Source | InputError], options: OptionNames = API_OPTIONS
) -> list[Source | InputError]:
    """``items`` with a file given twice (a folder and a file in it) kept once; an
    ``InputError`` naming both paths when two others would be the same document, as
    the second would replace the first."""
    kept: list[Source | InputError] = []
    seen: dict[str, Source] = {}
    for item in items:
        if isinstance(item, Source):
            first = seen.get(item.doc_id)
            if first is not None:
                if _same_file(first, item):
                    continue
                raise InputError(
                    f"{first.label} and {item.label} would both be document {item.doc_id!r} "
                    f"(the second would replace the first): ingest one of them with "
                    f"{options.name('document')}, or each folder with "
                    f"{options.name('document_prefix')}"
                )
            seen[item.doc_id] = item
        kept.append(item)
    return kept


def _same_file(a: Source, b: Source) -> bool:
    if a.path is None or b.path is None:
        return False  # stdin twice: two streams, not one file
    try:
        return a.path.resolve() == b.path.resolve()
    except OSError:
        return False


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
    # A conversation's turns and sessions (``text`` is then its plain rendering: ingest
    # chunks the turns, turn_chunking.py).
    conversation: Conversation | None = None


def read_document(
    path: Path,
    *,
    encoding: str = UTF8,
    options: OptionNames = API_OPTIONS,
    allow: AllowedRoots | None = None,
    limits: Limits = _DEFAULT,
) -> tuple[str, str]:
    """(text, sha256) of a text, Markdown, PDF, EPUB or HTML file: ``load_document``'s
    text and hash."""
    document = load_document(path, encoding=encoding, options=options, allow=allow, limits=limits)
    return document.text, document.sha256


def load_document(
    path: Path,
    *,
    encoding: str = UTF8,
    options: OptionNames = API_OPTIONS,
    allow: AllowedRoots | None = None,
    limits: Limits = _DEFAULT,
    file_format: str | None = None,
) -> DocumentText:
    """The text of a text, Markdown, PDF, EPUB, HTML or conversation file, or of any
    format registered (its reader in ``format_registry``, as ``formats.detect`` says),
    cleaned as ``clean_text`` does (no BOM, no Project Gutenberg header and licence),
    with a PDF's page starts; InputError naming the file otherwise.
    ``encoding`` is a text file's (PDF, EPUB and HTML say their own). With ``allow``,
    the file opened must lie under its roots (``open_document``).

    The hash is of the file's bytes, not of the text taken out of them: a file keeps its
    hash whatever the extraction does, so re-ingesting it is still recognized (its
    chunks, not its hash, then say whether the text changed), and a text file keeps the
    hash memories recorded before there were other formats. ``text_hash`` is the text's.

    ``limits`` bound what the file may cost: its size is checked before it is read, its
    first block (its format, a binary file's NULs) before the rest, and each format's
    reader counts its own work (``formats``). ``file_format`` reads the file as that
    format whatever ``formats.detect`` would say.
    """
    data = _read_opened(path, allow, limits, lambda head: check_head(path, head, encoding))
    reader = formats.format_named(file_format) if file_format else formats.detect_format(path, data)
    read = reader.read(
        formats.FileBytes(path, data, limits, lambda: _decode(path, data, encoding, options))
    )
    found = read if isinstance(read, formats.Extracted) else formats.Extracted(read)
    sha = hashlib.sha256(data).hexdigest()
    if found.conversation is not None:  # its turns are chunked, its text kept as it is
        return DocumentText(found.text, sha, conversation=found.conversation)
    # clean_text's steps, keeping where the book starts: citations count from the start
    # of the file's text (a BOM dropped).
    text = found.text.removeprefix("\ufeff")
    cut, end = formats.gutenberg_bounds(text)
    text = text[cut:end]
    if not text.strip():
        raise InputError(f"{path}: no text between its Project Gutenberg START and END lines")
    return DocumentText(text, sha, cut, found.page_starts)


def clean_text(text: str) -> str:
    """What every document's text goes through, from a file or given as text: no byte
    order mark, no Project Gutenberg header and licence (``formats.strip_gutenberg``)."""
    return formats.strip_gutenberg(text.removeprefix("\ufeff"))


def text_hash(text: str) -> str:
    """sha256 of a text with its white space folded and its Unicode composed (NFC):
    the same text from a PDF, an HTML page and a .txt file has one hash."""
    normal = " ".join(unicodedata.normalize("NFC", text).split())
    return hashlib.sha256(normal.encode("utf-8", "surrogatepass")).hexdigest()


def check_encoding(encoding: str, options: OptionNames = API_OPTIONS) -> str:
    """The codec's canonical name; ConfigError for one Python does not know, or one
    that does not turn bytes into text (rot13, zlib_codec, hex_codec)."""
    try:
        codec = codecs.lookup(encoding)
    except LookupError:
        codec = None
    # CPython marks its bytes-to-bytes and str-to-str codecs as not text encodings.
    if codec is None or not getattr(codec, "_is_text_encoding", True):
        raise ConfigError(
            f"{options.name('encoding')} {encoding!r}: unknown text encoding "
            "(give a codec name such as utf-8, latin-1 or cp1252)"
        )
    return codec.name


def read_text(path: Path, *, limits: Limits = _DEFAULT) -> tuple[str, str]:
    """(text, sha256) of a UTF-8 text file, as it is; InputError naming the file otherwise."""
    data = _read_opened(path, None, limits, lambda head: _refuse_binary(path, head, UTF8))
    return _decode(path, data), hashlib.sha256(data).hexdigest()


HEAD_BYTES = 64 << 10  # the first block: enough for every format's signature


def _read_opened(
    path: Path,
    allow: AllowedRoots | None,
    limits: Limits,
    accept_head: Callable[[bytes], None],
) -> bytes:
    """The bytes of the file ``open_document`` opens, read by ``read_bounded``."""
    with open_document(path, allow) as file:
        try:
            return read_bounded(file, path, limits, accept_head)
        except OSError as exc:
            raise InputError(f"{path}: cannot read ({exc.strerror})") from exc


@dataclass(frozen=True)
class AllowedRoots:
    """The folders (and files) a reader may open, each with its symlinks resolved:
    ``open_document`` refuses a file that does not lie under one of them once opened."""

    roots: tuple[Path, ...]

    @classmethod
    def of(cls, paths: Iterable[str | Path]) -> AllowedRoots:
        return cls(tuple(Path(p).expanduser().resolve() for p in paths))

    def permits(self, resolved: Path) -> bool:
        """Whether a path with no symlinks left in it lies under a root."""
        return any(resolved == root or resolved.is_relative_to(root) for root in self.roots)

    def __str__(self) -> str:
        return ", ".join(str(root) for root in self.roots)


def open_document(path: Path, allow: AllowedRoots | None = None) -> BinaryIO:
    """``path`` opened for reading, a regular file; InputError naming it otherwise.

    With ``allow``, what is checked is the file opened, not its name, so that a file
    swapped for a link out of the roots after a caller checked it (while an ingest
    waited its turn) is refused, never read: the name is resolved and must lie under a
    root; the resolved name is opened without following a final symlink; and the open
    descriptor must still be that file (same device and inode) and really lie under a
    root (on Linux, its path as /proc gives it, which no symlink can fake; a hard link
    made inside a root is that root's file, as for any path check).
    Callers read from what this returns and close it.
    """
    if "\x00" in str(path):
        raise InputError(f"{str(path)!r}: a path cannot hold a NUL character", str(path))
    target = _resolved(path) if allow is not None else path
    if allow is not None and not allow.permits(target):
        raise InputError(f"{path}: outside the allowed folders ({allow})", str(path))
    nofollow = getattr(os, "O_NOFOLLOW", 0) if allow is not None else 0
    # O_NONBLOCK: a FIFO swapped in must not hang the open (it is refused below).
    nonblock = getattr(os, "O_NONBLOCK", 0)
    flags = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(target, flags | nofollow | nonblock)
    except OSError as exc:
        if nofollow and exc.errno in (errno.ELOOP, errno.EMLINK):
            raise _changed(path, allow) from None  # the resolved name is a link now
        raise InputError(f"{path}: cannot read ({exc.strerror})", str(path)) from exc
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            raise InputError(f"{path}: not a regular file", str(path))
        if allow is not None:
            real = _opened_path(fd, opened, target)
            if real is None or not allow.permits(real):
                raise _changed(path, allow)
        if nonblock:
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python 3.11, 3.12)
        raise InputError(f"{path}: cannot resolve its links ({exc})", str(path)) from exc


def _opened_path(fd: int, opened: os.stat_result, named: Path) -> Path | None:
    """The real path of the file open on ``fd``, which ``named`` resolved to when
    opened: None when ``named`` is not that file now (same device and inode), else its
    path as Linux's /proc says, or ``named``'s real path where there is no /proc."""
    real = Path(os.path.realpath(named))
    try:
        now = os.stat(real)
    except OSError:
        return None
    if (now.st_dev, now.st_ino) != (opened.st_dev, opened.st_ino):
        return None
    try:
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:  # no /proc (macOS, Windows): the inode check above stands alone
        return real


def _changed(path: Path, allow: AllowedRoots | None) -> InputError:
    return InputError(
        f"{path}: changed after it was checked: it now leads outside the allowed folders "
        f"({allow}) or to another file; not read",
        str(path),
    )


def read_bounded(
    file: BinaryIO,
    path: Path,
    limits: Limits,
    accept_head: Callable[[bytes], None] = lambda head: None,
) -> bytes:
    """The bytes of an open ``file`` (named ``path`` in errors), read only when its size
    (of the open file, not of whatever the name points at now) is within
    ``limits.file_bytes``, and past its first block only when ``accept_head`` accepts
    that block. A file that grows while it is read is cut at the limit, and refused."""
    size = os.fstat(file.fileno()).st_size
    if size > limits.file_bytes:
        raise refusal(f"{path}: {size / MIB:.1f} MiB", "file_bytes", limits.file_bytes)
    head = file.read(HEAD_BYTES)
    accept_head(head)  # raises InputError to refuse
    data = head
    if len(head) == HEAD_BYTES:  # not the end yet
        data += file.read(max(limits.file_bytes + 1 - len(head), 0))
    if len(data) > limits.file_bytes:
        raise refusal(f"{path}: more than that", "file_bytes", limits.file_bytes)
    return data


def check_head(path: Path, head: bytes, encoding: str) -> None:
    """Refuse a file from its first block: one its format's reader would refuse for its
    signature, or a text file that is binary."""
    reader = formats.detect_format(path, head)
    if reader.head_check is not None:
        reader.head_check(path, head)
    if reader.reads_text:
        _refuse_binary(path, head, encoding)


def _refuse_binary(path: Path, data: bytes, encoding: str) -> None:
    # UTF-16 and UTF-32 have NULs in plain English: those encodings are taken at their
    # word.
    if b"\x00" in data and not codecs.lookup(encoding).name.startswith(("utf-16", "utf-32")):
        raise InputError(f"{path}: looks binary (NUL bytes), not a text document")


def _decode(
    path: Path, data: bytes, encoding: str = UTF8, options: OptionNames = API_OPTIONS
) -> str:
    # Anywhere in the file, as on stdin: a NUL past the first block is no text either.
    _refuse_binary(path, data, encoding)
    utf8 = codecs.lookup(encoding).name == UTF8
    bom = len(codecs.BOM_UTF8) if utf8 and data.startswith(codecs.BOM_UTF8) else 0
    try:
        text = data[bom:].decode(encoding)
    except UnicodeDecodeError as exc:
        offset = bom + exc.start
        raise InputError(
            f"{path}: not valid {'UTF-8' if utf8 else encoding} (byte 0x{data[offset]:02x} "
            f"at offset {offset}); {encoding_hint(options) if utf8 else 'check its encoding'}"
        ) from exc
    if not text.strip():
        raise InputError(f"{path}: file is empty")
    return text


def encoding_hint(options: OptionNames = API_OPTIONS) -> str:
    """What to do about text that is not UTF-8, naming the option in the caller's words."""
    return f"give {options.given('encoding', 'latin-1')} if that is its encoding"
