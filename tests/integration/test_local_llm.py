"""The real local model through the CLI: SmolLM2-135M (llama.cpp, in-process, one thread)
summarizes a short Paul Graham essay, builds the adapter views, selects and answers with
every strategy that calls a model, and answers `cam eval`'s questions.

A 135M model's answers are mostly wrong, so these tests check what a real model makes
certain, never content: calls made, replies parsed or fallen back on, every output
labelled with the model that wrote it, batches committed, exit code 0.

The ingest and one ask name the model as ``local:PATH``: they start and stop llama.cpp
themselves. The other commands reach one server started for the module, as an
OpenAI-compatible endpoint (``--llm openai``), so the model loads a few times, not once
per command.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from cam_engine.cli.main import cli
from cam_engine.llm.base import EXTRACTIVE
from cam_engine.llm.llamacpp import LlamaCppServer, LlamaCppSettings
from cam_engine.store.sqlite import SqliteStore
from tests.conftest import shared_file
from tests.local_llm import MODEL_NAME, require_local_model

pytestmark = [pytest.mark.realdata, pytest.mark.model, pytest.mark.local_llm]

ESSAY = "haystacks/paul_graham/weird.txt"  # 342 words: 5 chunks of 96 tokens, 1 page
DOCUMENT = "weird.txt"
QUESTION = "What does the weirdness of a good programming language imply?"
CONTEXT_TOKENS = 2048  # room for the longest prompt here (a GAM memo, about 800 tokens)
# SmolLM2-135M writes until max_tokens (300 to 1,000 tokens a call): at 30-60 tokens a
# second on one thread that alone would take minutes. CAM_LLM_MAX_TOKENS caps every
# reply at this many tokens; requests, server and parsing stay as they are.
REPLY_CAP = 64
OPENAI_NAME = "openai:SmolLM2-135M-Instruct.Q4_1"  # the module server's model, by endpoint


@pytest.fixture(scope="module")
def model() -> Path:
    return require_local_model()


@pytest.fixture(scope="module")
def env(model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str | None]]:
    """What every command runs with: a new store, llama.cpp on one thread, and the module's
    server as the ``openai`` endpoint."""
    settings = LlamaCppSettings(threads=1, context_tokens=CONTEXT_TOKENS)
    with LlamaCppServer(model, settings) as chat:
        yield {
            "CAM_STORE": str(tmp_path_factory.mktemp("local-llm") / "m.db"),
            "CAM_LLM": None,  # a developer's default model must not change what runs
            "CAM_LLM_THREADS": "1",
            "CAM_LLM_CONTEXT": str(CONTEXT_TOKENS),
            "CAM_LLM_MAX_TOKENS": str(REPLY_CAP),
            "CAM_LLM_STRUCTURED": None,
            "CAM_LLM_BASE_URL": chat.endpoint.removesuffix("/chat/completions"),
            "CAM_LLM_MODEL": chat.model,
            "CAM_LLM_API_KEY": None,
        }


def cam(args: Sequence[str], env: Mapping[str, str | None]) -> Result:
    result = CliRunner().invoke(cli, list(args), env=dict(env))
    assert result.exit_code == 0, f"cam {' '.join(args)}:\n{result.output}"
    return result


def json_lines(result: Result) -> list[dict[str, Any]]:
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def assert_model_replies(counts: Mapping[str, Any]) -> None:
    """The model was called, and the command finished: each reply was parsed or fallen
    back on. Every ingest batch, view and ask of this module comes through here."""
    assert counts["llm_calls"] > 0, counts
    # How the parsed replies turned out: at once, after a repair call, or not at all (the
    # step fell back). A 135M model's replies are often malformed, so none of these is
    # asserted to be zero; a repair is a call of its own, so they never exceed the calls.
    outcomes = [counts[k] for k in ("parsed_replies", "repaired_replies", "unusable_replies")]
    assert all(isinstance(n, int) and n >= 0 for n in outcomes), counts
    assert sum(outcomes) <= counts["llm_calls"], counts


@pytest.fixture(scope="module")
def ingested(model: Path, env: dict[str, str | None]) -> list[dict[str, Any]]:
    """The essay ingested with the model's summaries and both adapter views, the model
    started by the command itself (``local:PATH``)."""
    essay = shared_file(ESSAY)
    args = ["ingest", str(essay), "--chunk-tokens", "96", "--summarizer", f"local:{model}"]
    result = cam([*args, "--view", "readagent", "--view", "gam", "--json"], env)
    return json_lines(result)


def test_ingest_commits_batches_of_model_summaries(
    ingested: list[dict[str, Any]], env: dict[str, str | None]
) -> None:
    batches = [line for line in ingested if "batch" in line]
    run = next(line for line in ingested if line.get("kind") == "run")
    assert batches and all(b["summarizer"] == MODEL_NAME for b in batches)
    assert run["errors"] == [] and run["documents"] == [DOCUMENT]
    assert run["summarizer"] == MODEL_NAME and run["summaries_written"] > 0
    assert_model_replies(run)
    assert sum(b["chunks_added"] for b in batches) == 5

    stats = json.loads(cam(["stats", "--json"], env).stdout)
    assert stats["partial_documents"] == []
    assert_summaries_by_the_model(stats["summaries_by_backend"], batches)


def assert_summaries_by_the_model(
    by_backend: Mapping[str, int], batches: Sequence[Mapping[str, Any]]
) -> None:
    """The model wrote the summaries. One that still repeats another node's text after
    being asked again with larger budgets (a tiny model writes the same opening for
    every cluster) is its members' text joined, and labelled extractive, honestly."""
    assert by_backend.get(MODEL_NAME, 0) > 0, by_backend
    assert set(by_backend) <= {MODEL_NAME, EXTRACTIVE}, by_backend
    if by_backend.get(EXTRACTIVE):
        assert sum(b["summaries_rewritten"] for b in batches) > 0


