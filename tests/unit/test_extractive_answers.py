"""The extractive answerer quotes each sentence once; the splitter keeps titles whole."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from cam_engine.llm.extractive import ExtractiveAnswerer, rank_passages, split_sentences


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


def _topic_embed(texts: Sequence[str]) -> np.ndarray:
    """A fake embedder: one axis per topic word, so "ice" and "glacier" are near."""
    topics = [("glacier", "ice", "mountain"), ("murder", "dead"), ("letter", "sister")]
    rows = []
    for text in texts:
        low = text.lower()
        row = np.array([float(any(w in low for w in ws)) for ws in topics] + [0.1])
        rows.append(row / np.linalg.norm(row))
    return np.stack(rows)


def test_a_sentence_about_the_subject_beats_a_short_one_repeating_a_name() -> None:
    passages = [
        "“My dear Victor,” cried he. Victor, he is murdered! The house was silent.",
        "I crossed the sea of ice for two hours. "
        "I descended upon the glacier and saw the wretch advancing over the ice.",
    ]
    answerer = ExtractiveAnswerer(sentences=1, embed=_topic_embed)
    result = answerer.answer("Where does Victor meet the creature on the glacier?", passages)
    assert result.text == (
        "I descended upon the glacier and saw the wretch advancing over the ice."
    )
    assert result.backend == "extractive"
    assert answerer.rank_passages("Where is the glacier?", passages) == [1, 0]


def test_a_sentence_pointing_back_is_quoted_with_the_one_before() -> None:
    passages = [
        "The ship sailed north. Walton found a man on a sledge on the ice. "
        "He was nearly frozen and emaciated by fatigue."
    ]
    result = ExtractiveAnswerer(sentences=1).answer(
        "Who was nearly frozen and emaciated?", passages
    )
    assert result.text == (
        "Walton found a man on a sledge on the ice. He was nearly frozen and emaciated by fatigue."
    )


def test_a_summary_copy_cut_short_is_not_quoted() -> None:
    whole = "Justine Moritz was accused of the murder of William and tried at Geneva."
    passages = [
        f"Elizabeth wept. {whole} The ship sailed north. Walton wrote letters.",
        "Justine Moritz was accused of the murder …",
    ]
    result = ExtractiveAnswerer(sentences=2).answer(
        "Who was accused of murdering William?", passages
    )
    assert whole in result.text and "…" not in result.text


def test_rank_passages_orders_by_best_node_cosine_with_ties_in_given_order() -> None:
    q = np.array([1.0, 0.0])
    near, far, side = np.array([0.9, 0.1]), np.array([0.1, 0.9]), np.array([0.5, 0.5])
    passages = [far, np.stack([far, near]), side, side, np.zeros((0, 2))]
    assert rank_passages(q, passages) == [1, 2, 3, 0, 4]
    assert rank_passages(q, []) == []
