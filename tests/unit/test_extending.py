"""A retrieval strategy and a ``cam`` command added from outside the package, each from
this file alone, through the public calls docs/extending.md gives: the strategy answers
through ``Memory.ask`` and ``cam ask --strategy``, the command runs under ``cam`` and is
in its help. Both are removed after each test (tests/unit/test_docs.py requires every
command of ``cam`` to be documented)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from cam_engine import ConfigError, Memory, Settings
from cam_engine.cli.main import cli
from cam_engine.embed import HashingEmbedder
from cam_engine.retrieval import Retrieval
from cam_engine.retrieval.strategies import (
    BASELINE,
    STRATEGIES,
    AskOptions,
    Strategy,
    register_strategy,
    unregister_strategy,
)
from tests.conftest import shared_file

EMBEDDER = HashingEmbedder(64)


# The strategy of docs/extending.md, "A retrieval strategy".
def first_chunks(memory: Memory, question: str, options: AskOptions) -> Retrieval:
    """The first chunks in reading order, whatever the question: a floor to beat."""
    chunks = [
        chunk
        for chunk in memory.chunks()
        if options.documents is None or chunk.doc_id in options.documents
    ]
    chunks.sort(key=lambda chunk: (chunk.doc_id or "", chunk.position or 0))
    kept = chunks[: options.top_k]
    return Retrieval("first-chunks", kept, ranked=kept)


FIRST_CHUNKS = Strategy("first-chunks", BASELINE, "the first chunks in reading order", first_chunks)


# The command of docs/extending.md, "A command".
@click.command("chunk-counts")
@click.option("--store", help="The store (default: $CAM_STORE).")
@click.option("--memory", "memory_name", help="The memory (default: $CAM_MEMORY).")
def chunk_counts(store: str | None, memory_name: str | None) -> None:
    """How many chunks each document of a memory has."""
    with Memory.open(store, memory_name, create=False) as memory:
        for document in memory.documents():
            click.echo(f"{document.id}\t{document.chunks}")


@pytest.fixture()
def strategy() -> Iterator[Strategy]:
    register_strategy(FIRST_CHUNKS)
    try:
        yield FIRST_CHUNKS
    finally:
        unregister_strategy("first-chunks")


@pytest.fixture()
def command() -> Iterator[click.Command]:
    cli.add_command(chunk_counts)
    try:
        yield chunk_counts
    finally:
        del cli.commands["chunk-counts"]


@pytest.fixture(scope="module")
def letter() -> str:
    """Walton's first letter (about 6,000 characters of Frankenstein)."""
    text = shared_file("haystacks/gutenberg/pg84.txt").read_text(encoding="utf-8")
    start = text.index("St. Petersburgh, Dec. 11th")
    return text[start : start + 6_000]


@pytest.fixture()
def store(letter: str, tmp_path: Path) -> Path:
    """A memory "m" of two documents: the letter, and its second half."""
    path = tmp_path / "s.db"
    settings = Settings(embed_model=EMBEDDER.name)
    with Memory.open(path, "m", settings=settings, embedder=EMBEDDER) as memory:
        memory.ingest_text(letter, document="letter")
        memory.ingest_text(letter[3_000:], document="second-half")
    return path


def cli_env(store: Path) -> dict[str, str]:
    return {"CAM_STORE": str(store), "CAM_MEMORY": "m", "CAM_EMBED_MODEL": EMBEDDER.name}


def test_a_registered_strategy_answers_through_memory_ask(
    strategy: Strategy, store: Path, letter: str
) -> None:
    with Memory.open(store, "m", embedder=EMBEDDER) as memory:
        result = memory.ask(
            "Did a disaster accompany the enterprise?",
            strategy="first-chunks",
            top_k=3,
            documents=["letter"],
        )
        chunks = len(memory.document_chunks("letter"))
    assert chunks > 3  # so the first three are a choice
    assert result.retrieval.strategy == "first-chunks"
    evidence = result.evidence
    assert [e.document for e in evidence] == ["letter"] * 3
    # The letter's opening, then the chunks that follow it, each where it says it is.
    assert evidence[0].start_char == 0
    assert evidence[0].text.startswith("St. Petersburgh, Dec. 11th")
    for before, after in pairwise(evidence):
        assert before.end_char is not None and after.start_char is not None
        assert before.end_char <= after.start_char
    for e in evidence:
        assert e.start_char is not None and e.end_char is not None
        assert " ".join(e.text.split()) in " ".join(letter[e.start_char : e.end_char].split())
    # The offline answer quotes that evidence.
    assert "no disaster has accompanied the commencement" in " ".join(result.answer.split())


