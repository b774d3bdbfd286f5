"""Ingest with an LLM summarizer over the OpenAI-compatible protocol (scripted server)."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path

from click.testing import CliRunner

from cam_engine import Memory, Settings
from cam_engine.cli.main import cli
from cam_engine.embed import HashingEmbedder
from cam_engine.llm import ChatSummarizer, OpenAICompatibleChat
from cam_engine.llm.base import ChatModel, Completion, JsonSchema, Message
from tests.conftest import shared_file
from tests.support.chat_server import ChatServer, Delay, Fault, Reply

EMBEDDER = HashingEmbedder(64)
SETTINGS = Settings(embed_model=EMBEDDER.name, theta=0.3, chunk_tokens=60)


def summary_of(request: dict) -> str:
    # A deterministic "model": the first words of the prompt's passages.
    prompt = request["messages"][-1]["content"]
    return "Summary: " + " ".join(prompt.split()[-12:])


class InFlight:
    """A chat model that counts its calls in flight, as the engine sees them: from the
    call to its return, in the calling thread.

    The chat server's own count is no measure of the limit: its handler counts a request
    done only after writing the reply, and by then the engine may have sent the next
    one, so under load a finishing call and a starting one overlap there (4 > 3). The
    first call also waits (up to WAIT seconds) for a second one to start, so that two
    calls overlap however the threads are scheduled.
    """

    WAIT = 5.0

    def __init__(self, chat: ChatModel) -> None:
        self._chat = chat
        self._lock = threading.Lock()
        self._in_flight = 0
        self._overlapped = threading.Event()
        self.max_in_flight = 0

    @property
    def name(self) -> str:
        return self._chat.name

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        schema: JsonSchema | None = None,
    ) -> Completion:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            if self._in_flight > 1:
                self._overlapped.set()
        try:
            self._overlapped.wait(self.WAIT)
            return self._chat.complete(
                messages, max_tokens=max_tokens, temperature=temperature, schema=schema
            )
        finally:
            with self._lock:
                self._in_flight -= 1


def test_summaries_overlap_up_to_the_concurrency_limit(tmp_path: Path) -> None:
    text = shared_file("haystacks/paul_graham/gap.txt").read_text()[:6000]
    # Each reply takes 50 ms, so calls over the limit would be caught overlapping.
    with ChatServer(default=Reply(summary_of, delay=0.05)) as server:
        chat = InFlight(OpenAICompatibleChat(server.base_url, "scripted", timeout=5.0))
        with Memory.open(
            tmp_path / "m.db",
            "llm",
            settings=SETTINGS,
            embedder=EMBEDDER,
            summarizer=ChatSummarizer(chat),
            llm_concurrency=3,
        ) as memory:
            report = memory.ingest_text(text, "gap", batch_size=64)
            levels = memory.stats()["levels"]
            summaries = sum(row["nodes"] for row in levels[1:])
            backends = memory.stats()["summaries_by_backend"]
            # Not the model's text: covering nodes whose every summary repeated another
            # node's text, which take their members' texts joined (and say so).
            joined = [
                n
                for row in levels[1:]
                for n in memory.store.nodes_at_level(row["level"])
                if n.props["backend"] == "extractive"
            ]
        calls = len(server.requests)
    assert 1 < chat.max_in_flight <= 3
    assert calls == sum(b.usage.calls for b in report.batches) >= summaries
    assert backends.get("openai:scripted", 0) + len(joined) == summaries
    assert backends.get("openai:scripted", 0) > len(joined)
    assert all(n.props.get("cover") for n in joined)
    assert all(b.usage.prompt_tokens > 0 for b in report.batches if b.summaries_written)


def test_cli_reports_llm_calls_and_a_dead_endpoint_leaves_no_batch(tmp_path: Path) -> None:
    text_file = tmp_path / "gap.txt"
    text_file.write_text(shared_file("haystacks/paul_graham/gap.txt").read_text()[:3000])
    store = str(tmp_path / "cli.db")
    with ChatServer(default=Reply(summary_of)) as server:
        env = {
            "CAM_STORE": store,
            "CAM_EMBED_MODEL": EMBEDDER.name,
            "CAM_LLM_BASE_URL": server.base_url,
            "CAM_LLM_MODEL": "scripted",
        }
        args = ["ingest", str(text_file), "--summarizer", "openai", "--theta", "0.3", "--json"]
        result = CliRunner().invoke(cli, args, env=env)
        assert result.exit_code == 0, result.output
        *batches, run = [json.loads(line) for line in result.output.splitlines()]
        assert run["kind"] == "run" and run["llm_calls"] == len(server.requests)
        assert sum(b["llm_calls"] for b in batches) == len(server.requests) > 0
        assert all(b["summarizer"] == "openai:scripted" for b in batches)
    # An endpoint that rejects the calls: a new document fails with one line naming the
    # endpoint, and the memory is unchanged.
    before = CliRunner().invoke(cli, ["stats", "--json"], env=env).output
    other = tmp_path / "other.txt"
    other.write_text(shared_file("haystacks/paul_graham/gap.txt").read_text()[3000:6000])
    with ChatServer(default=Fault(400, body="model not loaded")) as rejecting:
        env["CAM_LLM_BASE_URL"] = endpoint = rejecting.base_url
        failed = CliRunner().invoke(cli, ["ingest", str(other), "--summarizer", "openai"], env=env)
    assert failed.exit_code == 1
    lines = failed.output.strip().splitlines()
    assert len(lines) == 1 and endpoint in lines[0] and "400" in lines[0]
    assert CliRunner().invoke(cli, ["stats", "--json"], env=env).output == before


def test_ask_through_an_llm_endpoint(tmp_path: Path) -> None:
    """`cam ask --llm openai`: the model selects passages and writes the answer; the
    JSON output accounts for every call and its tokens."""
    text_file = tmp_path / "gap.txt"
    text_file.write_text(shared_file("haystacks/paul_graham/gap.txt").read_text()[:4000])
    env = {"CAM_STORE": str(tmp_path / "ask.db"), "CAM_EMBED_MODEL": EMBEDDER.name}
    assert (
        CliRunner().invoke(cli, ["ingest", str(text_file), "--theta", "0.3"], env=env).exit_code
        == 0
    )

    def reply(request: dict) -> str:
        prompt = request["messages"][-1]["content"]
        return "[1]" if "[1]" in prompt and "Reply with" in prompt else "The rich got richer."

    with ChatServer(default=Reply(reply)) as server:
        env |= {"CAM_LLM_BASE_URL": server.base_url, "CAM_LLM_MODEL": "scripted"}
        result = CliRunner().invoke(
            cli, ["ask", "Why did the gap grow?", "--llm", "openai", "--json"], env=env
        )
        calls = len(server.requests)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)  # progress goes to stderr
    assert data["backend"] == "openai:scripted"
    assert data["llm_calls"] == calls >= 2 and data["prompt_tokens"] > 0
    assert data["evidence"] and data["turns"][0]


def test_a_failing_batch_sends_no_more_calls_and_mixing_backends_is_warned(
    tmp_path: Path,
) -> None:
    text_file = tmp_path / "gap.txt"
    text_file.write_text(shared_file("haystacks/paul_graham/gap.txt").read_text()[:6000])
    store = str(tmp_path / "cli.db")
    env = {"CAM_STORE": store, "CAM_EMBED_MODEL": EMBEDDER.name, "CAM_LLM_MAX_RETRIES": "0"}
    args = ["ingest", str(text_file), "--theta", "0.3", "--chunk-tokens", "60"]
    first = CliRunner().invoke(cli, args, env=env)
    assert first.exit_code == 0
    stats = json.loads(CliRunner().invoke(cli, ["stats", "--json"], env=env).output)
    clusters = sum(row["nodes"] for row in stats["levels"][1:])
    # Each call is held a moment, then fails for good (no retries).
    with ChatServer(default=Delay(0.3, then=Fault(500, body="down"))) as failing:
        env |= {"CAM_LLM_BASE_URL": failing.base_url, "CAM_LLM_MODEL": "scripted"}
        args = ["ingest", "--rebuild", "--summarizer", "openai", "--llm-concurrency", "2"]
        rebuilt = CliRunner().invoke(cli, args, env=env)
        sent = len(failing.requests)
    assert rebuilt.exit_code == 1
    # the calls in flight when the first failed, at most one more per worker: not the
    # whole batch
    assert sent <= 4 < clusters
    assert "has summaries by extractive; summaries written now will be by openai:scripted" in (
        rebuilt.output
    )
    after = json.loads(CliRunner().invoke(cli, ["stats", "--json"], env=env).output)
    assert after == stats  # the rebuild was rolled back whole
