"""What a new user meets first: twins by text, Gutenberg cuts, text given directly,
encodings, store paths, a Neo4j that is down, and errors naming the caller's option."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from cam_engine import Memory, Settings
from cam_engine.cli.main import cli
from cam_engine.config import Environment
from cam_engine.embed import HashingEmbedder
from cam_engine.errors import CamError, ConfigError, StoreError
from cam_engine.formats import strip_gutenberg
from cam_engine.serve.tools import MemoryTools
from cam_engine.store.base import open_store
from tests.conftest import shared_file

EMBEDDER = HashingEmbedder(64)
SETTINGS = Settings(embed_model=EMBEDDER.name, alpha=0.6, theta=0.3, chunk_tokens=60)
TEXT = "Once upon a time a whale rose beside the ship.\n\nThe crew ran to the boats at dawn.\n"
BOOK = (
    "\ufeffThe Project Gutenberg eBook of Moby Dick\n\nThis eBook is for the use of anyone.\n\n"
    "*** START OF THE PROJECT GUTENBERG EBOOK MOBY DICK ***\n\n"
    + TEXT
    + "\n*** END OF THE PROJECT GUTENBERG EBOOK MOBY DICK ***\n\nSection 1. General Terms.\n"
)
LATIN1 = "Caf\u00e9 au lait is served here every morning.\n\nThe second paragraph.\n"


def open_memory(path: Path) -> Memory:
    return Memory.open(path / "m.db", "test", settings=SETTINGS, embedder=EMBEDDER)


def cam(tmp_path: Path, *args: str, input: str | bytes | None = None) -> click.testing.Result:
    env = {"CAM_STORE": str(tmp_path / "cli.db"), "CAM_EMBED_MODEL": "hashing:64"}
    return CliRunner().invoke(cli, list(args), env=env, input=input)


def all_text(memory: Memory) -> str:
    return " ".join(n.text for n in memory.chunks())


# --- the same text under two names ---------------------------------------------------------
def test_the_same_text_in_two_formats_is_recognized(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "tale.txt").write_text(TEXT, encoding="utf-8")
    html = "<html><body><p>" + "</p><p>".join(TEXT.strip().split("\n\n")) + "</p></body></html>"
    (tmp_path / "tale.html").write_text(html, encoding="utf-8")
    # Other bytes, the same text: Windows line ends.
    (tmp_path / "tale-crlf.txt").write_bytes(TEXT.replace("\n", "\r\n").encode())
    with open_memory(tmp_path) as memory, caplog.at_level(logging.WARNING):
        memory.ingest([tmp_path / "tale.txt"])
        memory.ingest([tmp_path / "tale.html"])
        memory.ingest([tmp_path / "tale-crlf.txt"])
        records = {d.id: d for d in memory.documents()}
    twins = [r.getMessage() for r in caplog.records if "same text" in r.getMessage()]
    assert len(twins) == 2, twins
    assert "tale.html has the same text as document 'tale.txt'" in twins[0]
    assert "tale-crlf.txt has the same text as document" in twins[1]
    assert records["tale.txt"].sha256 != records["tale.html"].sha256  # the files' bytes
    assert records["tale.txt"].text_sha256 == records["tale.html"].text_sha256


def test_different_text_gives_no_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "a.txt").write_text(TEXT, encoding="utf-8")
    (tmp_path / "b.txt").write_text(TEXT + "\nOne more line.\n", encoding="utf-8")
    with open_memory(tmp_path) as memory, caplog.at_level(logging.WARNING):
        memory.ingest([tmp_path / "a.txt", tmp_path / "b.txt"])
    assert not [r for r in caplog.records if "same text" in r.getMessage()]


# --- Project Gutenberg -----------------------------------------------------------------------
def test_gutenberg_markers_are_cut_on_a_book_flattened_to_one_line() -> None:
    flat = " ".join(BOOK.split())
    assert strip_gutenberg(flat).strip() == " ".join(TEXT.split())


def test_a_real_book_flattened_loses_the_same_header_and_licence() -> None:
    book = shared_file("haystacks/gutenberg/pg84.txt").read_text(encoding="utf-8")
    flat = " ".join(book.split())
    assert " ".join(strip_gutenberg(flat).split()) == " ".join(strip_gutenberg(book).split())
    assert "Gutenberg" not in strip_gutenberg(flat)


# --- text given directly ---------------------------------------------------------------------
def test_text_given_directly_is_cleaned_as_a_file_is(tmp_path: Path) -> None:
    with open_memory(tmp_path) as memory:
        memory.ingest_text(BOOK, "moby")
        text = all_text(memory)
    assert not text.startswith("\ufeff") and "\ufeff" not in text
    assert "Gutenberg" not in text and "General Terms" not in text
    assert text.startswith("Once upon a time")


def test_mcp_ingest_text_is_cleaned(tmp_path: Path) -> None:
    env = Environment.from_env(
        {"CAM_STORE": str(tmp_path / "t.db"), "CAM_EMBED_MODEL": "hashing:64"}
    )
    tools = MemoryTools(None, "m", environment=env)
    tools.start()
    try:
        tools.ingest_text(BOOK, "moby")
        top = tools.top("m")
    finally:
        tools.close()
    assert "Gutenberg" not in str(top) and "\ufeff" not in str(top)


def test_stdin_drops_a_byte_order_mark(tmp_path: Path) -> None:
    result = cam(tmp_path, "ingest", "--document", "s", "-", input=("\ufeff" + TEXT).encode())
    assert result.exit_code == 0, result.output
    with Memory.open(tmp_path / "cli.db", "default", embedder=HashingEmbedder(64)) as memory:
        assert all_text(memory).startswith("Once upon a time")


# --- encodings -------------------------------------------------------------------------------
def test_a_latin1_file_is_refused_with_the_way_out_then_read_with_its_encoding(
    tmp_path: Path,
) -> None:
    path = tmp_path / "cafe.txt"
    path.write_bytes(LATIN1.encode("latin-1"))
    with open_memory(tmp_path) as memory:
        refused = memory.ingest([path])
        assert len(refused.errors) == 1
        assert "not valid UTF-8" in refused.errors[0].message
        assert "give encoding='latin-1' if that is its encoding" in refused.errors[0].message
        report = memory.ingest([path], encoding="latin-1")
        assert not report.errors and "Café au lait" in all_text(memory)
        with pytest.raises(ConfigError, match="unknown text encoding"):
            memory.ingest([path], encoding="no-such-codec")


def test_cli_encoding_for_files_and_stdin(tmp_path: Path) -> None:
    path = tmp_path / "cafe.txt"
    path.write_bytes(LATIN1.encode("latin-1"))
    refused = cam(tmp_path, "ingest", str(path))
    assert "give --encoding latin-1 if that is its encoding" in refused.output
    assert cam(tmp_path, "ingest", "--encoding", "latin-1", str(path)).exit_code == 0
    piped = LATIN1.encode("latin-1")
    assert (
        "--encoding latin-1" in cam(tmp_path, "ingest", "--document", "s", "-", input=piped).output
    )
    ok = cam(tmp_path, "ingest", "--encoding", "latin-1", "--document", "s2", "-", input=piped)
    assert ok.exit_code == 0, ok.output
    bad = cam(tmp_path, "ingest", "--encoding", "nope", str(path))
    assert bad.exit_code != 0
    assert "--encoding 'nope': unknown text encoding" in bad.output


# --- errors name the caller's option ---------------------------------------------------------
def test_an_error_names_the_option_of_the_caller(tmp_path: Path) -> None:
    first, second = tmp_path / "a" / "tale.txt", tmp_path / "b" / "tale.txt"
    for path, text in ((first, TEXT), (second, TEXT + "\nOther.\n")):
        path.parent.mkdir()
        path.write_text(text, encoding="utf-8")
    with open_memory(tmp_path) as memory:
        (error,) = memory.ingest([first, second], document="tale").errors
        assert "`document` names one document" in error.message and "--" not in error.message
    result = cam(tmp_path, "ingest", str(first), str(second), "--document", "tale")
    assert "--document names one document" in result.output


def test_mcp_errors_name_the_tool_argument(tmp_path: Path) -> None:
    env = Environment.from_env(
        {"CAM_STORE": str(tmp_path / "t.db"), "CAM_EMBED_MODEL": "hashing:64"}
    )
    (tmp_path / "x.txt").write_text(TEXT, encoding="utf-8")
    tools = MemoryTools(None, "m", environment=env, allow=[tmp_path])
    tools.start()
    try:
        with pytest.raises(CamError) as raised:
            tools.ingest_file(str(tmp_path / "x.txt"), encoding="no-such-codec")
    finally:
        tools.close()
    assert "`encoding`" in str(raised.value) and "--encoding" not in str(raised.value)


# --- store paths -----------------------------------------------------------------------------
def test_a_store_path_under_a_file_says_so(tmp_path: Path) -> None:
    (tmp_path / "hostname").write_text("x")
    with pytest.raises(StoreError) as raised:
        open_store(tmp_path / "hostname" / "cam.db", "m")
    assert str(raised.value) == (
        f"cannot open SQLite store {tmp_path / 'hostname' / 'cam.db'}: "
        f"{tmp_path / 'hostname'} is a file, not a folder"
    )


def test_a_folder_given_as_the_store_says_so(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="it is a folder; give a file path such as"):
        open_store(tmp_path, "m")


def test_cli_store_under_a_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "hostname").write_text("x")
    (tmp_path / "t.txt").write_text(TEXT)
    result = cam(
        tmp_path,
        "ingest",
        "--store",
        str(tmp_path / "hostname" / "cam.db"),
        str(tmp_path / "t.txt"),
    )
    lines = result.output.strip().splitlines()
    assert result.exit_code != 0 and len(lines) == 1
    assert "is a file, not a folder" in lines[0] and "Errno" not in lines[0]


# --- Neo4j down ------------------------------------------------------------------------------
DOWN = "127.0.0.1:7699"  # no server there (the shared one is on 7687)


@pytest.mark.parametrize("scheme", ["bolt", "neo4j"])
def test_neo4j_down_is_one_line_with_the_uri_and_how_to_start_one(scheme: str) -> None:
    uri = f"{scheme}://{DOWN}"
    done = subprocess.run(
        [sys.executable, "-m", "cam_engine.cli.main", "stats", "--store", uri],
        capture_output=True,
        text=True,
        timeout=120,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    )
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert done.returncode != 0
    assert len(lines) == 1, lines  # no "ERROR neo4j.pool: ..." from the driver
    assert f"cannot reach Neo4j at {uri}" in lines[0]
    assert "docker/neo4j-local start" in lines[0]
    assert "docker compose -f docker/docker-compose.yml up" in lines[0]
