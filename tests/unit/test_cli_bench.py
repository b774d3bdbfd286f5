"""`cam bench`: every benchmark is a command with help; its data paths (books, the shared
data folder) default to ../shared/data, beside source checkouts only, and an absent one
is one line naming the option and the path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

import cam_engine.bench.cold_ask
import cam_engine.bench.ingest
import cam_engine.bench.mcp_load
import cam_engine.cli.bench
import cam_engine.cli.bench_reliability
from cam_engine.cli.bench import bench
from cam_engine.cli.bench_options import existing_file_or_absent_default
from cam_engine.cli.main import cli
from tests.conftest import shared_file


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


# Every `cam bench` command: its help, and its data paths (books, the shared data folder).


def data_path_options() -> list[tuple[str, str]]:
    """(command, option) of every path option whose default lies in ../shared/data."""
    return [
        (name, str(param.name))
        for name, command in sorted(bench.commands.items())
        for param in command.params
        if isinstance(param, click.Option) and param.callback is existing_file_or_absent_default
    ]


def option_of(command: str, name: str) -> click.Option:
    param = next(p for p in bench.commands[command].params if p.name == name)
    assert isinstance(param, click.Option)
    return param


def error_lines(result: click.testing.Result) -> list[str]:
    return [line for line in result.output.splitlines() if line.startswith("Error")]


def test_the_data_paths_of_the_benchmarks_are_options() -> None:
    found = set(data_path_options())
    for command in ["crash", "diskfull", "readers", "stores", "mcp", "embed-runtimes", "ask"]:
        assert (command, "book") in found
    assert ("mcp-load", "ingest_book") in found
    for command in ["ann", "graph-parameters", "tuning"]:
        assert (command, "data") in found


@pytest.mark.parametrize(("command", "name"), data_path_options())
def test_an_absent_default_path_is_one_line_naming_the_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, name: str
) -> None:
    option = option_of(command, name)
    absent = tmp_path / "shared" / "data" / "absent"
    monkeypatch.setattr(option, "default", str(absent))
    result = CliRunner().invoke(cli, ["bench", command])
    flag = option.opts[0]
    kind = "FOLDER" if flag == "--data" else "FILE"
    assert result.exit_code == 2
    assert error_lines(result) == [
        f"Error: Invalid value for '{flag}': no {kind.lower()} at the default {absent} "
        f"(it comes with a source checkout); pass {flag} {kind}"
    ]


@pytest.mark.parametrize(("command", "name"), data_path_options())
def test_a_given_path_that_is_absent_is_named(tmp_path: Path, command: str, name: str) -> None:
    flag = option_of(command, name).opts[0]
    absent = tmp_path / "nope"
    result = CliRunner().invoke(cli, ["bench", command, flag, str(absent)])
    assert result.exit_code == 2
    kind = "Directory" if flag == "--data" else "File"
    assert error_lines(result) == [
        f"Error: Invalid value for '{flag}': {kind} '{absent}' does not exist."
    ]


@pytest.mark.parametrize("command", sorted(bench.commands))
def test_each_benchmark_has_help(command: str) -> None:
    result = CliRunner().invoke(cli, ["bench", command, "--help"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"Usage: cli bench {command} ")


def test_the_list_of_benchmarks_has_one_whole_line_each() -> None:
    result = CliRunner().invoke(cli, ["bench", "--help"])
    listed = result.output.split("Commands:\n")[1].splitlines()
    assert [line.split()[0] for line in listed] == sorted(bench.commands)
    assert all(len(line) <= 80 and not line.endswith("...") for line in listed), listed


def test_names_measures_a_book(tmp_path: Path) -> None:
    book = tmp_path / "letters.txt"
    book.write_text(shared_file("haystacks/gutenberg/pg84.txt").read_text("utf-8")[:20_000])
    result = CliRunner().invoke(cli, ["bench", "names", str(book), "--sample", "1"])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output)
    assert figures["chunks"] > 10 and figures["distinct_names"] > 10
    assert "margaret" in dict(figures["most_mentioned"])  # the letters to Mrs. Saville


def test_graph_parameters_names_a_folder_without_the_data(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["bench", "graph-parameters", "--data", str(tmp_path)])
    assert result.exit_code == 2
    assert error_lines(result) == [
        f"Error: Invalid value for --data: no hotpotqa and haystacks folders in "
        f"{tmp_path}; pass --data FOLDER"
    ]


def test_tuning_names_a_missing_set(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["bench", "tuning", "--data", str(tmp_path)])
    missing = tmp_path / "hotpotqa" / "hotpotqa_dev_100_hard.jsonl"
    assert error_lines(result) == [
        f"Error: Invalid value for --data: no tuning set at {missing}; pass --data "
        "FOLDER or --set KIND:PATH"
    ]
    result = CliRunner().invoke(cli, ["bench", "tuning", "--set", "hotpotqa"])
    assert error_lines(result) == ["Error: Invalid value for --set: hotpotqa: not KIND:PATH"]


def test_crash_into_a_base_needs_sqlite(tmp_path: Path) -> None:
    base = tmp_path / "base.db"
    base.write_bytes(b"")
    result = CliRunner().invoke(
        cli, ["bench", "crash", "--base", str(base), "--store", "neo4j", "--book", str(base)]
    )
    assert result.exit_code == 2
    assert error_lines(result) == ["Error: --base is a SQLite memory: it needs --store sqlite"]


def test_stores_names_a_uri_that_is_not_neo4j(tmp_path: Path) -> None:
    book = tmp_path / "book.txt"
    book.write_text("Call me Ishmael.")
    result = CliRunner().invoke(
        cli, ["bench", "stores", "--book", str(book), "--neo4j", "http://127.0.0.1:7474"]
    )
    assert result.exit_code == 1
    assert error_lines(result) == [
        "Error: --neo4j http://127.0.0.1:7474: not a bolt:// or neo4j:// URI"
    ]


def test_play_dialogue_names_a_missing_play(tmp_path: Path) -> None:
    absent = tmp_path / "romeo.txt"
    result = CliRunner().invoke(
        cli, ["bench", "play-dialogue", str(absent), "--out", str(tmp_path / "romeo.json")]
    )
    assert result.exit_code == 2
    assert error_lines(result) == [
        f"Error: Invalid value for 'PLAY': File '{absent}' does not exist."
    ]


def recorder(monkeypatch: pytest.MonkeyPatch, module: object) -> list[dict[str, Any]]:
    """Replace ``module.run`` by one that records its arguments."""
    calls: list[dict[str, Any]] = []

    def record(*args: Any, **kwargs: Any) -> dict[str, Any]:
        calls.append({"args": args, **kwargs})
        return {"errors": 0, "half_written": 0}

    monkeypatch.setattr(module, "run", record)
    return calls


def test_ask_reads_the_default_hotpot_only_without_cold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cam_engine.cli.bench, "shared_data_dir", lambda: tmp_path)
    book = tmp_path / "book.txt"
    book.write_text("Call me Ishmael.")
    result = CliRunner().invoke(cli, ["bench", "ask", "--book", str(book)])
    absent = tmp_path / "hotpotqa" / "hotpotqa_dev_200.jsonl"
    assert result.exit_code == 2
    assert error_lines(result) == [
        f"Error: Invalid value for '--hotpot': no file at the default {absent} "
        "(it comes with a source checkout); pass --hotpot FILE"
    ]
    cold = recorder(monkeypatch, cam_engine.bench.cold_ask)
    result = CliRunner().invoke(cli, ["bench", "ask", "--cold", "--book", str(book)])
    assert result.exit_code == 0, result.output
    assert [call["book"] for call in cold] == [book]


def test_mcp_load_reads_the_default_book_only_without_base(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    absent = tmp_path / "pg84.txt"
    monkeypatch.setattr(cam_engine.cli.bench_reliability, "FRANKENSTEIN", absent)
    calls = recorder(monkeypatch, cam_engine.bench.mcp_load)
    args = ["bench", "mcp-load", "--ingest-book", "/dev/null"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2 and calls == []
    assert error_lines(result) == [
        f"Error: Invalid value for '--book': no file at the default {absent} "
        "(it comes with a source checkout); pass --book FILE"
    ]
    base = tmp_path / "scale.db"
    base.write_bytes(b"")
    result = CliRunner().invoke(cli, [*args, "--base", str(base)])
    assert result.exit_code == 0, result.output
    (call,) = calls
    assert call["args"][2].base.path == base.resolve()
