"""ChatSummarizer end to end: prompt file -> OpenAICompatibleChat -> scripted server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cam_engine.errors import ConfigError, LLMError
from cam_engine.llm.base import EXTRACTIVE, Summarizer, Usage
from cam_engine.llm.extractive import ExtractiveSummarizer
from cam_engine.llm.openai_compat import OpenAICompatibleChat
from cam_engine.llm.prompts import load_prompt
from cam_engine.llm.summarizer import ChatSummarizer, number_passages
from tests.support.chat_server import ChatServer, Fault, Reply

MODEL = "summary-model"
TEXTS = ["Ann met Bob in Paris in 1921.", "  They bought 3 horses.  ", "Bob left for Rome."]


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as running:
        yield running


def make_summarizer(server: ChatServer, **options: int) -> ChatSummarizer:
    chat = OpenAICompatibleChat(
        server.base_url, MODEL, timeout=2.0, max_retries=2, sleep=lambda _: None
    )
    return ChatSummarizer(chat, **options)


def test_summary_through_the_server(server: ChatServer) -> None:
    server.add(Reply("  Ann and Bob met in Paris (1921).\n", prompt_tokens=90, completion_tokens=8))
    summarizer = make_summarizer(server)
    result = summarizer.summarize(TEXTS, max_words=30)
    assert result.text == "Ann and Bob met in Paris (1921)."
    assert result.backend == f"openai:{MODEL}" == summarizer.backend
    assert result.usage.calls == 1
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (90, 8)
    assert result.usage.seconds > 0


def test_request_carries_numbered_passages_and_budget(server: ChatServer) -> None:
    server.add("summary")
    make_summarizer(server).summarize(TEXTS, max_words=30)
    [body] = server.bodies
    assert body["model"] == MODEL
    assert body["temperature"] == 0.0
    assert body["max_tokens"] >= 30
    expected = load_prompt("summarize").render(passages=number_passages(TEXTS), max_words=30)
    assert body["messages"] == [{"role": m.role, "content": m.content} for m in expected]
    user = body["messages"][-1]["content"]
    assert "[1] Ann met Bob in Paris in 1921.\n\n[2] They bought 3 horses.\n\n[3] Bob" in user
    assert "30 words" in user


def test_explicit_max_tokens_is_sent(server: ChatServer) -> None:
    server.add("summary")
    make_summarizer(server, max_tokens=1234).summarize(TEXTS, max_words=30)
    assert server.bodies[0]["max_tokens"] == 1234


def test_reasoning_is_not_part_of_the_summary(server: ChatServer) -> None:
    server.add("<think>Who is Ann?</think>\nAnn met Bob.")
    assert make_summarizer(server).summarize(TEXTS, max_words=30).text == "Ann met Bob."


def test_empty_reply_is_retried_once(server: ChatServer) -> None:
    server.add(Reply("   ", prompt_tokens=10, completion_tokens=0), Reply("Second try.", 10, 2))
    result = make_summarizer(server).summarize(TEXTS, max_words=30)
    assert result.text == "Second try."
    assert result.usage.calls == 2
    assert result.usage.prompt_tokens == 20
    assert result.usage.reply_counts() == {
        "parsed_replies": 0,
        "repaired_replies": 1,
        "unusable_replies": 0,
    }
    assert len(server.requests) == 2


def test_a_reply_at_once_is_counted_as_parsed(server: ChatServer) -> None:
    server.add("A summary.")
    result = make_summarizer(server).summarize(TEXTS, max_words=30)
    assert (result.usage.parsed_replies, result.usage.unusable_replies) == (1, 0)


def test_two_empty_replies_give_the_extractive_summary_labelled_so(
    server: ChatServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.add("", "<think>still thinking", "never asked")
    result = make_summarizer(server).summarize(TEXTS, max_words=30)
    assert len(server.requests) == 2
    # The model wrote none of it: the text is the extractive summary, and says so.
    assert result.backend == EXTRACTIVE
    assert result.text == ExtractiveSummarizer().summarize(TEXTS, max_words=30).text
    assert result.text
    assert result.usage.calls == 2
    assert (result.usage.parsed_replies, result.usage.unusable_replies) == (0, 1)
    assert f"openai:{MODEL} returned an empty summary twice" in caplog.text


def test_transport_retries_happen_below_the_summarizer(server: ChatServer) -> None:
    server.add(Fault(503), "Recovered summary.")
    result = make_summarizer(server).summarize(TEXTS, max_words=30)
    assert result.text == "Recovered summary."
    assert result.usage.calls == 1


def test_client_error_propagates(server: ChatServer) -> None:
    server.add(Fault(400, body='{"error": {"message": "context too long"}}'))
    with pytest.raises(LLMError, match="context too long"):
        make_summarizer(server).summarize(TEXTS, max_words=30)


def test_no_text_makes_no_call(server: ChatServer) -> None:
    result = make_summarizer(server).summarize(["", "  "], max_words=30)
    assert result.text == ""
    assert result.usage == Usage()
    assert server.requests == []


def test_is_a_summarizer(server: ChatServer) -> None:
    summarizer: Summarizer = make_summarizer(server)
    assert summarizer.backend == f"openai:{MODEL}"


def test_invalid_arguments(server: ChatServer) -> None:
    with pytest.raises(ConfigError):
        make_summarizer(server, max_tokens=0)
    with pytest.raises(ConfigError):
        make_summarizer(server).summarize(TEXTS, max_words=0)


def test_number_passages() -> None:
    assert number_passages(["a ", " b"]) == "[1] a\n\n[2] b"
