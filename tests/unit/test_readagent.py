"""ReadAgent adapter: pagination, gisting, look-up (P and S), through the scripted chat
server, and end to end offline on the start of a real book."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cam_engine.adapters.readagent import (
    STOP,
    STRATEGIES,
    VIEW,
    build_view,
    document_paragraphs,
    load_pages,
    lookup,
    lookup_sequential,
    parse_page_choice,
)
from cam_engine.embed import HashingEmbedder
from cam_engine.errors import ConfigError, InputError, LLMError
from cam_engine.llm.extractive import split_sentences
from cam_engine.llm.openai_compat import OpenAICompatibleChat
from cam_engine.llm.prompts import load_prompt
from cam_engine.memory import Memory
from cam_engine.sources import clean_text
from cam_engine.types import PAGE, ViewNode
from tests.conftest import shared_file
from tests.support.chat_server import ChatServer

MODEL = "reader"
BACKEND = f"openai:{MODEL}"
QUESTION = "What happened in paragraph four?"
PARAGRAPH_BREAK = re.compile(r"\r?\n[ \t\r]*\n\s*")
# The scripted build of TEN (min 100, max 200 words): pages p0-p2, p3-p6, p7-p8, p9.
BUILD_SCRIPT = [
    "Break point: <3>",
    "Break point: <7>",
    "Break point: <9>",
    "gist one",
    "gist two",
    "gist three",
    "gist four",
]


def paragraph(k: int, words: int = 50) -> str:
    """A paragraph of ``words`` words that names itself (``Para4 w4x0 ...``)."""
    return " ".join([f"Para{k}", *(f"w{k}x{i}" for i in range(words - 1))]) + "."


TEN = [paragraph(k) for k in range(10)]  # 500 words; 3 paragraphs per 200-token chunk


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory.open(tmp_path / "m.db", "ra", embedder=HashingEmbedder(64)) as opened:
        yield opened


def chat(server: ChatServer) -> OpenAICompatibleChat:
    return OpenAICompatibleChat(
        server.base_url, MODEL, timeout=5.0, max_retries=1, sleep=lambda _: None
    )


def user_text(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


def passage_labels(body: dict[str, Any]) -> list[int]:
    """The labels shown in a pagination prompt's passage (each on its own line)."""
    passage = user_text(body).split("Passage:", 1)[1]
    return [int(n) for n in re.findall(r"^<(\d+)>$", passage, re.MULTILINE)]


def pages_of(memory: Memory, doc: str = "ten") -> list[ViewNode]:
    return memory.view_nodes(VIEW, PAGE, doc, embeddings=True)


def build_scripted(memory: Memory, doc: str = "ten") -> None:
    memory.ingest_text("\n\n".join(TEN), doc)
    with ChatServer(BUILD_SCRIPT) as server:
        build_view(memory, [doc], chat(server), min_words=100, max_words=200)


def joined(*ks: int) -> str:
    return "\n\n".join(TEN[k] for k in ks)


# -- pagination ---------------------------------------------------------------------------


