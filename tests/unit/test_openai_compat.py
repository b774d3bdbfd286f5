"""OpenAICompatibleChat against a real (scripted) HTTP server on 127.0.0.1."""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from cam_engine.config import Environment
from cam_engine.errors import CamError, ConfigError, LLMError
from cam_engine.llm.base import ChatModel, Message
from cam_engine.llm.openai_compat import OpenAICompatibleChat
from tests.support.chat_server import (
    DISCONNECT,
    EMPTY_CHOICES,
    MALFORMED,
    ChatServer,
    Delay,
    Fault,
    Reply,
)

MODEL = "test-model"
KEY = "sk-test-SECRET-0123456789"
TIMEOUT = 0.2  # for tests that time out; the others allow a loaded machine more time
PATIENT = 2.0
MESSAGES = [Message("system", "You are terse."), Message("user", "Say hello.")]


class FakeSleep:
    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
def sleep() -> FakeSleep:
    return FakeSleep()


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as running:
        yield running


def make_chat(
    server: ChatServer, sleep: FakeSleep, *, api_key: str | None = None, **options: Any
) -> OpenAICompatibleChat:
    options.setdefault("timeout", PATIENT)
    options.setdefault("max_retries", 3)
    return OpenAICompatibleChat(server.base_url, MODEL, api_key, sleep=sleep, **options)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- happy path ------------------------------------------------------------------------


def test_reply_text_usage_and_seconds(server: ChatServer, sleep: FakeSleep) -> None:
    server.add(Reply("Hello there.", prompt_tokens=12, completion_tokens=3))
    chat = make_chat(server, sleep)
    completion = chat.complete(MESSAGES, max_tokens=50, temperature=0.3)
    assert completion.text == "Hello there."
    assert completion.model == MODEL
    assert completion.usage.calls == 1
    assert completion.usage.prompt_tokens == 12
    assert completion.usage.completion_tokens == 3
    assert 0 < completion.usage.seconds < 5
    assert sleep.waits == []


def test_request_body_and_no_auth_header_without_key(server: ChatServer, sleep: FakeSleep) -> None:
    server.add("ok")
    make_chat(server, sleep).complete(MESSAGES, max_tokens=77, temperature=0.5)
    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.body == {
        "model": MODEL,
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Say hello."},
        ],
        "max_tokens": 77,
        "temperature": 0.5,
    }
    assert "authorization" not in request.headers
    assert request.headers["content-type"] == "application/json"


def test_bearer_key_sent_when_set(server: ChatServer, sleep: FakeSleep) -> None:
    server.add("ok")
    make_chat(server, sleep, api_key=KEY).complete(MESSAGES, max_tokens=5)
    [request] = server.requests
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body["temperature"] == 0.0


def test_trailing_slash_in_base_url(server: ChatServer, sleep: FakeSleep) -> None:
    server.add("ok")
    chat = OpenAICompatibleChat(server.base_url + "/", MODEL, sleep=sleep, timeout=PATIENT)
    assert chat.complete(MESSAGES, max_tokens=5).text == "ok"
    assert chat.endpoint == server.url


def test_max_tokens_cap_from_the_environment_bounds_every_request(
    server: ChatServer, sleep: FakeSleep
) -> None:
    server.add("a", "b")
    env = Environment.from_env(
        {"CAM_LLM_BASE_URL": server.base_url, "CAM_LLM_MODEL": MODEL, "CAM_LLM_MAX_TOKENS": "64"}
    )
    chat = OpenAICompatibleChat.from_environment(env, sleep=sleep)
    chat.complete(MESSAGES, max_tokens=500)
    chat.complete(MESSAGES, max_tokens=10)  # a smaller budget of its own is kept
    assert [r.body["max_tokens"] for r in server.requests] == [64, 10]
    with pytest.raises(ConfigError, match="CAM_LLM_MAX_TOKENS must be >= 1"):
        OpenAICompatibleChat(server.base_url, MODEL, max_reply_tokens=0)


