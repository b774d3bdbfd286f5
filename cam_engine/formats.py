"""Document formats: which one a file is, and its text as paragraphs separated by blank
lines (the unit the chunker packs).

Text and Markdown are read as they are; PDF through pypdf; HTML in one pass of the
standard library's parser, keeping the text a reader sees (htmltext.py); EPUB as its
XHTML documents in reading order through the same HTML code. A file that cannot be
read raises ``InputError`` with one line naming the file and the reason; so does one
whose reading would cost more than its ``Limits`` allow (bytes, items of markup,
content streams, text), checked as early as the format lets it be.
"""

from __future__ import annotations

import bisect
import io
import posixpath
import re
import zipfile
import zlib
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import unquote
from xml.etree import ElementTree

from cam_engine import conversation, htmltext
from cam_engine.errors import InputError
from cam_engine.format_registry import (  # noqa: F401 (the registry's API is here too)
    DocumentFormat,
    Extracted,
    FileBytes,
    detect_format,
    format_named,
    format_names,
    register_format,
    unregister_format,
)
from cam_engine.htmltext import Budget
from cam_engine.limits import Limits, refusal

_DEFAULT = Limits()

ZIP = b"PK\x03\x04"
# The EPUB container spec puts an uncompressed "mimetype" entry first, so its name and
# content sit at fixed offsets behind the zip's 30-byte local header.
_EPUB_MIMETYPE = b"mimetypeapplication/epub+zip"
_HTML_START = re.compile(
    rb"\s*(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html)\b", re.I | re.S
)


# The registry is imported from here (register_format, format_names, format_named,
# unregister_format, DocumentFormat, FileBytes, Extracted): this module registers the
# built-in formats at its end, before any caller can look one up.


def detect(path: Path, data: bytes) -> str:
    """The name of a file's format, from its first bytes and its extension
    (``format_registry.detect_format``; the built-in formats are registered at the end
    of this module).

    A PDF or EPUB signature in the content wins over the name (``notes.txt`` that is a
    PDF is read as one: as text it could only fail as binary). A ``.pdf`` or ``.epub``
    name without that signature is refused by its reader, naming the file. Otherwise
    the extension decides: ``.txt`` and ``.md`` stay text even when they hold markup.
    A ``.jsonl`` file whose first line is a turn (an object with a ``speaker``), or a
    ``.json`` file with LoCoMo's ``session_N`` lists, is a conversation
    (``conversation.py``). A file with another or no extension is HTML when it starts
    like an HTML page, text otherwise.
    """
    return detect_format(path, data).name


# --- PDF ----------------------------------------------------------------------------------


def pdf_text(path: Path, data: bytes, *, limits: Limits = _DEFAULT) -> str:
    """Each page's text, pages separated by blank lines."""
    return "\n\n".join(text for _, text in pdf_pages(path, data, limits=limits))


def pdf_pages(path: Path, data: bytes, *, limits: Limits = _DEFAULT) -> list[tuple[int, str]]:
    """(page number from 1, its text stripped) of each page that has text: joined by
    blank lines they are ``pdf_text``, and ``page_starts`` says where each begins.
    Within ``limits`` (``_PdfWork``): content-stream bytes decoded and parsed, text per
    page and in all."""
    if not data.startswith(b"%PDF-"):
        raise InputError(f"{path}: not a PDF (no %PDF- header)")
    import pypdf  # here, not at the top: only a PDF needs it (0.15 s to import)

    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        # An owner password alone (printing or copying restricted) leaves the empty user
        # password, which every viewer tries: so do we.
        if reader.is_encrypted and not reader.decrypt(""):
            raise InputError(f"{path}: the PDF is encrypted (it needs a password)")
        work = _PdfWork(path, limits)
        pages = [work.page_text(page) for page in reader.pages]
    except InputError:
        raise
    except Exception as exc:  # pypdf raises many kinds on malformed files
        raise InputError(f"{path}: cannot read the PDF ({_one_line(exc)})") from exc
    found = [(number, p.strip()) for number, p in enumerate(pages, start=1) if p.strip()]
    if not found:
        count = f"{len(pages)} page{'' if len(pages) == 1 else 's'}"
        raise InputError(f"{path}: no text in the PDF ({count}: scanned images? run OCR first)")
    return found


