"""The extractive summarizer quotes prose, not a book's layout."""

from __future__ import annotations

import pytest

from cam_engine.llm import ExtractiveSummarizer
from cam_engine.llm.extractive import ExtractiveAnswerer, split_sentences
from tests.conftest import shared_file

SUMMARIZER = ExtractiveSummarizer()


def test_headings_and_illustration_markers_are_not_quoted() -> None:
    texts = [
        "CHAPTER V.\n\n[Illustration]\n\nPardon me, said Mr. Collins, for the chapter "
        "of the Bennet family is long.",
        "Within a short walk of Longbourn lived the Lucas family. Sir William Lucas had "
        "been in trade in Meryton.\n\nCHAPTER VI.\n\n[Illustration: Mr. and Mrs. Bennet]\n\n"
        "The ladies of Longbourn soon waited on those of Netherfield.",
    ]
    summary = SUMMARIZER.summarize(texts, max_words=120).text
    assert "CHAPTER" not in summary and "Illustration" not in summary
    assert summary.startswith("Pardon me, said Mr. Collins")
    assert "Netherfield" in summary


def test_a_marker_inside_a_paragraph_is_taken_out_and_its_sentence_kept() -> None:
    text = "[Illustration] Pardon me, Mr. Darcy was clever. Bingley was liked."
    summary = SUMMARIZER.summarize([text], max_words=50).text
    assert summary == "Pardon me, Mr. Darcy was clever. Bingley was liked."


@pytest.mark.parametrize(
    "line",
    [
        "Letter 4",
        "Chapter 12 The Storm",
        "Heading to Chapter IV.",
        "Tailpiece to Chapter V. 26",
        "“She is tolerable” 15",
        "Dedication vii",
        "PRIDE AND PREJUDICE",
    ],
)
def test_contents_lines_and_headings_are_not_quoted(line: str) -> None:
    text = f"{line}\n\nThe whale surfaced beside the ship at dawn."
    summary = SUMMARIZER.summarize([text], max_words=50).text
    assert summary == "The whale surfaced beside the ship at dawn."


@pytest.mark.parametrize(
    "sentence",
    [
        "Part of it was true.",
        "Part I of the plan is ready.",
        "He was born in 1813.",
        "See chapter 3 and chapter 4 for the full account of the voyage.",
        "北京是中国的首都。",
    ],
)
def test_prose_that_looks_like_a_heading_is_kept(sentence: str) -> None:
    summary = SUMMARIZER.summarize([sentence], max_words=50).text
    assert summary == sentence
    # Beside another sentence too (the fallback below does not apply).
    both = SUMMARIZER.summarize([f"{sentence} The ship sailed on.\n"], max_words=50).text
    assert sentence in both


def test_a_text_of_headings_only_is_still_summarized() -> None:
    summary = SUMMARIZER.summarize(["CONTENTS\n\nLetter 1\n\nChapter 1"], max_words=20).text
    assert summary == "CONTENTS Letter 1 Chapter 1"


def test_frankenstein_contents_are_not_in_the_summary() -> None:
    book = shared_file("haystacks/gutenberg/pg84.txt").read_text(encoding="utf-8")
    start = book.index("CONTENTS")
    summary = SUMMARIZER.summarize([book[start : start + 1500]], max_words=60).text
    assert "Chapter" not in summary and "CONTENTS" not in summary
    assert "Petersburgh" in summary


def test_pride_and_prejudice_chapter_openings_are_summarized_as_prose() -> None:
    book = shared_file("haystacks/gutenberg/pg1342.txt").read_text(encoding="utf-8")
    start = book.index("CHAPTER V.")
    texts = [book[start - 400 : start + 1200], book[start + 1200 : start + 2800]]
    summary = SUMMARIZER.summarize(texts, max_words=120).text
    for layout in ("CHAPTER", "[Illustration", "Copyright 1894", "]"):
        assert layout not in summary


TRANSCRIPT = (
    "[Session 3 · 8 May 2023 · Monday, May 8, 2023 · 2023-05-08]\n"
    "Caroline: I went to the adoption support group yesterday\n"
    "Melanie: How did it go\n"
    "Caroline: The counsellors were kind and I felt at home there."
)


def test_a_transcripts_header_and_unpunctuated_turns_are_sentences_of_their_own() -> None:
    assert split_sentences(TRANSCRIPT) == TRANSCRIPT.split("\n")


def test_a_session_header_is_not_quoted_in_a_summary() -> None:
    summary = SUMMARIZER.summarize([TRANSCRIPT], max_words=60).text
    assert "Session" not in summary and summary.startswith("Caroline:")


def test_wrapped_prose_lines_still_make_one_sentence() -> None:
    text = "The whale surfaced beside\nthe ship at dawn, and Ahab:\nsaw it first."
    assert split_sentences(text) == [
        "The whale surfaced beside the ship at dawn, and Ahab: saw it first."
    ]


def test_an_unpunctuated_turn_can_be_quoted_as_an_answer() -> None:
    answer = ExtractiveAnswerer().answer("Where did Caroline go about adoption?", [TRANSCRIPT])
    assert "Caroline: I went to the adoption support group yesterday" in answer.text
    assert "Session" not in answer.text
