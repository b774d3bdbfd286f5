"""Questions kept to some documents (``Memory.ask(documents=...)``) and the citations
of evidence, on a memory of two real books (their openings) with the hashing embedder."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from cam_engine import Memory
from cam_engine.adapters.registry import VIEW_BUILDERS
from cam_engine.embed import HashingEmbedder
from cam_engine.errors import ConfigError, NotFoundError
from cam_engine.llm.base import Candidate, Selection, Usage
from cam_engine.retrieval import prune_and_grow
from cam_engine.retrieval.strategies import STRATEGIES
from cam_engine.store.sqlite import SqliteStore
from cam_engine.types import CHUNK, Edge, Node
from tests.conftest import shared_file
from tests.unit.tiny_memory import axis, mix

FRANKENSTEIN, PRIDE = "pg84.txt", "pg1342.txt"
QUESTION = "What happened on Elizabeth's wedding night?"
EXCERPT = 40_000  # bytes of each book: a few dozen chunks, both with the Gutenberg header


@pytest.fixture(scope="module")
def books(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("books")
    for name in (FRANKENSTEIN, PRIDE):
        data = shared_file(f"haystacks/gutenberg/{name}").read_bytes()[:EXCERPT]
        (folder / name).write_bytes(data)
    return folder


@pytest.fixture(scope="module")
def memory(books: Path) -> Iterator[Memory]:
    with Memory.open(books / "m.db", "two", embedder=HashingEmbedder(64)) as memory:
        memory.ingest([books / FRANKENSTEIN, books / PRIDE])
        for build in VIEW_BUILDERS.values():  # the adapters' views (offline)
            build(memory, None, None)
        yield memory


def evidence_documents(memory: Memory, strategy: str, documents: list[str] | None) -> set:
    # research returns its integrated result alone unless asked for its source pages.
    options = {"output": "sources"} if strategy == "research" else None
    result = memory.ask(QUESTION, strategy=strategy, documents=documents, options=options)
    assert result.evidence, f"{strategy} found nothing"
    return {e.document for e in result.evidence}


# A strategy that needs another build (prune-grow-no-flexibility) runs the code of one
# listed here on that build.
@pytest.mark.parametrize("strategy", [n for n, s in STRATEGIES.items() if not s.needs_build])
def test_every_strategy_keeps_to_the_documents_asked_about(memory: Memory, strategy: str) -> None:
    assert evidence_documents(memory, strategy, [FRANKENSTEIN]) == {FRANKENSTEIN}
    assert evidence_documents(memory, strategy, [PRIDE]) == {PRIDE}


@pytest.mark.parametrize("strategy", ["prune-grow", "global", "hybrid", "dense", "bm25"])
def test_without_a_scope_the_other_book_answers_too(memory: Memory, strategy: str) -> None:
    # What the scope is for: Elizabeth is in both books.
    assert PRIDE in evidence_documents(memory, strategy, None)


def test_a_scope_of_every_document_is_no_scope(memory: Memory) -> None:
    whole = memory.ask(QUESTION, strategy="traverse")
    both = memory.ask(QUESTION, strategy="traverse", documents=[PRIDE, FRANKENSTEIN])
    assert [e.node_id for e in both.evidence] == [e.node_id for e in whole.evidence]
    # A summary spanning both books (the top level's) is evidence only without a scope.
    assert None in {e.document for e in whole.evidence}


def test_an_unknown_document_is_one_line_naming_the_documents(memory: Memory) -> None:
    with pytest.raises(NotFoundError) as caught:
        memory.ask(QUESTION, documents=["pg84"])
    message = str(caught.value)
    assert "'pg84'" in message and FRANKENSTEIN in message and PRIDE in message
    assert "\n" not in message


def test_an_adapter_takes_the_scope_as_its_documents_once(memory: Memory) -> None:
    with pytest.raises(ConfigError, match="documents once"):
        memory.ask(QUESTION, strategy="memagent", documents=[PRIDE], options={"doc_ids": [PRIDE]})


def test_chunk_evidence_cites_the_characters_of_the_file(memory: Memory, books: Path) -> None:
    files = {
        name: (books / name).read_bytes().decode("utf-8-sig") for name in (FRANKENSTEIN, PRIDE)
    }
    cited = 0
    for strategy in ("hybrid", "prune-grow", "global"):
        for e in memory.ask(QUESTION, strategy=strategy).evidence:
            if e.level == 0:
                assert e.document is not None and e.start_char is not None
                # Offsets count from the file's start, Gutenberg header included.
                assert files[e.document][e.start_char : e.end_char] == e.text
                assert e.citation == f"{e.document}:{e.start_char}-{e.end_char}"
                assert e.pages is None  # not a PDF
                cited += 1
            else:
                assert e.start_char is None and e.covers
                assert e.citation.startswith("summary of ")
                for document, (start, end) in e.covers.items():
                    assert 0 <= start < end <= len(files[document])
                    assert f"{document}:{start}-{end}" in e.citation
    assert cited > 5


def test_a_summary_of_two_books_cites_both_spans(memory: Memory) -> None:
    top = [e for e in memory.ask(QUESTION, strategy="traverse").evidence if e.document is None]
    assert top and all(set(e.covers) == {FRANKENSTEIN, PRIDE} for e in top)
    assert all("; " in e.citation for e in top)


class EverySelector:
    """Chooses every candidate: growth goes wherever the graph leads."""

    backend = "every"

    def select(self, question: str, candidates: Sequence[Candidate]) -> Selection:
        return Selection(list(range(len(candidates))), "all", Usage())


def test_prune_and_grow_never_grows_into_another_document(tmp_path: Path) -> None:
    # a0 is the question's chunk; its strongest neighbour, b0, is of another document.
    store = SqliteStore(tmp_path / "s.db", "m")
    with store.transaction():
        store.upsert_nodes(
            [
                Node("a0", 0, CHUNK, "the lighthouse keeper", "a", 0, axis(0)),
                Node("a1", 0, CHUNK, "nets and boats", "a", 1, mix((0, 0.2), (1, 1.0))),
                Node("b0", 0, CHUNK, "a ballroom in spring", "b", 0, axis(5)),
            ]
        )
        store.upsert_edges([Edge.make("a0", "b0", 0, 0.99), Edge.make("a0", "a1", 0, 0.5)])

    def activated(documents: list[str] | None) -> set[str]:
        found = prune_and_grow(
            store, "keeper", axis(0), EverySelector(), top_k=1, max_turns=3, documents=documents
        )
        return {n.id for n in found.activated}

    assert "b0" in activated(None)  # the edge leads there
    assert activated(["a"]) == {"a0", "a1"}
    store.close()
