"""The default strategy's offline answers on the check set, end to end on real books.

Two books in one memory (the field manual and Romeo and Juliet: the full five-book run
takes many minutes on a laptop and is ``cam eval books``, docs/evaluation.md), every
check-set question on them asked through ``Memory.ask`` with the default strategy and
the offline answerer."""

from __future__ import annotations

from pathlib import Path

import pytest

from cam_engine import Memory
from cam_engine.eval.books import ask_books, book_paths, build_memory, load_book_questions
from tests.conftest import shared_file

pytestmark = [pytest.mark.realdata, pytest.mark.model]

CHECK_SET = Path(__file__).resolve().parents[1] / "data" / "book_questions.jsonl"
BOOKS = ("pg26184", "pg1513")
# What the default strategy reaches on these two books (docs/evaluation.md): the answer
# holds the fact for at least this share of the questions, the evidence for this one.
ANSWER_FLOOR = 0.5
EVIDENCE_FLOOR = 0.75


def test_the_default_strategy_answers_the_check_set_questions(tmp_path: Path) -> None:
    books = shared_file("haystacks/gutenberg")
    questions = [q for q in load_book_questions(CHECK_SET) if q.doc in BOOKS]
    with Memory.open(tmp_path / "books.db", "books") as memory:
        build_memory(memory, book_paths(questions, books), ["prune-grow"])
        results = ask_books(memory, questions, ["prune-grow"])
    answered = sum(r.answer_hit for r in results) / len(results)
    found = sum(r.evidence_hit for r in results) / len(results)
    misses = [(r.question_id, r.answer[:80]) for r in results if not r.answer_hit]
    assert answered >= ANSWER_FLOOR, misses
    assert found >= EVIDENCE_FLOOR
