"""One strategy registry: a strategy added to it runs in `cam ask`, the MCP ask tool,
``Memory.ask`` and `cam eval` with nothing else edited; the ablations are registry
strategies too; cam eval's old names are an error naming the new ones."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcp import Client

from cam_engine import Memory, Settings
from cam_engine.cli.main import cli
from cam_engine.embed import HashingEmbedder
from cam_engine.errors import ConfigError, InputError
from cam_engine.eval.compare import load_results
from cam_engine.eval.contexts import strategy_names
from cam_engine.eval.dataset import EvalDocument, EvalQuestion, EvalSet, GoldItem, write_jsonl
from cam_engine.retrieval.base import Retrieval
from cam_engine.retrieval.strategies import CAM, STRATEGIES, AskOptions, Strategy
from tests.conftest import shared_file
from tests.unit.test_mcp_server import data, error, serve, tools_for

EMBEDDER = HashingEmbedder(64)
ENV = {"CAM_EMBED_MODEL": EMBEDDER.name}
TAIL = "tail-chunks"  # the throwaway strategy


def tail_chunks(memory: Memory, question: str, options: AskOptions) -> Retrieval:
    """A strategy in one function: the last chunks of the memory's documents."""
    chunks = sorted(memory.chunks(), key=lambda n: n.position or 0, reverse=True)
    kept = chunks[: options.top_k]
    return Retrieval(TAIL, kept, ranked=kept)


