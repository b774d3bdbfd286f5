"""MemAgent adapter: piece planning, the overwrite loop through a scripted chat server,
boxed answers, resuming interrupted runs, and the offline extractive backend on a real book."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from cam_engine import Memory
from cam_engine.adapters import memagent
from cam_engine.adapters.base import count_tokens
from cam_engine.adapters.memagent import NO_MEMORY, VIEW, Piece, plan_pieces
from cam_engine.embed import HashingEmbedder, load_embedder
from cam_engine.errors import ConfigError, InputError, LLMError
from cam_engine.llm.base import Completion, JsonSchema, Message, Usage
from cam_engine.llm.extractive import split_sentences
from cam_engine.llm.openai_compat import OpenAICompatibleChat
from cam_engine.llm.prompts import load_prompt
from cam_engine.types import MEMORY_STATE, ViewNode
from tests.conftest import shared_file
from tests.support.chat_server import ChatServer, Fault

QUESTION = "Which harbour did the captain sail from?"
PIECE_TOKENS = 500  # small pieces, so the synthetic story takes several steps
MEMORY_TOKENS = 64
WORDS = ["river", "stone", "lantern", "orchard", "meadow"]
WORDS += ["harbour", "cellar", "bridge", "tower", "garden"]


def story() -> str:
    """30 paragraphs of ~60 words, each one recognisable by its number."""
    paragraphs = []
    for i in range(30):
        words = " ".join(WORDS[(i + j) % len(WORDS)] for j in range(50))
        paragraphs.append(f"Paragraph {i} tells of the {WORDS[i % 10]}. It goes on: {words}.")
    return "\n\n".join(paragraphs)


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory.open(tmp_path / "m.db", "m", embedder=HashingEmbedder()) as opened:
        opened.ingest_text(story(), "story")
        yield opened


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as running:
        yield running


def chat(server: ChatServer) -> OpenAICompatibleChat:
    return OpenAICompatibleChat(
        server.base_url, "memagent-test", timeout=5.0, max_retries=1, sleep=lambda _: None
    )


def pieces_of(memory: Memory, chunk_tokens: int = PIECE_TOKENS) -> list[Piece]:
    return plan_pieces(memory.document_chunks("story"), chunk_tokens)


def ask(memory: Memory, server: ChatServer, **options: Any) -> memagent.AdapterAnswer:
    options = {"chunk_tokens": PIECE_TOKENS, "memory_tokens": MEMORY_TOKENS, **options}
    return memagent.answer(memory, QUESTION, chat(server), **options)


def user_text(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


def tagged(text: str, tag: str) -> str:
    """The content of ``<tag>...</tag>`` in a rendered MemAgent prompt."""
    return text.split(f"<{tag}>\n", 1)[1].split(f"\n</{tag}>", 1)[0]


def states(memory: Memory, run_id: str) -> list[ViewNode]:
    return memory.view_nodes(VIEW, MEMORY_STATE, run_id)


def assert_covers_each_chunk_once(memory: Memory, nodes: Sequence[ViewNode]) -> None:
    read = [chunk_id for node in nodes for chunk_id in node.chunk_ids]
    expected = [c.id for d in memory.documents() for c in memory.document_chunks(d.id)]
    assert read == expected


# --- pieces ----------------------------------------------------------------------------------
def test_pieces_end_at_chunk_boundaries_and_fill_the_budget(memory: Memory) -> None:
    chunks = memory.document_chunks("story")
    pieces = pieces_of(memory)
    total = count_tokens("\n\n".join(c.text for c in chunks))
    largest = max(count_tokens(c.text) for c in chunks)
    assert math.ceil(total / PIECE_TOKENS) <= len(pieces)
    assert len(pieces) <= math.ceil(total / (PIECE_TOKENS - largest))
    assert [i for p in pieces for i in p.chunk_ids] == [c.id for c in chunks]
    texts = {c.id: c.text for c in chunks}
    for number, piece in enumerate(pieces):
        assert piece.text == "\n\n".join(texts[i] for i in piece.chunk_ids)
        assert piece.tokens == count_tokens(piece.text) <= PIECE_TOKENS
        if number + 1 < len(pieces):  # greedy: the next chunk would not have fitted
            following = texts[pieces[number + 1].chunk_ids[0]]
            assert count_tokens(piece.text + "\n\n" + following) > PIECE_TOKENS


def test_a_chunk_larger_than_the_budget_is_a_piece_of_its_own(memory: Memory) -> None:
    chunks = memory.document_chunks("story")
    pieces = pieces_of(memory, chunk_tokens=10)
    assert [(p.text, p.chunk_ids) for p in pieces] == [(c.text, (c.id,)) for c in chunks]


# --- the LLM loop ----------------------------------------------------------------------------
def test_each_reply_overwrites_the_memory_and_the_last_call_sees_only_the_memory(
    memory: Memory, server: ChatServer
) -> None:
    pieces = pieces_of(memory)
    assert len(pieces) >= 3
    server.add(*[f"memory {k}" for k in range(1, len(pieces) + 1)])
    server.add("The harbour was Dover, so the answer is \\boxed{Dover}.")
    steps: list[tuple[int, int]] = []
    result = ask(memory, server, on_step=lambda *step: steps.append(step))

    bodies = server.bodies
    assert len(bodies) == len(pieces) + 1
    for k, (body, piece) in enumerate(zip(bodies, pieces, strict=False)):
        expected = load_prompt("memagent_update").render(
            problem=QUESTION, memory=NO_MEMORY if k == 0 else f"memory {k}", chunk=piece.text
        )
        assert body["messages"] == [{"role": m.role, "content": m.content} for m in expected]
        assert body["max_tokens"] == MEMORY_TOKENS and body["temperature"] == 0.0
    final = user_text(bodies[-1])
    assert tagged(final, "memory") == f"memory {len(pieces)}"
    assert tagged(final, "problem") == QUESTION
    assert "<section>" not in final and "\\boxed{}" in final
    assert bodies[-1]["max_tokens"] == MEMORY_TOKENS

    assert result.answer == "Dover"
    assert result.backend == "openai:memagent-test" and result.strategy == "memagent"
    steps_total = len(pieces) + 1
    assert steps == [(k, steps_total) for k in range(1, steps_total + 1)]
    assert result.details == {
        "run_id": result.details["run_id"],
        "steps": steps_total,
        "pieces_total": len(pieces),
        "resumed_from": None,
        "boxed": True,
        "memory_tokens_final": count_tokens(f"memory {len(pieces)}"),
    }
    assert result.log.usage.calls == steps_total

    stored = states(memory, result.details["run_id"])
    assert [n.seq for n in stored] == list(range(1, steps_total + 1))
    assert [n.text for n in stored[:-1]] == [f"memory {k}" for k in range(1, len(pieces) + 1)]
    assert_covers_each_chunk_once(memory, stored)
    for node, piece in zip(stored, pieces, strict=False):
        assert node.chunk_ids == piece.chunk_ids
        assert node.id == f"memagent/{result.details['run_id']}/{node.seq}"
        assert node.props == {
            "question_id": result.details["run_id"],
            "step": node.seq,
            "question": QUESTION,
            "tokens": count_tokens(node.text),
            "backend": "openai:memagent-test",
            "piece_tokens": piece.tokens,
            "final": False,
        }
    last = stored[-1]
    assert last.props["final"] is True and last.props["answer"] == "Dover"
    assert last.chunk_ids == () and "boxed{Dover}" in last.text
    [source] = result.sources
    assert (source.id, source.kind) == (stored[-2].id, "memory_state")
    assert source.text == f"memory {len(pieces)}"


class RawChat:
    """A chat model that, unlike OpenAICompatibleChat, leaves the reasoning in its replies."""

    name = "raw-model"

    def __init__(self, replies: Sequence[str]) -> None:
        self.replies = list(replies)
        self.sent: list[list[Message]] = []

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        schema: JsonSchema | None = None,
    ) -> Completion:
        self.sent.append(list(messages))
        return Completion(self.replies.pop(0), "raw-model", Usage(calls=1))


def test_reasoning_is_stripped_from_memories_and_answers(memory: Memory) -> None:
    pieces = pieces_of(memory, chunk_tokens=5000)
    assert len(pieces) == 1
    raw = RawChat(
        [
            "<think>Dover? \\boxed{no}</think>\nDover harbour",
            "<think>\\boxed{x}</think>A \\boxed{Dover}",
        ]
    )
    result = memagent.answer(memory, QUESTION, raw, chunk_tokens=5000)
    assert tagged(raw.sent[-1][-1].content, "memory") == "Dover harbour"
    assert result.answer == "Dover"
    assert [n.text for n in states(memory, result.details["run_id"])] == [
        "Dover harbour",
        "A \\boxed{Dover}",
    ]


@pytest.mark.parametrize(
    ("reply", "answer", "boxed"),
    [
        ("So it is \\boxed{\\frac{1}{2}} of the way.", "\\frac{1}{2}", True),
        ("First \\boxed{Calais}, on reflection \\boxed{ Dover }.", "Dover", True),
        ("\\boxed{Dover}, unless \\boxed{Cal", "Dover", True),  # a cut-off last box
        ("  It was Dover.\n", "It was Dover.", False),
    ],
)
def test_the_last_boxed_answer_is_taken_else_the_whole_reply(
    memory: Memory,
    server: ChatServer,
    caplog: pytest.LogCaptureFixture,
    reply: str,
    answer: str,
    boxed: bool,
) -> None:
    server.add("memory 1", reply)
    with caplog.at_level(logging.WARNING, logger="cam_engine.adapters.memagent"):
        result = ask(memory, server, chunk_tokens=5000)
    assert (result.answer, result.details["boxed"]) == (answer, boxed)
    assert ("no \\boxed" in caplog.text) == (not boxed)
    final = states(memory, result.details["run_id"])[-1]
    assert (final.props["answer"], final.props["boxed"]) == (answer, boxed)


def test_an_empty_update_keeps_the_previous_memory(memory: Memory, server: ChatServer) -> None:
    pieces = pieces_of(memory)
    # The second reply never leaves <think> (the client returns "" for it), and so does
    # its repair: the previous memory is kept, and the unusable reply is counted.
    thinking = "<think>still thinking"
    server.add("memory 1", thinking, thinking, *["memory 3"] * (len(pieces) - 2), "\\boxed{x}")
    result = ask(memory, server)
    assert tagged(user_text(server.bodies[3]), "memory") == "memory 1"
    assert states(memory, result.details["run_id"])[1].text == "memory 1"
    assert result.log.usage.unusable_replies == 1
    assert result.log.usage.repaired_replies == 0
    assert result.log.usage.parsed_replies == len(pieces) - 1


# --- resuming ----------------------------------------------------------------------------------
def test_an_interrupted_run_resumes_after_its_last_stored_step(
    memory: Memory, server: ChatServer
) -> None:
    pieces = pieces_of(memory)
    steps_total = len(pieces) + 1
    # Step 3 fails on both attempts (max_retries=1): the run stops with an LLMError.
    server.add("memory 1", "memory 2", Fault(503), Fault(503))
    with pytest.raises(LLMError, match="after 2 attempts"):
        ask(memory, server)
    run_ids = {n.group for n in memory.view_nodes(VIEW, MEMORY_STATE)}
    assert len(run_ids) == 1
    [run_id] = run_ids
    assert [n.text for n in states(memory, run_id)] == ["memory 1", "memory 2"]
    assert len(server.requests) == 4

    server.add(*[f"memory {k}" for k in range(3, len(pieces) + 1)], "\\boxed{Dover}")
    steps: list[tuple[int, int]] = []
    result = ask(memory, server, on_step=lambda *step: steps.append(step))
    again = server.bodies[4:]
    assert len(again) == steps_total - 2  # only the steps that were not stored
    assert tagged(user_text(again[0]), "memory") == "memory 2"
    assert tagged(user_text(again[0]), "section") == pieces[2].text
    assert steps == [(k, steps_total) for k in range(3, steps_total + 1)]
    assert result.details["resumed_from"] == 2 and result.details["run_id"] == run_id
    assert result.log.usage.calls == steps_total - 2
    assert result.answer == "Dover"
    stored = states(memory, run_id)
    assert [n.seq for n in stored] == list(range(1, steps_total + 1))
    assert_covers_each_chunk_once(memory, stored)

    # A finished run is answered from the store, without any call.
    repeat = ask(memory, server)
    assert len(server.requests) == 4 + steps_total - 2
    assert (repeat.answer, repeat.details["resumed_from"]) == ("Dover", steps_total)
    assert repeat.sources == result.sources and repeat.log.usage.calls == 0


def test_resume_false_deletes_the_run_and_reads_everything_again(
    memory: Memory, server: ChatServer
) -> None:
    pieces = pieces_of(memory)
    server.add(*[f"old {k}" for k in range(1, len(pieces) + 1)], "\\boxed{Calais}")
    first = ask(memory, server)
    server.add(*[f"new {k}" for k in range(1, len(pieces) + 1)], "\\boxed{Dover}")
    second = ask(memory, server, resume=False)
    assert len(server.requests) == 2 * (len(pieces) + 1)
    assert tagged(user_text(server.bodies[len(pieces) + 1]), "memory") == NO_MEMORY
    assert second.details["run_id"] == first.details["run_id"]
    assert (second.answer, second.details["resumed_from"]) == ("Dover", None)
    stored = states(memory, second.details["run_id"])
    assert [n.text for n in stored[:-1]] == [f"new {k}" for k in range(1, len(pieces) + 1)]
    assert len(memory.view_nodes(VIEW, MEMORY_STATE)) == len(pieces) + 1


def test_the_run_id_depends_on_what_is_read_and_how(memory: Memory, server: ChatServer) -> None:
    base = memagent.default_run_id(QUESTION, ["story"], 5000, 1024, "extractive")
    assert base == memagent.default_run_id(QUESTION, ["story"], 5000, 1024, "extractive")
    others = {
        memagent.default_run_id("Another question?", ["story"], 5000, 1024, "extractive"),
        memagent.default_run_id(QUESTION, ["story", "b"], 5000, 1024, "extractive"),
        memagent.default_run_id(QUESTION, ["story"], 4000, 1024, "extractive"),
        memagent.default_run_id(QUESTION, ["story"], 5000, 512, "extractive"),
        memagent.default_run_id(QUESTION, ["story"], 5000, 1024, "openai:m"),
    }
    assert base not in others and len(others) == 5


def test_a_reused_run_id_for_another_question_starts_over(
    memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    options: dict[str, Any] = {"chunk_tokens": PIECE_TOKENS, "run_id": "shared"}
    memagent.answer(memory, QUESTION, None, **options)
    with caplog.at_level(logging.WARNING, logger="cam_engine.adapters.memagent"):
        other = memagent.answer(memory, "Where is the orchard?", None, **options)
    assert other.details["resumed_from"] is None and "do not match" in caplog.text
    stored = states(memory, "shared")
    assert {n.props["question"] for n in stored} == {"Where is the orchard?"}
    assert len(stored) == other.details["steps"]


def test_an_interrupted_extractive_run_ends_as_an_uninterrupted_one(memory: Memory) -> None:
    def stop_at_two(step: int, steps: int) -> None:
        if step == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        memagent.answer(memory, QUESTION, None, chunk_tokens=PIECE_TOKENS, on_step=stop_at_two)
    resumed = memagent.answer(memory, QUESTION, None, chunk_tokens=PIECE_TOKENS)
    assert resumed.details["resumed_from"] == 2
    fresh = memagent.answer(memory, QUESTION, None, chunk_tokens=PIECE_TOKENS, resume=False)
    assert fresh.details["resumed_from"] is None
    assert (resumed.answer, resumed.sources) == (fresh.answer, fresh.sources)


class CountingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> Any:
        self.texts.extend(texts)
        return super().embed(texts)


def test_the_extractive_backend_embeds_a_shortlist_per_piece_beyond_its_budget(
    tmp_path: Path,
) -> None:
    """Embedding every sentence read costs minutes on two books: past the budget only
    each piece's shortlist (sentences with the question's words) is embedded, once."""
    embedder = CountingEmbedder()
    options: dict[str, Any] = {"chunk_tokens": 1000, "resume": False}
    with Memory.open(tmp_path / "m.db", "m", embedder=embedder) as memory:
        memory.ingest_text(story(), "story")
        pieces = pieces_of(memory, 1000)
        sentences = {s for p in pieces for s in split_sentences(p.text)}
        embedder.texts.clear()
        whole = memagent.answer(memory, QUESTION, None, **options)
        assert sorted(embedder.texts) == sorted([QUESTION, *sentences])  # within budget
        embedder.texts.clear()
        short = memagent.answer(memory, QUESTION, None, embed_budget=1, **options)
        read = embedder.texts[1:]  # after the question
        assert len(read) == len(set(read)) <= memagent.SHORTLIST * len(pieces) < len(sentences)
        stored = states(memory, short.details["run_id"])[:-1]
        assert {s for n in stored for s in split_sentences(n.text)} <= set(read)
    assert whole.answer and short.answer


# --- arguments -----------------------------------------------------------------------------------
def test_documents_are_read_in_the_order_given(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "two.db", "two", embedder=HashingEmbedder()) as memory:
        memory.ingest_text("Bravo text about the harbour. " * 40, "b")
        memory.ingest_text("Alpha text about the orchard. " * 40, "a")
        by_default = memagent.answer(memory, QUESTION, None)
        reversed_ = memagent.answer(memory, QUESTION, None, doc_ids=["b", "a"])
        assert by_default.details["run_id"] != reversed_.details["run_id"]
        a_ids = [c.id for c in memory.document_chunks("a")]
        b_ids = [c.id for c in memory.document_chunks("b")]
        [state, _final] = states(memory, reversed_.details["run_id"])
        assert list(state.chunk_ids) == b_ids + a_ids
        [state, _final] = states(memory, by_default.details["run_id"])
        assert list(state.chunk_ids) == a_ids + b_ids


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"chunk_tokens": 0}, ConfigError, "chunk_tokens"),
        ({"memory_tokens": -1}, ConfigError, "memory_tokens"),
        ({"doc_ids": ["story", "missing"]}, InputError, "missing"),
        ({"question": "  "}, InputError, "question is empty"),
    ],
)
def test_bad_arguments_are_named(
    memory: Memory, options: dict[str, Any], error: type[Exception], message: str
) -> None:
    question = options.pop("question", QUESTION)
    with pytest.raises(error, match=message):
        memagent.answer(memory, question, None, **options)
    assert memory.view_nodes(VIEW, MEMORY_STATE) == []


def test_exports() -> None:
    assert list(memagent.STRATEGIES) == ["memagent"]
    assert memagent.STRATEGIES["memagent"] is memagent.answer
    assert memagent.VIEW == "memagent"


# --- the extractive backend on a real book --------------------------------------------------------
BOOK = "haystacks/gutenberg/pg84.txt"  # Frankenstein
BOOK_CHARS = 60_000


def book_text() -> str:
    return shared_file(BOOK).read_text(encoding="utf-8")[:BOOK_CHARS]


@pytest.mark.realdata
def test_extractive_run_on_a_book_quotes_only_text_it_has_read(tmp_path: Path) -> None:
    memory_tokens = 300
    with Memory.open(tmp_path / "book.db", "book", embedder=HashingEmbedder()) as memory:
        memory.ingest_text(book_text(), "frankenstein")
        question = "What illness did Elizabeth catch before Victor left for Ingolstadt?"
        result = memagent.answer(memory, question, None, memory_tokens=memory_tokens)
        pieces = plan_pieces(memory.document_chunks("frankenstein"), 5000)
        stored = states(memory, result.details["run_id"])
        assert_covers_each_chunk_once(memory, stored)

    assert len(pieces) == 3  # ~13K tokens in 5000-token pieces
    assert result.backend == "extractive" and result.log.usage.calls == 0
    assert result.details["steps"] == len(stored) == len(pieces) + 1
    assert result.details["boxed"] is None
    assert all(n.props["backend"] == "extractive" for n in stored)
    read: set[str] = set()
    for node, piece in zip(stored, pieces, strict=False):
        read.update(split_sentences(piece.text))
        sentences = split_sentences(node.text)
        assert sentences and set(sentences) <= read  # quotes, never writes
        assert node.props["tokens"] == count_tokens(node.text) <= memory_tokens
    final_memory = stored[-2].text
    assert result.sources[0].text == final_memory
    assert result.details["memory_tokens_final"] == count_tokens(final_memory)
    assert result.answer and set(split_sentences(result.answer)) <= set(
        split_sentences(final_memory)
    )
    assert stored[-1].text == result.answer == stored[-1].props["answer"]


@pytest.mark.realdata
@pytest.mark.model
def test_extractive_memory_keeps_a_late_answer_sentence(tmp_path: Path) -> None:
    """With MiniLM, the sentence that answers the question, read in the last piece, is
    in the final memory (256 tokens of ~7,000 read), and the answer quotes it. The book is
    cut to 30K characters here (3 pieces of 2500 tokens) to keep the model's time down."""
    evidence = (
        "He is now much recovered from his illness and is continually on the deck, "
        "apparently watching for the sledge that preceded his own."
    )
    embedder = load_embedder("all-MiniLM-L6-v2")
    with Memory.open(tmp_path / "book.db", "book", embedder=embedder) as memory:
        memory.ingest_text(book_text()[:30_000], "frankenstein")
        pieces = plan_pieces(memory.document_chunks("frankenstein"), 2500)
        assert len(pieces) == 3
        assert evidence in split_sentences(pieces[-1].text)
        assert all(evidence not in split_sentences(p.text) for p in pieces[:-1])
        question = "What was the stranger watching for from the deck?"
        result = memagent.answer(memory, question, None, chunk_tokens=2500, memory_tokens=256)
    assert evidence in split_sentences(result.sources[0].text)
    assert evidence in result.answer