def test_a_registered_strategy_answers_through_cam_ask(strategy: Strategy, store: Path) -> None:
    runner = CliRunner()
    args = ["ask", "Where is he?", "--strategy", "first-chunks", "--top-k", "2", "--json"]
    asked = runner.invoke(cli, [*args, "--document", "second-half"], env=cli_env(store))
    assert asked.exit_code == 0, asked.output
    reply = json.loads(asked.stdout)
    assert reply["strategy"] == "first-chunks"
    assert [e["document"] for e in reply["evidence"]] == ["second-half"] * 2
    starts = [e["start_char"] for e in reply["evidence"]]
    assert starts[0] == 0 and starts[1] > 0  # the half's opening, then what follows
    helped = runner.invoke(cli, ["ask", "--help"], env=cli_env(store))
    assert "first-chunks: the first chunks in reading order" in " ".join(helped.stdout.split())


def test_an_unregistered_strategy_is_gone(store: Path) -> None:
    register_strategy(FIRST_CHUNKS)
    unregister_strategy("first-chunks")
    assert "first-chunks" not in STRATEGIES
    args = ["ask", "Where is he?", "--strategy", "first-chunks"]
    asked = CliRunner().invoke(cli, args, env=cli_env(store))
    assert asked.exit_code == 2 and "unknown strategy 'first-chunks'" in asked.output
    with pytest.raises(ConfigError, match=r"^strategy 'first-chunks' is not registered$"):
        unregister_strategy("first-chunks")


def test_a_taken_strategy_name_is_one_clear_error(strategy: Strategy) -> None:
    with pytest.raises(ConfigError, match=r"^strategy 'first-chunks' is already registered$"):
        register_strategy(FIRST_CHUNKS)
    built_in = Strategy("bm25", BASELINE, "mine", first_chunks)
    with pytest.raises(ConfigError, match=r"^strategy 'bm25' is already registered$"):
        register_strategy(built_in)
    assert STRATEGIES["bm25"] is not built_in  # the built-in one is kept
    for name in ("", "first chunks", "first,chunks"):
        with pytest.raises(ConfigError, match=r"give one word such as first-chunks$"):
            register_strategy(Strategy(name, BASELINE, "mine", first_chunks))
    with pytest.raises(ConfigError, match=r"family 'toy' is not one of cam, baseline"):
        register_strategy(Strategy("toy", "toy", "mine", first_chunks))
    assert "toy" not in STRATEGIES


def test_an_added_command_runs_under_cam_and_is_in_its_help(
    command: click.Command, store: Path, letter: str
) -> None:
    runner = CliRunner()
    helped = runner.invoke(cli, ["--help"])
    assert "chunk-counts" in helped.stdout and "How many chunks each document" in helped.stdout
    counted = runner.invoke(cli, ["chunk-counts"], env=cli_env(store))
    assert counted.exit_code == 0, counted.output
    with Memory.open(store, "m", embedder=EMBEDDER) as memory:
        expected = {d: len(memory.document_chunks(d)) for d in ("letter", "second-half")}
    lines = dict(line.split("\t") for line in counted.stdout.splitlines())
    assert {d: int(n) for d, n in lines.items()} == expected
    # The group's error handling is the command's too: one line, no traceback.
    missing = runner.invoke(cli, ["chunk-counts", "--memory", "nothing"], env=cli_env(store))
    assert missing.exit_code == 1
    assert missing.output.startswith("Error: ") and len(missing.output.splitlines()) == 1
