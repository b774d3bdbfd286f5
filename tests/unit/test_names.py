"""Name extraction (cam_engine.names): known texts, and properties of any text."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cam_engine.names import MAX_KEY_CHARS, MAX_NAMES, name_key, names_in
from cam_engine.sources import clean_text
from tests.conftest import shared_file


@pytest.mark.parametrize(
    ("text", "names"),
    [
        # A sentence's first word is capitalized anyway; inside one, a capital is a name.
        ("Call me Ishmael.", ["ishmael"]),
        ("Some years ago I went to sea.", []),
        # Runs of capitals, with connectors inside them only.
        ("He robbed the Bank of England twice.", ["bank of england", "bank", "england"]),
        (
            "He played Ludwig van Beethoven of all things.",
            ["ludwig van beethoven", "ludwig", "beethoven"],
        ),
        ("It was the Duke of the Realm.", ["duke of the realm", "duke", "realm"]),
        # A paragraph names its subject first; a guessed opener is also left off.
        ("Ardmore Park is a stadium.", ["ardmore park", "park"]),
        ("Later Buddy Hield moved.", ["later buddy hield", "buddy hield"]),
        ("Call me Ishmael.", ["ishmael"]),
        (
            "Romeo loved Juliet of Verona and Paris.",
            ["juliet of verona", "juliet", "verona", "paris"],
        ),
        # Titles and initials do not end a sentence; titles are not part of the name.
        ("She met Mr. Darcy. Darcy bowed.", ["darcy"]),
        ("A book by J. R. R. Tolkien was read.", ["j r r tolkien"]),
        # Leading "the" and a possessive go from the key; the key is casefolded.
        ("He boarded the Pequod. The Pequod's mast fell.", ["pequod"]),
        ("They read The Times daily.", ["times"]),
        # A sentence-initial capital is a name when it is capitalized inside a sentence
        # too and never lowercase, or an acronym; stopwords never are.
        ("Queequeg slept. Then Queequeg woke.", ["queequeg"]),
        ("Whale ho! A whale is near.", []),
        ("NASA flew. When it rained, I stayed.", ["nasa"]),
        ("\u201cStubb!\u201d cried Starbuck.", ["starbuck"]),
        # Dates (one order in the key), years, and numbers of three digits or more.
        ("It ended on 12 May 2023 at noon.", ["12 may 2023"]),
        ("It ended on May 12, 2023 at noon.", ["12 may 2023"]),
        ("They sailed in May 1851 with 12,000 barrels and 42 men.", ["may 1851", "12000"]),
        ("May I come in? You may.", []),
        # A paragraph break opens a sentence.
        ("It was hard work Stubb said.", ["stubb"]),
        ("It was hard work\n\nStubb said.", []),
    ],
)
def test_names_of_known_texts(text: str, names: list[str]) -> None:
    assert names_in(text) == names


def test_names_come_once_in_first_mention_order() -> None:
    text = "Then Ahab met Stubb and Flask. Stubb spoke to Ahab, and Flask to Pip."
    assert names_in(text) == ["ahab", "stubb", "flask", "pip"]


def test_names_are_capped_per_chunk() -> None:
    text = " ".join(f"and Name{i}" for i in range(200))
    assert len(names_in(text)) == MAX_NAMES
    assert names_in(text, limit=3) == ["name0", "name1", "name2"]


def test_a_long_run_of_capitals_is_cut() -> None:
    text = "the " + " ".join(["Alpha", "Beta", "Gamma", "Delta", "Epsilon", "Zeta", "Eta", "Theta"])
    assert names_in(text) == ["alpha beta gamma delta epsilon zeta", "eta theta"]


def test_name_key_normalizes() -> None:
    assert name_key(["The", "Pequod’s"]) == "pequod"
    assert name_key(["the", "of"]) == ""
    assert name_key(["I"]) == ""
    assert len(name_key(["X" * 500])) == MAX_KEY_CHARS


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_any_text_gives_distinct_bounded_keys(text: str) -> None:
    keys = names_in(text)
    assert len(keys) == len(set(keys)) <= MAX_NAMES
    for key in keys:
        assert key and key == key.strip() and len(key) <= MAX_KEY_CHARS
        assert key == key.casefold() and not re.search(r"\s{2,}", key)
        assert not key.startswith("the ")


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["Ahab", "the", "whale", "Bank", "of", ".", "1851", "May"])))
def test_spaces_and_single_newlines_change_no_name(words: list[str]) -> None:
    assert names_in(" ".join(words)) == names_in("  \n ".join(words))


def test_a_book_gives_a_few_names_per_chunk() -> None:
    path = shared_file("haystacks/gutenberg/pg2701.txt")
    text = clean_text(path.read_text(encoding="utf-8"))[:200_000]
    keys = names_in(text, limit=10_000)
    for name in ("ahab", "queequeg", "nantucket", "pequod", "starbuck", "peter coffin"):
        assert name in keys
    for word in ("call", "whenever", "there", "now", "yes"):
        assert word not in keys
