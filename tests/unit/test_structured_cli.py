"""Unusable LLM replies through the CLI: an ingest batch and an ask go on with their
fallbacks, and ``--json`` counts the replies (scripted server)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from cam_engine.cli.main import cli
from cam_engine.embed import HashingEmbedder
from tests.conftest import shared_file
from tests.support.chat_server import ChatServer, Reply

EMBEDDER = HashingEmbedder(64)
ANSWER = "The rich got richer."


def essay(tmp_path: Path, characters: int) -> Path:
    path = tmp_path / "gap.txt"
    path.write_text(shared_file("haystacks/paul_graham/gap.txt").read_text()[:characters])
    return path


def test_empty_summaries_fall_back_to_extractive_and_the_batch_commits(tmp_path: Path) -> None:
    env = {"CAM_STORE": str(tmp_path / "m.db"), "CAM_EMBED_MODEL": EMBEDDER.name}
    args = ["ingest", str(essay(tmp_path, 3000)), "--summarizer", "openai", "--theta", "0.3"]
    with ChatServer(default=Reply("")) as server:  # every summary comes back empty
        env |= {"CAM_LLM_BASE_URL": server.base_url, "CAM_LLM_MODEL": "empty"}
        result = CliRunner().invoke(cli, [*args, "--json"], env=env)
        calls = len(server.requests)
    assert result.exit_code == 0, result.output
    *batches, run = [json.loads(line) for line in result.output.splitlines()]
    stats = json.loads(CliRunner().invoke(cli, ["stats", "--json"], env=env).output)
    summaries = sum(row["nodes"] for row in stats["levels"][1:])
    assert summaries > 0
    # The model wrote none of the summaries, and none claims it did.
    assert stats["summaries_by_backend"] == {"extractive": summaries}
    # Each summary was asked for twice, and counted once as unusable.
    assert calls == run["llm_calls"] == 2 * run["unusable_replies"] > 0
    assert run["unusable_replies"] == sum(b["unusable_replies"] for b in batches)
    assert run["parsed_replies"] == run["repaired_replies"] == 0
    assert all(b["usage"]["unusable_replies"] == b["unusable_replies"] for b in batches)
    # Without --json the run's line does not credit those summaries to the model.
    other = tmp_path / "more.txt"
    other.write_text(shared_file("haystacks/paul_graham/gap.txt").read_text()[3000:6000])
    with ChatServer(default=Reply("")) as server:
        env["CAM_LLM_BASE_URL"] = server.base_url
        args = ["ingest", str(other), "--summarizer", "openai"]
        line = CliRunner().invoke(cli, args, env=env).output.strip().splitlines()[-1]
    assert "written by openai:empty (" in line and "extractive: empty replies)" in line


def test_an_unusable_selection_falls_back_to_offline_choice_and_ask_json_counts_it(
    tmp_path: Path,
) -> None:
    env = {"CAM_STORE": str(tmp_path / "ask.db"), "CAM_EMBED_MODEL": EMBEDDER.name}
    ingest = ["ingest", str(essay(tmp_path, 4000)), "--theta", "0.3"]
    assert CliRunner().invoke(cli, ingest, env=env).exit_code == 0

    def reply(request: dict) -> str:
        prompt = request["messages"][-1]["content"]
        asks_selection = '"passages"' in prompt or "could not be used" in prompt
        return "Hard to say." if asks_selection else ANSWER

    with ChatServer(default=Reply(reply)) as server:
        env |= {"CAM_LLM_BASE_URL": server.base_url, "CAM_LLM_MODEL": "scripted"}
        args = ["ask", "Why did the gap grow?", "--llm", "openai", "--json"]
        result = CliRunner().invoke(cli, args, env=env)
        schemas = [f["json_schema"]["name"] for f in server.response_formats if f]
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["answer"] == ANSWER
    # Every turn's reply and its repair were unusable: each turn is chosen the offline
    # way, so the answer still has evidence, and each fallback is counted.
    turns = len(data["turns"])
    assert data["selector_fallback_turns"] == turns >= 1
    assert data["evidence"] and data["turns"][0]
    assert schemas == ["select", "select"] * turns
    assert data["unusable_replies"] == turns
    assert data["parsed_replies"] == data["repaired_replies"] == 0
    assert data["llm_calls"] == 2 * turns + 1  # each reply and its repair, the answer
