"""Fuzzed input through ``cam ingest``: generated text and bytes (NULs, lone surrogates,
CRLF mixes, zero-width and right-to-left characters, random and damaged files of every
format) either ingest correctly or fail with one ``error:`` line, no traceback, and
the store untouched; and a 10 MB single line ingests."""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cam_engine.chunking import chunk_document
from cam_engine.cli.main import cli
from cam_engine.sources import read_document
from cam_engine.store.sqlite import SqliteStore
from tests.invariants import check_memory
from tests.support.documents import epub_bytes, pdf_bytes, text_page, xhtml

EMBED = "hashing:64"
CHUNK_TOKENS = 16  # small chunks: a generated document spans several
BATCH = 1000  # one batch per document: a failed document must leave nothing
MAX_CLUSTER = 12  # the default

NASTY = (
    "\x00",
    "\ud800",
    "\udfff",
    "\r\n",
    "\r",
    "\n",
    "\n\n",
    "\r\n\r\n",
    "\u200b",
    "\u200c",
    "\u200d",
    "\u2060",
    "\ufeff",
    "\u202e",
    "\u202d",
    "\u2067",
    "\u2069",
    "\u05d0\u05d1\u05d2",
    "\u0627\u0644\u0639",
    "\u2028",
    "\u2029",
    "\x85",
    "\x0b",
    "\x0c",
    "\t",
    "\x1b[31m",
    "\u00e9",
    "e\u0301",
    "\U0001f600",
    "\ufffd",
)
WORDS = ("whale", "ship", "sea", "Ishmael", "harpoon", "cold", "grey", "deck", ".", "!")

