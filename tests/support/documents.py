"""Small real documents built byte by byte for tests: PDFs and EPUBs.

The PDF is written by hand, a catalog, a page tree, one font and one image, with a
correct cross-reference table, so what pypdf reads is exactly what the test wrote.
"""

from __future__ import annotations

import io
import zipfile

# An 8x8 grey image, what a scanned page is made of.
_IMAGE = b"<< /Type /XObject /Subtype /Image /Width 8 /Height 8 /ColorSpace /DeviceGray "
_IMAGE += b"/BitsPerComponent 8 /Length 64 >>\nstream\n" + b"\x80" * 64 + b"\nendstream"


def text_page(*lines: str) -> bytes:
    """A page content stream writing ``lines`` one under the other in Helvetica."""
    shown = b" ".join(b"(" + _escape(line) + b") Tj T*" for line in lines)
    return b"BT /F1 12 Tf 16 TL 72 720 Td " + shown + b" ET"


IMAGE_PAGE = b"q 200 0 0 200 72 400 cm /Im1 Do Q"  # the image drawn, no text at all


def pdf_bytes(*pages: bytes) -> bytes:
    """A PDF with one page per content stream."""
    font = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
    objects: list[bytes] = [b"<< /Type /Catalog /Pages 2 0 R >>", b"", font, _IMAGE]
    kids = []
    for content in pages:
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content))
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> /XObject << /Im1 4 0 R >> >> "
            b"/Contents %d 0 R >>" % len(objects)
        )
        kids.append(b"%d 0 R" % len(objects))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(kids), len(kids))
    return pdf_of(objects)


def pdf_of(objects: list[bytes]) -> bytes:
    """A PDF of ``objects`` (numbered from 1; the first the catalog), with its
    cross-reference table."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def _escape(line: str) -> bytes:
    return (
        line.encode("latin-1").replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")
    )


CONTAINER = """<?xml version="1.0"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
  <rootfiles>
    <rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>
  </rootfiles>
</container>"""


def xhtml(title: str, body: str) -> str:
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        '<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops">'
        f"<head><title>{title}</title></head><body>{body}</body></html>"
    )


def epub_bytes(
    documents: dict[str, str], spine: list[str], *, extra: dict[str, str] | None = None
) -> bytes:
    """An EPUB 3: ``documents`` (paths under OEBPS/ to XHTML) listed in the manifest in
    the order given, read in ``spine`` order; ``extra`` adds raw archive entries."""
    items = "".join(
        f'<item id="d{i}" href="{name.replace(" ", "%20")}" media-type="application/xhtml+xml"'
        + (' properties="nav"' if name.startswith("nav") else "")
        + "/>"
        for i, name in enumerate(documents)
    )
    ids = {name: f"d{i}" for i, name in enumerate(documents)}
    refs = "".join(f'<itemref idref="{ids[name]}"/>' for name in spine)
    opf = (
        '<?xml version="1.0" encoding="utf-8"?>'
        '<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">'
        '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
        '<dc:identifier id="id">urn:uuid:0</dc:identifier><dc:title>T</dc:title>'
        "<dc:language>en</dc:language></metadata>"
        f"<manifest>{items}</manifest><spine>{refs}</spine></package>"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as book:
        # The container spec: "mimetype" first and stored, so the type is at a fixed offset.
        book.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        book.writestr("META-INF/container.xml", CONTAINER, compress_type=zipfile.ZIP_DEFLATED)
        book.writestr("OEBPS/content.opf", opf, compress_type=zipfile.ZIP_DEFLATED)
        for name, text in documents.items():
            book.writestr(f"OEBPS/{name}", text, compress_type=zipfile.ZIP_DEFLATED)
        for name, text in (extra or {}).items():
            book.writestr(name, text, compress_type=zipfile.ZIP_DEFLATED)
    return buffer.getvalue()
