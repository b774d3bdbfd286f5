"""Two books in one memory, the real embedder: a question about Frankenstein's
Elizabeth, kept to Frankenstein, takes nothing from Pride and Prejudice's Elizabeth."""

from __future__ import annotations

import pytest

from cam_engine import Memory
from tests.conftest import shared_file

pytestmark = [pytest.mark.realdata, pytest.mark.model]

FRANKENSTEIN, PRIDE = "pg84.txt", "pg1342.txt"
QUESTION = "What happened on Elizabeth's wedding night?"


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Memory:
    books = [shared_file(f"haystacks/gutenberg/{name}") for name in (FRANKENSTEIN, PRIDE)]
    memory = Memory.open(tmp_path_factory.mktemp("two-books") / "m.db")
    memory.ingest(books)
    return memory


@pytest.mark.parametrize("strategy", ["prune-grow", "global", "traverse", "hybrid"])
def test_a_scoped_question_takes_no_evidence_from_the_other_book(
    memory: Memory, strategy: str
) -> None:
    kept = memory.ask(QUESTION, strategy=strategy, documents=[FRANKENSTEIN])
    assert kept.evidence and {e.document for e in kept.evidence} == {FRANKENSTEIN}
    book = shared_file(f"haystacks/gutenberg/{FRANKENSTEIN}").read_bytes().decode("utf-8-sig")
    for e in kept.evidence:
        if e.level == 0:
            assert book[e.start_char : e.end_char] == e.text


@pytest.mark.parametrize("strategy", ["prune-grow", "hybrid"])
def test_without_a_scope_pride_and_prejudice_answers_too(memory: Memory, strategy: str) -> None:
    whole = memory.ask(QUESTION, strategy=strategy)
    assert PRIDE in {e.document for e in whole.evidence}
