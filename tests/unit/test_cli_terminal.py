"""What ``cam`` prints to a terminal: names, ids, paths and texts with their control
characters escaped, so that none of them can forge a line, move the cursor or reorder
the text shown (``cli/terminal.py``)."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from cam_engine import Memory
from cam_engine.cli.main import cli
from cam_engine.cli.terminal import PrintableFormatter, printable
from cam_engine.embed import HashingEmbedder

# A document id that would print a forged line, clear the screen and turn the rest around.
FORGED = "notes\nmemory 'default' deleted\x1b[2J\u202eevil\x9b"
RAW = ("\x1b", "\u202e", "\x9b", "\nmemory 'default' deleted")


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    return {"CAM_STORE": str(tmp_path / "cli.db"), "CAM_EMBED_MODEL": "hashing:64"}


def run(env: dict[str, str], *args: str) -> click.testing.Result:
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def assert_escaped(output: str) -> None:
    for raw in RAW:
        assert raw not in output
    assert "notes\\nmemory 'default' deleted\\x1b[2J\\u202eevil\\x9b" in output


def test_printable_escapes_controls_and_bidi_overrides_only() -> None:
    assert printable(FORGED) == "notes\\nmemory 'default' deleted\\x1b[2J\\u202eevil\\x9b"
    assert printable("tab\there\r\u2028\u2066") == "tab\\there\\r\\u2028\\u2066"
    assert printable("Frankenstein, é 日本 — “quoted”") == "Frankenstein, é 日本 — “quoted”"
    assert printable("line one\nline\ttwo\x1b", lines=True) == "line one\nline\ttwo\\x1b"


def test_document_ids_are_printed_escaped_by_every_command(
    env: dict[str, str], tmp_path: Path
) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("Notes on the voyage north \x1b[31m in red. " * 20, encoding="utf-8")
    ingested = run(env, "ingest", str(text), "--document", FORGED)
    assert ingested.exit_code == 0, ingested.output
    text.write_text("Other notes on the voyage south. " * 20, encoding="utf-8")
    updated = run(env, "ingest", str(text), "--document", FORGED)
    assert updated.exit_code == 0 and "updated document" in updated.output
    assert_escaped(updated.output)

    shown = run(env, "stats")
    assert shown.exit_code == 0, shown.output
    assert_escaped(shown.output)
    # JSON keeps the id as it is (json.dumps escapes it).
    (document,) = json.loads(run(env, "stats", "--json").output)["document_list"]
    assert document["id"] == FORGED

    missing = run(env, "delete", "--document", FORGED + "x", "--yes")
    assert missing.exit_code == 1 and "\x1b" not in missing.output
    deleted = run(env, "delete", "--document", FORGED, "--yes")
    assert deleted.exit_code == 0, deleted.output
    assert_escaped(deleted.output)


def test_a_path_with_controls_is_escaped_in_errors_and_texts_in_show(
    env: dict[str, str], tmp_path: Path
) -> None:
    missing = run(env, "ingest", str(tmp_path / "gone\x1b[2J.txt"))
    assert missing.exit_code == 1
    assert "\x1b" not in missing.output and "gone\\x1b[2J.txt" in missing.output
    text = tmp_path / "red.txt"
    text.write_text("Red text \x1b[31m hidden \u202e here. " * 5, encoding="utf-8")
    assert run(env, "ingest", str(text)).exit_code == 0
    with Memory.open(env["CAM_STORE"], embedder=HashingEmbedder(64), create=False) as memory:
        (chunk,) = memory.chunks()
    shown = run(env, "show", chunk.id)
    assert shown.exit_code == 0, shown.output
    assert "\x1b" not in shown.output and "\u202e" not in shown.output
    assert "\\x1b[31m" in shown.output


def test_log_messages_are_escaped_and_tracebacks_keep_their_lines() -> None:
    formatter = PrintableFormatter("%(levelname)s %(name)s: %(message)s")
    try:
        raise ValueError("bad")
    except ValueError:
        failure = sys.exc_info()
    record = logging.LogRecord("cam", logging.WARNING, __file__, 1, "read %s", (FORGED,), failure)
    first, *traceback = formatter.format(record).splitlines()
    assert first == "WARNING cam: read notes\\nmemory 'default' deleted\\x1b[2J\\u202eevil\\x9b"
    assert traceback[0] == "Traceback (most recent call last):"
    assert traceback[-1] == "ValueError: bad"