# Operators that can show text: a content stream without any gives none, unparsed.
# ("Do" draws a form, which may; a quote may be inside a string: then it is parsed.)
_SHOWS_TEXT = re.compile(rb"T[jJ]|Do|['\"]")


class _PdfWork:
    """What reading one PDF may still cost, counted before each piece of work:

    - bytes of content streams decoded (``Limits.unpacked_bytes``), each stream once:
      a small compressed stream can inflate to megabytes;
    - bytes of content streams parsed for text (``Limits.pdf_content_bytes``), each
      time one is parsed: a page's streams, and a form each time a page draws it.
      pypdf parses about a megabyte a second; a stream without text operators is not
      parsed (nor counted);
    - characters of text, per page (``Limits.page_chars``: pypdf's cost grows with the
      square of a page's text) and in all (``Limits.text_chars``).

    Pages that share their content streams and resources share their text: it is
    extracted once (a PDF of a thousand pages drawing one stream costs one page).
    """

    def __init__(self, path: Path, limits: Limits) -> None:
        self.path, self.limits = path, limits
        self.unpacked_left = limits.unpacked_bytes
        self.parse_left = limits.pdf_content_bytes
        self.text_left = limits.text_chars
        self.decoded: set[int] = set()  # ids of the streams decoded (and counted)
        self.texts: dict[tuple[object, ...], str] = {}  # by _page_key
        # pypdf logs and skips what fails inside a form, our refusals too: kept here,
        # raised again at the next operator and after the page.
        self.refused: InputError | None = None

    def page_text(self, page: Any) -> str:
        key = _page_key(page)
        text = self.texts.get(key) if key is not None else None
        if text is None:
            text = self._extract(page)
            if key is not None:
                self.texts[key] = text
        self.text_left -= len(text)
        if self.text_left < 0:
            raise refusal(f"{self.path}: more text than that", "text_chars", self.limits.text_chars)
        return text

    def _extract(self, page: Any) -> str:
        streams = _streams(page.get("/Contents"))
        sizes, shows_text = 0, False
        for stream in streams:
            data = self.decode(stream)
            sizes += len(data)
            shows_text = shows_text or _SHOWS_TEXT.search(data) is not None
        if not shows_text:
            return ""
        self.parse(sizes)
        forms = _Forms(page, self)
        chars = 0

        def on_operator(operator: bytes, operands: list[Any], *_: object) -> None:
            if self.refused is not None:
                raise self.refused
            if operator == b"Do" and operands:  # pypdf parses the form next, again
                self.parse(forms.size(str(operands[0])))

        def on_text(text: str, *_: object) -> None:
            nonlocal chars
            chars += len(text)
            self._check_page(chars)

        text: str = page.extract_text(visitor_operand_before=on_operator, visitor_text=on_text)
        if self.refused is not None:
            raise self.refused
        self._check_page(len(text))
        return text

    def _check_page(self, chars: int) -> None:
        if chars > self.text_left:
            self._refuse(f"{self.path}: more text than that", "text_chars")
        if chars > self.limits.page_chars:
            self._refuse(f"{self.path}: a page with more text than that", "page_chars")

    def _refuse(self, what: str, limit: str) -> NoReturn:
        self.refused = refusal(what, limit, getattr(self.limits, limit))
        raise self.refused

    def decode(self, stream: Any) -> bytes:
        data: bytes = stream.get_data()  # pypdf keeps it: counted once
        if id(stream) not in self.decoded:
            self.decoded.add(id(stream))
            self.unpacked_left -= len(data)
            if self.unpacked_left < 0:
                self._refuse(
                    f"{self.path}: its content streams decoded (a zip bomb?)", "unpacked_bytes"
                )
        return data

    def parse(self, size: int) -> None:
        self.parse_left -= size
        if self.parse_left < 0:
            self._refuse(f"{self.path}: its content streams parsed for text", "pdf_content_bytes")


