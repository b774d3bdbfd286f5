"""The extractive answerer quotes each sentence once; the splitter keeps titles whole."""

from __future__ import annotations

import pytest

from cam_engine.llm.extractive import ExtractiveAnswerer, split_sentences


def test_answer_quotes_a_sentence_repeated_in_the_evidence_once() -> None:
    # A chunk and the extractive summaries above it quote the same sentence.
    best = "Margaret Saville is the sister of Robert Walton."
    passages = [
        f"The ship sailed north. {best}",
        f"{best} Walton wrote her letters.",
        f"{best} Walton hired a crew in Archangel.",
    ]
    result = ExtractiveAnswerer(sentences=3).answer("Who is Margaret Saville?", passages)
    sentences = split_sentences(result.text)
    assert best in sentences
    assert result.text.count(best) == 1
    assert len(sentences) == len(set(sentences))


@pytest.mark.parametrize(
    "text",
    [
        "To Mrs. Saville, England.",
        "Mr. Kirwin is a magistrate.",
        "We passed St. Petersburg at noon.",
        "Capt. Walton and Prof. Waldman met Lt. Jones.",
        "The letter was signed by J. Smith of London.",
    ],
)
def test_titles_and_initials_do_not_end_a_sentence(text: str) -> None:
    assert split_sentences(text) == [text]


def test_a_sentence_after_a_title_still_ends_at_its_period() -> None:
    assert split_sentences("Dr. Smith arrived. He sat down.") == [
        "Dr. Smith arrived.",
        "He sat down.",
    ]


def test_answer_skips_near_duplicates_and_fills_with_the_next_sentence() -> None:
    passages = [
        "Caroline Beaufort possessed a mind of an uncommon mould.",
        "CAROLINE   beaufort possessed a mind\nof an uncommon mould.",
        "Two years after this event Caroline became his wife.",
        "The ship sailed north. Walton wrote letters to his sister. The ice closed in.",
    ]
    result = ExtractiveAnswerer(sentences=2).answer(
        "What mind did Caroline Beaufort possess?", passages
    )
    assert result.text == (
        "Caroline Beaufort possessed a mind of an uncommon mould. "
        "Two years after this event Caroline became his wife."
    )


def test_answer_skips_a_sentence_contained_in_a_chosen_one() -> None:
    passages = [
        "Letter one was sent to Margaret Saville, England, by her brother Robert.",
        "Margaret Saville, England, by her brother Robert.",
        "The ship sailed north. Walton hired a crew. The ice closed in.",
    ]
    result = ExtractiveAnswerer(sentences=2).answer("Who is Margaret Saville?", passages)
    assert result.text.count("Margaret Saville, England") == 1
    assert len(split_sentences(result.text)) == 1


def test_summary_of_overlapping_members_quotes_each_sentence_once() -> None:
    from cam_engine.llm.extractive import ExtractiveSummarizer, split_sentences

    shared = "One or two stiff gales and the springing of a leak are accidents of the voyage."
    members = [
        f"{shared} The ship sailed north past the ice.",
        f"The crew feared the ice. {shared}",
        f"{shared} Walton wrote to his sister about the voyage.",
    ]
    summary = ExtractiveSummarizer().summarize(members, max_words=60).text
    sentences = split_sentences(summary)
    assert shared in sentences  # the most central sentence is kept ...
    assert len(sentences) == len(set(sentences))  # ... and quoted once
