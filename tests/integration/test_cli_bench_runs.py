"""The `cam bench` commands that run real `cam` processes, run as a user runs them, on
small inputs (the start of Frankenstein, the hashing embedder): each prints its figures
as one JSON line and exits 0 when its check holds. Their seconds are the benchmarks'
business, printed, not asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cam_engine.cli.main import cli
from tests.conftest import shared_file

pytestmark = [pytest.mark.realdata]


@pytest.fixture
def letters(tmp_path: Path) -> Path:
    """Walton's first letters: about 1,000 words."""
    text = shared_file("haystacks/gutenberg/pg84.txt").read_text(encoding="utf-8")
    path = tmp_path / "letters.txt"
    path.write_text(text[:6_000], encoding="utf-8")
    return path


def figures_of(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["bench", *args])
    assert result.exit_code == 0, result.output
    figures: dict[str, Any] = json.loads(result.output.splitlines()[-1])
    return figures


def test_crash_resumes_a_killed_ingest_to_the_clean_memory(letters: Path) -> None:
    figures = figures_of(
        "crash", "--book", str(letters), "--points", "1", "--batch-size", "2",
        "--chunk-tokens", "60",
    )  # fmt: skip
    assert figures["points"] == figures["identical"] == figures["stats_equal"] == 1
    assert figures["invariants_ok"] == 1


def test_crash_checks_invariants_from_any_working_directory(tmp_path: Path) -> None:
    """The `cam` script does not put the checkout on sys.path (nor does a run from
    another folder): tests/invariants.py is read from beside the package."""
    code = "from cam_engine.bench.crash import _invariant_check; print(_invariant_check())"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert done.stdout.startswith("<function _invariant_check.<locals>.check")


def test_readers_see_whole_commits(letters: Path) -> None:
    figures = figures_of("readers", "--book", str(letters), "--batch-size", "2")
    assert figures["writer_rc"] == 0 and figures["reads"] > 0 and figures["mixed"] == 0


def test_longline_ingests_one_line(tmp_path: Path) -> None:
    figures = figures_of("longline", "--sizes", "0.02", "--chunk-tokens", "100")
    (run,) = figures["runs"]
    assert run["mb"] == 0.02 and run["chunks"] > 1 and run["max_chunk_tokens"] <= 100


def test_mcp_load_answers_beside_an_ingest(letters: Path) -> None:
    figures = figures_of(
        "mcp-load", "--book", str(letters), "--ingest-book", str(letters),
        "--embed-model", "hashing:64", "--seconds", "2", "--clients", "1",
        "--part-words", "300", "--batch-size", "4",
    )  # fmt: skip
    assert figures["embedder"] == "hashing:64" and figures["asks"] > 0
    assert figures["errors"] == figures["half_written"] == 0