def test_a_given_name_labels_the_outputs(sleep: FakeSleep) -> None:
    chat = OpenAICompatibleChat("http://127.0.0.1:1/v1", "m", name="local:m", sleep=sleep)
    assert chat.name == "local:m" and chat.model == "m"


def test_name_and_protocol(sleep: FakeSleep) -> None:
    chat = OpenAICompatibleChat("http://127.0.0.1:1/v1", "qwen3-8b", KEY, sleep=sleep)
    assert chat.name == "openai:qwen3-8b"
    assert isinstance(chat, OpenAICompatibleChat)
    model: ChatModel = chat  # type-checks against the protocol
    assert model.name == chat.name
    assert KEY not in repr(chat)


def test_missing_usage_counts_zero(server: ChatServer, sleep: FakeSleep) -> None:
    server.add(Reply("no usage here", usage=False))
    usage = make_chat(server, sleep).complete(MESSAGES, max_tokens=5).usage
    assert (usage.calls, usage.prompt_tokens, usage.completion_tokens) == (1, 0, 0)


def test_reply_text_can_depend_on_the_request(server: ChatServer, sleep: FakeSleep) -> None:
    server.add(lambda request: f"max={request['max_tokens']}")
    assert make_chat(server, sleep).complete(MESSAGES, max_tokens=9).text == "max=9"


# -- reasoning models ------------------------------------------------------------------


def test_think_block_is_stripped(server: ChatServer, sleep: FakeSleep) -> None:
    server.add("<think>Let me think.</think>\n\nThe answer.")
    assert make_chat(server, sleep).complete(MESSAGES, max_tokens=50).text == "The answer."


def test_strips_up_to_the_last_think_end(server: ChatServer, sleep: FakeSleep) -> None:
    server.add("<think>a</think> draft <think>b</think>  Final.")
    assert make_chat(server, sleep).complete(MESSAGES, max_tokens=50).text == "Final."


def test_reply_cut_off_while_thinking_is_empty(server: ChatServer, sleep: FakeSleep) -> None:
    server.add(Reply("<think>I wonder whether", finish_reason="length"))
    assert make_chat(server, sleep).complete(MESSAGES, max_tokens=5).text == ""


# -- retries ---------------------------------------------------------------------------


def test_timeout_then_success(server: ChatServer, sleep: FakeSleep) -> None:
    server.add(Delay(5.0), "after the timeout")
    chat = make_chat(server, sleep, timeout=TIMEOUT, backoff=0.5)
    completion = chat.complete(MESSAGES, max_tokens=5)
    assert completion.text == "after the timeout"
    assert len(server.requests) == 2
    assert sleep.waits == [0.5]


def test_429_honours_retry_after(server: ChatServer, sleep: FakeSleep) -> None:
    server.add(Fault(429, retry_after=7), Fault(429, retry_after="2.5"), "finally")
    chat = make_chat(server, sleep, backoff=1.0, max_backoff=30.0)
    assert chat.complete(MESSAGES, max_tokens=5).text == "finally"
    assert sleep.waits == [7.0, 2.5]


def test_retry_after_is_capped_at_max_backoff(server: ChatServer, sleep: FakeSleep) -> None:
    server.add(Fault(429, retry_after=3600), "ok")
    chat = make_chat(server, sleep, max_backoff=4.0)
    assert chat.complete(MESSAGES, max_tokens=5).text == "ok"
    assert sleep.waits == [4.0]


def test_exponential_backoff_without_retry_after(server: ChatServer, sleep: FakeSleep) -> None:
    server.add(Fault(500), Fault(502), Fault(503), Fault(504), "ok")
    chat = make_chat(server, sleep, max_retries=4, backoff=1.0, max_backoff=5.0)
    assert chat.complete(MESSAGES, max_tokens=5).text == "ok"
    assert sleep.waits == [1.0, 2.0, 4.0, 5.0]


