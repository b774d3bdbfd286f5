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


def test_cam_eval_books_scores_answers_and_evidence_per_strategy(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from cam_engine.cli.main import cli

    books = tmp_path / "books"
    books.mkdir()
    (books / "a.txt").write_text(
        "The ship sailed from the harbour in the spring.\n\n"
        "Captain Hardy took the ship to the remotest of the Orkneys, where the wind blew.\n\n"
        "The crew were tired and cold after the long voyage north.\n",
        encoding="utf-8",
    )
    (books / "b.txt").write_text(
        "The garden was full of roses in June.\n\nMiss Price kept bees behind the wall.\n",
        encoding="utf-8",
    )
    questions = tmp_path / "q.jsonl"
    rows = [
        {
            "id": "a1",
            "doc": "a",
            "question": "Where did Captain Hardy take the ship?",
            "answers": ["Orkneys"],
            "type": "where",
        },
        {
            "id": "b1",
            "doc": "b",
            "question": "Who kept bees behind the wall?",
            "answers": ["Miss Price"],
            "type": "who",
        },
    ]
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    env = {"CAM_EMBED_MODEL": "hashing"}
    args = ["eval", "books", str(questions), "--books-dir", str(books)]
    result = CliRunner().invoke(cli, [*args, "--strategies", "prune-grow,bm25", "--json"], env=env)
    assert result.exit_code == 0, result.output
    summary = {row["strategy"]: row for row in json.loads(result.output)["summary"]}
    assert set(summary) == {"prune-grow", "bm25"}
    assert summary["prune-grow"]["questions"] == 2
    assert summary["prune-grow"]["evidence_contains"] == 2
    assert summary["prune-grow"]["answer_contains"] == 2
    missing = CliRunner().invoke(cli, ["eval", "books", str(questions)], env=env)
    assert missing.exit_code != 0 and "--books-dir" in missing.output
    # Its one memory is built with the default settings: an ablation that needs another
    # build is refused in one line before any book is ingested.
    out = tmp_path / "out"
    flexible = [*args, "--strategies", "prune-grow-no-flexibility", "--out", str(out)]
    refused = CliRunner().invoke(cli, flexible, env=env)
    assert refused.exit_code == 1
    assert refused.output.startswith(
        "Error: strategy 'prune-grow-no-flexibility' needs a memory built with ego_split=False"
    )
    assert not (out / "books.db").exists() or b"Orkneys" not in (out / "books.db").read_bytes()
