"""Document formats: PDF, EPUB, HTML and Markdown files built in the test, read into text;
files that cannot be read refused in one line; Project Gutenberg's wrapping cut."""

from __future__ import annotations

import hashlib
import io
import os
import re
import sys
import tracemalloc
import zipfile
from collections.abc import Callable
from pathlib import Path

import pypdf
import pytest
from click.testing import CliRunner

from cam_engine import Environment, Memory
from cam_engine.chunking import chunk_document
from cam_engine.cli.main import cli
from cam_engine.embed import HashingEmbedder
from cam_engine.errors import InputError
from cam_engine.formats import detect, epub_text, html_text, strip_gutenberg
from cam_engine.limits import Limits
from cam_engine.sources import HEAD_BYTES, check_head, read_bounded, read_document, read_text
from cam_engine.store.sqlite import SqliteStore
from tests.conftest import shared_file
from tests.support.documents import IMAGE_PAGE, epub_bytes, pdf_bytes, pdf_of, text_page, xhtml

PAGE_ONE = ("The first page speaks of whales.", "A second line (in brackets).")
PAGE_TWO = ("Page two is about ships.",)
PDF_TEXT = (
    "The first page speaks of whales.\nA second line (in brackets).\n\nPage two is about ships."
)

HTML = b"""<!DOCTYPE html>
<html><head><title>Site title</title><style>p { color: red }</style>
<script>var tracking = "SCRIPT TEXT";</script></head>
<body>
<header><a href="/">Site logo</a> <span>Sign in</span></header>
<nav><ul><li><a href="/a">Home</a></li><li>About us</li></ul></nav>
<main><article>
<header><h1>The   Whale</h1><p>by Herman</p></header>
<p>Call me Ishmael. Some years
ago &mdash; never mind how long &amp; precisely.</p>
<!-- a comment -->
<p>Line one<br>line two</p>
<table><tr><td>cell a</td><td>cell b</td></tr></table>
<ul><li>first item</li><li>second <em>item</em></li></ul>
</article>
<aside>Related: other whales</aside></main>
<footer>Copyright footer</footer>
<noscript>Enable JS</noscript>
</body></html>"""
HTML_TEXT = (
    "The Whale\n\nby Herman\n\n"
    "Call me Ishmael. Some years ago \u2014 never mind how long & precisely.\n\n"
    "Line one\nline two\n\ncell a cell b\n\nfirst item\n\nsecond item"
)
HTML_CHROME = ("Site title", "color", "SCRIPT TEXT", "Site logo", "Sign in", "Home", "About us")
HTML_CHROME += ("Related", "Copyright", "Enable JS", "a comment")