def test_500_then_success(server: ChatServer, sleep: FakeSleep) -> None:
    server.add(Fault(500, body="upstream exploded"), "recovered")
    completion = make_chat(server, sleep).complete(MESSAGES, max_tokens=5)
    assert completion.text == "recovered"
    assert len(server.requests) == 2
    assert len(sleep.waits) == 1


def test_malformed_json_then_success(server: ChatServer, sleep: FakeSleep) -> None:
    server.add(MALFORMED, "valid now")
    assert make_chat(server, sleep).complete(MESSAGES, max_tokens=5).text == "valid now"
    assert len(server.requests) == 2


def test_empty_choices_then_success(server: ChatServer, sleep: FakeSleep) -> None:
    server.add(EMPTY_CHOICES, "has a choice")
    assert make_chat(server, sleep).complete(MESSAGES, max_tokens=5).text == "has a choice"
    assert len(server.requests) == 2


def test_dropped_connection_then_success(server: ChatServer, sleep: FakeSleep) -> None:
    server.add(DISCONNECT, "reconnected")
    assert make_chat(server, sleep).complete(MESSAGES, max_tokens=5).text == "reconnected"
    assert len(server.requests) == 2


def test_all_tries_fail_names_url_and_status_not_key(
    server: ChatServer, sleep: FakeSleep, caplog: pytest.LogCaptureFixture
) -> None:
    # A server that echoes the key in its error message must not leak it either.
    server.add(*[Fault(503, body=f"overloaded, key {KEY}")] * 4)
    chat = make_chat(server, sleep, api_key=KEY, max_retries=3)
    with caplog.at_level(logging.DEBUG), pytest.raises(LLMError) as caught:
        chat.complete(MESSAGES, max_tokens=5)
    message = str(caught.value)
    assert isinstance(caught.value, CamError)
    assert server.url in message
    assert MODEL in message
    assert "503" in message
    assert "4 attempts" in message
    assert "\n" not in message
    assert KEY not in message
    assert KEY not in caplog.text
    assert len(server.requests) == 4
    assert len(sleep.waits) == 3


def test_all_timeouts_say_timed_out(server: ChatServer, sleep: FakeSleep) -> None:
    server.add(Delay(5.0), Delay(5.0))
    chat = make_chat(server, sleep, timeout=TIMEOUT, max_retries=1)
    with pytest.raises(LLMError, match="timed out"):
        chat.complete(MESSAGES, max_tokens=5)
    assert len(server.requests) == 2


def test_400_fails_at_once_with_server_message(server: ChatServer, sleep: FakeSleep) -> None:
    server.add(Fault(400, body='{"error": {"message": "max_tokens is too large"}}'), "unused")
    chat = make_chat(server, sleep, api_key=KEY)
    with pytest.raises(LLMError) as caught:
        chat.complete(MESSAGES, max_tokens=5)
    message = str(caught.value)
    assert "400" in message
    assert "max_tokens is too large" in message
    assert server.url in message
    assert KEY not in message
    assert len(server.requests) == 1
    assert sleep.waits == []


def test_404_is_not_retried(sleep: FakeSleep) -> None:
    with ChatServer(["unused"]) as server:
        chat = OpenAICompatibleChat(
            f"http://127.0.0.1:{server.port}/wrong", MODEL, sleep=sleep, timeout=PATIENT
        )
        with pytest.raises(LLMError, match="404"):
            chat.complete(MESSAGES, max_tokens=5)
        assert len(server.requests) == 1


def test_connection_refused_names_the_url(sleep: FakeSleep) -> None:
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    chat = OpenAICompatibleChat(base_url, MODEL, KEY, timeout=TIMEOUT, max_retries=2, sleep=sleep)
    with pytest.raises(LLMError) as caught:
        chat.complete(MESSAGES, max_tokens=5)
    message = str(caught.value)
    assert f"{base_url}/chat/completions" in message
    assert "3 attempts" in message
    assert KEY not in message
    assert len(sleep.waits) == 2


