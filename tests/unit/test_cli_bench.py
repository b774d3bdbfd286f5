"""`cam bench ingest --book`: its default lies in ../shared/data, beside source checkouts only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

import cam_engine.bench.ingest
from cam_engine.cli.bench import bench
from cam_engine.cli.main import cli


def book_option() -> click.Parameter:
    ingest = bench.commands["ingest"]
    return next(p for p in ingest.params if p.name == "book")


def ran_with_book(
    monkeypatch: pytest.MonkeyPatch, *args: str
) -> tuple[click.testing.Result, list[str]]:
    """Invoke ``cam bench ingest`` with the benchmark itself replaced by a recorder."""
    books: list[str] = []

    def record(book: str, **_: Any) -> dict[str, Any]:
        books.append(book)
        return {}

    monkeypatch.setattr(cam_engine.bench.ingest, "run", record)
    return CliRunner().invoke(cli, ["bench", "ingest", *args]), books


def test_an_absent_default_book_is_one_line_naming_the_option_and_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    absent = tmp_path / "shared" / "data" / "pg2701.txt"
    monkeypatch.setattr(book_option(), "default", str(absent))
    result, books = ran_with_book(monkeypatch)
    assert result.exit_code == 2 and books == []
    errors = [line for line in result.output.splitlines() if line.startswith("Error")]
    assert errors == [
        f"Error: Invalid value for '--book': no file at the default {absent} "
        "(it comes with a source checkout); pass --book FILE"
    ]


def test_a_present_default_book_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    present = tmp_path / "pg2701.txt"
    present.write_text("Call me Ishmael.")
    monkeypatch.setattr(book_option(), "default", str(present))
    result, books = ran_with_book(monkeypatch)
    assert result.exit_code == 0, result.output
    assert books == [str(present)]


def test_a_given_book_that_is_absent_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    absent = tmp_path / "nope.txt"
    result, books = ran_with_book(monkeypatch, "--book", str(absent))
    assert result.exit_code == 2 and books == []
    assert f"Invalid value for '--book': File '{absent}' does not exist." in result.output
