"""Structured outputs: the schema a step asks for, an endpoint that refuses it, the one
repair round, and the reply counts (scripted server; llm/structured.py)."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence

import pytest

from cam_engine.config import Environment
from cam_engine.errors import ConfigError, LLMError
from cam_engine.llm.base import Candidate, Completion, JsonSchema, Message, Usage
from cam_engine.llm.openai_compat import OpenAICompatibleChat, response_format
from cam_engine.llm.parsers import parse_number_list
from cam_engine.llm.structured import ReplyFormat, ask, object_schema, repair_messages
from cam_engine.llm.tasks import SELECT_SCHEMA, ChatSelector
from tests.support.chat_server import ChatServer, Fault

MODEL = "schema-model"
QUESTION = "Where did Ann meet Bob?"
CANDIDATES = [
    Candidate("Ann met Bob in Paris."),
    Candidate("The weather was cold."),
    Candidate("Bob lived in Rome."),
]


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as running:
        yield running


def chat(server: ChatServer, **options: object) -> OpenAICompatibleChat:
    return OpenAICompatibleChat(
        server.base_url, MODEL, timeout=2.0, max_retries=1, sleep=lambda _: None, **options
    )


# --- the schema on the wire ------------------------------------------------------------------
def test_a_step_sends_its_schema_as_a_strict_json_schema_response_format(
    server: ChatServer,
) -> None:
    server.add('{"passages": [1, 3]}')
    selection = ChatSelector(chat(server)).select(QUESTION, CANDIDATES)
    assert selection.chosen == [0, 2]
    [sent] = server.response_formats
    assert sent == {
        "type": "json_schema",
        "json_schema": {"name": "select", "schema": dict(SELECT_SCHEMA), "strict": True},
    }
    assert sent["json_schema"]["schema"]["required"] == ["passages"]
    assert selection.usage.reply_counts() == {
        "parsed_replies": 1,
        "repaired_replies": 0,
        "unusable_replies": 0,
    }


def test_a_plain_call_sends_no_response_format(server: ChatServer) -> None:
    server.add("text")
    chat(server).complete([Message("user", "hi")], max_tokens=8)
    assert server.response_formats == [None]


def test_structured_off_never_sends_a_schema(server: ChatServer) -> None:
    env = Environment.from_env(
        {"CAM_LLM_BASE_URL": server.base_url, "CAM_LLM_MODEL": MODEL, "CAM_LLM_STRUCTURED": "off"}
    )
    server.add("[1]")
    model = OpenAICompatibleChat.from_environment(env, sleep=lambda _: None)
    assert ChatSelector(model).select(QUESTION, CANDIDATES).chosen == [0]
    assert server.response_formats == [None]
    assert model.sends_schemas is False


def test_structured_mode_is_auto_by_default_and_checked() -> None:
    assert Environment.from_env({}).llm_structured == "auto"
    assert Environment.from_env({"CAM_LLM_STRUCTURED": " OFF "}).llm_structured == "off"
    with pytest.raises(ConfigError, match="CAM_LLM_STRUCTURED must be auto or off"):
        Environment.from_env({"CAM_LLM_STRUCTURED": "always"})


def test_a_schema_title_names_it_in_the_request() -> None:
    assert response_format({"type": "object"})["json_schema"]["name"] == "reply"
    named = response_format({"title": "gam plan!", "type": "object"})
    assert named["json_schema"]["name"] == "gam_plan_"


# --- an endpoint without structured outputs ----------------------------------------------------
def test_a_refusal_is_remembered_and_the_call_made_plainly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with ChatServer(["[1]", "[2]"], refuse_response_format=True) as refusing:
        model = chat(refusing)
        selector = ChatSelector(model)
        with caplog.at_level(logging.WARNING):
            first = selector.select(QUESTION, CANDIDATES)
            second = selector.select(QUESTION, CANDIDATES)
        formats = refusing.response_formats
    assert (first.chosen, second.chosen) == ([0], [1])
    # The refused request, its plain retry, then only plain requests.
    assert [f is not None for f in formats] == [True, False, False]
    assert model.sends_schemas is False
    refusals = [r for r in caplog.records if "does not take response_format" in r.getMessage()]
    assert len(refusals) == 1
    assert first.usage.calls == 1  # the refused request returned no completion


def test_other_client_errors_are_not_taken_for_a_refusal(server: ChatServer) -> None:
    server.add(Fault(400, body='{"error": {"message": "context length exceeded"}}'))
    model = chat(server)
    with pytest.raises(LLMError, match="context length exceeded"):
        ChatSelector(model).select(QUESTION, CANDIDATES)
    assert model.sends_schemas is True
    assert len(server.requests) == 1


def test_a_422_naming_the_schema_is_a_refusal(server: ChatServer) -> None:
    body = '{"detail": "json_schema: unsupported keyword pattern"}'
    server.add(Fault(422, body=body), "[3]")
    model = chat(server)
    assert ChatSelector(model).select(QUESTION, CANDIDATES).chosen == [2]
    assert model.sends_schemas is False


# --- the repair round ---------------------------------------------------------------------------
def test_a_malformed_reply_is_repaired_once_and_counted(server: ChatServer) -> None:
    server.add("Passages one and three help.", '{"passages": [1, 3]}')
    selection = ChatSelector(chat(server)).select(QUESTION, CANDIDATES)
    assert selection.chosen == [0, 2]
    assert selection.usage.calls == 2
    assert selection.usage.reply_counts() == {
        "parsed_replies": 0,
        "repaired_replies": 1,
        "unusable_replies": 0,
    }
    first, repair = server.bodies
    # The conversation, the bad reply, and what to send instead; the schema again.
    assert repair["messages"][: len(first["messages"])] == first["messages"]
    assistant, user = repair["messages"][-2:]
    assert assistant == {"role": "assistant", "content": "Passages one and three help."}
    assert user["role"] == "user"
    assert "not in the requested form" in user["content"]
    assert '{"passages": [1, 3]}' in user["content"]
    assert repair["response_format"] == first["response_format"]


def test_an_unusable_reply_falls_back_and_is_counted(
    server: ChatServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.add("", "I cannot say.", "[1] never asked")
    selection = ChatSelector(chat(server)).select(QUESTION, CANDIDATES)
    assert selection.chosen == []
    assert len(server.requests) == 2
    assert "it was empty" in server.bodies[1]["messages"][-1]["content"]
    assert selection.usage.unusable_replies == 1
    assert selection.usage.repaired_replies == selection.usage.parsed_replies == 0
    assert "select reply unusable" in caplog.text and "selecting nothing" in caplog.text


class ScriptedComplete:
    """A ``Complete`` that answers from a list and records the messages and schemas."""

    def __init__(self, replies: Sequence[str]) -> None:
        self.replies = list(replies)
        self.sent: list[tuple[list[Message], JsonSchema | None]] = []

    def __call__(self, messages: Sequence[Message], schema: JsonSchema | None) -> Completion:
        self.sent.append((list(messages), schema))
        return Completion(self.replies.pop(0), "m", Usage(calls=1, prompt_tokens=3))


NUMBERS = ReplyFormat(
    "numbers",
    object_schema("numbers", {"n": {"type": "array", "items": {"type": "integer"}}}),
    parse_number_list,
    'a JSON object like {"n": [1]}',
    "none",
)


@pytest.mark.parametrize(
    ("replies", "repairs", "value", "outcome", "calls"),
    [
        (["[1]"], 1, [1], "parsed", 1),
        (["no", '{"n": [2]}'], 1, [2], "repaired", 2),
        (["no", "still no"], 1, None, "unusable", 2),
        (["no"], 0, None, "unusable", 1),
        (["no", "no", "[4]"], 2, [4], "repaired", 3),
    ],
)
def test_ask_outcomes(
    replies: list[str], repairs: int, value: list[int] | None, outcome: str, calls: int
) -> None:
    complete = ScriptedComplete(replies)
    messages = [Message("user", "numbers?")]
    reply = ask(complete, messages, NUMBERS, backend="m", repairs=repairs)
    assert (reply.value, reply.outcome, reply.usage.calls) == (value, outcome, calls)
    assert reply.usage.prompt_tokens == 3 * calls
    counts = reply.usage.reply_counts()
    assert sum(counts.values()) == 1 and counts[f"{outcome}_replies"] == 1
    assert all(schema is NUMBERS.schema for _, schema in complete.sent)


def test_repair_messages_cut_a_long_bad_reply() -> None:
    messages = repair_messages([Message("user", "q")], "x" * 10_000, NUMBERS)
    assert messages[0] == Message("user", "q")
    assert messages[1].role == "assistant" and len(messages[1].content) < 5000
    assert 'a JSON object like {"n": [1]}' in messages[2].content


def test_usage_adds_the_reply_counts() -> None:
    total = Usage(1, parsed_replies=1) + Usage(2, repaired_replies=1, unusable_replies=2)
    assert total == Usage(3, 0, 0, 0.0, 1, 1, 2)
