"""The check set of book questions (tests/data/book_questions.jsonl) is well formed and
each accepted answer is really in its book, spread over the books and their length."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from cam_engine.errors import InputError
from cam_engine.eval.books import contains_answer, load_book_questions
from tests.conftest import shared_file

CHECK_SET = Path(__file__).resolve().parents[1] / "data" / "book_questions.jsonl"
BOOKS = ("pg84", "pg1342", "pg2701", "pg1513", "pg26184")


def test_the_check_set_has_fifty_questions_or_more_on_every_book() -> None:
    questions = load_book_questions(CHECK_SET)
    assert len(questions) >= 50
    assert len({q.id for q in questions}) == len(questions)
    per_book = Counter(q.doc for q in questions)
    assert set(per_book) == set(BOOKS)
    assert min(per_book.values()) >= 5
    assert {q.type for q in questions} >= {"who", "where", "when", "which", "what", "how many"}


@pytest.mark.realdata
def test_every_accepted_answer_occurs_in_its_book() -> None:
    texts = {b: shared_file(f"haystacks/gutenberg/{b}.txt").read_text("utf-8") for b in BOOKS}
    for q in load_book_questions(CHECK_SET):
        for alias in q.answers:
            assert contains_answer(texts[q.doc], [alias]), f"{q.id}: {alias!r} not in {q.doc}"


@pytest.mark.realdata
def test_the_answers_come_from_the_whole_length_of_each_book() -> None:
    """Where an answer first occurs in its book: in each half of every novel for some."""
    for book in ("pg84", "pg1342", "pg2701", "pg1513"):
        text = shared_file(f"haystacks/gutenberg/{book}.txt").read_text("utf-8").casefold()
        places = [
            text.find(q.answers[0].casefold()) / len(text)
            for q in load_book_questions(CHECK_SET)
            if q.doc == book
        ]
        assert min(places) < 0.5 < max(places), book


def test_answers_are_found_as_whole_words_without_case() -> None:
    assert contains_answer("He went to the ORKNEYS.", ["Orkneys"])
    assert not contains_answer("He lit his pipe.", ["Pip"])
    assert contains_answer("It was Pip, the cabin boy.", ["Pip"])


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{", "not JSON"),
        ('{"id": "q", "doc": "pg84", "question": "Who?", "type": "who"}', "'answers'"),
        (
            '{"id": "q", "doc": "pg84", "question": "Who?", "answers": ["x"], "type": "why"}',
            "'type' must be one of",
        ),
    ],
)
def test_a_bad_line_is_one_error_naming_it(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=re.escape(f"{path}:1: ") + ".*" + re.escape(message)):
        load_book_questions(path)
