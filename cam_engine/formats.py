"""Document formats: which one a file is, and its text as paragraphs separated by blank
lines (the unit the chunker packs).

Text and Markdown are read as they are; PDF through pypdf; HTML through BeautifulSoup,
keeping the text a reader sees; EPUB as its XHTML documents in reading order through
the same HTML code. A file that cannot be read raises ``InputError`` with one line
naming the file and the reason.
"""

from __future__ import annotations

import bisect
import io
import posixpath
import re
import zipfile
import zlib
from pathlib import Path
from typing import Literal
from urllib.parse import unquote
from xml.etree import ElementTree

from cam_engine.errors import InputError

Format = Literal["text", "pdf", "epub", "html"]

EXTENSIONS: dict[str, Format] = {
    ".txt": "text",
    ".md": "text",
    ".markdown": "text",
    ".pdf": "pdf",
    ".epub": "epub",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
}

_ZIP = b"PK\x03\x04"
# The EPUB container spec puts an uncompressed "mimetype" entry first, so its name and
# content sit at fixed offsets behind the zip's 30-byte local header.
_EPUB_MIMETYPE = b"mimetypeapplication/epub+zip"
_HTML_START = re.compile(
    rb"\s*(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html)\b", re.I | re.S
)


def detect(path: Path, data: bytes) -> Format:
    """The format of a file, from its first bytes and its extension.

    A PDF or EPUB signature in the content wins over the name (``notes.txt`` that is a
    PDF is read as one: as text it could only fail as binary). A ``.pdf`` or ``.epub``
    name without that signature is refused by its reader, naming the file. Otherwise
    the extension decides: ``.txt`` and ``.md`` stay text even when they hold markup.
    A file with another or no extension is HTML when it starts like an HTML page,
    text otherwise.
    """
    if data.startswith(b"%PDF-"):
        return "pdf"
    if data.startswith(_ZIP) and data[30:58] == _EPUB_MIMETYPE:
        return "epub"
    by_name = EXTENSIONS.get(path.suffix.lower())
    if by_name is not None:
        return by_name
    if data.startswith(_ZIP):
        raise InputError(f"{path}: a zip archive, not an EPUB (no application/epub+zip)")
    return "html" if _HTML_START.match(data[:4096]) else "text"


# --- PDF ----------------------------------------------------------------------------------


def pdf_text(path: Path, data: bytes) -> str:
    """Each page's text, pages separated by blank lines."""
    return "\n\n".join(text for _, text in pdf_pages(path, data))


def pdf_pages(path: Path, data: bytes) -> list[tuple[int, str]]:
    """(page number from 1, its text stripped) of each page that has text: joined by
    blank lines they are ``pdf_text``, and ``page_starts`` says where each begins."""
    if not data.startswith(b"%PDF-"):
        raise InputError(f"{path}: not a PDF (no %PDF- header)")
    import pypdf  # here, not at the top: only a PDF needs it (0.15 s to import)

    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        # An owner password alone (printing or copying restricted) leaves the empty user
        # password, which every viewer tries: so do we.
        if reader.is_encrypted and not reader.decrypt(""):
            raise InputError(f"{path}: the PDF is encrypted (it needs a password)")
        pages = [page.extract_text() for page in reader.pages]
    except InputError:
        raise
    except Exception as exc:  # pypdf raises many kinds on malformed files
        raise InputError(f"{path}: cannot read the PDF ({_one_line(exc)})") from exc
    found = [(number, p.strip()) for number, p in enumerate(pages, start=1) if p.strip()]
    if not found:
        count = f"{len(pages)} page{'' if len(pages) == 1 else 's'}"
        raise InputError(f"{path}: no text in the PDF ({count}: scanned images? run OCR first)")
    return found


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

