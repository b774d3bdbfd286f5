"""ChatSelector and ChatAnswerer end to end: prompt file -> OpenAICompatibleChat -> server."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from cam_engine.errors import ConfigError, LLMError
from cam_engine.llm.base import Answerer, Candidate, Selector, Usage
from cam_engine.llm.openai_compat import OpenAICompatibleChat
from cam_engine.llm.prompts import load_prompt
from cam_engine.llm.tasks import ChatAnswerer, ChatSelector
from cam_engine.retrieval import prune_and_grow
from cam_engine.store.base import GraphStore
from tests.support.chat_server import ChatServer, Reply
from tests.unit.tiny_memory import axis

MODEL = "task-model"
BACKEND = f"openai:{MODEL}"
QUESTION = "Where did Ann meet Bob?"
CANDIDATES = [Candidate("Ann met Bob in Paris."), Candidate("The weather was cold.")]


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as running:
        yield running


def chat(server: ChatServer) -> OpenAICompatibleChat:
    return OpenAICompatibleChat(
        server.base_url, MODEL, timeout=2.0, max_retries=1, sleep=lambda _: None
    )


def user_message(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


# -- selector ------------------------------------------------------------------------------


def test_selector_returns_zero_based_indices(server: ChatServer) -> None:
    server.add(Reply("[2, 1]", prompt_tokens=50, completion_tokens=4))
    selector = ChatSelector(chat(server))
    selection = selector.select(QUESTION, CANDIDATES)
    assert selection.chosen == [1, 0]
    assert selection.backend == BACKEND == selector.backend
    assert selection.usage.calls == 1
    assert (selection.usage.prompt_tokens, selection.usage.completion_tokens) == (50, 4)


def test_selector_request_carries_question_and_numbered_passages(server: ChatServer) -> None:
    server.add("[1]")
    ChatSelector(chat(server), max_tokens=32).select(QUESTION, CANDIDATES)
    [body] = server.bodies
    assert body["temperature"] == 0.0
    assert body["max_tokens"] == 32
    user = user_message(body)
    assert QUESTION in user
    assert "[1] Ann met Bob in Paris.\n\n[2] The weather was cold." in user
    expected = load_prompt("select").render(
        question=QUESTION, passages="[1] Ann met Bob in Paris.\n\n[2] The weather was cold."
    )
    assert body["messages"] == [{"role": m.role, "content": m.content} for m in expected]


def test_selector_ignores_reasoning(server: ChatServer) -> None:
    server.add("<think>Maybe [1, 2]? No, only the second.</think>\n[2]")
    assert ChatSelector(chat(server)).select(QUESTION, CANDIDATES).chosen == [1]


def test_selector_drops_out_of_range_and_duplicates(server: ChatServer) -> None:
    server.add("[0, 2, 7, 2, 1, -1]")
    assert ChatSelector(chat(server)).select(QUESTION, CANDIDATES).chosen == [1, 0]


def test_selector_none_helpful(server: ChatServer) -> None:
    server.add("[]")
    selection = ChatSelector(chat(server)).select(QUESTION, CANDIDATES)
    assert selection.chosen == []
    assert len(server.requests) == 1  # a valid empty answer is not retried


def test_selector_retries_a_malformed_reply(server: ChatServer) -> None:
    server.add(Reply("Passage one, I think.", 40, 5), Reply("[1]", 40, 2))
    selection = ChatSelector(chat(server)).select(QUESTION, CANDIDATES)
    assert selection.chosen == [0]
    assert selection.usage.calls == 2
    assert selection.usage.prompt_tokens == 80
    assert len(server.requests) == 2


def test_selector_gives_up_with_an_empty_selection(server: ChatServer) -> None:
    server.add("one", "two", "[1] never asked")
    selection = ChatSelector(chat(server)).select(QUESTION, CANDIDATES)
    assert selection.chosen == []
    assert selection.usage.calls == 2
    assert len(server.requests) == 2


def test_selector_retries_are_bounded_by_the_option(server: ChatServer) -> None:
    server.add("a", "b", "c", "[1]")
    selection = ChatSelector(chat(server), retries=2).select(QUESTION, CANDIDATES)
    assert selection.chosen == []
    assert len(server.requests) == 3


def test_selector_no_candidates_no_call(server: ChatServer) -> None:
    selection = ChatSelector(chat(server)).select(QUESTION, [])
    assert selection.chosen == []
    assert selection.usage == Usage()
    assert server.requests == []


def test_selector_transport_failure_propagates(server: ChatServer) -> None:
    # The script is empty: the server answers 500 to every request.
    with pytest.raises(LLMError):
        ChatSelector(chat(server)).select(QUESTION, CANDIDATES)


def test_invalid_options(server: ChatServer) -> None:
    with pytest.raises(ConfigError):
        ChatSelector(chat(server), max_tokens=0)
    with pytest.raises(ConfigError):
        ChatSelector(chat(server), retries=-1)
    with pytest.raises(ConfigError):
        ChatAnswerer(chat(server), max_tokens=True)


def test_tasks_satisfy_the_protocols(server: ChatServer) -> None:
    selector: Selector = ChatSelector(chat(server))
    answerer: Answerer = ChatAnswerer(chat(server))
    assert selector.backend == answerer.backend == BACKEND


# -- answerer ------------------------------------------------------------------------------


def test_answerer_happy_path(server: ChatServer) -> None:
    server.add(Reply("  Paris.\n", prompt_tokens=30, completion_tokens=1))
    answer = ChatAnswerer(chat(server)).answer(QUESTION, ["Ann met Bob in Paris.", "  "])
    assert answer.text == "Paris."
    assert answer.backend == BACKEND
    assert answer.usage.calls == 1
    [body] = server.bodies
    assert body["max_tokens"] == 512
    user = user_message(body)
    assert QUESTION in user
    assert "[1] Ann met Bob in Paris." in user
    assert "[2]" not in user


def test_answerer_retries_an_empty_reply(server: ChatServer) -> None:
    server.add(Reply("  ", 30, 0), Reply("<think>hm</think> Paris", 30, 1))
    answer = ChatAnswerer(chat(server)).answer(QUESTION, ["Ann met Bob in Paris."])
    assert answer.text == "Paris"
    assert answer.usage.calls == 2
    assert answer.usage.prompt_tokens == 60


def test_answerer_two_empty_replies_are_an_unusable_answer(server: ChatServer) -> None:
    server.add("", "<think>still thinking", "never asked")
    answer = ChatAnswerer(chat(server)).answer(QUESTION, ["Ann met Bob in Paris."])
    assert not answer.usable and answer.text == ""
    assert answer.usage.unusable_replies == 1 and answer.usage.calls == 2
    assert len(server.requests) == 2


# -- prune-and-grow with the chat selector -------------------------------------------------


_PASSAGE = re.compile(r"^\[(\d+)\] (.*)$", re.MULTILINE)


def choose_by_content(wanted: set[str]) -> Any:
    """A server reply that picks, by number, the offered passages whose text is wanted."""

    def reply(request: dict[str, Any]) -> str:
        offered = _PASSAGE.findall(user_message(request))
        return "[" + ", ".join(n for n, text in offered if text in wanted) + "]"

    return reply


def test_prune_and_grow_with_the_chat_selector(tiny_memory: GraphStore) -> None:
    wanted = {"chunk 0", "first half", "chunk 1", "chunk 2"}
    with ChatServer(default=choose_by_content(wanted)) as server:
        found = prune_and_grow(
            tiny_memory, QUESTION, axis(0), ChatSelector(chat(server)), top_k=3, max_turns=5
        )
    assert {n.id for n in found.activated} == {"c0", "s1-0", "c1", "c2"}
    # Turn 1 offers the top 3 (c0, c1, s1-0); turn 2 their neighbours and children.
    assert [set(turn) for turn in found.turns] == [{"c0", "c1", "s1-0"}, {"c2"}, set()]
    assert "c2" in found.candidates[1] and "s1-1" in found.candidates[1]
    assert found.stop == "the activated set stopped growing"
    assert found.usage.calls == len(server.requests) == 3
    assert all(QUESTION in user_message(body) for body in server.bodies)


def test_an_unusable_selection_is_chosen_offline_and_prune_and_grow_goes_on(
    server: ChatServer, tiny_memory: GraphStore
) -> None:
    # Turn 1: the reply and its repair are unusable; turn 2: the model chooses nothing.
    server.add("I cannot tell.", "Still no list.", '{"passages": []}')
    found = prune_and_grow(
        tiny_memory, QUESTION, axis(0), ChatSelector(chat(server)), top_k=3, max_turns=5
    )
    # Turn 1 took what retrieval vouches for (relevance above 0) instead of nothing.
    assert found.turns[0] and set(found.turns[0]) <= set(found.candidates[0])
    assert {n.id for n in found.activated} == set(found.turns[0])
    assert found.details["selector_fallback_turns"] == 1
    assert found.turns[1:] == [[]]
    assert found.usage.calls == 3
    assert found.usage.unusable_replies == 1
