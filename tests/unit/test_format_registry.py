"""A document format added from outside the package, through the public registry alone:
detected by its extension, read by its reader, ingested through the API and the CLI."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from cam_engine import ConfigError, Environment, Memory
from cam_engine.cli.main import cli
from cam_engine.embed import HashingEmbedder
from cam_engine.formats import (
    DocumentFormat,
    FileBytes,
    detect,
    format_names,
    register_format,
    unregister_format,
)

ROWS = [
    ["name", "known for"],
    ["Lovelace, Ada", "the first published program, for the Analytical Engine"],
    ["Hopper, Grace", "the first compiler, and COBOL"],
    ["Turing, Alan", "the halting problem and the Turing machine"],
]


def read_csv(file: FileBytes) -> str:
    """One paragraph per row, its cells joined by " | "."""
    rows = csv.reader(file.text().splitlines())
    return "\n\n".join(" | ".join(cells) for cells in rows if cells)


CSV = DocumentFormat("csv", (".csv",), read_csv, reads_text=True)


@pytest.fixture()
def csv_format() -> Iterator[DocumentFormat]:
    register_format(CSV)
    try:
        yield CSV
    finally:
        unregister_format("csv")


@pytest.fixture()
def people(tmp_path: Path) -> Path:
    path = tmp_path / "people.csv"
    with path.open("w", newline="") as out:
        csv.writer(out).writerows(ROWS)
    return path


def open_memory(folder: Path) -> Memory:
    return Memory.open(
        folder / "m.db", "m", embedder=HashingEmbedder(64), environment=Environment.from_env({})
    )


def chunk_text(memory: Memory, doc_id: str) -> str:
    return "\n".join(chunk.text for chunk in memory.document_chunks(doc_id))


def test_a_registered_format_is_ingested_through_the_api(
    csv_format: DocumentFormat, people: Path, tmp_path: Path
) -> None:
    assert detect(people, people.read_bytes()) == "csv"
    assert "csv" in format_names()
    with open_memory(tmp_path) as memory:
        report = memory.ingest(people)
        assert report.errors == []
        text = chunk_text(memory, "people.csv")
    # Read by its reader: cells joined, the CSV's quoting gone.
    assert "Lovelace, Ada | the first published program" in text
    assert "Turing, Alan | the halting problem" in text
    assert '"' not in text


def test_a_registered_format_is_ingested_and_chosen_through_the_cli(
    csv_format: DocumentFormat, people: Path, tmp_path: Path
) -> None:
    env = {"CAM_STORE": str(tmp_path / "cli.db"), "CAM_EMBED_MODEL": "hashing:64"}
    runner = CliRunner()
    detected = runner.invoke(cli, ["ingest", str(people)], env=env)
    assert detected.exit_code == 0, detected.output
    # --format lists it too: a .txt of CSV read as one.
    renamed = tmp_path / "people.txt"
    renamed.write_bytes(people.read_bytes())
    chosen = runner.invoke(cli, ["ingest", str(renamed), "--format", "csv"], env=env)
    assert chosen.exit_code == 0, chosen.output
    assert "csv" in runner.invoke(cli, ["ingest", "--help"], env=env).output
    with Memory.open(env["CAM_STORE"], "default", embedder=HashingEmbedder(64)) as memory:
        for doc_id in ("people.csv", "people.txt"):
            assert "Hopper, Grace | the first compiler, and COBOL" in chunk_text(memory, doc_id)


def test_an_unregistered_format_is_gone(people: Path, tmp_path: Path) -> None:
    register_format(CSV)
    unregister_format("csv")
    assert "csv" not in format_names()
    assert detect(people, people.read_bytes()) == "text"
    env = {"CAM_STORE": str(tmp_path / "cli.db"), "CAM_EMBED_MODEL": "hashing:64"}
    result = CliRunner().invoke(cli, ["ingest", str(people), "--format", "csv"], env=env)
    assert result.exit_code == 2 and "'csv' is not one of" in result.output


def test_an_extension_registered_twice_is_one_clear_error(csv_format: DocumentFormat) -> None:
    other = DocumentFormat("table", (".tsv", ".csv"), read_csv, reads_text=True)
    with pytest.raises(ConfigError, match=r"^format 'table': extension \.csv is already "):
        register_format(other)
    assert "table" not in format_names()  # nothing of it registered, .tsv included
    assert detect(Path("rows.tsv"), b"a\tb\n") == "text"
    with pytest.raises(ConfigError, match=r"extension \.md is already format 'text'"):
        register_format(DocumentFormat("notes", (".md",), read_csv))
    with pytest.raises(ConfigError, match=r"^format 'csv' is already registered$"):
        register_format(CSV)


def test_an_unknown_format_named_through_the_api_is_a_config_error(
    people: Path, tmp_path: Path
) -> None:
    with (
        open_memory(tmp_path) as memory,
        pytest.raises(ConfigError, match=r"unknown document format 'csv' \(known: text, pdf"),
    ):
        memory.ingest(people, file_format="csv")