_NOT_TEXT = ("head", "script", "style", "noscript", "template", "nav")
_PAGE_CHROME = ("aside", "header", "footer")
_BLOCKS = (
    *("p", "div", "section", "article", "main", "body", "blockquote", "pre", "address"),
    *("h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "dl", "dt", "dd"),
    *("table", "tr", "caption", "figure", "figcaption", "hr", "aside", "header", "footer"),
)
# Private-use characters as markers: no document text holds them, and (unlike the ASCII
# separators) they are not white space, so collapsing the source's spaces keeps them.
_PARAGRAPH, _LINE = "\ue000", "\ue001"
_SPACES = re.compile(r"\s+")


def html_text(markup: bytes, *, page: bool = True) -> str:
    """The text of an HTML document, one paragraph per block element.

    Scripts, styles and navigation are dropped; on a web ``page`` also asides and the
    page's own header and footer (those of an article or section hold its title and
    byline, and stay). An EPUB chapter is not a page: its header is the chapter title.
    """
    from bs4 import BeautifulSoup  # here: only HTML and EPUB need it (0.13 s to import)

    soup = BeautifulSoup(markup, "html.parser")  # bytes: it reads the declared charset
    for tag in soup.find_all(_NOT_TEXT):
        _drop(tag)
    if page:
        for tag in soup.find_all(_PAGE_CHROME):
            if tag.name == "aside" or tag.find_parent(("article", "section")) is None:
                _drop(tag)
    for tag in soup.find_all("pre"):
        for line in tag.find_all(string=True):
            line.replace_with(line.replace("\n", _LINE))
    for tag in soup.find_all("br"):
        tag.replace_with(_LINE)
    for tag in soup.find_all(("td", "th")):
        tag.append(" ")  # cells of a row read as one line
    for tag in soup.find_all(_BLOCKS):
        tag.insert_before(_PARAGRAPH)
        tag.append(_PARAGRAPH)
    text = _SPACES.sub(" ", soup.get_text())  # white space in HTML source is not text
    paragraphs = (p.replace(_LINE, "\n") for p in text.split(_PARAGRAPH))
    lines = ("\n".join(filter(None, (s.strip() for s in p.split("\n")))) for p in paragraphs)
    return "\n\n".join(filter(None, lines))


def _drop(tag: object) -> None:
    from bs4 import Tag

    if isinstance(tag, Tag) and not tag.decomposed:  # inside one dropped already
        tag.decompose()


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
# than this would take hours to embed anyway. The cap covers every entry read.
MAX_EPUB_UNPACKED_BYTES = 256 << 20
_UNPACK_CHUNK_BYTES = 1 << 20  # read and counted this much at a time


class _Unpacker:
    """Reads an EPUB's entries within ``limit`` bytes unpacked in all. An entry whose
    header declares more than is left is refused before it is inflated; the bytes read
    are counted too, in bounded chunks, in case a header understates its entry."""

    def __init__(self, book: zipfile.ZipFile, path: Path, limit: int) -> None:
        self.book, self.path, self.left, self.limit = book, path, limit, limit

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
        return InputError(
            f"{self.path}: refused: the EPUB unpacks to more than {self.limit / (1 << 20):g} "
            "MiB of documents (a zip bomb?)"
        )


def epub_text(path: Path, data: bytes, *, max_unpacked: int = MAX_EPUB_UNPACKED_BYTES) -> str:
    """The text of an EPUB's documents in spine (reading) order, separated by blank lines.
    At most ``max_unpacked`` bytes are unpacked from it (``MAX_EPUB_UNPACKED_BYTES``)."""
    if not data.startswith(_ZIP):
        raise InputError(f"{path}: not an EPUB (not a zip archive)")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as book:
            unpack = _Unpacker(book, path, max_unpacked)
            spine = _spine(unpack)
            if _encrypted(unpack) & set(spine):
                raise InputError(f"{path}: the EPUB is encrypted (DRM)")
            texts = [html_text(unpack.read(name), page=False) for name in spine]
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
    container = ElementTree.fromstring(book.read("META-INF/container.xml"))
    rootfile = container.find(".//c:rootfile", _NS)
    if rootfile is None or not rootfile.get("full-path"):
        raise ValueError("container.xml names no package file")
    opf_path = rootfile.get("full-path", "")
    package = ElementTree.fromstring(book.read(opf_path))
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
        listing = ElementTree.fromstring(book.read("META-INF/encryption.xml"))
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


def _one_line(exc: BaseException) -> str:
    # str() of a KeyError is the repr of its message, quotes and all
    message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
    return _SPACES.sub(" ", str(message)).strip() or type(exc).__name__