nasty = st.sampled_from(NASTY)
words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)
texts = st.lists(st.one_of(nasty, words, st.text(max_size=20)), max_size=30).map("".join)
encoded = texts.map(lambda t: t.encode("utf-8", "surrogatepass"))
raw = st.one_of(
    encoded,
    st.binary(max_size=600),
    st.lists(st.one_of(encoded, st.binary(max_size=8)), max_size=8).map(b"".join),
)
# CAM_FUZZ_EXAMPLES=2000 for a longer run than CI's (docs/reliability.md)
FUZZ = settings(
    max_examples=int(os.environ.get("CAM_FUZZ_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@dataclass(frozen=True)
class Outcome:
    exit_code: int
    lines: list[str]
    dump: str


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding one document, copied for each example: a failed ingest must
    leave the copy byte for byte as it was."""
    db = tmp_path_factory.mktemp("seed") / "seed.db"
    seed = " ".join(f"The whale number {i} swam past the ship." for i in range(20))
    result = CliRunner().invoke(
        cli,
        ["ingest", "-", "--document", "seed", "--chunk-tokens", str(CHUNK_TOKENS)],
        env={"CAM_STORE": str(db), "CAM_EMBED_MODEL": EMBED},
        input=seed,
    )
    assert result.exit_code == 0, result.output
    return db


@contextmanager
def store_copy(seeded: Path) -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "fuzz.db"
        shutil.copy(seeded, db)
        yield db


def dump(db: Path) -> str:
    connection = sqlite3.connect(db)
    try:
        return "\n".join(connection.iterdump())
    finally:
        connection.close()


def ingest(db: Path, args: list[str], data: bytes | None = None) -> Outcome:
    result = CliRunner().invoke(
        cli,
        ["ingest", *args, "--batch-size", str(BATCH)],
        env={"CAM_STORE": str(db), "CAM_EMBED_MODEL": EMBED},
        input=data,
    )
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"traceback: {result.exception!r}\n{result.output}")
    assert "Traceback" not in result.output
    return Outcome(result.exit_code, result.output.strip().splitlines(), dump(db))


def chunk_words(db: Path, doc_id: str) -> list[str]:
    """The words of a document's stored chunks, in reading order."""
    with closing(SqliteStore(db, "default")) as store:
        chunks = [n for n in store.nodes_at_level(0) if n.doc_id == doc_id]
    chunks.sort(key=lambda n: n.position or 0)
    assert [n.position for n in chunks] == list(range(len(chunks))), "a chunk is missing"
    return [w for n in chunks for w in n.text.split()]


def check_outcome(db: Path, before: str, outcome: Outcome, doc_id: str, words: list[str]) -> None:
    """Exit 0 with the document's words all stored, in order; or exit 1 with one error
    line and the store unchanged."""
    if outcome.exit_code == 0:
        assert words, "an ingest of no text succeeded"
        # A "word" over the chunk budget (no white space in it) is cut at its tokens.
        assert "".join(chunk_words(db, doc_id)) == "".join(words)
        with closing(SqliteStore(db, "default")) as store:
            check_memory(store, max_cluster_size=MAX_CLUSTER)
        return
    assert outcome.exit_code == 1, outcome.lines
    assert len(outcome.lines) == 1, outcome.lines
    assert outcome.lines[0].startswith(("error: ", "Error: ")), outcome.lines
    assert outcome.dump == before, "a failed document changed the store"


def decoded(data: bytes) -> str | None:
    """What a strict UTF-8 reader of stdin makes of the bytes (a leading byte order
    mark dropped); None for no text."""
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        return None
    return None if "\x00" in text else text


# --- stdin ----------------------------------------------------------------------------------


@FUZZ
@given(data=raw)
@example(data=b"\xef\xbb\xbf \n")  # a byte order mark and blanks: no text
@example(data=b"\xef\xbb\xbfword")  # ... before a word: the word alone is stored
def test_stdin_takes_any_bytes_or_refuses_them_in_one_line(seeded: Path, data: bytes) -> None:
    with store_copy(seeded) as db:
        before = dump(db)
        outcome = ingest(db, ["-", "--document", "piped"], data)
        text = decoded(data)
        expected = text.split() if text is not None else []
        assert (outcome.exit_code == 0) == bool(expected), outcome.lines
        check_outcome(db, before, outcome, "piped", expected)


# --- files ----------------------------------------------------------------------------------


@FUZZ
@given(data=raw, extension=st.sampled_from([".txt", ".md", ".markdown", ""]))
def test_text_files_take_any_bytes_or_refuse_them_in_one_line(
    seeded: Path, data: bytes, extension: str
) -> None:
    with store_copy(seeded) as db:
        path = db.parent / f"fuzzed{extension}"
        path.write_bytes(data)
        before = dump(db)
        outcome = ingest(db, [str(path)])
        if outcome.exit_code == 0:
            text, _ = read_document(path)
            check_outcome(db, before, outcome, path.name, text.split())
        else:
            check_outcome(db, before, outcome, path.name, [])


def _html(text: str) -> bytes:
    escaped = text.replace("&", "&amp;").replace("<", "&lt;")
    page = f"<!DOCTYPE html><html><body><p>{escaped}</p></body></html>"
    return page.encode("utf-8", "surrogatepass")


def _pdf(text: str) -> bytes:
    lines = text.encode("latin-1", "replace").decode("latin-1").splitlines() or [""]
    return pdf_bytes(text_page(*lines))


def _epub(text: str) -> bytes:
    # zipfile writes str entries as strict UTF-8: a lone surrogate is the reader's U+FFFD
    text = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    escaped = text.replace("&", "&amp;").replace("<", "&lt;")
    return epub_bytes({"ch.xhtml": xhtml("T", f"<p>{escaped}</p>")}, ["ch.xhtml"])


BUILDERS = {".html": _html, ".pdf": _pdf, ".epub": _epub}


def _damaged(data: bytes, seed: int, hits: int) -> bytes:
    """``data`` with ``hits`` bytes overwritten at random, and maybe cut short."""
    rng = random.Random(seed)
    out = bytearray(data)
    for _ in range(hits):
        out[rng.randrange(len(out))] = rng.randrange(256)
    return bytes(out[: rng.choice([len(out), rng.randrange(1, len(out))])])


@FUZZ
@given(
    text=texts,
    extension=st.sampled_from(sorted(BUILDERS)),
    seed=st.integers(0, 2**32),
    hits=st.sampled_from([0, 0, 1, 4, 32]),
    garbage=st.booleans(),
)
def test_html_pdf_and_epub_files_read_or_refuse_in_one_line(
    seeded: Path, text: str, extension: str, seed: int, hits: int, garbage: bool
) -> None:
    """Real files of each format holding generated text, damaged or not, and random
    bytes under the format's name."""
    data = BUILDERS[extension](text)
    if garbage:
        data = random.Random(seed).randbytes(len(data) // 4)
    elif hits:
        data = _damaged(data, seed, hits)
    with store_copy(seeded) as db:
        path = db.parent / f"fuzzed{extension}"
        path.write_bytes(data)
        before = dump(db)
        outcome = ingest(db, [str(path)])
        if outcome.exit_code == 0:
            read, _ = read_document(path)
            check_outcome(db, before, outcome, path.name, read.split())
            expected = chunk_document(path.name, read, 256)
            assert expected, "a document with text has chunks"
        else:
            check_outcome(db, before, outcome, path.name, [])
        if not hits and not garbage and text.split() and extension != ".pdf":
            # an undamaged page or book with words in it is read, never refused
            assert outcome.exit_code == 0, outcome.lines


# --- one 10 MB line -------------------------------------------------------------------------


def _ten_megabyte_line() -> bytes:
    rng = random.Random(7)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocabulary = ["".join(rng.choices(letters, k=rng.randint(2, 9))) for _ in range(5000)]
    vocabulary += ["\u200b", "\u202e\u05d0\u05d1", "\ufeff", "caf\u00e9", "\U0001f600"]
    size = 10 * 2**20
    line = " ".join(rng.choices(vocabulary, k=size // 5)).encode()[:size]
    return line[: line.rfind(b" ")]  # whole characters, no newline anywhere


def test_a_ten_megabyte_single_line_ingests_from_stdin_and_from_a_file(tmp_path: Path) -> None:
    line = _ten_megabyte_line()
    assert b"\n" not in line and len(line) > 10 * 2**20 - 20
    words = line.decode().split()
    db = tmp_path / "big.db"
    # The default chunk size: about 8,000 chunks, nearly all of them roots of the
    # covering levels (random words do not cluster), which were grouped again in every
    # batch: more than 10 minutes (docs/benchmarks.md, "One long line").
    outcome = ingest(db, ["-", "--document", "line"], line)
    assert outcome.exit_code == 0, outcome.lines
    assert chunk_words(db, "line") == words
    path = tmp_path / "line.txt"
    path.write_bytes(line)
    text, _ = read_document(path)
    assert text.split() == words


# --- damaged EPUBs the fuzzing found ----------------------------------------------------------


def _with_method(book: bytes, method: int) -> bytes:
    """``book`` with every entry but "mimetype" claiming another compression method."""
    out = bytearray(book)
    start = out.find(b"PK\x01\x02")
    while start != -1:
        if out[start + 46 : start + 54] != b"mimetype":
            out[start + 10 : start + 12] = method.to_bytes(2, "little")
        start = out.find(b"PK\x01\x02", start + 4)
    return bytes(out)


def _with_broken_deflate(book: bytes) -> bytes:
    """``book`` with the deflate stream of META-INF/container.xml scrambled."""
    at = book.find(b"META-INF/container.xml") + len("META-INF/container.xml")
    return book[:at] + bytes([0xFF] * 8) + book[at + 8 :]


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        (lambda b: _with_method(b, 99), "compression method"),  # was NotImplementedError
        (_with_broken_deflate, "broken EPUB"),  # was zlib.error
    ],
)
def test_an_epub_with_a_damaged_archive_is_refused_in_one_line(
    tmp_path: Path, damage: Callable[[bytes], bytes], words: str
) -> None:
    path = tmp_path / "damaged.epub"
    path.write_bytes(damage(_epub("Call me Ishmael.")))
    outcome = ingest(tmp_path / "store.db", [str(path)])
    assert outcome.exit_code == 1
    assert len(outcome.lines) == 1 and outcome.lines[0].startswith(f"error: {path}: ")
    assert words in outcome.lines[0]


def test_a_text_file_with_a_nul_past_its_first_page_is_refused_like_stdin(tmp_path: Path) -> None:
    data = b"Call me Ishmael. " * 1000 + b"\x00" + b"Some years ago."
    path = tmp_path / "late-nul.txt"
    path.write_bytes(data)
    for args, stdin in (([str(path)], None), (["-", "--document", "late-nul"], data)):
        outcome = ingest(tmp_path / "store.db", args, stdin)
        assert outcome.exit_code == 1
        assert (
            outcome.lines == [outcome.lines[0]] and "looks binary (NUL bytes)" in outcome.lines[0]
        )