def test_pagination_labels_breaks_fallback_and_remainder(memory: Memory) -> None:
    memory.ingest_text("\n\n".join(TEN), "ten")
    script = [
        "Break point: <3>\nBecause the scene changes.",
        "I would stop at the end of the passage.",  # no label: falls back to the last
        "<think>Maybe <10>?</think>Break point: <9>",
        "gist one",
        "gist two",
        "gist three",
        "gist four",
    ]
    with ChatServer(script) as server:
        report = build_view(memory, ["ten"], chat(server), min_words=100, max_words=200)
    bodies = server.bodies
    # 3 pagination calls and 4 gists: the last 50 words (< 117 = 200 * 350/600) took none.
    assert len(bodies) == 7
    first, second, third = bodies[:3]
    # Labels only once 100 words precede them, and always after the last paragraph.
    assert passage_labels(first) == [2, 3, 4]
    assert "<1>" not in user_text(first).split("Passage:", 1)[1]
    assert TEN[4] + "\n..." in user_text(first)  # the next paragraph follows the passage
    assert passage_labels(second) == [5, 6, 7]
    assert "...\n" + joined(0, 1, 2) in user_text(second)  # the previous page as context
    assert passage_labels(third) == [9, 10]
    pages = pages_of(memory)
    assert [p.text for p in pages] == [joined(0, 1, 2), joined(3, 4, 5, 6), joined(7, 8), TEN[9]]
    assert [p.props["gist"] for p in pages] == ["gist one", "gist two", "gist three", "gist four"]
    assert all(p.props["backend"] == BACKEND for p in pages)
    details = report.details
    assert (details["pages"], details["break_calls"], details["break_fallbacks"]) == (4, 3, 1)
    assert (details["words"], details["gist_words"]) == (500, 8)
    assert details["remainder_words"] == 117
    assert details["compression_rate"] == pytest.approx(100 * (1 - 8 / 500), abs=0.01)
    assert report.to_dict()["llm_calls"] == 7 and report.backend == BACKEND


def test_the_remainder_is_the_last_page_without_a_call(memory: Memory) -> None:
    memory.ingest_text("\n\n".join(TEN), "ten")
    with ChatServer(["Break point: <3>", "Break point: <7>"], default="a gist") as server:
        report = build_view(
            memory, ["ten"], chat(server), min_words=100, max_words=200, remainder_words=160
        )
    # After page 2 the last 150 words (< 160) would offer <9> and <10>: no call is made.
    assert report.details["break_calls"] == 2
    assert [p.text for p in pages_of(memory)][-1] == joined(7, 8, 9)
    assert len(server.requests) == 2 + 3  # and three gists


def test_a_paragraph_longer_than_max_words_is_a_page_without_a_call(memory: Memory) -> None:
    paragraphs = [paragraph(0), paragraph(1, 150), paragraph(2), paragraph(3), paragraph(4)]
    memory.ingest_text("\n\n".join(paragraphs), "long")
    with ChatServer(["Break point: <1>", "Break point: <4>"], default="a gist") as server:
        report = build_view(memory, ["long"], chat(server), min_words=30, max_words=100)
    assert report.details["break_calls"] == 2  # the 150-word paragraph offered one label
    texts = [p.text for p in pages_of(memory, "long")]
    assert texts == [paragraphs[0], paragraphs[1], "\n\n".join(paragraphs[2:4]), paragraphs[4]]


def test_extractive_pagination_pauses_where_neighbours_differ(memory: Memory) -> None:
    topics = [
        "whale harpoon ship sea captain crew mast sail ocean deck",
        "garden rose soil flower seed spade hedge lawn tulip bench",
        "market coin price trade merchant stall barter ledger goods",
    ]

    def about(topic: int, shift: int) -> str:
        words = topics[topic].split()
        return " ".join(words[(i + shift) % len(words)] for i in range(40)) + "."

    paragraphs = [about(0, s) for s in range(3)] + [about(1, s) for s in range(3)]
    paragraphs += [about(2, s) for s in range(2)]
    memory.ingest_text("\n\n".join(paragraphs), "topics")
    done: list[int] = []
    report = build_view(memory, None, None, min_words=60, max_words=200, on_page=done.append)
    pages = pages_of(memory, "topics")
    # Labels <2> <3> <4> <5>: the whale/garden seam (<3>) is the least alike. The rest
    # reaches the document's end, the strongest pause of all.
    assert [p.text for p in pages] == ["\n\n".join(paragraphs[:3]), "\n\n".join(paragraphs[3:])]
    assert done == [1, 2]
    assert report.backend == "extractive" and report.log.usage.calls == 0
    assert all(p.props["backend"] == "extractive" for p in pages)


def test_pages_cover_every_chunk_in_order_and_lose_no_text(memory: Memory) -> None:
    build_scripted(memory)
    chunks = memory.document_chunks("ten")
    assert len(chunks) == 4  # so pages and chunks do not line up one to one
    check_coverage(memory, "ten")


