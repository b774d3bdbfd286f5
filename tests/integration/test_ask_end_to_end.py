"""``cam ask`` on a real book with the real embedder and the extractive backend."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cam_engine.cli.main import cli
from tests.conftest import shared_file

pytestmark = [pytest.mark.realdata, pytest.mark.model]

# A sentence of the Simple Sabotage Field Manual, and a question it answers.
ANSWER = "pulverize an emery knife sharpener or emery wheel with a hammer"
QUESTION = "Where can a saboteur get emery dust?"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    book = shared_file("haystacks/gutenberg/pg26184.txt")
    env = {"CAM_STORE": str(tmp_path_factory.mktemp("ask") / "m.db")}
    result = CliRunner().invoke(cli, ["ingest", str(book)], env=env)
    assert result.exit_code == 0, result.output
    return env


@pytest.mark.parametrize("strategy", ["prune-grow", "global", "traverse"])
def test_the_answer_sentence_is_in_the_evidence(env: dict[str, str], strategy: str) -> None:
    result = CliRunner().invoke(cli, ["ask", QUESTION, "--strategy", strategy, "--json"], env=env)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    evidence = " ".join(" ".join(e["text"].split()) for e in data["evidence"])
    if strategy == "traverse":
        # Top-down traversal may miss it (the paper's point); it must still reach chunks.
        assert any(e["level"] == 0 for e in data["evidence"])
        return
    assert ANSWER in evidence
    assert data["backend"] == "extractive" and ANSWER in " ".join(data["answer"].split())
    assert data["llm_calls"] == 0 and data["strategy"] == strategy


def test_text_output_names_the_backend(env: dict[str, str], tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["ask", QUESTION], env=env)
    assert result.exit_code == 0
    assert result.output.startswith("answer (extractive): ")
    assert "evidence (" in result.output
