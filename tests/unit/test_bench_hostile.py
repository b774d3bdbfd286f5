"""The hostile benchmark's own parts: its inputs are what they claim, and its
measurement is of the process it ran."""

from __future__ import annotations

import io
import sys
import zipfile
from pathlib import Path

import pypdf

from cam_engine import formats
from cam_engine.bench import hostile
from cam_engine.bench import hostile_inputs as inputs


def test_the_shared_stream_pdf_has_every_page_draw_one_stream(tmp_path: Path) -> None:
    pdf = inputs.shared_stream_pdf(tmp_path / "s.pdf", 5, 4096)
    reader = pypdf.PdfReader(io.BytesIO(pdf.read_bytes()))
    assert len(reader.pages) == 5
    contents = {page.get_object().raw_get("/Contents").idnum for page in reader.pages}
    assert len(contents) == 1
    assert "All work and no play" in reader.pages[4].extract_text()


def test_the_paragraph_epub_unpacks_to_what_was_asked(tmp_path: Path) -> None:
    book = inputs.paragraph_epub(tmp_path / "p.epub", 2 << 20)
    with zipfile.ZipFile(book) as archive:
        assert archive.namelist()[0] == "mimetype"
        assert archive.getinfo("c1.xhtml").file_size >= 2 << 20
    assert book.stat().st_size < 64 << 10  # small packed: that is the point
    assert formats.detect(book, book.read_bytes()) == "epub"


def test_nested_html_and_logs(tmp_path: Path) -> None:
    page = inputs.nested_html(tmp_path / "d.html", 50)
    assert page.read_bytes().count(b"<div>") == 50
    assert formats.html_text(page.read_bytes()) == "deep text"
    log = inputs.log_lines(tmp_path / "l.log", 100_000).read_bytes()
    assert len(log) >= 100_000 and b"\n\n" not in log


def test_measured_reports_the_peak_of_the_process_it_ran(tmp_path: Path) -> None:
    grow = "x = bytearray(200 << 20); x[::4096] = b'1' * len(x[::4096]); print('done')"
    run = hostile.measured([sys.executable, "-c", grow], {}, timeout=60)
    assert run.returncode == 0 and run.stdout.strip() == "done" and not run.timed_out
    assert run.peak_mib >= 200
    small = hostile.measured([sys.executable, "-c", "pass"], {}, timeout=60)
    assert small.peak_mib < 100


def test_measured_kills_at_the_time_limit() -> None:
    run = hostile.measured([sys.executable, "-c", "import time; time.sleep(60)"], {}, timeout=0.5)
    assert run.timed_out and run.returncode != 0