class _Forms:
    """The form XObjects a page can draw, by name: those of its resources and, in
    turn, of theirs. Sizing one decodes it, which pypdf would do to draw it anyway."""

    def __init__(self, page: Any, work: _PdfWork) -> None:
        self.page, self.work = page, work
        self.by_name: dict[str, list[Any]] | None = None

    def size(self, name: str) -> int:
        """The decoded size of the largest form called ``name`` (a form's own
        resources may reuse a name: which one is drawn, only the parser knows)."""
        if self.by_name is None:
            self.by_name = _forms(self.page.get("/Resources"))
        return max((len(self.work.decode(f)) for f in self.by_name.get(name, ())), default=0)


def _forms(resources: Any) -> dict[str, list[Any]]:
    from pypdf.generic import StreamObject

    found: dict[str, list[Any]] = {}
    seen: set[int] = set()
    todo = [resources]
    while todo:
        held = _resolved(todo.pop())
        if not isinstance(held, dict) or id(held) in seen:
            continue
        seen.add(id(held))
        xobjects = _resolved(held.get("/XObject"))
        if not isinstance(xobjects, dict):
            continue
        for name, value in xobjects.items():
            xobject = _resolved(value)
            is_form = isinstance(xobject, StreamObject) and xobject.get("/Subtype") == "/Form"
            if is_form and id(xobject) not in seen:
                seen.add(id(xobject))
                found.setdefault(str(name), []).append(xobject)
                todo.append(xobject.get("/Resources"))
    return found


def _streams(contents: Any) -> list[Any]:
    """The content streams of a page's /Contents (one stream, or an array of them)."""
    from pypdf.generic import StreamObject

    contents = _resolved(contents)
    if isinstance(contents, StreamObject):
        return [contents]
    if isinstance(contents, list):
        return [s for s in map(_resolved, contents) if isinstance(s, StreamObject)]
    return []


def _page_key(page: Any) -> tuple[object, ...] | None:
    """What a page's text depends on: its content streams (as objects: pypdf holds one
    per indirect reference), its resources (as they are written, references and all:
    pages often repeat them inline) and its rotation. None when the resources are too
    large to compare cheaply (the page is then extracted on its own)."""
    contents = dict.get(page, "/Contents")
    if isinstance(contents, list):
        streams: object = tuple(map(_identity, contents))
    else:
        streams = _identity(contents)
    resources = _written(dict.get(page, "/Resources"), [_KEY_ITEMS])
    if resources is None:
        return None
    return streams, resources, repr(page.get("/Rotate"))


_KEY_ITEMS = 1000  # objects of a page's resources compared at most


def _identity(value: Any) -> object:
    from pypdf.generic import IndirectObject

    if isinstance(value, IndirectObject):
        return ("ref", value.idnum, value.generation)
    return ("object", id(value))  # one object of the reader's, alive while it is


def _written(value: Any, left: list[int]) -> object:
    """``value`` as written in the file, indirect references as references; None past
    ``left[0]`` objects."""
    from pypdf.generic import IndirectObject, StreamObject

    left[0] -= 1
    if left[0] < 0:
        return None
    if isinstance(value, IndirectObject | StreamObject):  # (pypdf may have resolved it)
        return _identity(value)
    if isinstance(value, dict):
        items = []
        for key, item in value.items():
            shape = _written(item, left)
            if shape is None:
                return None
            items.append((str(key), shape))
        return ("dict", tuple(sorted(items)))
    if isinstance(value, list):
        shapes = [_written(item, left) for item in value]
        return None if None in shapes else ("list", tuple(shapes))
    return ("value", repr(value))


def _resolved(value: Any) -> Any:
    return value.get_object() if hasattr(value, "get_object") else value


def page_starts(pages: list[tuple[int, str]]) -> list[tuple[int, int]]:
    """(page number, offset where its text starts in ``pdf_text``) for each page."""
    starts, offset = [], 0
    for number, text in pages:
        starts.append((number, offset))
        offset += len(text) + 2  # the blank line between pages
    return starts