def is_quote(gist: str, text: str) -> bool:
    """Whether ``gist`` is sentences of ``text`` in order, or the start of one sentence
    cut with " …" (what ``ExtractiveSummarizer`` writes)."""
    sentences = split_sentences(text)
    rest = gist.removesuffix(" …")
    if rest != gist:  # cut: a single sentence that overran the budget
        return any(s.startswith(rest) for s in sentences)
    for sentence in sentences:
        if rest.startswith(sentence):
            rest = rest[len(sentence) :].lstrip()
    return bool(gist) and not rest


def check_coverage(memory: Memory, doc: str) -> None:
    """Pages in order cover each chunk, in order, without a gap; their paragraphs are
    exactly the chunks' paragraphs."""
    chunks = memory.document_chunks(doc)
    pages = pages_of(memory, doc)
    assert [p.seq for p in pages] == list(range(1, len(pages) + 1))
    covered = [c for p in pages for c in p.chunk_ids]
    in_order = [c for i, c in enumerate(covered) if i == 0 or covered[i - 1] != c]
    assert in_order == [c.id for c in chunks]
    page_paragraphs = [q for p in pages for q in PARAGRAPH_BREAK.split(p.text)]
    assert page_paragraphs == [p.text for p in document_paragraphs(chunks)]
    chunk_paragraphs = [q.strip() for c in chunks for q in PARAGRAPH_BREAK.split(c.text)]
    assert page_paragraphs == [q for q in chunk_paragraphs if q]


def test_gist_prompt_asks_to_shorten(memory: Memory) -> None:
    text = "".join(m.content for m in load_prompt("readagent_gist").render(passage="P"))
    assert "shorten" in text and "summar" not in text.lower()
    build_scripted_bodies: list[dict[str, Any]] = []
    memory.ingest_text("\n\n".join(TEN), "ten")
    with ChatServer(BUILD_SCRIPT) as server:
        build_view(memory, ["ten"], chat(server), min_words=100, max_words=200)
        build_scripted_bodies = server.bodies
    gist_requests = [user_text(b) for b in build_scripted_bodies[3:]]
    assert all("Please shorten the following passage." in g for g in gist_requests)
    assert joined(3, 4, 5, 6) in gist_requests[1]


def test_an_empty_gist_falls_back_to_an_extractive_one(memory: Memory) -> None:
    memory.ingest_text("\n\n".join(TEN), "ten")
    script = [*BUILD_SCRIPT[:4], "   ", *BUILD_SCRIPT[5:]]
    with ChatServer(script) as server:
        report = build_view(memory, ["ten"], chat(server), min_words=100, max_words=200)
    second = pages_of(memory)[1]
    assert second.props["backend"] == "extractive"
    assert is_quote(second.props["gist"], second.text)  # quoted, not written
    assert report.details["gist_fallbacks"] == 1


def test_a_transport_error_propagates(memory: Memory) -> None:
    memory.ingest_text("\n\n".join(TEN), "ten")
    with ChatServer() as server, pytest.raises(LLMError):  # every request: 500
        build_view(memory, ["ten"], chat(server), min_words=100, max_words=200)
    assert pages_of(memory) == []


def test_rebuilding_a_document_replaces_its_pages_only(memory: Memory) -> None:
    build_scripted(memory, "ten")
    memory.ingest_text("\n\n".join(reversed(TEN)), "other")
    build_view(memory, ["other"], None, min_words=100, max_words=200)
    other_before = [(p.id, p.text, p.props) for p in pages_of(memory, "other")]
    report = build_view(memory, ["ten"], None, min_words=280, max_words=450)
    pages = pages_of(memory, "ten")
    assert report.nodes_written == len(pages) == 2  # was 4
    assert [p.id for p in pages] == ["readagent/ten/p1", "readagent/ten/p2"]
    assert all(p.props["backend"] == "extractive" for p in pages)
    assert [(p.id, p.text, p.props) for p in pages_of(memory, "other")] == other_before
    check_coverage(memory, "ten")


