"""Chunking: exact slices, token budget, paragraph/sentence boundaries, stable ids, streaming."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cam_engine.chunking import char_cap, chunk_document, chunk_id, chunk_stream, count_tokens
from cam_engine.types import Chunk

BOOK = Path(__file__).parents[2].parent / "shared/data/haystacks/gutenberg/pg84.txt"


def _squash(text: str) -> str:
    return "".join(text.split())


def _streamed(doc_id: str, text: str, budget: int) -> list[Chunk]:
    return list(chunk_stream(doc_id, text.splitlines(keepends=True), budget))


# --- text strategy ------------------------------------------------------------------------

_plain_words = st.text(alphabet="abcdefghijklmnopqrstuvwxyzéßж0123456789", min_size=1, max_size=9)
_punctuated_words = st.builds(
    lambda w, p: w + p, _plain_words, st.sampled_from([",", ";", ":", "'s", "-x", "—", "…"])
)
_word = st.one_of(_plain_words, _plain_words, _punctuated_words)
# a "word" with more tokens than any budget used here (no whitespace in it)
_huge_word = st.integers(min_value=20, max_value=60).map(lambda n: "-".join(["z"] * n))
# runs with no white space past the character cap of the budgets used here (16 per
# token: 48 to 640): punctuation, one endless word-character token, a mix of both
_endless_word = st.one_of(
    st.integers(min_value=50, max_value=1500).map(lambda n: "!" * n),
    st.integers(min_value=50, max_value=1500).map(lambda n: "q" * n),
    st.integers(min_value=5, max_value=40).map(lambda n: ("x" * 97 + "/") * n),
)
_inner_space = st.one_of(
    st.sampled_from([" ", " ", " ", "  ", "\n", " \n", "\t"]),
    # runs of white space around the character caps of the budgets used here (48 to 640)
    st.integers(min_value=40, max_value=700).map(lambda n: " " * n),
    st.integers(min_value=40, max_value=700).map(lambda n: "\n" + " " * n),
)
_sentence_end = st.sampled_from([".", "!", "?", '."', "?)", ".’"])


@st.composite
def _sentence(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["normal", "normal", "normal", "long", "huge", "endless"]))
    if kind == "long":  # a very long "sentence" with no punctuation at all
        words = draw(st.lists(_plain_words, min_size=25, max_size=50))
    else:
        words = draw(st.lists(_word, min_size=1, max_size=12))
        if kind != "normal":
            huge = _huge_word if kind == "huge" else _endless_word
            words.insert(draw(st.integers(0, len(words))), draw(huge))
    text = words[0]
    for w in words[1:]:
        text += draw(_inner_space) + w
    return text + draw(_sentence_end)


@st.composite
def _paragraph(draw: st.DrawFn) -> str:
    long = draw(st.booleans())
    sentences = draw(st.lists(_sentence(), min_size=6 if long else 1, max_size=12 if long else 4))
    text = sentences[0]
    for s in sentences[1:]:
        text += draw(_inner_space) + s
    return text


@st.composite
def texts(draw: st.DrawFn) -> str:
    """Documents of words, sentences, paragraph breaks, long paragraphs and sentences,
    endless runs with no white space."""
    paragraphs = draw(st.lists(_paragraph(), min_size=1, max_size=6))
    breaks = ["\n\n", "\n\n\n", "\n \n", "\n\t\n  ", "  \n\n", " \n \n ", "\r\n\r\n"]
    text = draw(st.sampled_from(["", "", "\n", "  ", "\n\n"]))
    text += paragraphs[0]
    for p in paragraphs[1:]:
        text += draw(st.sampled_from(breaks)) + p
    return text + draw(st.sampled_from(["", "", "\n", "\n\n", " "]))


budgets = st.integers(min_value=3, max_value=40)


def _check_chunks(text: str, chunks: list[Chunk], budget: int, doc_id: str) -> None:
    assert _squash("".join(c.text for c in chunks)) == _squash(text)
    assert [c.position for c in chunks] == list(range(len(chunks)))
    cursor = 0
    for c in chunks:
        assert c.doc_id == doc_id
        assert c.text == text[c.start_char : c.end_char]
        assert c.text.strip()
        assert text[cursor : c.start_char].strip() == ""  # only whitespace between chunks
        cursor = c.end_char
        assert count_tokens(c.text) <= budget, (budget, c.text)
        assert len(c.text) <= char_cap(budget), (budget, c.text)
    assert text[cursor:].strip() == ""


# --- properties ---------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(text=texts(), budget=budgets)
def test_no_text_lost_and_budget_respected(text: str, budget: int) -> None:
    _check_chunks(text, chunk_document("doc", text, budget), budget, "doc")


@settings(max_examples=100, deadline=None)
@given(text=texts(), budget=budgets)
def test_stream_gives_the_same_chunks_as_document(text: str, budget: int) -> None:
    expected = chunk_document("doc", text, budget)
    assert _streamed("doc", text, budget) == expected


@st.composite
def _cut(draw: st.DrawFn, text: str) -> list[str]:
    """``text`` in random pieces: single characters, whole lines, large blocks."""
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=40)))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


@settings(max_examples=200, deadline=None)
@given(data=st.data(), text=texts(), budget=budgets)
def test_stream_in_any_pieces_gives_the_chunks_of_the_whole_text(
    data: st.DataObject, text: str, budget: int
) -> None:
    pieces = data.draw(_cut(text))
    assert list(chunk_stream("doc", pieces, budget)) == chunk_document("doc", text, budget)


@settings(max_examples=50, deadline=None)
@given(text=texts(), budget=budgets)
def test_ids_are_stable(text: str, budget: int) -> None:
    first = chunk_document("doc", text, budget)
    again = chunk_document("doc", text, budget)
    assert [c.id for c in first] == [c.id for c in again]
    assert len({c.id for c in first}) == len(first)


# --- known answers ------------------------------------------------------------------------


def test_count_tokens_counts_words_and_punctuation() -> None:
    assert count_tokens("") == 0
    assert count_tokens("Hello, world!") == 4  # Hello , world !
    assert count_tokens("don't") == 3  # don ' t
    assert count_tokens("  a\n\tb  ") == 2


def test_paragraphs_are_packed_and_not_split_when_they_fit() -> None:
    p1 = "Alpha beta gamma."  # 4 tokens
    p2 = "Delta epsilon zeta eta."  # 5 tokens
    p3 = "Theta iota kappa lambda mu nu."  # 7 tokens: does not fit after p1 + p2 (9)
    text = f"{p1}\n\n{p2}\n\n{p3}"
    chunks = chunk_document("d", text, 10)
    assert [c.text for c in chunks] == [f"{p1}\n\n{p2}", p3]
    assert chunks[1].start_char == text.index(p3)


def test_a_paragraph_of_exactly_the_budget_is_one_chunk() -> None:
    text = "One two three. Four five six seven eight."  # 4 + 6 = 10 tokens
    assert [c.text for c in chunk_document("d", text, 10)] == [text]


def test_overlong_paragraph_is_split_at_sentence_ends() -> None:
    sentences = [
        "One two three.",  # 4
        "Four five six seven.",  # 5
        "Eight nine.",  # 3
        "Ten eleven twelve thirteen fourteen.",  # 6
    ]
    text = " ".join(sentences)  # 18 tokens, one paragraph
    chunks = chunk_document("d", text, 10)
    assert (
        [c.text for c in chunks]
        == [
            " ".join(sentences[:2]),  # 9 tokens; adding the next sentence would make 12
            " ".join(sentences[2:]),  # 9 tokens
        ]
    )
    assert all(c.text.endswith(".") for c in chunks)


def test_sentence_end_behind_a_closing_quote_is_a_boundary() -> None:
    # '"Go!" She ran.' is 7 tokens: " Go ! " She ran .
    # With the boundary after '!"' the sentences are 4 + 3 tokens; without it the text
    # would be cut at words into '"Go!" She' and 'ran.'.
    assert [c.text for c in chunk_document("d", '"Go!" She ran.', 5)] == ['"Go!"', "She ran."]
    assert [c.text for c in chunk_document("d", "‘Go.’ She ran.", 5)] == ["‘Go.’", "She ran."]


def test_overlong_sentence_without_punctuation_is_split_at_words() -> None:
    words = [f"w{i}" for i in range(12)]
    text = " ".join(words)
    chunks = chunk_document("d", text, 5)
    assert [c.text for c in chunks] == [
        " ".join(words[0:5]),
        " ".join(words[5:10]),
        " ".join(words[10:12]),
    ]


def _one_line(words: int, *, sentence_every: int = 0) -> str:
    """Random words on one line, single spaces, no newline (cam ingest of a huge line)."""
    rng = random.Random(5)
    line = ["".join(rng.choices("abcdefghij", k=rng.randint(1, 9))) for _ in range(words)]
    if sentence_every:
        line = [w + "." if i % sentence_every == 0 else w for i, w in enumerate(line, 1)]
    return " ".join(line)


@pytest.mark.parametrize("budget", [16, 200])
def test_a_long_line_without_sentence_ends_is_cut_into_full_chunks_of_words(budget: int) -> None:
    line = _one_line(20_000)
    chunks = chunk_document("d", line, budget)
    _check_chunks(line, chunks, budget, "d")
    assert [w for c in chunks for w in c.text.split()] == line.split()
    # One token per word: every chunk but the last holds exactly the budget.
    assert {count_tokens(c.text) for c in chunks[:-1]} == {budget}
    assert _streamed("d", line, budget) == chunks


@pytest.mark.parametrize("budget", [16, 200])
def test_a_long_line_of_sentences_is_cut_at_sentence_ends(budget: int) -> None:
    line = _one_line(20_000, sentence_every=15)  # 15 words and a full stop: 16 tokens
    chunks = chunk_document("d", line, budget)
    _check_chunks(line, chunks, budget, "d")
    assert [w for c in chunks for w in c.text.split()] == line.split()
    assert all(c.text.endswith(".") for c in chunks[:-1])
    assert _streamed("d", line, budget) == chunks


def test_a_word_over_the_budget_is_cut_at_its_tokens() -> None:
    huge = "-".join("abcd")  # a - b - c - d: 7 tokens, no white space
    text = f"x y {huge} z"
    chunks = chunk_document("d", text, 3)
    assert [c.text for c in chunks] == ["x y", "a-b", "-c-", "d z"]


def test_punctuation_without_white_space_is_cut_at_the_budget() -> None:
    text = "!" * 1_000_000  # one "word" of a million tokens
    chunks = chunk_document("d", text, 200)
    assert [len(c.text) for c in chunks] == [200] * 5000
    _check_chunks(text, chunks, 200, "d")


def test_an_endless_word_is_cut_at_the_character_cap() -> None:
    cap = char_cap(200)
    text = "intro words. " + "a" * (10 * cap + 7) + "!!"
    chunks = chunk_document("d", text, 200)
    assert [c.text for c in chunks] == ["intro words."] + ["a" * cap] * 10 + ["aaaaaaa!!"]
    _check_chunks(text, chunks, 200, "d")


@pytest.mark.skipif(not BOOK.is_file(), reason=f"real books not found at {BOOK.parent}")
def test_the_character_cap_is_far_from_real_text() -> None:
    # The cap is 16 characters per token; the books' longest chunk has about 10 (Pride
    # and Prejudice's table of contents, padded with spaces), most under 6.
    for book in ("pg84", "pg1342", "pg2701"):
        text = (BOOK.parent / f"{book}.txt").read_text(encoding="utf-8-sig")
        longest = max(len(c.text) for c in chunk_document(book, text, 200))
        assert longest < 0.7 * char_cap(200), (book, longest)


def test_white_space_longer_than_the_cap_is_a_paragraph_break() -> None:
    cap = char_cap(16)
    within = "a b" + " " * (cap - 6) + "c d"  # exactly the cap
    assert [c.text for c in chunk_document("d", within, 16)] == [within]
    assert [c.text for c in chunk_document("d", "a b" + " " * (cap + 1) + "c d", 16)] == [
        "a b",
        "c d",
    ]


def test_a_stream_holds_no_long_run_of_white_space() -> None:
    blocks = itertools.chain(["Call me Ishmael."], itertools.repeat(" " * 65_536, 800), ["Ahab."])
    # 50 MB of spaces: each block is scanned once, and the run is not kept
    assert [c.text for c in chunk_stream("d", blocks, 200)] == ["Call me Ishmael.", "Ahab."]


def test_blank_text_has_no_chunks() -> None:
    assert chunk_document("d", "", 10) == []
    assert chunk_document("d", " \n\n\t \n", 10) == []
    assert list(chunk_stream("d", [" \n", "\n"], 10)) == []


def test_first_position_offsets_positions() -> None:
    text = "A b c.\n\nD e f."
    chunks = chunk_document("d", text, 4, first_position=7)
    assert [c.position for c in chunks] == [7, 8]
    assert chunks[0].id == chunk_id("d", 7, "A b c.")


def test_chunk_ids_change_with_doc_position_and_text() -> None:
    base = chunk_id("doc", 3, "Some text.")
    assert base == chunk_id("doc", 3, "Some text.")
    assert base.startswith("c3-")
    assert chunk_id("other", 3, "Some text.") != base
    assert chunk_id("doc", 4, "Some text.") != base
    assert chunk_id("doc", 3, "Some text!") != base
    # the fields are separated, so shifting characters between them changes the id
    assert chunk_id("doc1", 3, "x") != chunk_id("doc", 13, "x")


def test_document_ids_follow_doc_and_text() -> None:
    text = "First paragraph here.\n\nSecond paragraph here."
    ids = [c.id for c in chunk_document("a", text, 5)]
    assert len(ids) == 2
    assert [c.id for c in chunk_document("b", text, 5)] != ids
    edited = [c.id for c in chunk_document("a", text.replace("Second", "Other"), 5)]
    assert edited[0] == ids[0] and edited[1] != ids[1]


def test_stream_cuts_a_long_text_into_the_same_chunks() -> None:
    # enough paragraphs that the stream releases chunks several times (>= 4 * budget tokens)
    paragraphs = [" ".join(f"p{i}s{j} word word." for j in range(i % 5 + 1)) for i in range(60)]
    text = "\n\n".join(paragraphs) + "\n"
    for budget in (4, 7, 16):
        assert _streamed("d", text, budget) == chunk_document("d", text, budget)


def test_stream_keeps_trailing_spaces_of_a_split_paragraph() -> None:
    sentence = "One two three four five six seven."  # 8 tokens
    long_paragraph = " ".join([sentence] * 10) + "   "  # 80 tokens, then trailing spaces
    text = long_paragraph + "\n\nNext paragraph here.\n"
    budget = 16  # two sentences per chunk; the next paragraph (4) does not fit after them
    expected = chunk_document("d", text, budget)
    assert expected[4].text == f"{sentence} {sentence}"  # by the definition
    assert _streamed("d", text, budget) == expected


def test_crlf_paragraphs_are_not_split_when_they_fit() -> None:
    p1 = "Alpha beta."  # 3 tokens
    p2 = "Gamma delta. Epsilon zeta."  # 6 tokens: fits, but not together with p1
    text = f"{p1}\r\n\r\n{p2}\r\n"
    assert [c.text.strip() for c in chunk_document("d", text, 6)] == [p1, p2]


@pytest.mark.skipif(not BOOK.is_file(), reason=f"real book not found at {BOOK}")
@pytest.mark.parametrize("budget", [16, 200])
def test_stream_matches_document_on_a_real_book(budget: int) -> None:
    text = BOOK.read_text(encoding="utf-8-sig")
    expected = chunk_document("pg84", text, budget)
    assert len(expected) > 100
    _check_chunks(text, expected, budget, "pg84")
    assert _streamed("pg84", text, budget) == expected