def pages_of(starts: list[tuple[int, int]], start: int, end: int) -> tuple[int, int] | None:
    """The first and last page that text[start:end] is on, from ``page_starts``."""
    if not starts:
        return None
    offsets = [offset for _, offset in starts]
    first = max(bisect.bisect_right(offsets, start) - 1, 0)
    last = max(bisect.bisect_right(offsets, max(end - 1, start)) - 1, 0)
    return starts[first][0], starts[last][0]


# --- HTML ---------------------------------------------------------------------------------


def html_text(
    markup: bytes, *, page: bool = True, limits: Limits = _DEFAULT, source: str = "the HTML"
) -> str:
    """The text of an HTML document, one paragraph per block element (htmltext.py says
    which elements are dropped and how the text is laid out), decoded by the charset
    it declares or, failing that, the one its bytes fit (BeautifulSoup's UnicodeDammit).
    Refused, naming ``source``, past ``limits.markup_items`` or ``limits.text_chars``."""
    return htmltext.html_text(decoded_html(markup, source), Budget(source, limits), page=page)


def decoded_html(markup: bytes, source: str) -> str:
    """``markup`` as text: its byte order mark, its declared charset (``<meta charset>``,
    an XML declaration), else UTF-8, else Windows-1252, as BeautifulSoup reads it."""
    from bs4.dammit import UnicodeDammit  # here: only HTML and EPUB need it (0.13 s)

    text = UnicodeDammit(markup, is_html=True).unicode_markup
    if text is None:
        raise InputError(f"{source}: cannot decode the HTML")
    return text


# --- EPUB ---------------------------------------------------------------------------------
# Read with zipfile and ElementTree (whose expat refuses entity expansion bombs) rather
# than EbookLib: that is AGPL-licensed and brings lxml, and all we need is the OPF
# spine's reading order and each document's text, which html_text already gives.

_NS = {
    "c": "urn:oasis:names:tc:opendocument:xmlns:container",
    "opf": "http://www.idpf.org/2007/opf",
    "enc": "http://www.w3.org/2001/04/xmlenc#",
}


# A zip entry can inflate a thousandfold, so a small EPUB could unpack gigabytes into
# memory (a zip bomb). Books are far smaller: the EPUB entries read here are text and
# markup (images are never read), a few MB even for the longest novels, and more text
# than this would take hours to embed anyway. The cap (``Limits.unpacked_bytes``) covers
# every entry read.
_UNPACK_CHUNK_BYTES = 1 << 20  # read and counted this much at a time


MAX_PACKAGE_BYTES = 4 << 20


class _Unpacker:
    """Reads an EPUB's entries within ``limit`` bytes unpacked in all. An entry whose
    header declares more than is left is refused before it is inflated; the bytes read
    are counted too, in bounded chunks, in case a header understates its entry."""

    def __init__(self, book: zipfile.ZipFile, path: Path, limits: Limits) -> None:
        self.book, self.path, self.limits = book, path, limits
        self.left = limits.unpacked_bytes

    def package(self, name: str) -> ElementTree.Element:
        """A package file (container.xml, the OPF, encryption.xml) parsed, if it holds at
        most ``MAX_PACKAGE_BYTES``: ElementTree builds its whole tree, tens of bytes of
        memory per byte of XML, and these files list a book's parts in kilobytes."""
        info = self.book.getinfo(name)
        if info.file_size > MAX_PACKAGE_BYTES:
            raise InputError(
                f"{self.path}: refused: its package file {name} is over "
                f"{MAX_PACKAGE_BYTES >> 20} MiB (a book's are kilobytes)"
            )
        data = self.read(name)
        if len(data) > MAX_PACKAGE_BYTES:  # a header that understates its entry
            raise InputError(f"{self.path}: refused: its package file {name} is over its size")
        return ElementTree.fromstring(data)

    def read(self, name: str) -> bytes:
        info = self.book.getinfo(name)
        if info.file_size > self.left:
            raise self._too_big()
        parts = []
        with self.book.open(info) as entry:
            while chunk := entry.read(_UNPACK_CHUNK_BYTES):
                self.left -= len(chunk)
                if self.left < 0:
                    raise self._too_big()
                parts.append(chunk)
        return b"".join(parts)

    def _too_big(self) -> InputError:
        return refusal(
            f"{self.path}: its documents unpacked (a zip bomb?)",
            "unpacked_bytes",
            self.limits.unpacked_bytes,
        )


