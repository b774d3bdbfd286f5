"""Inputs an adversarial review found unbounded or failing with a traceback: each is
now refused in one line before the work, through the API, the CLI and MCP alike."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client

from cam_engine import Memory
from cam_engine.cli.main import cli
from cam_engine.config import Environment
from cam_engine.errors import ConfigError, InputError
from cam_engine.formats import MAX_PACKAGE_BYTES, epub_text
from cam_engine.serve.http import NoEventStream
from cam_engine.serve.tools import MemoryTools
from cam_engine.sources import MAX_DOCUMENT_ID_CHARS, check_encoding
from tests.unit.test_mcp_server import error, serve, tools_for

TEXT = "Walton hired himself as an under-mate in a Greenland whaler.\n\nTwice."
LONG_ID = "D" * (MAX_DOCUMENT_ID_CHARS + 1)


def _memory(tmp_path: Path, **limits: str) -> Memory:
    env = Environment.from_env(
        {"CAM_STORE": str(tmp_path / "m.db"), "CAM_EMBED_MODEL": "hashing:64", **limits}
    )
    return Memory.open(tmp_path / "m.db", "m", environment=env)


def test_a_document_id_past_its_length_is_refused_by_every_entry_point(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(TEXT)
    with _memory(tmp_path) as memory:
        with pytest.raises(InputError, match=r"characters; an id names a document in at most"):
            memory.ingest_text(TEXT, LONG_ID)
        with pytest.raises(InputError, match=r"an id names a document"):
            memory.ingest_documents([("ok", TEXT), (LONG_ID, TEXT)])
        report = memory.ingest([tmp_path / "a.txt"], document=LONG_ID)
        assert next(e.message for e in report.errors).endswith(
            f"an id names a document in at most {MAX_DOCUMENT_ID_CHARS:,}"
        )
        assert memory.documents() == []  # nothing of any of them stored
    done = CliRunner().invoke(
        cli,
        [
            "ingest",
            str(tmp_path / "a.txt"),
            "--store",
            str(tmp_path / "c.db"),
            "--document",
            LONG_ID,
        ],
        env={"CAM_EMBED_MODEL": "hashing:64"},
    )
    assert done.exit_code != 0 and "an id names a document" in done.output


def test_ingest_documents_refuses_what_ingest_text_refuses(tmp_path: Path) -> None:
    with _memory(tmp_path, CAM_MAX_TEXT_MB="0.0001") as memory:  # 104 characters
        for bad, why in [
            ("a\x00b", "looks binary"),
            ("word " * 30, "over the limit of 104 characters"),
            ("whale \ud800 sea", "a lone surrogate at character 6"),
        ]:
            with pytest.raises(InputError, match=why):
                memory.ingest_documents([("ok", "fine text"), ("bad", bad)])
            with pytest.raises(InputError, match=why):
                memory.ingest_text(bad, "bad")
        assert memory.documents() == []


def test_an_epub_package_file_past_its_bound_is_refused_before_it_is_parsed() -> None:
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as book:
        book.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        items = "<x/>" * (MAX_PACKAGE_BYTES // 4 + 1)
        book.writestr("META-INF/container.xml", f"<container>{items}</container>")
    data = archive.getvalue()
    assert len(data) < 64 << 10  # a small file that would parse into a large tree
    with pytest.raises(InputError, match=r"package file META-INF/container.xml is over 4 MiB"):
        epub_text(Path("c.epub"), data)


def test_codecs_that_do_not_make_text_are_unknown_encodings() -> None:
    assert check_encoding("latin-1") == "iso8859-1"
    for name in ("rot13", "zlib_codec", "hex_codec", "uu_codec"):
        with pytest.raises(ConfigError, match="unknown text encoding"):
            check_encoding(name)


def test_a_folder_nested_past_python_recursion_is_one_error(tmp_path: Path) -> None:
    deep = folder = tmp_path / "deep"
    levels = [folder]
    folder.mkdir()
    for _ in range(1100):  # one by one: os.makedirs itself recurses
        folder = folder / "a"
        folder.mkdir()
        levels.append(folder)
    (folder / "n.txt").write_text(TEXT)
    try:
        with _memory(tmp_path) as memory:
            report = memory.ingest([deep])
        assert [e.message for e in report.errors] == [
            f"{deep}: the folder is nested too deep to walk"
        ]
    finally:  # removed here, bottom up: pytest's cleanup (shutil.rmtree) recurses too
        (folder / "n.txt").unlink()
        for level in reversed(levels):
            level.rmdir()


def test_mcp_refuses_huge_batches_long_ids_and_odd_node_ids(tmp_path: Path) -> None:
    async def scenario(client: Client) -> None:
        text = error(
            await client.call_tool(
                "ingest_text", {"text": TEXT, "document": "w", "batch_size": 100_000}
            )
        )
        assert text.startswith("invalid arguments for ingest_text: batch_size: Input should be")
        text = error(await client.call_tool("ingest_text", {"text": TEXT, "document": LONG_ID}))
        assert "an id names a document" in text
        await client.call_tool("ingest_text", {"text": TEXT, "document": "w"})
        text = error(await client.call_tool("show_node", {"node_id": "s" + "9" * 5000 + "-x"}))
        assert text.startswith("no node 's999") and "ids like it" in text

    serve(tools_for(tmp_path / "s.db"), scenario)


def test_a_get_is_answered_405_not_held_open() -> None:
    sent: list[dict[str, object]] = []
    reached: list[str] = []

    async def app(scope: object, receive: object, send: object) -> None:
        reached.append("app")

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    async def receive() -> dict[str, object]:
        return {"type": "http.request"}

    async def main() -> None:
        middleware = NoEventStream(app)
        for method in ("GET", "POST"):
            scope: dict[str, object] = {"type": "http", "method": method, "headers": []}
            await middleware(scope, receive, send)  # type: ignore[arg-type]

    anyio.run(main)
    assert sent[0]["status"] == 405 and reached == ["app"]


def test_a_folder_of_more_files_than_the_limit_is_refused_before_any_is_read(
    tmp_path: Path,
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(6):
        (notes / f"n{i}.txt").write_text(f"Note {i} about the harbour.\n")
    (notes / ".hidden").mkdir()
    for i in range(10):  # hidden files are not read, and not counted
        (notes / ".hidden" / f"h{i}.txt").write_text("hidden")
    with _memory(tmp_path, CAM_MAX_FOLDER_FILES="5") as memory:
        report = memory.ingest([notes])
        assert [e.message for e in report.errors] == [
            f"{notes}: more files than that: refused, over the limit of 5 files in a folder "
            "(raise it with CAM_MAX_FOLDER_FILES)"
        ]
        assert memory.documents() == []
    with _memory(tmp_path, CAM_MAX_FOLDER_FILES="6") as memory:
        assert not memory.ingest([notes]).errors
        assert len(memory.documents()) == 6

    async def scenario(client: Client) -> None:
        text = error(await client.call_tool("ingest_file", {"path": str(notes)}))
        assert text.endswith("(raise it with CAM_MAX_FOLDER_FILES)")

    env = Environment.from_env(
        {
            "CAM_STORE": str(tmp_path / "s.db"),
            "CAM_EMBED_MODEL": "hashing:64",
            "CAM_MAX_FOLDER_FILES": "5",
        }
    )
    serve(MemoryTools(None, "m", environment=env, allow=[notes]), scenario)
