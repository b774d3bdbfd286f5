"""The adapters through ``cam``: views built by ingest, asked by their strategies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cam_engine.cli.main import cli
from tests.conftest import shared_file

QUESTION = "Which whale-ship belonged to the island of Nantucket?"


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    return {"CAM_STORE": str(tmp_path / "cli.db"), "CAM_EMBED_MODEL": "hashing:64"}


@pytest.fixture()
def book(tmp_path: Path) -> Path:
    path = tmp_path / "moby.txt"
    path.write_text(shared_file("haystacks/gutenberg/pg2701.txt").read_text()[:40000])
    return path


def run(env: dict[str, str], *args: str) -> Result:
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def test_views_are_built_listed_and_asked(env: dict[str, str], book: Path) -> None:
    built = run(env, "ingest", str(book), "--view", "readagent", "--view", "gam")
    assert built.exit_code == 0, built.output
    assert "view readagent:" in built.output and "view gam:" in built.output
    assert "(extractive, 0 LLM calls)" in built.output

    stats = json.loads(run(env, "stats", "--json").output)
    assert set(stats["views"]) == {"readagent", "gam"}
    assert stats["views"]["gam"]["page"] == stats["views"]["gam"]["memo"] > 0
    text = run(env, "stats").output
    assert "views: gam (" in text and "; readagent (" in text and " pages" in text

    for strategy in ("lookup", "lookup-seq", "research", "memagent"):
        extra = ["--output", "sources"] if strategy == "research" else []
        result = run(env, "ask", QUESTION, "--strategy", strategy, "--json", *extra)
        assert result.exit_code == 0, result.output
        answer = json.loads(result.stdout)  # progress lines go to stderr
        assert answer["strategy"] == strategy and answer["backend"] == "extractive"
        assert answer["llm_calls"] == 0 and "largest_context_tokens" in answer
        assert answer["evidence"], strategy  # research: only with --output sources|extracts
    lookup = json.loads(run(env, "ask", QUESTION, "--strategy", "lookup", "--json").output)
    assert 0 < lookup["compression_rate"] < 100
    text = run(env, "ask", QUESTION, "--strategy", "lookup").output
    assert text.startswith("answer (extractive):") and "lookup:" in text


def test_long_strategies_print_progress_lines_on_stderr(env: dict[str, str], book: Path) -> None:
    """Without a terminal (as here) progress comes as plain lines: the first and the last
    of each run at least."""
    assert run(env, "ingest", str(book), "--view", "gam").exit_code == 0
    read = run(env, "ask", QUESTION, "--strategy", "memagent", "--read-tokens", "1000")
    steps = [line for line in read.stderr.splitlines() if line.startswith("memagent: step ")]
    assert steps[0].startswith("memagent: step 1/") and "(read " in steps[0]
    last = steps[-1].split()[2]  # "N/N"
    assert last.split("/")[0] == last.split("/")[1] and "answered" in steps[-1]
    assert "memagent: step" not in read.stdout
    research = run(env, "ask", QUESTION, "--strategy", "research").stderr
    assert "research: iteration 1/3 (" in research and "pages found)" in research
    quick = run(env, "ask", QUESTION)  # prune-grow offline: nothing to report
    assert quick.stderr == ""


def test_a_strategy_without_its_view_says_how_to_build_it(env: dict[str, str], book: Path) -> None:
    assert run(env, "ingest", str(book)).exit_code == 0
    result = CliRunner().invoke(cli, ["ask", QUESTION, "--strategy", "research"], env=env)
    assert result.exit_code != 0
    assert "has no gam view" in result.output and "cam ingest --view gam" in result.output


def test_views_over_an_existing_memory(env: dict[str, str], book: Path) -> None:
    assert run(env, "ingest", str(book)).exit_code == 0
    result = run(env, "ingest", "--view", "readagent", "--page-words", "100,300", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output.strip().splitlines()[-1])
    assert report["view"] == "readagent" and report["documents"] == 1
    assert report["max_words"] == 300
    bad = CliRunner().invoke(
        cli, ["ingest", "--view", "readagent", "--page-words", "300,100"], env=env
    )
    assert bad.exit_code != 0 and "MIN < MAX" in bad.output


def test_reingesting_keeps_views_and_a_new_document_gets_its_own(
    env: dict[str, str], book: Path, tmp_path: Path
) -> None:
    assert run(env, "ingest", str(book), "--view", "readagent").exit_code == 0
    before = json.loads(run(env, "stats", "--json").output)["views"]
    again = run(env, "ingest", str(book), "--view", "readagent")
    assert "view readagent: up to date" in again.output
    assert json.loads(run(env, "stats", "--json").output)["views"] == before

    other = tmp_path / "more.txt"
    other.write_text(shared_file("haystacks/gutenberg/pg2701.txt").read_text()[40000:52000])
    grown = run(env, "ingest", str(book), str(other), "--view", "readagent", "--json")
    report = json.loads(grown.output.splitlines()[-1])
    assert report["documents"] == 1  # only the new document was paginated
    pages = json.loads(run(env, "stats", "--json").output)["views"]["readagent"]["page"]
    assert pages > before["readagent"]["page"]


def test_a_document_updated_by_removals_only_gets_its_view_built_again(
    env: dict[str, str], book: Path
) -> None:
    # Paragraphs of 120 words: each one chunk, so cutting the last ones only removes.
    words = book.read_text().split()
    paragraphs = [" ".join(words[i : i + 120]) for i in range(0, 120 * 30, 120)]
    book.write_text("\n\n".join(paragraphs))
    assert run(env, "ingest", str(book), "--view", "readagent").exit_code == 0
    book.write_text("\n\n".join(paragraphs[:20]))
    result = run(env, "ingest", str(book), "--view", "readagent", "--json")
    *_, ingested, view = [json.loads(line) for line in result.output.splitlines()]
    assert ingested["chunks_added"] == 0 < ingested["chunks_removed"]
    assert view["view"] == "readagent" and view["documents"] == 1