def epub_text(path: Path, data: bytes, *, limits: Limits = _DEFAULT) -> str:
    """The text of an EPUB's documents in spine (reading) order, separated by blank
    lines. Within ``limits``: bytes unpacked, items of markup and characters of text,
    each counted over all the documents together."""
    if not data.startswith(ZIP):
        raise InputError(f"{path}: not an EPUB (not a zip archive)")
    budget = Budget(str(path), limits)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as book:
            unpack = _Unpacker(book, path, limits)
            spine = _spine(unpack)
            if _encrypted(unpack) & set(spine):
                raise InputError(f"{path}: the EPUB is encrypted (DRM)")
            texts = [
                htmltext.html_text(decoded_html(unpack.read(name), str(path)), budget, page=False)
                for name in spine
            ]
    except InputError:
        raise
    except (
        zipfile.BadZipFile,
        KeyError,
        ElementTree.ParseError,
        ValueError,
        zlib.error,  # a damaged deflate stream
        NotImplementedError,  # an unknown compression method or zip version
        RuntimeError,  # an entry encrypted with a zip password
        EOFError,  # an entry cut short
    ) as exc:
        raise InputError(f"{path}: broken EPUB ({_one_line(exc)})") from exc
    text = "\n\n".join(t for t in texts if t)
    if not text:
        raise InputError(f"{path}: no text in the EPUB's documents")
    return text


def _spine(book: _Unpacker) -> list[str]:
    """Archive names of the documents in reading order, from the package (OPF) file."""
    container = book.package("META-INF/container.xml")
    rootfile = container.find(".//c:rootfile", _NS)
    if rootfile is None or not rootfile.get("full-path"):
        raise ValueError("container.xml names no package file")
    opf_path = rootfile.get("full-path", "")
    package = book.package(opf_path)
    folder = posixpath.dirname(opf_path)
    manifest = {
        item.get("id"): posixpath.normpath(posixpath.join(folder, unquote(item.get("href", ""))))
        for item in package.iterfind("opf:manifest/opf:item", _NS)
    }
    spine = [
        manifest.get(ref.get("idref")) for ref in package.iterfind("opf:spine/opf:itemref", _NS)
    ]
    if not spine or None in spine:
        raise ValueError("the package's spine is empty or names items not in its manifest")
    return [name for name in spine if name is not None]


def _encrypted(book: _Unpacker) -> set[str]:
    """Archive names encrypted per META-INF/encryption.xml (fonts often are, harmlessly)."""
    try:
        listing = book.package("META-INF/encryption.xml")
    except KeyError:
        return set()
    return {
        posixpath.normpath(unquote(ref.get("URI", "")))
        for ref in listing.iterfind(".//enc:CipherReference", _NS)
    }


# --- Project Gutenberg --------------------------------------------------------------------

# The markers anywhere, not only at the start of a line: a book flattened to one line
# (or re-wrapped) keeps them mid-line. Mid-line, a marker is only one with its closing
# "***" (a sentence may mention "*** START OF ..."); at the start of a line, the line.
_MARKER = r"\*{{3}}\s*{word} OF (?:THE|THIS) PROJECT GUTENBERG E-?(?:BOOK|TEXT)\b"
_GUTENBERG_START = re.compile(
    rf"{_MARKER.format(word='START')}[^*\n]*\*{{3}}|^{_MARKER.format(word='START')}.*$",
    re.I | re.M,
)
_GUTENBERG_END = re.compile(
    rf"{_MARKER.format(word='END')}[^*\n]*\*{{3}}|^{_MARKER.format(word='END')}", re.I | re.M
)


