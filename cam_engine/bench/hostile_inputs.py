"""Hostile inputs for ``cam_engine.bench.hostile``, each written to a file in a stream.

Every builder writes its file a block at a time, so building a 250 MiB EPUB entry or a
3 GB file costs this process a few MB: the peak RSS the benchmark reports is the work
of the command under test, not of the input's construction.
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

BLOCK = 1 << 20
_CONTAINER = b"""<?xml version="1.0"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
  <rootfiles><rootfile full-path="content.opf" media-type="application/oebps-package+xml"/>
  </rootfiles>
</container>"""
_PACKAGE = b"""<?xml version="1.0"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>p</dc:title></metadata>
  <manifest><item id="c1" href="c1.xhtml" media-type="application/xhtml+xml"/></manifest>
  <spine><itemref idref="c1"/></spine>
</package>"""


def repeated(path: Path, unit: bytes, size: int, *, head: bytes = b"", tail: bytes = b"") -> Path:
    """``head``, then ``unit`` repeated to about ``size`` bytes, then ``tail``."""
    block = unit * max(1, BLOCK // len(unit))
    with path.open("wb") as out:
        out.write(head)
        written = 0
        while written < size:
            piece = block[: size - written]
            out.write(piece)
            written += len(piece)
        out.write(tail)
    return path


def paragraph_epub(path: Path, unpacked: int) -> Path:
    """An EPUB whose one chapter is ``unpacked`` bytes of ``<p>a</p>``: a few hundred KB
    packed, millions of elements once parsed."""
    unit = b"<p>a</p>"
    block = unit * (BLOCK // len(unit))
    with zipfile.ZipFile(path, "w") as book:
        book.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        book.writestr("META-INF/container.xml", _CONTAINER, compress_type=zipfile.ZIP_DEFLATED)
        book.writestr("content.opf", _PACKAGE, compress_type=zipfile.ZIP_DEFLATED)
        info = zipfile.ZipInfo("c1.xhtml")
        info.compress_type = zipfile.ZIP_DEFLATED
        with book.open(info, "w", force_zip64=True) as chapter:
            chapter.write(b"<html><body>")
            for _ in range(unpacked // len(block)):
                chapter.write(block)
            chapter.write(b"</body></html>")
    return path


def nested_html(path: Path, depth: int) -> Path:
    """``depth`` nested ``<div>`` elements around one sentence."""
    return repeated(
        path,
        b"<div>",
        5 * depth,
        head=b"<!doctype html><html><body>",
        tail=b"deep text" + b"</div>" * depth + b"</body></html>",
    )


def shared_stream_pdf(path: Path, pages: int, stream_bytes: int) -> Path:
    """A PDF of ``pages`` pages that all draw one content stream of ``stream_bytes``
    (decoded; deflated it is a few KB): text on every page, all of it the same."""
    show = b"BT /F1 12 Tf 72 700 Td (All work and no play makes Jack a dull boy) Tj ET\n"
    content = zlib.compress(show * (stream_bytes // len(show)), 9)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>"
        % (b" ".join(b"%d 0 R" % (5 + i) for i in range(pages)), pages),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (len(content), content),
    ]
    page = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 3 0 R >> >> /Contents 4 0 R >>"
    )
    objects += [page] * pages
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    table = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        table,
    )
    path.write_bytes(bytes(out))
    return path


def sparse_file(path: Path, size: int) -> Path:
    """``size`` bytes of zeros that take no disk space."""
    with path.open("wb") as out:
        out.truncate(size)
    return path


def log_lines(path: Path, size: int) -> Path:
    """About ``size`` bytes of a server log: one event per line, no blank line."""
    with path.open("wb") as out:
        written, number = 0, 0
        while written < size:
            lines = b"".join(
                b"2026-11-26T12:%02d:%02d INFO worker-%d served request %d for user-%d in %d ms\n"
                % (n // 60 % 60, n % 60, n % 7, n, n % 97, n % 300)
                for n in range(number, number + 1000)
            )
            out.write(lines)
            written += len(lines)
            number += 1000
    return path