CHAPTERS = {
    "nav.xhtml": xhtml("Contents", '<nav epub:type="toc"><ol><li>Chapter Two</li></ol></nav>'),
    "text/ch 2.xhtml": xhtml(
        "Two", "<section><header><h2>Chapter Two</h2></header><p>The second chapter.</p></section>"
    ),
    "text/ch1.xhtml": xhtml(
        "One", "<h2>Chapter One</h2><p>The first &amp; best\nchapter.</p><aside>A note.</aside>"
    ),
}
SPINE = ["nav.xhtml", "text/ch1.xhtml", "text/ch 2.xhtml"]
EPUB_TEXT = (
    "Chapter One\n\nThe first & best chapter.\n\nA note.\n\nChapter Two\n\nThe second chapter."
)


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def encrypted(pdf: bytes, user_password: str) -> bytes:
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(pdf)))
    writer.encrypt(user_password, owner_password="owner", algorithm="AES-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def refusal(path: Path) -> str:
    with pytest.raises(InputError) as info:
        read_document(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    return message


# --- PDF ----------------------------------------------------------------------------------


def test_pdf_pages_become_paragraphs_and_the_hash_is_of_the_bytes(tmp_path: Path) -> None:
    data = pdf_bytes(text_page(*PAGE_ONE), text_page(*PAGE_TWO))
    path = write(tmp_path / "whales.pdf", data)
    assert read_document(path) == (PDF_TEXT, hashlib.sha256(data).hexdigest())


def test_a_pdf_restricted_by_an_owner_password_only_is_read(tmp_path: Path) -> None:
    path = write(tmp_path / "restricted.pdf", encrypted(pdf_bytes(text_page(*PAGE_TWO)), ""))
    assert read_document(path)[0] == "Page two is about ships."


@pytest.mark.parametrize(
    ("name", "data", "words"),
    [
        ("locked.pdf", encrypted(pdf_bytes(text_page(*PAGE_ONE)), "secret"), "encrypted"),
        ("scan.pdf", pdf_bytes(IMAGE_PAGE, IMAGE_PAGE), "no text in the PDF (2 pages"),
        ("cut.pdf", pdf_bytes(text_page(*PAGE_ONE))[:200], "cannot read the PDF"),
        ("page.pdf", HTML, "not a PDF"),  # a web error page saved under the PDF's name
    ],
)
def test_unreadable_pdfs_are_refused_in_one_line(
    tmp_path: Path, name: str, data: bytes, words: str
) -> None:
    assert words in refusal(write(tmp_path / name, data))


# --- HTML and Markdown --------------------------------------------------------------------


def test_html_keeps_the_text_a_reader_sees_in_paragraphs(tmp_path: Path) -> None:
    text, _ = read_document(write(tmp_path / "page.html", HTML))
    assert text == HTML_TEXT
    for chrome in HTML_CHROME:
        assert chrome not in text
    # The chunker packs these paragraphs whole (each is within its budget here).
    chunks = chunk_document("page", text, 16)
    assert len(chunks) > 1
    assert [p for c in chunks for p in c.text.split("\n\n")] == text.split("\n\n")


def test_html_of_scripts_only_has_no_text(tmp_path: Path) -> None:
    path = write(tmp_path / "app.htm", b"<html><body><script>app()</script><nav>Menu</nav>")
    assert "no text in the HTML" in refusal(path)


def test_markdown_is_read_as_it_is(tmp_path: Path) -> None:
    source = "# Notes\n\nSome *emphasis* and <b>inline html</b>.\n\n- a list item\n"
    path = write(tmp_path / "notes.md", source.encode())
    assert read_document(path)[0] == source


# --- EPUB ---------------------------------------------------------------------------------


def test_epub_is_read_in_spine_order_without_its_navigation(tmp_path: Path) -> None:
    # Manifest order (nav, ch 2, ch1) and file-name order differ from the spine's.
    path = write(tmp_path / "book.epub", epub_bytes(CHAPTERS, SPINE))
    assert read_document(path)[0] == EPUB_TEXT


def test_unreadable_epubs_are_refused_in_one_line(tmp_path: Path) -> None:
    book = epub_bytes(CHAPTERS, SPINE)
    drm = (
        '<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
        'xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData><enc:CipherData>'
        '<enc:CipherReference URI="OEBPS/text/ch1.xhtml"/></enc:CipherData></enc:EncryptedData>'
        "</encryption>"
    )
    bare = io.BytesIO()
    with zipfile.ZipFile(bare, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip")
    for name, data, words in (
        ("cut.epub", book[: len(book) // 2], "broken EPUB (File is not a zip file)"),
        ("text.epub", b"just text", "not an EPUB (not a zip archive)"),
        ("bare.epub", bare.getvalue(), "broken EPUB (There is no item named 'META-INF/"),
        ("drm.epub", epub_bytes(CHAPTERS, SPINE, extra={"META-INF/encryption.xml": drm}), "DRM"),
    ):
        assert words in refusal(write(tmp_path / name, data)), name


LINE = "All work and no play makes Jack a dull boy. "
MIB = 1 << 20


def bomb(chapters: int, size: int) -> bytes:
    """An EPUB of ``chapters`` chapters of ``size`` bytes of one repeated sentence each:
    every entry deflates to a few KB."""
    body = "<p>" + LINE * (size // len(LINE)) + "</p>"
    documents = {f"ch{i}.xhtml": xhtml(f"Chapter {i}", body) for i in range(chapters)}
    return epub_bytes(documents, list(documents))


def declaring(book: bytes, name: str, size: int) -> bytes:
    """``book`` with the central directory's record of ``name`` declaring ``size``
    bytes unpacked (what zipfile trusts), the entry itself unchanged."""
    data, start = bytearray(book), 0
    while (start := book.find(b"PK\x01\x02", start + 1)) != -1:
        length = int.from_bytes(book[start + 28 : start + 30], "little")
        if book[start + 46 : start + 46 + length] == name.encode():
            data[start + 24 : start + 28] = size.to_bytes(4, "little")
            return bytes(data)
    raise AssertionError(f"no {name} in the central directory")


def test_an_epub_that_unpacks_past_the_cap_is_refused_in_one_line(tmp_path: Path) -> None:
    book = bomb(1, 4 * MIB)  # 4 MiB of text in about 10 KB
    assert len(book) < 64 << 10
    path = write(tmp_path / "bomb.epub", book)
    refused = (
        f"{path}: its documents unpacked (a zip bomb?): refused, over the limit of 1 MiB "
        "(raise it with CAM_MAX_UNPACKED_MB)"
    )
    with pytest.raises(InputError, match=re.escape(refused)):
        epub_text(path, book, limits=Limits(unpacked_bytes=MIB))
    big = Limits(unpacked_bytes=8 * MIB)
    assert len(epub_text(path, book, limits=big)) > 4 * MIB - 1000  # the cap, only
    # The cap is on all the entries read together, not on each.
    book = bomb(3, MIB // 2)
    with pytest.raises(InputError, match=re.escape(refused)):
        epub_text(path, book, limits=Limits(unpacked_bytes=MIB))
    assert (
        epub_text(path, book, limits=Limits(unpacked_bytes=2 * MIB)).count(LINE.strip())
        > 3 * 10_000
    )


def test_an_epub_whose_header_lies_about_its_size_unpacks_no_more_than_it_declares(
    tmp_path: Path,
) -> None:
    book = bomb(1, 4 * MIB)
    # Declaring more than the cap: refused before anything is inflated, by read_document
    # with the default cap.
    cap = Limits().unpacked_bytes
    path = write(tmp_path / "big.epub", declaring(book, "OEBPS/ch0.xhtml", cap + 1))
    assert refusal(path).endswith(
        f"over the limit of {cap / MIB:g} MiB (raise it with CAM_MAX_UNPACKED_MB)"
    )
    # Declaring less: zipfile stops at the declared size, and the entry's checksum no
    # longer matches (the cap counts the bytes read as well, should a reader not stop).
    path = write(tmp_path / "small.epub", declaring(book, "OEBPS/ch0.xhtml", 1000))
    assert refusal(path) == f"{path}: broken EPUB (Bad CRC-32 for file 'OEBPS/ch0.xhtml')"


# --- Which format -------------------------------------------------------------------------


def test_format_is_chosen_by_content_then_extension(tmp_path: Path) -> None:
    pdf, book = pdf_bytes(text_page(*PAGE_TWO)), epub_bytes(CHAPTERS, SPINE)
    assert detect(tmp_path / "notes.txt", pdf) == "pdf"  # a binary signature wins
    assert detect(tmp_path / "book.zip", book) == "epub"
    assert detect(tmp_path / "page.md", HTML) == "text"  # .md and .txt stay text
    assert detect(tmp_path / "page.TXT", HTML) == "text"
    assert detect(tmp_path / "page", HTML) == "html"  # no extension: sniffed
    assert detect(tmp_path / "page.log", b"<?xml version='1.0'?>\n<html><p>x</p>") == "html"
    assert detect(tmp_path / "notes", b"plain <b>text</b>") == "text"
    assert read_document(write(tmp_path / "saved", pdf))[0] == "Page two is about ships."


def test_a_zip_that_is_not_an_epub_is_refused(tmp_path: Path) -> None:
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        archive.writestr("word/document.xml", "<w/>")
    assert "zip archive, not an EPUB" in refusal(write(tmp_path / "report.docx", data.getvalue()))


# --- Project Gutenberg --------------------------------------------------------------------


def test_gutenberg_header_and_licence_are_cut_only_at_their_markers() -> None:
    book = (
        "The Project Gutenberg EBook of Tale\r\n\r\n"
        "*** START OF THIS PROJECT GUTENBERG EBOOK TALE ***\r\n\r\nOnce upon a time.\r\n\r\n"
        "*** END OF THIS PROJECT GUTENBERG EBOOK TALE ***\r\n\r\nLicence terms."
    )
    assert strip_gutenberg(book).strip() == "Once upon a time."
    assert strip_gutenberg(book.split("*** END")[0]).strip() == "Once upon a time."
    plain = "A note on the *** START OF THE PROJECT GUTENBERG EBOOK line, mid-sentence."
    assert strip_gutenberg(plain) == plain


def test_gutenberg_wrapping_is_cut_from_a_real_book() -> None:
    book = shared_file("haystacks/gutenberg/pg84.txt")
    raw, sha = read_text(book)
    text, same_sha = read_document(book)
    assert same_sha == sha  # the hash stays that of the file
    assert "Release date:" in raw
    assert "Release date:" not in text and "START OF THE PROJECT" not in text
    assert "FULL PROJECT GUTENBERG LICENSE" in raw and "GUTENBERG LICENSE" not in text
    assert text.lstrip().startswith("Frankenstein;")
    assert text.rstrip().endswith("lost in darkness and distance.")
    first = chunk_document("pg84", text, 200)[0].text
    assert "Credits:" not in first and "Frankenstein;" in first


# --- cam ingest of a folder ---------------------------------------------------------------


def test_ingest_of_a_folder_reads_every_format_and_reports_the_bad_files(tmp_path: Path) -> None:
    folder = tmp_path / "library"
    folder.mkdir()
    write(folder / "whales.pdf", pdf_bytes(text_page(*PAGE_ONE), text_page(*PAGE_TWO)))
    write(folder / "book.epub", epub_bytes(CHAPTERS, SPINE))
    write(folder / "page.html", HTML)
    write(folder / "notes.md", b"# Notes\n\nMarkdown is text.\n")
    write(folder / "locked.pdf", encrypted(pdf_bytes(text_page(*PAGE_ONE)), "secret"))
    write(folder / "scan.pdf", pdf_bytes(IMAGE_PAGE))
    write(folder / "broken.epub", epub_bytes(CHAPTERS, SPINE)[:300])
    env = {"CAM_STORE": str(tmp_path / "cli.db"), "CAM_EMBED_MODEL": "hashing:64"}

    result = CliRunner().invoke(cli, ["ingest", str(folder)], env=env)

    assert result.exit_code == 1, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 3
    for error, (name, reason) in zip(
        errors,
        [
            ("broken.epub", "broken EPUB"),
            ("locked.pdf", "the PDF is encrypted"),
            ("scan.pdf", "no text"),
        ],
        strict=True,
    ):
        assert error.startswith(f"error: {folder / name}: {reason}"), error
    assert "ingested 4 new chunks" in result.output
    store = SqliteStore(tmp_path / "cli.db", "default")
    assert sorted(d.id for d in store.documents()) == [
        "book.epub",
        "notes.md",
        "page.html",
        "whales.pdf",
    ]
    chunks = list(store.nodes_at_level(0))
    texts = {c.doc_id: c.text for c in chunks}
    assert len(chunks) == len(texts) == 4  # one chunk each: small documents
    assert texts["whales.pdf"] == PDF_TEXT and texts["book.epub"] == EPUB_TEXT
    store.close()

    again = CliRunner().invoke(cli, ["ingest", str(folder)], env=env)
    assert again.exit_code == 1 and "nothing new" in again.output  # same files, same hashes


# --- What reading a file may cost -----------------------------------------------------------


def refused_over(path: Path, limits: Limits, variable: str) -> str:
    """The one-line refusal of ``path`` under ``limits``, naming ``variable``."""
    with pytest.raises(InputError) as info:
        read_document(path, limits=limits)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    assert "over the limit of" in message and f"(raise it with {variable})" in message
    return message


def calls(work: Callable[[], object]) -> int:
    """How many Python and C functions ``work`` calls: a count, where a test of time
    would be a race."""
    count = 0

    def profile(frame: object, event: str, arg: object) -> None:
        nonlocal count
        count += event in ("call", "c_call")

    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(None)
    return count


def test_deeply_nested_html_costs_linear_work() -> None:
    def nested(depth: int) -> bytes:
        return b"<div>" * depth + b"deep" + b"</div>" * depth

    assert html_text(nested(2000)) == "deep"
    small, large = calls(lambda: html_text(nested(2000))), calls(lambda: html_text(nested(4000)))
    assert large < 2.3 * small  # twice the depth, twice the work: not four times
    # Unclosed: the open elements pile up, one each, and are closed at the end.
    assert html_text(b"<div><span>" * 5000 + b"end") == "end"


def test_an_epub_of_tiny_paragraphs_is_read_without_a_tree() -> None:
    paragraphs = 100_000  # 800 KB of <p>a</p>: one element each
    book = epub_bytes({"ch.xhtml": xhtml("One", "<p>a</p>" * paragraphs)}, ["ch.xhtml"])
    path = Path("tiny.epub")
    tracemalloc.start()
    try:
        text = epub_text(path, book)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert text.count("a") == paragraphs
    # The text (200 K characters) and the input, not an object per element.
    assert peak < 24 * MIB, peak
    refused = (
        "tiny.epub: more markup than that: refused, over the limit of 1,000 items of markup "
        "(raise it with CAM_MAX_MARKUP_ITEMS)"
    )
    with pytest.raises(InputError, match=re.escape(refused)):
        epub_text(path, book, limits=Limits(markup_items=1000))
    with pytest.raises(InputError, match="CAM_MAX_TEXT_MB"):
        epub_text(path, book, limits=Limits(text_chars=paragraphs))


def test_html_past_the_limits_is_refused_in_one_line(tmp_path: Path) -> None:
    path = write(tmp_path / "page.html", HTML)
    assert read_document(path, limits=Limits(markup_items=200))[0] == HTML_TEXT
    assert "more markup" in refused_over(path, Limits(markup_items=50), "CAM_MAX_MARKUP_ITEMS")
    refused_over(path, Limits(text_chars=40), "CAM_MAX_TEXT_MB")
    # Stray end tags and comments count too: each costs the parser as much as a tag.
    path = write(tmp_path / "stray.html", b"<p>x</p>" + b"</b><!---->" * 1000)
    refused_over(path, Limits(markup_items=1000), "CAM_MAX_MARKUP_ITEMS")


def test_a_file_past_the_size_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "huge.txt"
    with path.open("wb") as file:
        file.truncate(3 << 30)  # 3 GiB, sparse: no disk, no time
    message = refused_over(path, Limits(), "CAM_MAX_FILE_MB")
    assert message == (
        f"{path}: 3072.0 MiB: refused, over the limit of 256 MiB (raise it with CAM_MAX_FILE_MB)"
    )
    with path.open("rb") as file:
        with pytest.raises(InputError):
            read_bounded(file, path, Limits())
        assert file.tell() == 0  # not a byte read


def test_a_binary_file_is_refused_from_its_first_block(tmp_path: Path) -> None:
    path = tmp_path / "data.txt"
    with path.open("wb") as file:
        file.write(b"\x00\x01binary")
        file.truncate(4 * MIB)
    assert "looks binary" in refusal(path)
    with path.open("rb") as file:
        with pytest.raises(InputError, match="looks binary"):
            read_bounded(file, path, Limits(), lambda head: check_head(path, head, "utf-8"))
        assert file.tell() == HEAD_BYTES  # the rest never read
    # A PDF by name whose first block is not one: refused there too.
    path = write(tmp_path / "fake.pdf", b"<html>" + b" " * (HEAD_BYTES * 2))
    with path.open("rb") as file:
        with pytest.raises(InputError, match="not a PDF"):
            read_bounded(file, path, Limits(), lambda head: check_head(path, head, "utf-8"))
        assert file.tell() == HEAD_BYTES


def long_page(size: int, mark: str = "") -> bytes:
    """A content stream of about ``size`` bytes of text lines."""
    line = text_page(f"{mark}All work and no play makes Jack a dull boy.")
    body = line.removeprefix(b"BT /F1 12 Tf 16 TL 72 720 Td ").removesuffix(b" ET")
    return b"BT /F1 12 Tf 16 TL 72 720 Td " + (body + b" ") * (size // len(body)) + b"ET"


def shared_content_pdf(pages: int, content: bytes) -> bytes:
    """A PDF of ``pages`` pages that all draw one content stream, resources inline."""
    reader = pypdf.PdfReader(io.BytesIO(pdf_bytes(content)))
    writer = pypdf.PdfWriter()
    for _ in range(pages):
        writer.add_page(reader.pages[0])  # each page a copy, its /Contents one object
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_pdf_pages_sharing_one_content_stream_extract_it_once(tmp_path: Path) -> None:
    content = long_page(20_000)
    path = write(tmp_path / "shared.pdf", shared_content_pdf(200, content))
    # 200 pages of 20 KB each would be 4 MB to parse: the stream is parsed once.
    text, _ = read_document(path, limits=Limits(pdf_content_bytes=64 << 10))
    pages = text.split("\n\n")
    assert len(pages) == 200 and len(set(pages)) == 1 and pages[0].count("Jack") > 300
    # Their text still counts: 200 copies of it.
    refused_over(path, Limits(text_chars=100 * len(pages[0])), "CAM_MAX_TEXT_MB")


def test_pdf_content_streams_past_the_limits_are_refused_in_one_line(tmp_path: Path) -> None:
    pages = [long_page(20_000, f"{i} ") for i in range(20)]
    path = write(tmp_path / "long.pdf", pdf_bytes(*pages))
    assert len(read_document(path, limits=Limits(pdf_content_bytes=MIB))[0]) > 20 * 15_000
    message = refused_over(path, Limits(pdf_content_bytes=100_000), "CAM_MAX_PDF_CONTENT_MB")
    assert "content streams parsed" in message
    message = refused_over(path, Limits(page_chars=5000), "CAM_MAX_PAGE_CHARS")
    assert "a page with more text" in message
    refused_over(path, Limits(text_chars=100_000), "CAM_MAX_TEXT_MB")
    refused_over(path, Limits(unpacked_bytes=100_000), "CAM_MAX_UNPACKED_MB")


def a_folder_with_a_latin1_name(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    write(folder / "tea.md", b"# Tea\n\nA plain note about tea.\n")
    # A name written in Latin-1: not UTF-8, so Python holds it with a lone surrogate.
    write(Path(os.fsdecode(bytes(folder) + b"/caf\xe9.md")), b"# Cafe\n\nA note.\n")
    return folder


def test_a_file_name_that_is_not_utf8_is_one_error_and_the_folder_is_read(
    tmp_path: Path,
) -> None:
    folder = a_folder_with_a_latin1_name(tmp_path)
    shown = f"{folder}/caf\\xe9.md"
    no_env = Environment.from_env({})
    with Memory.open(
        tmp_path / "m.db", "m", embedder=HashingEmbedder(64), environment=no_env
    ) as memory:
        report = memory.ingest([folder])
        assert [d.id for d in memory.store.documents()] == ["tea.md"]
    assert [(e.source, e.message) for e in report.errors] == [
        (shown, f"{shown}: the file name is not valid UTF-8 (rename the file to ingest it)")
    ]
    env = {"CAM_STORE": str(tmp_path / "cli.db"), "CAM_EMBED_MODEL": "hashing:64"}
    result = CliRunner().invoke(cli, ["ingest", str(folder)], env=env)
    assert result.exit_code == 1, result.output  # as for any file that is not read
    assert "Traceback" not in result.output
    assert f"{shown}: the file name is not valid UTF-8" in result.output
    assert "ingested 1 new chunk" in result.output


def test_the_limits_of_the_environment_reach_the_readers(tmp_path: Path) -> None:
    folder = tmp_path / "library"
    folder.mkdir()
    write(folder / "page.html", HTML)
    write(folder / "notes.md", b"# Notes\n\nMarkdown is text.\n")
    env = {
        "CAM_STORE": str(tmp_path / "cli.db"),
        "CAM_EMBED_MODEL": "hashing:64",
        "CAM_MAX_MARKUP_ITEMS": "50",
    }
    result = CliRunner().invoke(cli, ["ingest", str(folder)], env=env)
    assert result.exit_code == 1, result.output
    assert (
        f"error: {folder / 'page.html'}: more markup than that: refused, over the limit of "
        "50 items of markup (raise it with CAM_MAX_MARKUP_ITEMS)"
    ) in result.output
    assert "ingested 1 new chunk" in result.output


def test_a_construct_never_closed_ends_the_html() -> None:
    # The file ends inside the tag, comment or declaration: as HTML has it, dropped
    # (reading the rest as text from each "<" in it took time quadratic in its length).
    for never_closed in (b"<a x='", b"<a", b"</", b"<!--", b"<?", b"<!x"):
        assert html_text(b"<p>kept</p>" + never_closed * 5000) == "kept", never_closed
    assert html_text(b"<p>kept</p><b>bold <i") == "kept\n\nbold"


def test_a_form_drawn_many_times_counts_each_time(tmp_path: Path) -> None:
    form = long_page(20_000)
    font = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
    draws = b"q /Fm1 Do Q " * 50  # 600 bytes of page: 50 times 20 KB parsed
    path = write(
        tmp_path / "forms.pdf",
        pdf_of(
            [
                b"<< /Type /Catalog /Pages 2 0 R >>",
                b"<< /Type /Pages /Kids [6 0 R] /Count 1 >>",
                font,
                b"<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] "
                b"/Resources << /Font << /F1 3 0 R >> >> /Length %d >>\nstream\n%s\nendstream"
                % (len(form), form),
                b"<< /Length %d >>\nstream\n%s\nendstream" % (len(draws), draws),
                b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 5 0 R "
                b"/Resources << /XObject << /Fm1 4 0 R >> >> >>",
            ]
        ),
    )
    limits = Limits(pdf_content_bytes=2 * MIB, page_chars=10 * MIB)
    assert read_document(path, limits=limits)[0].count("Jack") > 50 * 300
    limits = Limits(pdf_content_bytes=200_000, page_chars=10 * MIB)
    assert "content streams parsed" in refused_over(path, limits, "CAM_MAX_PDF_CONTENT_MB")
    # Refused inside the form, where pypdf logs and skips what fails: refused all the same.
    assert "a page with more text" in refused_over(path, Limits(), "CAM_MAX_PAGE_CHARS")