def test_bad_arguments(memory: Memory) -> None:
    memory.ingest_text("\n\n".join(TEN), "ten")
    with pytest.raises(ConfigError, match="min_words"):
        build_view(memory, None, None, min_words=300, max_words=200)
    with pytest.raises(ConfigError, match="remainder_words"):
        build_view(memory, None, None, min_words=100, max_words=200, remainder_words=201)
    with pytest.raises(InputError, match="nope"):
        build_view(memory, ["nope"], None)
    with pytest.raises(InputError, match="build the view"):
        lookup(memory, QUESTION, None)
    build_view(memory, None, None, min_words=100, max_words=200)
    with pytest.raises(ConfigError, match="max_pages"):
        lookup(memory, QUESTION, None, max_pages=0)


# -- look-up (ReadAgent-P) -----------------------------------------------------------------

GISTS = "<Page 1>\ngist one\n\n<Page 2>\ngist two\n\n<Page 3>\ngist three\n\n<Page 4>\ngist four"


def test_lookup_replaces_the_chosen_gist_in_place(memory: Memory) -> None:
    build_scripted(memory)
    with ChatServer(["I want to look up Page [2] to see.", "Para4 happened."]) as server:
        result = lookup(memory, QUESTION, chat(server))
    lookup_body, answer_body = server.bodies
    assert GISTS in user_text(lookup_body) and QUESTION in user_text(lookup_body)
    assert "1 to 5 page(s)" in user_text(lookup_body)
    expanded = GISTS.replace("gist two", joined(3, 4, 5, 6))
    assert expanded in user_text(answer_body) and "gist two" not in user_text(answer_body)
    assert result.answer == "Para4 happened."
    assert (result.strategy, result.backend) == ("lookup", BACKEND)
    assert result.details["pages_read"] == [2] and result.details["pages_total"] == 4
    assert [(s.id, s.kind, s.document) for s in result.sources] == [
        ("readagent/ten/p2", "page", "ten")
    ]
    # CR: the longest in-context text is the answer's: 3 gists of 2 words and page 2.
    assert result.details["context_words"] == 206
    assert result.details["compression_rate"] == pytest.approx(100 * (1 - 206 / 500))


def test_lookup_malformed_reply_reads_no_page(memory: Memory) -> None:
    build_scripted(memory)
    replies = ["I would like to read the second page.", "The second one.", "I cannot tell."]
    with ChatServer(replies) as server:
        result = lookup(memory, QUESTION, chat(server))
    # One repair call, then no page: the demo answers from the gists alone.
    assert len(server.requests) == 3
    assert GISTS in user_text(server.bodies[2])
    assert result.details["pages_read"] == [] and result.sources == []
    assert result.details["lookup_reply_parsed"] is False
    assert result.to_dict()["unusable_replies"] == 1  # what `cam ask --json` shows
    assert result.details["compression_rate"] == pytest.approx(100 * (1 - 8 / 500))


def test_lookup_drops_bad_numbers_and_keeps_at_most_max_pages(memory: Memory) -> None:
    build_scripted(memory)
    with ChatServer(["Page [9, 3, 3, 0, 1, 4]", "answer"]) as server:
        result = lookup(memory, QUESTION, chat(server), max_pages=2)
    assert result.details["pages_read"] == [3, 1]
    answer = user_text(server.bodies[1])
    assert joined(0, 1, 2) in answer and joined(7, 8) in answer and "gist four" in answer


def test_json_shape(memory: Memory) -> None:
    build_scripted(memory)
    with ChatServer(["[2]", "Para4."]) as server:
        data = lookup(memory, QUESTION, chat(server)).to_dict()
    json.dumps(data)
    assert data["llm_calls"] == 2
    assert data["prompt_tokens"] > 0 and data["completion_tokens"] > 0
    # The answer prompt is the largest; the server reports its words as tokens.
    answer_words = sum(len(m["content"].split()) for m in server.bodies[1]["messages"])
    assert data["largest_context_tokens"] == answer_words
    assert data["compression_rate"] == pytest.approx(58.8)
    assert (data["pages_read"], data["pages_total"]) == ([2], 4)
    assert data["sources"][0]["kind"] == "page"


