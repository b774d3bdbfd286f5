"""The offline answerer quotes the sentence that holds the kind of answer asked for.

Each text below has a sentence that repeats the question's words and answers nothing,
and one that holds the answer (a name, a place, a date, a number) in fewer of them.
"""

from __future__ import annotations

import pytest

from cam_engine.llm.answer_types import (
    NAME,
    NUMBER,
    PERSON,
    PLACE,
    THING,
    TIME,
    answer_candidates,
    answer_kind,
    question_words,
    vocabulary,
)
from cam_engine.llm.extractive import ExtractiveAnswerer

CASES = [
    (
        "Who was executed for the murder of William?",
        [
            "The murder of William filled the whole town with horror, and the trial for the "
            "murder was spoken of in every house. Justine Moritz was executed the next "
            "morning, though she was innocent of the crime.",
            "William had been playing on the green that evening with his brother.",
        ],
        "Justine",
    ),
    (
        "Where did Victor go to build the second creature?",
        [
            "Victor feared to build the second creature, and he thought of the creature "
            "night and day while he went about the work. He went at last to the remotest "
            "of the Orkneys, a rock whose high sides were beaten by the waves.",
        ],
        "Orkneys",
    ),
    (
        "When did the ship sail from the harbour?",
        [
            "The ship was ready to sail, and the harbour was full of the friends of the ship. "
            "It was Christmas Day when she put out, with a cold wind behind her.",
        ],
        "Christmas",
    ),
    (
        "How many daughters did Mrs. Bennet have?",
        [
            "Mrs. Bennet talked of her daughters all day, and her daughters were her only "
            "care in life. The Bennets had five girls and no son to inherit the estate.",
        ],
        "five",
    ),
    (
        "Which inn did Ishmael stay at in the town?",
        [
            "Ishmael walked about the town looking for an inn, and every inn of the town "
            "was too dear for his purse. At last he took a bed at the Spouter-Inn, kept by "
            "Peter Coffin.",
        ],
        "Spouter",
    ),
]


@pytest.mark.parametrize(("question", "passages", "fact"), CASES)
def test_the_sentence_holding_the_kind_of_answer_asked_for_is_quoted(
    question: str, passages: list[str], fact: str
) -> None:
    result = ExtractiveAnswerer(sentences=1).answer(question, passages)
    assert fact in result.text, result.text
    assert result.backend == "extractive"


def test_a_table_of_contents_and_headings_are_not_quoted() -> None:
    passages = [
        "CHAPTER 21. Going Aboard. CHAPTER 22. Merry Christmas. CHAPTER 23. The Lee Shore.",
        "CHAPTER 22. Merry Christmas.",
        "[Illustration] At last, at Christmas, the Pequod sailed from Nantucket on a short, "
        "cold day.",
    ]
    result = ExtractiveAnswerer(sentences=1).answer("When did the Pequod sail?", passages)
    assert (
        result.text
        == "At last, at Christmas, the Pequod sailed from Nantucket on a short, cold day."
    )


def test_the_answer_cites_the_passage_and_span_of_each_quoted_sentence() -> None:
    passages = [
        "Nothing here about it at all.",
        "The letters went home.\n\nWalton wrote his letters to\n   his sister, Mrs. Saville, "
        "in England. She kept them.",
    ]
    result = ExtractiveAnswerer(sentences=1).answer(
        "To whom did Walton write his letters?", passages
    )
    assert "Saville" in result.text
    assert len(result.citations) == 1
    passage, start, end = result.citations[0]
    assert passage == 1
    assert " ".join(passages[1][start:end].split()) == result.text


def test_a_second_sentence_is_quoted_only_when_it_is_nearly_as_good() -> None:
    passages = [
        "Justine was executed for the murder of William. The weather was fine that day "
        "in the town.",
    ]
    answerer = ExtractiveAnswerer(sentences=2, margin=0.8)
    result = answerer.answer("Who was executed for the murder of William?", passages)
    assert result.text == "Justine was executed for the murder of William."


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("Who is Victor's closest friend?", PERSON),
        ("To whom does Walton write?", PERSON),
        ("Where is Romeo banished to?", PLACE),
        ("In which city is the play set?", PLACE),
        ("When is Bingley to take possession?", TIME),
        ("In what month did Victor see it?", TIME),
        ("How many days does the chase last?", NUMBER),
        ("At what age did Victor leave?", NUMBER),
        ("Which ship picks up Ishmael?", NAME),
        ("What is the name of Darcy's estate?", NAME),
        ("What can be put in the fuel tank?", THING),
    ],
)
def test_the_kind_of_answer_a_question_asks_for(question: str, kind: str) -> None:
    assert answer_kind(question) == kind


def test_a_name_near_the_question_words_is_a_surer_answer_than_one_far_from_them() -> None:
    question = "Who is the magistrate who treats Victor kindly?"
    sentence = (
        "Mr. Kirwin, the magistrate, was kind to him, and many days later, when the "
        "winter had passed and the roads were open again, Elizabeth wrote."
    )
    vocab = vocabulary([sentence, "Then Kirwin and Elizabeth spoke."])
    found = answer_candidates(sentence, PERSON, vocab, question_words(question))
    assert found["kirwin"] > found["elizabeth"] > 0
    assert "victor" not in found