# -- concurrency -----------------------------------------------------------------------


def test_one_instance_serves_threads_concurrently(sleep: FakeSleep) -> None:
    def echo(request: dict[str, Any]) -> str:
        return "echo: " + request["messages"][-1]["content"]

    with ChatServer(default=Reply(echo, delay=0.05)) as server:
        chat = make_chat(server, sleep)
        results: dict[int, str] = {}

        def work(i: int) -> None:
            results[i] = chat.complete([Message("user", f"q{i}")], max_tokens=5).text

        threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert results == {i: f"echo: q{i}" for i in range(6)}
        assert server.max_in_flight > 1


# -- configuration ---------------------------------------------------------------------


def test_from_environment(server: ChatServer) -> None:
    server.add("ok")
    env = Environment.from_env(
        {"CAM_LLM_BASE_URL": server.base_url, "CAM_LLM_MODEL": MODEL, "CAM_LLM_API_KEY": KEY}
    )
    chat = OpenAICompatibleChat.from_environment(env, timeout=PATIENT)
    assert chat.name == f"openai:{MODEL}"
    chat.complete(MESSAGES, max_tokens=5)
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize(
    ("variables", "named"),
    [
        ({}, ["CAM_LLM_BASE_URL", "CAM_LLM_MODEL"]),
        ({"CAM_LLM_MODEL": "m"}, ["CAM_LLM_BASE_URL"]),
        ({"CAM_LLM_BASE_URL": "http://localhost:8000/v1"}, ["CAM_LLM_MODEL"]),
    ],
)
def test_from_environment_names_missing_variables(
    variables: dict[str, str], named: list[str]
) -> None:
    env = Environment.from_env(variables)
    with pytest.raises(ConfigError) as caught:
        OpenAICompatibleChat.from_environment(env)
    assert str(caught.value).startswith(" and ".join(named) + " must be set")


@pytest.mark.parametrize(
    "options",
    [
        {"base_url": "localhost:8000/v1"},
        {"base_url": "ftp://host/v1"},
        {"model": " "},
        {"timeout": 0},
        {"max_retries": -1},
        {"backoff": -1.0},
    ],
)
def test_invalid_settings_raise_config_error(options: dict[str, Any]) -> None:
    arguments: dict[str, Any] = {"base_url": "http://localhost:8000/v1", "model": MODEL}
    arguments.update(options)
    with pytest.raises(ConfigError):
        OpenAICompatibleChat(**arguments)


def test_invalid_call_arguments(sleep: FakeSleep) -> None:
    chat = OpenAICompatibleChat("http://127.0.0.1:1/v1", MODEL, sleep=sleep)
    with pytest.raises(ConfigError):
        chat.complete([], max_tokens=5)
    with pytest.raises(ConfigError):
        chat.complete(MESSAGES, max_tokens=0)


def test_timeout_and_retries_come_from_the_environment(server: ChatServer) -> None:
    env = Environment.from_env(
        {
            "CAM_LLM_BASE_URL": server.base_url,
            "CAM_LLM_MODEL": MODEL,
            "CAM_LLM_TIMEOUT": str(TIMEOUT),
            "CAM_LLM_MAX_RETRIES": "1",
        }
    )
    server.add(Delay(5.0), Delay(5.0), "never reached")
    chat = OpenAICompatibleChat.from_environment(env, sleep=FakeSleep())
    with pytest.raises(LLMError, match=f"timed out after {TIMEOUT:g} s"):
        chat.complete(MESSAGES, max_tokens=5)
    assert len(server.requests) == 2  # one try and one retry
    with pytest.raises(ConfigError, match="CAM_LLM_TIMEOUT must be a number, got 'soon'"):
        Environment.from_env({"CAM_LLM_TIMEOUT": "soon"})