@pytest.fixture
def tail(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """``tail_chunks`` as one registry line, for this test only; the memories it ran on."""
    ran: list[str] = []

    def run(memory: Memory, question: str, options: AskOptions) -> Retrieval:
        ran.append(memory.name)
        return tail_chunks(memory, question, options)

    monkeypatch.setitem(STRATEGIES, TAIL, Strategy(TAIL, CAM, "the last chunks", run))
    yield ran


@pytest.fixture(scope="module")
def letter() -> str:
    """Walton's first letter (about 6,000 characters of Frankenstein)."""
    text = shared_file("haystacks/gutenberg/pg84.txt").read_text(encoding="utf-8")
    start = text.index("St. Petersburgh, Dec. 11th")
    return text[start : start + 6_000]


def last_sentence(text: str) -> str:
    return text.rstrip().rsplit(". ", 1)[-1]


def build(store: Path, text: str, name: str = "m", **settings: object) -> None:
    chosen = Settings(embed_model=EMBEDDER.name, **settings)  # type: ignore[arg-type]
    with Memory.open(store, name, settings=chosen, embedder=EMBEDDER) as memory:
        memory.ingest_text(text, document="letter")


def test_a_registered_strategy_runs_in_all_four_entry_points(
    tail: list[str], letter: str, tmp_path: Path
) -> None:
    store = tmp_path / "s.db"
    build(store, letter)
    ending = " ".join(last_sentence(letter).split())

    # Memory.ask
    with Memory.open(store, "m", embedder=EMBEDDER) as memory:
        result = memory.ask("How does the letter end?", strategy=TAIL, top_k=1)
    assert result.retrieval.strategy == TAIL and ending in " ".join(result.evidence[0].text.split())

    # cam ask: the option takes it and its help lists it
    env = {**ENV, "CAM_STORE": str(store), "CAM_MEMORY": "m"}
    asked = CliRunner().invoke(
        cli, ["ask", "How does it end?", "--strategy", TAIL, "--json"], env=env
    )
    assert asked.exit_code == 0, asked.output
    assert json.loads(asked.stdout)["strategy"] == TAIL
    assert TAIL in CliRunner().invoke(cli, ["ask", "--help"]).stdout

    # The MCP ask tool: offered in its schema and run
    async def scenario(client: Client) -> dict[str, object]:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        strategy = listed["ask"].input_schema["properties"]["strategy"]
        assert TAIL in strategy["enum"] and TAIL in strategy["description"]
        return data(await client.call_tool("ask", {"question": "The end?", "strategy": TAIL}))

    answer = serve(tools_for(store), scenario)
    assert answer["strategy"] == TAIL

    # cam eval: by name, and in the default set and the help
    evalset = EvalSet(
        "tail",
        [EvalDocument("letter", letter)],
        [
            EvalQuestion(
                id="q1",
                question="How does the letter end?",
                answers=("x",),
                gold=(GoldItem("letter", last_sentence(letter)),),
                doc_ids=("letter",),
            )
        ],
    )
    write_jsonl(evalset, tmp_path / "tail.jsonl")
    args = ["eval", "jsonl", str(tmp_path / "tail.jsonl"), "--budgets", "300", "--json"]
    evaluated = CliRunner().invoke(cli, [*args, "--strategies", f"{TAIL},bm25"], env=ENV)
    assert evaluated.exit_code == 0, evaluated.output
    rows = {r["strategy"]: r for r in json.loads(evaluated.stdout)["summary"]}
    assert set(rows) == {TAIL, "bm25"} and rows[TAIL]["recall"] == 1.0
    assert TAIL in strategy_names(None)
    assert TAIL in CliRunner().invoke(cli, ["eval", "--help"]).stdout
    assert len(tail) == 4  # Memory.ask, cam ask, MCP, cam eval's one question


def test_a_strategy_refuses_a_memory_built_otherwise(letter: str, tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    build(store, letter)
    question = "Where did Walton twice hire himself as an under-mate?"
    with Memory.open(store, "m", embedder=EMBEDDER) as memory:
        with pytest.raises(ConfigError) as refused:
            memory.ask(question, strategy="prune-grow-no-flexibility")
        flat = memory.ask(question, strategy="prune-grow-no-hierarchy")
    assert str(refused.value) == (
        "strategy 'prune-grow-no-flexibility' needs a memory built with ego_split=False, "
        "and 'm' was built with ego_split=True: ingest into a new memory with "
        "`cam ingest --memory NAME --no-ego-split`"
    )
    assert flat.evidence and {e.level for e in flat.evidence} == {0}

    # The command it names builds that memory, and the strategy answers from it.
    (tmp_path / "letter.txt").write_text(letter)
    env = {**ENV, "CAM_STORE": str(store)}
    runner = CliRunner()
    ingested = runner.invoke(
        cli, ["ingest", str(tmp_path / "letter.txt"), "--memory", "flat", "--no-ego-split"], env=env
    )
    assert ingested.exit_code == 0, ingested.output
    with Memory.open(store, "flat", embedder=EMBEDDER) as memory:
        assert memory.settings.ego_split is False
    args = ["ask", question, "--strategy", "prune-grow-no-flexibility", "--json"]
    asked = runner.invoke(cli, [*args, "--memory", "flat"], env=env)
    assert asked.exit_code == 0, asked.output
    assert json.loads(asked.stdout)["strategy"] == "prune-grow-no-flexibility"
    wrong = runner.invoke(cli, [*args, "--memory", "m"], env=env)
    assert wrong.exit_code == 1 and "needs a memory built with ego_split=False" in wrong.output

    async def scenario(client: Client) -> str:
        ask = {"question": question, "strategy": "prune-grow-no-flexibility"}
        return error(await client.call_tool("ask", ask))

    assert serve(tools_for(store), scenario).startswith("strategy 'prune-grow-no-flexibility'")


def test_cam_eval_names_the_new_name_of_an_old_one(tmp_path: Path) -> None:
    data_file = tmp_path / "one.jsonl"
    evalset = EvalSet(
        "one",
        [EvalDocument("d", "The needle is 42. Nothing else is here.")],
        [EvalQuestion("q", "What is the needle?", ("42",), (GoldItem("d", "42"),), ("d",))],
    )
    write_jsonl(evalset, data_file)
    for old, new in (("cam-prune-grow", "prune-grow"), ("gam-research", "research")):
        result = CliRunner().invoke(cli, ["eval", "jsonl", str(data_file), "--strategies", old])
        assert result.exit_code == 1
        assert result.output.strip().splitlines()[-1] == (
            f"Error: {old} is now {new} (cam eval takes cam ask's names)"
        )
    unknown = CliRunner().invoke(cli, ["eval", "jsonl", str(data_file), "--strategies", "magic"])
    assert "unknown strategy 'magic': use one of prune-grow, " in unknown.output
    # An earlier results.json written with the old names cannot be paired with.
    old_run = tmp_path / "results.json"
    old_run.write_text(json.dumps({"strategies": ["bm25", "cam-global"], "results": []}))
    with pytest.raises(InputError, match="cam-global is now global"):
        load_results(old_run)