def strip_gutenberg(text: str) -> str:
    """The book without Project Gutenberg's header (up to its START line) and licence
    (from its END line on), each cut only where its marker is present: otherwise the
    title page and licence would be the memory's most central summaries."""
    start, end = gutenberg_bounds(text)
    return text[start:end]


def gutenberg_bounds(text: str) -> tuple[int, int]:
    """Where ``strip_gutenberg`` cuts ``text``: the book is text[start:end]."""
    start, end = 0, len(text)
    marker = _GUTENBERG_START.search(text)
    if marker is not None:
        start = marker.end()
    marker = _GUTENBERG_END.search(text, start)
    if marker is not None:
        end = marker.start()
    return start, end


_SPACES = re.compile(r"\s+")


def _one_line(exc: BaseException) -> str:
    # str() of a KeyError is the repr of its message, quotes and all
    message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
    return _SPACES.sub(" ", str(message)).strip() or type(exc).__name__


# --- The built-in formats, registered as any other --------------------------------------
# In this order: signatures are tried in it (PDF, EPUB, then a conversation's), and so
# are guesses (a zip that is no EPUB refused, then an HTML page's start).


def _read_pdf(file: FileBytes) -> Extracted:
    pages = pdf_pages(file.path, file.data, limits=file.limits)
    text = "\n\n".join(page for _, page in pages)
    return Extracted(text, tuple(page_starts(pages)))


def _read_epub(file: FileBytes) -> str:
    return epub_text(file.path, file.data, limits=file.limits)


def _read_html(file: FileBytes) -> str:
    text = html_text(file.data, limits=file.limits, source=str(file.path))
    if not text:
        raise InputError(f"{file.path}: no text in the HTML (scripts, styles or navigation only)")
    return text


def _read_conversation(file: FileBytes) -> Extracted:
    talk = conversation.read_conversation(file.path, file.text())
    text = talk.plain_text()
    if len(text) > file.limits.text_chars:
        raise refusal(f"{file.path}: more text than that", "text_chars", file.limits.text_chars)
    return Extracted(text, conversation=talk)


def _pdf_head(path: Path, head: bytes) -> None:
    if not head.startswith(b"%PDF-"):
        raise InputError(f"{path}: not a PDF (no %PDF- header)")


def _epub_head(path: Path, head: bytes) -> None:
    if not head.startswith(ZIP):
        raise InputError(f"{path}: not an EPUB (not a zip archive)")


def _is_epub(path: Path, data: bytes) -> bool:
    return data.startswith(ZIP) and data[30:58] == _EPUB_MIMETYPE


def _zip_not_epub(path: Path, data: bytes) -> bool:
    """Never a guess: a zip that is not an EPUB (whose signature came first) is refused."""
    if data.startswith(ZIP):
        raise InputError(f"{path}: a zip archive, not an EPUB (no application/epub+zip)")
    return False


def _is_conversation(path: Path, data: bytes) -> bool:
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return conversation.looks_like_turns(data)
    return suffix == ".json" and conversation.looks_like_locomo(data)


register_format(
    DocumentFormat(
        "text",
        (".txt", ".md", ".markdown"),
        lambda file: file.text(),
        reads_text=True,
    )
)
register_format(
    DocumentFormat(
        "pdf",
        (".pdf",),
        _read_pdf,
        signature=lambda path, data: data.startswith(b"%PDF-"),
        head_check=_pdf_head,
    )
)
register_format(
    DocumentFormat(
        "epub",
        (".epub",),
        _read_epub,
        signature=_is_epub,
        guess=_zip_not_epub,
        head_check=_epub_head,
    )
)
register_format(
    DocumentFormat(
        "html",
        (".html", ".htm", ".xhtml"),
        _read_html,
        guess=lambda path, data: _HTML_START.match(data[:4096]) is not None,
    )
)
# No extension of its own: a .jsonl or .json file is one only when its content says so.
register_format(
    DocumentFormat(
        "conversation",
        (),
        _read_conversation,
        signature=_is_conversation,
        reads_text=True,
        reads_stdin=False,
    )
)
