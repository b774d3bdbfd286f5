"""The offline answerer on real text: Frankenstein's glacier chapter among others."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cam_engine import Memory
from cam_engine.llm.extractive import ExtractiveAnswerer, split_sentences
from tests.conftest import shared_file

pytestmark = [pytest.mark.realdata, pytest.mark.model]

QUESTION = "Where does Victor meet the creature on the glacier?"


def test_the_glacier_question_is_answered_with_a_glacier_sentence(tmp_path: Path) -> None:
    book = shared_file("haystacks/gutenberg/pg84.txt").read_text(encoding="utf-8")
    lines = book.splitlines()
    # Chapters 7-10 (William's murder, Justine, Chamounix, the sea of ice): names of
    # the question on every page, the glacier in a few.
    start = next(i for i, line in enumerate(lines) if line == "Chapter 7")  # not the contents
    end = next(i for i, line in enumerate(lines) if line == "Chapter 11")
    part = tmp_path / "frankenstein-7-10.txt"
    part.write_text("\n".join(lines[start:end]), encoding="utf-8")
    with Memory.open(tmp_path / "m.db") as memory:
        memory.ingest([part])
        answerer = ExtractiveAnswerer(embed=memory.embedder.embed)
        result = memory.ask(QUESTION, answerer=answerer)
    assert result.backend == "extractive"
    quoted = split_sentences(result.answer)
    folded = " ".join(book.split())
    assert quoted and all(s in folded for s in quoted), "the answer only quotes the book"
    about_it = re.compile(r"glacier|sea of ice|field of ice|Montanvert", re.IGNORECASE)
    assert any(about_it.search(s) for s in quoted), result.answer
