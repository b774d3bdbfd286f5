"""``cam bench llm``: its figures from known usage, and the command end to end against
the scripted OpenAI-compatible server (nothing here is timed)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cam_engine.bench.llm import ingest_figures, reply_figures
from cam_engine.cli.main import cli
from cam_engine.llm.base import Usage
from tests.conftest import shared_file
from tests.support.chat_server import ChatServer, Reply


@dataclass(frozen=True)
class CountedUsage(Usage):
    """A ``Usage`` with reply counters, whether or not ``Usage`` has them yet."""

    parsed_replies: int = 0
    repaired_replies: int = 0
    unusable_replies: int = 0


def test_ingest_figures_from_known_usage() -> None:
    usages = [
        Usage(calls=2, prompt_tokens=300, completion_tokens=40, seconds=3.0),
        Usage(calls=0),
        Usage(calls=4, prompt_tokens=900, completion_tokens=80, seconds=9.0),
    ]
    figures = ingest_figures(usages, chunks=30, summaries=5, wall_s=20.0)
    assert figures["llm_calls"] == 6
    assert figures["llm_calls_per_batch"] == [2, 0, 4]
    assert figures["mean_llm_calls_per_batch"] == 2.0
    assert figures["llm_calls_per_summary"] == 1.2
    assert figures["prompt_tokens_per_chunk"] == 40.0
    assert figures["completion_tokens_per_chunk"] == 4.0
    assert figures["seconds_per_call"] == 2.0
    assert figures["summaries_per_s"] == 0.25
    assert figures["llm_share_of_wall"] == 0.6


def test_ingest_figures_of_nothing_are_none_not_errors() -> None:
    figures = ingest_figures([], chunks=0, summaries=0, wall_s=0.0)
    for key in ("summaries_per_s", "seconds_per_call", "prompt_tokens_per_chunk"):
        assert figures[key] is None
    assert figures["malformed_share"] is None


def test_malformed_share_counts_replies_not_usable_as_sent() -> None:
    usages = [
        CountedUsage(calls=8, parsed_replies=6, repaired_replies=1),
        CountedUsage(calls=3, parsed_replies=1, unusable_replies=1),
    ]
    figures = reply_figures(usages)
    # 2 of the 9 replies judged were malformed: one repaired, one unusable.
    assert figures["replies_judged"] == 9
    assert figures["malformed_share"] == round(2 / 9, 4)


def test_plain_usage_gives_no_share_rather_than_a_false_zero() -> None:
    # Whatever counters Usage has (none before structured outputs, all 0 here), free
    # text replies judged by nobody make no malformed share, not a share of 0.
    figures = reply_figures([Usage(calls=3), Usage(calls=2)])
    assert set(figures["replies"]) <= {
        "parsed_replies",
        "repaired_replies",
        "unusable_replies",
        "malformed_replies",
    }
    assert figures["replies_judged"] == 0
    assert figures["malformed_share"] is None


def words(request: dict[str, Any]) -> int:
    return sum(len(str(m["content"]).split()) for m in request["messages"])


def test_cam_bench_llm_end_to_end_against_a_scripted_endpoint() -> None:
    shared_file("haystacks/gutenberg/pg84.txt")
    hotpot = shared_file("hotpotqa/hotpotqa_dev_200.jsonl")

    def reply(request: dict[str, Any]) -> str:
        prompt = request["messages"][-1]["content"]
        if "Question: " in prompt:
            return "Rush"  # the first question's answer
        return "Summary: " + " ".join(prompt.split()[-15:])

    args = ["bench", "llm", "--llm", "openai", "--chunks", "6", "--batch-size", "3"]
    args += ["--questions", "2", "--questions-file", str(hotpot), "--embed-model", "hashing"]
    with ChatServer(default=Reply(reply)) as server:
        env = {"CAM_LLM_BASE_URL": server.base_url, "CAM_LLM_MODEL": "scripted"}
        result = CliRunner().invoke(cli, [*args, "--json"], env=env)
        requests = [r.body for r in server.requests]
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1
    figures = json.loads(lines[0])
    done = figures["ingest"]
    assert figures["model"]["backend"] == "openai:scripted"
    assert figures["model"]["model"] == "scripted"
    assert done["chunks"] == 6 and done["batches"] == 2 and done["summaries"] > 0
    assert sum(done["llm_calls_per_batch"]) == done["llm_calls"] > 0
    # The ingest's calls come first; the server counts words as tokens.
    summaries = requests[: done["llm_calls"]]
    assert done["prompt_tokens"] == sum(words(r) for r in summaries)
    assert done["prompt_tokens_per_chunk"] == round(done["prompt_tokens"] / 6, 2)
    for key in ("summaries_per_s", "seconds_per_call", "completion_tokens_per_chunk"):
        assert done[key] is not None
    assert "malformed_share" in done and "replies" in done and "summaries_rewritten" in done
    answered = figures["questions"]["strategies"]
    assert set(answered) == {"prune-grow", "hybrid"}
    for row in answered.values():
        assert row["questions"] == 2 and row["llm_calls"] == 2
        assert row["em"] == 0.5  # "Rush" is right for the first question only
    assert len(requests) == done["llm_calls"] + 4
    # Progress goes to stderr, a line per batch: stdout stays one JSON line.
    assert "cam bench llm: batch 2: 6 chunks" in result.stderr


def test_cam_bench_llm_needs_a_model(tmp_path: Path) -> None:
    book = tmp_path / "book.txt"
    book.write_text("A short book.\n")
    args = ["bench", "llm", "--llm", "extractive", "--questions", "0", "--book", str(book)]
    result = CliRunner().invoke(cli, args, env={"CAM_LLM": ""})
    assert result.exit_code != 0
    assert "measures a model" in result.output


@pytest.mark.parametrize("flag", ["--json", None])
def test_the_table_and_the_json_line_show_the_same_run(flag: str | None) -> None:
    shared_file("haystacks/gutenberg/pg84.txt")
    args = ["bench", "llm", "--llm", "openai", "--chunks", "3", "--questions", "0"]
    args += ["--embed-model", "hashing"] + ([flag] if flag else [])
    with ChatServer(default=Reply("A summary of the passages.")) as server:
        env = {"CAM_LLM_BASE_URL": server.base_url, "CAM_LLM_MODEL": "scripted"}
        result = CliRunner().invoke(cli, args, env=env)
    assert result.exit_code == 0, result.output
    if flag:
        assert "questions" not in json.loads(result.stdout)
    else:
        assert "summaries/s" in result.output and "s/call" in result.output