def test_pages_are_numbered_across_documents(memory: Memory) -> None:
    build_scripted(memory, "a")
    build_scripted(memory, "b")
    pages = load_pages(memory, None)
    assert [p.label for p in pages][3:5] == ["<Page 4> (document a)", "<Page 5> (document b)"]
    with ChatServer(["[5]", "answer"]) as server:
        result = lookup(memory, QUESTION, chat(server))
    assert [s.id for s in result.sources] == ["readagent/b/p1"]
    assert result.details["document_words"] == 1000
    only_b = load_pages(memory, ["b"])
    assert [p.label for p in only_b] == ["<Page 1>", "<Page 2>", "<Page 3>", "<Page 4>"]


# -- look-up (ReadAgent-S) -----------------------------------------------------------------


def test_lookup_sequential_until_stop(memory: Memory) -> None:
    build_scripted(memory)
    with ChatServer(["Page 3", "STOP", "Para7."]) as server:
        result = lookup_sequential(memory, QUESTION, chat(server))
    first, second, answer = (user_text(b) for b in server.bodies)
    assert GISTS in first and "(DO NOT ask to read them again):\nnone" in first
    assert GISTS.replace("gist three", joined(7, 8)) in second
    assert "(DO NOT ask to read them again):\n3\n" in second
    assert joined(7, 8) in answer
    assert (result.strategy, result.details["stop_reason"]) == ("lookup-seq", "stop")
    assert result.details["pages_read"] == [3] and result.log.usage.calls == 3


def test_lookup_sequential_stops_at_the_page_cap(memory: Memory) -> None:
    build_scripted(memory)
    heard: list[str] = []
    with ChatServer(["Page 1", "I want Page 4.", "answer", "never asked"]) as server:
        result = lookup_sequential(
            memory,
            QUESTION,
            chat(server),
            max_pages=2,
            on_progress=lambda p: heard.append(p.line()),
        )
    assert len(server.requests) == 3
    assert heard == [
        "lookup-seq: turn 1/2 (0 of 4 pages read)",
        "lookup-seq: turn 2/2 (1 of 4 pages read)",
    ]
    assert result.details["pages_read"] == [1, 4]
    assert result.details["stop_reason"] == "cap"
    answer = user_text(server.bodies[2])
    assert joined(0, 1, 2) in answer and TEN[9] in answer and "gist two" in answer


@pytest.mark.parametrize("bad", ["Let me think about it.", "Page 2", "Page 17"])
def test_lookup_sequential_ends_on_a_bad_reply(memory: Memory, bad: str) -> None:
    build_scripted(memory)
    with ChatServer(["Page 2", bad, bad, "answer"]) as server:
        result = lookup_sequential(memory, QUESTION, chat(server))
    assert len(server.requests) == 4  # the bad reply, then its repair call
    assert result.log.usage.unusable_replies == 1
    assert result.details["pages_read"] == [2]
    assert result.details["stop_reason"] == "malformed"


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Page 7", 7),
        ("I want to read Page [3] again.", 3),
        ("page 2, then I will STOP", 2),
        ("STOP", STOP),
        ("stop.", STOP),
        ("I have enough. STOP", STOP),
        ("<think>Page 2?</think>STOP", STOP),
        ("Page 99", None),
        ("Page 0", None),
        ("the second one", None),
        ("", None),
    ],
)
def test_parse_page_choice(reply: str, expected: int | None) -> None:
    assert parse_page_choice(reply, count=10) == expected


def test_strategies() -> None:
    assert {"lookup": lookup, "lookup-seq": lookup_sequential} == STRATEGIES
    assert VIEW == "readagent"