def test_every_written_node_records_the_model(
    ingested: list[dict[str, Any]], env: dict[str, str | None]
) -> None:
    """Provenance in the store: each summary, page and memo names who wrote it."""
    store = SqliteStore(Path(str(env["CAM_STORE"])), "default")
    try:
        summaries = [
            n for level in store.levels() if level > 0 for n in store.nodes_at_level(level)
        ]
        views = [
            *store.view_nodes("readagent", "page"),
            *store.view_nodes("gam", "page"),
            *store.view_nodes("gam", "memo"),
        ]
    finally:
        store.close()
    assert {n.props.get("backend") for n in views} == {MODEL_NAME} and len(views) >= 3
    by_backend = Counter(str((n.props or {}).get("backend")) for n in summaries)
    assert_summaries_by_the_model(by_backend, [b for b in ingested if "batch" in b])


def test_views_are_built_by_the_model(ingested: list[dict[str, Any]]) -> None:
    views = {line["view"]: line for line in ingested if "view" in line}
    assert set(views) == {"readagent", "gam"}
    for view in views.values():
        assert view["backend"] == MODEL_NAME and view["nodes_written"] > 0
        assert_model_replies(view)


def ask(env: Mapping[str, str | None], *args: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(cam(["ask", QUESTION, *args, "--json"], env).stdout)
    return data


def test_prune_grow_selects_and_answers_with_the_local_model(
    ingested: list[dict[str, Any]], model: Path, env: dict[str, str | None]
) -> None:
    data = ask(env, "--llm", f"local:{model}", "--max-turns", "1")
    assert data["backend"] == MODEL_NAME and data["strategy"] == "prune-grow"
    # The model may choose no passage ({"passages": []}): then the answer has no
    # evidence, which is the model's call, not a failure.
    assert data["answer"].strip() and len(data["turns"]) == 1
    assert_model_replies(data)


# Each adapter strategy, with the smallest budget that still calls the model, and the
# field that says whether the model's reply was parsed or fallen back on.
ADAPTER_RUNS = {
    "lookup": (["--max-pages", "1"], "lookup_reply_parsed"),
    "memagent": (["--memory-tokens", "64"], "boxed"),
    "research": (["--max-iters", "1"], "plans"),
}


@pytest.mark.parametrize("strategy", list(ADAPTER_RUNS))
def test_adapter_strategy_runs_on_the_model(
    ingested: list[dict[str, Any]], env: dict[str, str | None], strategy: str
) -> None:
    options, parsed_field = ADAPTER_RUNS[strategy]
    data = ask(env, "--llm", "openai", "--strategy", strategy, *options)
    assert data["strategy"] == strategy and data["backend"] == OPENAI_NAME
    assert_model_replies(data)
    assert isinstance(data["answer"], str)
    if strategy == "research":
        # A plan that is not JSON is an empty plan: nothing is searched, the answer is
        # empty, and the plan says it fell back.
        (plan,) = data["plans"]
        assert plan["fallback"] or data["answer"].strip()
    else:
        assert isinstance(data[parsed_field], bool) and data["answer"].strip()


def test_eval_scores_the_models_answers(env: dict[str, str | None]) -> None:
    questions = shared_file("hotpotqa/hotpotqa_dev_200.jsonl")
    args = ["eval", "hotpotqa", str(questions), "--limit", "5", "--strategies", "dense"]
    options = ["--budgets", "500", "--answer-budget", "300", "--llm", "openai", "--json"]
    result = cam([*args, *options], env)
    data = json.loads(result.stdout)
    assert data["questions"] == 5
    (answers,) = data["answers"]
    assert answers["strategy"] == "dense" and answers["questions"] == 5
    for field in ("em", "f1", "sub_em"):
        assert 0.0 <= answers[field] <= 1.0
    assert answers["llm_calls_per_question"] >= 1.0
    scored = [r for r in data["results"] if r["strategy"] == "dense"]
    assert len(scored) == 5
    for row in scored:
        assert row["answer_llm_calls"] >= 1 and set(row["answer_scores"]) >= {"em", "f1"}
