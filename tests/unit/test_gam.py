"""The GAM adapter: memorizer sessions and pages, the research loop with its plan,
search, integrate and reflect steps (scripted chat server), the reference fallbacks on
malformed replies, output formats, and the offline extractive backend end to end."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cam_engine.adapters import gam
from cam_engine.adapters.base import count_tokens
from cam_engine.config import Settings
from cam_engine.embed import HashingEmbedder
from cam_engine.errors import ConfigError, InputError, LLMError
from cam_engine.llm.extractive import ExtractiveSummarizer, split_sentences
from cam_engine.llm.openai_compat import OpenAICompatibleChat
from cam_engine.llm.prompts import load_prompt
from cam_engine.memory import Memory
from cam_engine.types import CHUNK, MEMO, PAGE, Node
from tests.conftest import shared_file
from tests.support.chat_server import ChatServer, Fault, Reply

MODEL = "gam-model"
BACKEND = f"openai:{MODEL}"
EMBEDDER = HashingEmbedder(128)
SMALL = Settings(embed_model=EMBEDDER.name, chunk_tokens=60)
QUESTION = "Where did Walton write his first letter from?"


# --- fixtures and helpers ---------------------------------------------------------------------
def book(name: str, chars: int) -> str:
    return shared_file(f"haystacks/gutenberg/{name}").read_text(encoding="utf-8")[:chars]


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    """Two short documents, small chunks and 250-token sessions; extractive view. The
    research tests only read it."""
    path = tmp_path_factory.mktemp("gam") / "small.db"
    with Memory.open(path, "small", settings=SMALL, embedder=EMBEDDER) as memory:
        memory.ingest_text(book("pg84.txt", 8000), "frank", batch_size=32)
        memory.ingest_text(book("pg1342.txt", 5000), "pride", batch_size=32)
        gam.build_view(memory, None, None, session_tokens=250)
        yield memory


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as running:
        yield running


def chat(server: ChatServer) -> OpenAICompatibleChat:
    return OpenAICompatibleChat(
        server.base_url, MODEL, timeout=2.0, max_retries=0, sleep=lambda _: None
    )


PROMPT_OF_SYSTEM = {
    load_prompt(name).system: name
    for name in ("gam_memo", "gam_plan", "gam_integrate", "gam_reflect")
}


def steps(server: ChatServer) -> list[str]:
    """Which prompt each request to the server was made with, in order."""
    return [PROMPT_OF_SYSTEM[body["messages"][0]["content"]] for body in server.bodies]


def user_messages(server: ChatServer, prompt: str) -> list[str]:
    return [
        body["messages"][-1]["content"]
        for body, name in zip(server.bodies, steps(server), strict=True)
        if name == prompt
    ]


def plan(**fields: Any) -> str:
    data = {"info_needs": [], "tools": [], "keyword_collection": [], "vector_queries": []}
    data["page_index"] = []
    return "<think>which tools?</think>" + json.dumps({**data, **fields})


def integrated(content: str, sources: list[Any]) -> str:
    return json.dumps({"content": content, "sources": sources})


def reflected(enough: bool, new_requests: list[str] | None = None) -> str:
    return json.dumps({"enough": enough, "new_requests": new_requests or []})


def frank_pages(memory: Memory) -> list:
    return memory.view_nodes("gam", PAGE, "frank", embeddings=True)


def pages_containing(memory: Memory, word: str) -> list[str]:
    return [p.id for p in frank_pages(memory) if word in p.props["content"]]


def page_numbers_in(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"\[Page (\d+)\]", text)]


# --- memorizer -----------------------------------------------------------------------------
def node(i: int, words: int) -> Node:
    return Node(f"c{i}", 0, CHUNK, " ".join(f"w{i}" for _ in range(words)), "d", i)


def test_sessions_are_greedy_runs_of_whole_chunks() -> None:
    chunks = [node(0, 30), node(1, 30), node(2, 100), node(3, 10), node(4, 10)]
    # 60 tokens per 45 words: 30 + 30 words = 80 tokens fit in 100, a third chunk does not;
    # the 100-word chunk (134 tokens) is over the budget and stays whole, alone.
    sessions = gam.sessions_of(chunks, 100)
    assert [[c.id for c in s] for s in sessions] == [["c0", "c1"], ["c2"], ["c3", "c4"]]
    assert gam.sessions_of([], 100) == []


def test_sessions_cover_the_document_once_in_order_without_splitting_chunks(
    tmp_path: Path,
) -> None:
    with Memory.open(tmp_path / "s.db", "s", settings=SMALL, embedder=EMBEDDER) as memory:
        memory.ingest_text(book("pg84.txt", 12000), "frank", batch_size=32)
        report = gam.build_view(memory, ["frank"], None, session_tokens=300)
        chunks = memory.document_chunks("frank")
        pages = memory.view_nodes("gam", PAGE, "frank")
        memos = memory.view_nodes("gam", MEMO, "frank")
    assert report.details["sessions"] == len(pages) == len(memos) > 5
    assert report.nodes_written == 2 * len(pages)
    covered = [chunk_id for page in pages for chunk_id in page.chunk_ids]
    assert covered == [c.id for c in chunks]  # every chunk once, in reading order
    text_of = {c.id: c.text for c in chunks}
    start = 0
    for i, (page, memo) in enumerate(zip(pages, memos, strict=True)):
        assert (page.id, page.seq, memo.id, memo.seq) == (
            f"gam/frank/p{i}",
            i,
            f"gam/frank/m{i}",
            i,
        )
        assert memo.chunk_ids == page.chunk_ids
        content = "\n\n".join(text_of[c] for c in page.chunk_ids)
        assert page.props["content"] == content
        assert count_tokens(content) <= 300 or len(page.chunk_ids) == 1
        end = start + len(page.chunk_ids)
        if end < len(chunks):  # greedy: the next chunk would not have fitted
            assert count_tokens(content + "\n\n" + chunks[end].text) > 300
        start = end


def test_memo_prompt_sees_the_existing_abstracts_and_pages_carry_the_header(
    tmp_path: Path, server: ChatServer
) -> None:
    numbers = itertools.count()
    server.add(*[Reply(lambda _: f"Memo number {next(numbers)}.") for _ in range(40)])
    seen: list[tuple[str, int, int]] = []
    with Memory.open(tmp_path / "m.db", "m", settings=SMALL, embedder=EMBEDDER) as memory:
        memory.ingest_text(book("pg84.txt", 5000), "frank", batch_size=32)
        report = gam.build_view(
            memory, None, chat(server), session_tokens=250, on_session=lambda *a: seen.append(a)
        )
        pages = memory.view_nodes("gam", PAGE, "frank", embeddings=True)
        memos = memory.view_nodes("gam", MEMO, "frank")
    sessions = len(pages)
    assert sessions > 3 and report.log.usage.calls == sessions == len(server.requests)
    assert seen == [("frank", i, sessions) for i in range(sessions)]
    assert report.backend == BACKEND and report.details["memo_fallbacks"] == 0
    prompts = user_messages(server, "gam_memo")
    assert gam.NO_MEMORY in prompts[0]
    for i, (prompt, page, memo) in enumerate(zip(prompts, pages, memos, strict=True)):
        context = prompt.split("NEW SESSION:")[0]
        assert [f"Page {j}: Memo number {j}." in context for j in range(sessions)] == [
            j < i for j in range(sessions)
        ]
        assert page.props["content"] in prompt
        assert memo.text == f"Memo number {i}." and memo.props == {"backend": BACKEND}
        header = f"[ABSTRACT] Memo number {i}."
        assert page.text == f"{header}\n\n{page.props['content']}"
        assert (page.props["header"], page.props["page_no"]) == (header, i)
        # The page is embedded by its raw content (as the reference's dense retriever).
        assert np.allclose(page.embedding, EMBEDDER.embed([page.props["content"]])[0])


def test_empty_memo_reply_falls_back_to_an_extractive_memo(
    tmp_path: Path, server: ChatServer
) -> None:
    server.add(Reply("<think>too long to say</think>  "))
    server.add(*["A memo." for _ in range(20)])
    with Memory.open(tmp_path / "e.db", "e", settings=SMALL, embedder=EMBEDDER) as memory:
        memory.ingest_text(book("pg84.txt", 3000), "frank", batch_size=32)
        report = gam.build_view(memory, ["frank"], chat(server), session_tokens=250)
        memos = memory.view_nodes("gam", MEMO, "frank")
        pages = memory.view_nodes("gam", PAGE, "frank")
    assert report.details["memo_fallbacks"] == 1
    assert memos[0].props == {"backend": "extractive"} and pages[0].props["backend"] == "extractive"
    extractive = ExtractiveSummarizer().summarize([pages[0].props["content"]], max_words=60)
    assert memos[0].text == extractive.text != ""
    assert {m.props["backend"] for m in memos[1:]} == {BACKEND}


def test_rebuilding_replaces_a_documents_view(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "r.db", "r", settings=SMALL, embedder=EMBEDDER) as memory:
        memory.ingest_text(book("pg84.txt", 6000), "frank", batch_size=32)
        gam.build_view(memory, None, None, session_tokens=150)
        many = len(memory.view_nodes("gam", PAGE, "frank"))
        gam.build_view(memory, None, None, session_tokens=600)
        pages = memory.view_nodes("gam", PAGE, "frank")
        memos = memory.view_nodes("gam", MEMO, "frank")
        with pytest.raises(InputError, match="nosuch"):
            gam.build_view(memory, ["nosuch"], None)
    assert many > len(pages) == len(memos)
    assert [p.seq for p in pages] == list(range(len(pages)))


# --- research: the plan decides which tools run ---------------------------------------------
def run(memory: Memory, server: ChatServer, *replies: str, **options: Any) -> Any:
    server.add(*replies)
    options.setdefault("doc_ids", ["frank"])
    return gam.research(memory, QUESTION, chat(server), **options)


def test_keyword_only_plan(small: Memory, server: ChatServer) -> None:
    answer = run(
        small,
        server,
        plan(tools=["keyword"], keyword_collection=["Petersburgh"], vector_queries=["x"]),
        integrated("Walton wrote from St. Petersburgh.", [0]),
        reflected(True),
    )
    [hits] = [r["hits"] for r in answer.details["rounds"]]
    assert list(hits) == ["keyword"]
    expected = [i for i, _ in small.keyword_search("gam", PAGE, "Petersburgh", 10)]
    expected = [i for i in expected if i.startswith("gam/frank/")][:5]
    assert hits["keyword"] == expected and set(expected) == set(
        pages_containing(small, "Petersburgh")
    )
    assert answer.details["pages_found"] == [expected]
    [evidence] = user_messages(server, "gam_integrate")
    numbers = page_numbers_in(evidence)
    assert sorted(f"gam/frank/p{n}" for n in numbers) == sorted(expected)
    assert steps(server) == ["gam_plan", "gam_integrate", "gam_reflect"]
    assert answer.answer == "Walton wrote from St. Petersburgh."
    assert answer.details["stop_reason"] == "enough" and answer.details["iterations"] == 1
    assert answer.backend == BACKEND and answer.strategy == "research"
    assert answer.log.usage.calls == 3


def test_vector_only_plan_sums_scores_over_queries(small: Memory, server: ChatServer) -> None:
    pages = frank_pages(small)
    queries = [" ".join(pages[n].props["content"].split()[:60]) for n in (3, 1)]
    answer = run(
        small,
        server,
        plan(tools=["vector"], vector_queries=queries, keyword_collection=["Petersburgh"]),
        integrated("", []),
        reflected(True),
    )
    [hits] = [r["hits"] for r in answer.details["rounds"]]
    assert list(hits) == ["vector"]
    # Each query finds the page it was cut from; the sum over both queries ranks pages.
    assert {pages[3].id, pages[1].id} <= set(hits["vector"])
    matrix = np.stack([p.embedding for p in pages])
    totals: dict[str, float] = {}
    for scores in EMBEDDER.embed(queries) @ matrix.T:
        for j in np.argsort(-scores, kind="stable")[:5]:
            totals[pages[j].id] = totals.get(pages[j].id, 0.0) + float(scores[j])
    assert hits["vector"] == sorted(totals, key=lambda i: -totals[i])[:5]
    assert answer.answer == "" and answer.details["source_pages"] == []


def test_page_index_plan_fetches_exactly_those_pages(small: Memory, server: ChatServer) -> None:
    answer = run(
        small,
        server,
        plan(
            tools=["page_index", "telepathy"],
            keyword_collection=["Petersburgh"],
            page_index=[3, "Page 1", 99, -1, 3],
        ),
        integrated("Facts from two pages.", [1, 3]),
        reflected(True),
    )
    [p] = answer.details["plans"]
    assert p["tools"] == ["page_index"] and p["page_index"] == [3, 1]
    assert answer.details["pages_found"] == [["gam/frank/p1", "gam/frank/p3"]]
    [evidence] = user_messages(server, "gam_integrate")
    assert page_numbers_in(evidence) == [1, 3]
    pages = frank_pages(small)
    assert pages[1].props["content"] in evidence and pages[3].props["content"] in evidence
    assert pages[2].props["content"] not in evidence


def test_plan_prompt_lists_every_abstract_with_its_page_number(
    small: Memory, server: ChatServer
) -> None:
    run(small, server, plan(), reflected(True), doc_ids=None)
    [prompt] = user_messages(server, "gam_plan")
    memos = small.view_nodes("gam", MEMO, "frank") + small.view_nodes("gam", MEMO, "pride")
    for n, memo in enumerate(memos):
        assert f"Page {n} ({memo.group}): {memo.text}" in prompt
    assert QUESTION in prompt


def test_malformed_plan_falls_back_to_an_empty_plan(small: Memory, server: ChatServer) -> None:
    answer = run(
        small,
        server,
        "I would search for Petersburgh and Archangel.",  # no JSON object
        "Petersburgh, then Archangel.",  # nor in the repair call's reply
        reflected(False, []),
        plan(tools=["keyword"], keyword_collection=["Archangel"]),
        integrated("Walton went to Archangel.", [0]),
        max_iters=2,
    )
    first, second = answer.details["plans"]
    assert first["fallback"] and first["tools"] == [] and not second["fallback"]
    assert answer.details["pages_found"][0] == []
    # Nothing found: no integrate call; no follow-up requests: plan from the question again.
    assert steps(server) == ["gam_plan", "gam_plan", "gam_reflect", "gam_plan", "gam_integrate"]
    assert second["request"] == QUESTION
    assert answer.log.usage.unusable_replies == 1
    assert answer.answer == "Walton went to Archangel."
    assert answer.details["stop_reason"] == "max_iters"


def test_reflection_requests_drive_the_next_iteration_and_integration_builds_on_the_result(
    small: Memory, server: ChatServer
) -> None:
    follow_ups = ["Who is Margaret Saville?", "Why does Walton go to Archangel?"]
    answer = run(
        small,
        server,
        plan(tools=["page_index"], page_index=[0]),
        integrated("Walton writes to his sister.", [0]),
        reflected(False, follow_ups),
        plan(tools=["page_index"], page_index=[1]),
        integrated("Walton writes to his sister Margaret Saville from Archangel.", [0, "1"]),
        reflected(True),
    )
    assert steps(server) == ["gam_plan", "gam_integrate", "gam_reflect"] * 2
    first_plan, second_plan = user_messages(server, "gam_plan")
    assert QUESTION in first_plan and all(r not in first_plan for r in follow_ups)
    assert all(r in second_plan for r in follow_ups)
    assert answer.details["plans"][1]["request"] == "\n".join(follow_ups)
    _, second_integrate = user_messages(server, "gam_integrate")
    result_part = second_integrate.split("RESULT (")[1]
    assert "Walton writes to his sister.\n(drawn from pages: 0)" in result_part
    assert QUESTION in second_integrate  # integration is always for the original question
    assert answer.answer == "Walton writes to his sister Margaret Saville from Archangel."
    assert answer.details["source_pages"] == ["gam/frank/p0", "gam/frank/p1"]
    assert answer.details["rounds"][0]["reflection"]["new_requests"] == follow_ups
    assert answer.details["stop_reason"] == "enough" and answer.details["iterations"] == 2


def test_malformed_integration_keeps_the_previous_result(small: Memory, server: ChatServer) -> None:
    answer = run(
        small,
        server,
        plan(tools=["page_index"], page_index=[0]),
        integrated("First result.", [0]),
        reflected(False, ["More?"]),
        plan(tools=["page_index"], page_index=[2]),
        '{"content": "unterminated',
        '{"content": "unterminated again',
        max_iters=2,
    )
    assert answer.answer == "First result."
    assert answer.log.usage.unusable_replies == 1
    assert answer.details["source_pages"] == ["gam/frank/p0"]
    assert [r["integrate_fallback"] for r in answer.details["rounds"]] == [False, True]


def test_integration_sources_name_pages_in_any_form(small: Memory, server: ChatServer) -> None:
    answer = run(
        small,
        server,
        plan(tools=["page_index"], page_index=[0, 1]),
        integrated("Facts.", [2, "Page 0", "gam/frank/p1", 99, None]),
        reflected(True),
    )
    assert answer.details["source_pages"] == ["gam/frank/p2", "gam/frank/p0", "gam/frank/p1"]


def test_malformed_reflection_means_not_enough_without_requests(
    small: Memory, server: ChatServer
) -> None:
    answer = run(
        small,
        server,
        plan(tools=["page_index"], page_index=[0]),
        integrated("Something.", [0]),
        "Yes, that is plenty.",
        "Plenty, yes.",
        plan(),
        max_iters=2,
    )
    assert answer.log.usage.unusable_replies == 1
    reflection = answer.details["rounds"][0]["reflection"]
    assert reflection == {"enough": False, "new_requests": [], "fallback": True}
    assert answer.details["plans"][1]["request"] == QUESTION
    assert answer.details["stop_reason"] == "max_iters"


def test_max_iters_caps_the_loop_and_skips_the_last_reflection(
    small: Memory, server: ChatServer
) -> None:
    replies = []
    for n in range(3):
        replies += [plan(tools=["page_index"], page_index=[n]), integrated(f"R{n}", [n])]
        replies.append(reflected(False, [f"request {n}"]))
    answer = run(small, server, *replies, max_iters=3)
    assert steps(server) == ["gam_plan", "gam_integrate", "gam_reflect"] * 2 + [
        "gam_plan",
        "gam_integrate",
    ]
    assert answer.details["iterations"] == 3 and answer.details["stop_reason"] == "max_iters"
    assert answer.details["rounds"][2].get("reflection") is None
    assert answer.answer == "R2" and answer.log.usage.calls == 8
    assert server.remaining == 1  # the third reflection was never asked for


@pytest.mark.parametrize("output", ["integration", "sources", "extracts"])
def test_output_formats(small: Memory, server: ChatServer, output: str) -> None:
    content = "Walton writes from St. Petersburgh to his sister Mrs. Saville."
    answer = run(
        small,
        server,
        plan(tools=["keyword"], keyword_collection=["Petersburgh Saville"]),
        integrated(content, [0, 1]),
        reflected(True),
        output=output,
    )
    assert answer.answer == content and answer.details["output"] == output
    assert answer.details["source_pages"] == ["gam/frank/p0", "gam/frank/p1"]
    pages = {p.id: p.props["content"] for p in frank_pages(small)}
    if output == "integration":
        assert answer.sources == []
    elif output == "sources":
        assert [(s.id, s.kind, s.document) for s in answer.sources] == [
            ("gam/frank/p0", "page", "frank"),
            ("gam/frank/p1", "page", "frank"),
        ]
        assert [s.text for s in answer.sources] == [pages["gam/frank/p0"], pages["gam/frank/p1"]]
    else:
        assert answer.sources and all(s.kind == "extract" for s in answer.sources)
        assert answer.details["extracts_backend"] == "extractive"
        for source in answer.sources:
            page = " ".join(pages[source.id].split())
            assert len(source.text) < len(page)
            assert all(sentence in page for sentence in split_sentences(source.text))
        assert any("Petersburgh" in s.text or "Saville" in s.text for s in answer.sources)
    assert json.loads(json.dumps(answer.to_dict()))["output"] == output


def test_transport_errors_propagate(small: Memory, server: ChatServer) -> None:
    server.add(Fault(500))
    with pytest.raises(LLMError):
        gam.research(small, QUESTION, chat(server), doc_ids=["frank"])


def test_bad_options_and_a_missing_view(small: Memory, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="output"):
        gam.research(small, QUESTION, None, output="pages")
    with pytest.raises(ConfigError, match="max_iters"):
        gam.research(small, QUESTION, None, max_iters=0)
    with pytest.raises(ConfigError, match="session_tokens"):
        gam.build_view(small, None, None, session_tokens=0)
    with Memory.open(tmp_path / "n.db", "n", settings=SMALL, embedder=EMBEDDER) as memory:
        memory.ingest_text("Just one short document about nothing much.", "d")
        with pytest.raises(ConfigError, match="build the view"):
            gam.research(memory, QUESTION, None)


def test_module_exports() -> None:
    assert gam.VIEW == "gam"
    assert {"research": gam.research} == gam.STRATEGIES


# --- offline backend ---------------------------------------------------------------------------
def test_extractive_research_stays_in_its_documents(small: Memory) -> None:
    question = "When was the book written, revised at Chawton and published?"
    answer = gam.research(small, question, None, doc_ids=["pride"])
    found = [i for iteration in answer.details["pages_found"] for i in iteration]
    assert found and all(i.startswith("gam/pride/") for i in found)
    assert answer.details["pages_in_scope"] == len(small.view_nodes("gam", PAGE, "pride"))
    assert "1813" in answer.answer


def test_extractive_end_to_end_on_a_real_book(tmp_path: Path) -> None:
    """60K characters of Frankenstein, default 2048-token sessions, no model at all."""
    settings = Settings(embed_model=EMBEDDER.name)
    with Memory.open(tmp_path / "book.db", "book", settings=settings, embedder=EMBEDDER) as m:
        m.ingest_text(book("pg84.txt", 60000), "frank", batch_size=64)
        report = gam.build_view(m, None, None)
        memos = m.view_nodes("gam", MEMO, "frank")
        question = "To which town did Beaufort retreat with his daughter?"
        answer = gam.research(m, question, None, output="sources")
        pages = frank_pages(m)
    assert report.backend == "extractive" and report.log.usage.calls == 0
    assert report.details["sessions"] == len(pages) >= 6
    assert {memo.props["backend"] for memo in memos} == {"extractive"}
    [holding] = [p.id for p in pages if "town of Lucerne" in p.props["content"]]
    first = answer.details["rounds"][0]
    assert first["hits"]["keyword"][0] == holding  # BM25 ranks it first
    assert answer.details["plans"][0]["keyword_collection"] == [question]
    assert "retreated with his daughter to the town of Lucerne" in answer.answer
    assert holding in answer.details["source_pages"]
    assert holding in [s.id for s in answer.sources]
    # The answer quotes the pages: every sentence is one of theirs.
    quoted = " ".join(" ".join(s.text.split()) for s in answer.sources)
    assert all(sentence in quoted for sentence in split_sentences(answer.answer))
    # Offline the second round repeats the plan, finds nothing new and stops.
    assert answer.details["iterations"] == 2 and answer.details["stop_reason"] == "no_new_pages"
    assert answer.details["rounds"][1]["new_pages"] == []
    assert answer.backend == "extractive" and answer.log.usage.calls == 0