def test_extractive_lookups_rank_pages_by_their_gists(memory: Memory) -> None:
    topics = {
        "sea": "whale harpoon ship captain crew mast sail ocean deck",
        "garden": "rose soil flower seed spade hedge lawn tulip bench",
        "market": "coin price trade merchant stall barter ledger goods",
    }
    paragraphs = [
        " ".join(words.split()[(i + s) % len(words.split())] for i in range(40)) + "."
        for words in topics.values()
        for s in range(3)
    ]
    memory.ingest_text("\n\n".join(paragraphs), "topics")
    build_view(memory, None, None, min_words=100, max_words=120)  # one page per topic
    question = "Where did the harpoon of the captain hit the whale?"
    parallel = lookup(memory, question, None, max_pages=3)
    assert parallel.details["pages_read"][0] == 1 and len(parallel.details["pages_read"]) == 3
    assert parallel.backend == "extractive" and parallel.log.usage.calls == 0
    sequential = lookup_sequential(memory, question, None, max_pages=3)
    # The other topics' gists are far below the best page's cosine (margin 0.1).
    assert sequential.details["pages_read"] == [1]
    assert sequential.details["stop_reason"] == "margin"
    # The answer quotes the sea page, read in full.
    assert sequential.answer and set(re.findall(r"\w+", sequential.answer)) <= set(
        topics["sea"].split()
    )


# -- end to end, offline, on a real book -----------------------------------------------------


def test_extractive_end_to_end_on_moby_dick(memory: Memory) -> None:
    text = shared_file("haystacks/gutenberg/pg2701.txt").read_text(encoding="utf-8")[:40_000]
    memory.ingest_text(text, "moby")
    report = build_view(memory, None, None)
    pages = pages_of(memory, "moby")
    assert report.backend == "extractive" and report.log.usage.calls == 0
    assert report.details["pages"] == len(pages) >= 10
    check_coverage(memory, "moby")
    # Text given directly loses its Project Gutenberg header, as a file's does.
    assert report.details["words"] == len(clean_text(text).split()) < len(text.split())
    for page in pages[:-1]:  # at least min_words; over max_words only by the last paragraph
        last = PARAGRAPH_BREAK.split(page.text)[-1]
        assert page.props["words"] >= 280 and page.props["words"] - len(last.split()) < 600
    for page in pages:  # gists quote their page within 1/5 of its words
        assert page.props["gist_words"] <= round(page.props["words"] / 5) + 1
        assert is_quote(page.props["gist"], page.text), page.seq
    assert 75 < report.details["compression_rate"] < 85

    question = "Which whale-ship belonged to the island of Nantucket?"
    (right,) = [p for p in pages if "Whale-ship Globe" in p.text]
    result = lookup(memory, question, None, max_pages=1)
    assert [s.id for s in result.sources] == [right.id]
    assert "Globe" in result.answer and result.backend == "extractive"
    assert 0 < result.details["compression_rate"] < 100
    sequential = lookup_sequential(memory, question, None, max_pages=3)
    assert sequential.sources[0].id == right.id
    assert sequential.details["stop_reason"] in {"cap", "margin"}


def test_offline_lookup_answers_from_the_pages_read_not_the_first_gist() -> None:
    from cam_engine.adapters.readagent import GistPage, _Lookup
    from cam_engine.types import PAGE, ViewNode

    def page(number: int, text: str, gist: str) -> GistPage:
        node = ViewNode(
            f"p{number}", "readagent", PAGE, "book", number, text, "book", {"gist": gist}
        )
        return GistPage(number, node, f"Page {number}")

    pages = [
        page(1, "CONTENTS. Letter 1. Chapter 1.", "Letters written by Walton to Captain Robert."),
        page(2, "Nothing of note.", "Nothing of note."),
        page(3, "Walton wrote his letters to his sister, Mrs. Saville, in England.", "Letters."),
    ]
    run = _Lookup("To whom does Walton write his letters?", pages, None)
    run.read = [3]
    result = run.answer("lookup", {})
    assert result.answer.startswith("Walton wrote his letters to his sister, Mrs. Saville")
