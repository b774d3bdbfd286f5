"""Parsers of model output: never raise, round trips, the last match wins, examples."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cam_engine.llm.parsers import (
    parse_boxed,
    parse_break_point,
    parse_json_object,
    parse_number_list,
    strip_thinking,
)

# Arbitrary text, biased towards the characters the parsers look for.
SYNTAX = st.sampled_from(
    ["[", "]", "{", "}", ",", " ", "1", "23", "-4", "\\boxed{", "</think>", "<think>", '"', ":"]
)
NOISY = st.lists(st.one_of(st.text(max_size=5), SYNTAX), max_size=30).map("".join)
ANY_TEXT = st.one_of(st.text(), NOISY)


def plain(forbidden: str) -> st.SearchStrategy[str]:
    """Text without any of the ``forbidden`` characters and without ``</think>``."""
    return st.text(st.characters(blacklist_characters=forbidden), max_size=40).filter(
        lambda t: "</think>" not in t and not t.lstrip().startswith("<think>")
    )


# -- never raise ---------------------------------------------------------------------------


@settings(max_examples=300)
@given(ANY_TEXT, st.none() | st.integers(-3, 50))
def test_no_parser_raises(text: str, count: int | None) -> None:
    assert isinstance(strip_thinking(text), str)
    numbers = parse_number_list(text, count=count)
    assert numbers is None or all(isinstance(n, int) for n in numbers)
    if numbers is not None:
        assert len(set(numbers)) == len(numbers)
        if count is not None:
            assert all(1 <= n <= count for n in numbers)
    assert parse_json_object(text) is None or isinstance(parse_json_object(text), dict)
    assert parse_boxed(text) is None or isinstance(parse_boxed(text), str)
    point = parse_break_point(text, valid=range(5))
    assert point is None or point in range(5)


def test_pathological_inputs_return_none() -> None:
    assert parse_json_object("{" * 100_000 + "}" * 100_000) is None  # too deep to parse
    assert parse_number_list("[" + "9" * 5000 + "]") is None  # too long an integer
    assert parse_boxed("\\boxed{" * 1000) is None


# -- strip_thinking ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<think>a</think>b", "b"),
        ("<think>a</think>b</think> c", " c"),
        ("no thinking", "no thinking"),
        ("  <think>cut off while thinking [1, 2]", ""),
        ("", ""),
    ],
)
def test_strip_thinking(text: str, expected: str) -> None:
    assert strip_thinking(text) == expected


# -- parse_number_list ---------------------------------------------------------------------


@given(plain("[]"), st.lists(st.integers(0, 10**12), max_size=10), plain("[]"))
def test_number_list_round_trip(before: str, numbers: list[int], after: str) -> None:
    text = f"{before}[{', '.join(map(str, numbers))}]{after}"
    assert parse_number_list(text) == list(dict.fromkeys(numbers))


@given(plain("[]"), st.lists(st.integers(1, 9), max_size=5), st.lists(st.integers(1, 9)))
def test_last_number_list_wins(middle: str, first: list[int], last: list[int]) -> None:
    text = f"[{', '.join(map(str, first))}]{middle}[{','.join(map(str, last))}]"
    assert parse_number_list(text) == list(dict.fromkeys(last))


@given(st.lists(st.integers(-5, 15), max_size=12), st.integers(0, 10))
def test_count_keeps_only_passage_numbers(numbers: list[int], count: int) -> None:
    parsed = parse_number_list(str(numbers), count=count)
    assert parsed == [n for n in dict.fromkeys(numbers) if 1 <= n <= count]


@pytest.mark.parametrize(
    ("text", "count", "expected"),
    [
        ("[1, 3, 5]", None, [1, 3, 5]),
        ("Helpful passages: [2,1]", None, [2, 1]),
        ("[]", 4, []),
        ("[ ]", None, []),
        ("[3, 3, 1, 3]", None, [3, 1]),
        ("[0, 1, 4, 7]", 4, [1, 4]),
        ("[1, 2,]", None, [1, 2]),
        ("Passage [2] mentions it, so: [2, 4]", None, [2, 4]),
        ("<think>maybe [1, 2, 3]?</think>[3]", None, [3]),
        ("<think>maybe [1, 2, 3]?</think>none of them", None, None),
        ("1, 3 and 5", None, None),
        ("[1, two]", None, None),
        ("[1.5]", None, None),
        ("", None, None),
    ],
)
def test_number_list_examples(text: str, count: int | None, expected: list[int] | None) -> None:
    assert parse_number_list(text, count=count) == expected


# -- parse_json_object ---------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=10,
)


OBJECTS = st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=4).filter(
    lambda data: "</think>" not in json.dumps(data)
)


@given(plain("{}"), OBJECTS, plain("{}"))
def test_json_object_round_trip(before: str, data: dict[str, Any], after: str) -> None:
    assert parse_json_object(f"{before}{json.dumps(data)}{after}") == data


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'Plan: {"tools": ["keyword"], "enough": false} done',
            {"tools": ["keyword"], "enough": False},
        ),
        ('<think>{"draft": 1}</think>\n```json\n{"final": 2}\n```', {"final": 2}),
        ("{not json}", None),
        ("[1, 2]", None),
        ('{"a": 1} and {"b": 2}', None),  # first { to last } is not one object
        ("} {", None),
        ("no braces", None),
    ],
)
def test_json_object_examples(text: str, expected: dict[str, Any] | None) -> None:
    assert parse_json_object(text) == expected


# -- parse_boxed ---------------------------------------------------------------------------

LEAF = st.text(st.characters(blacklist_characters="{}\\"), max_size=6)
BALANCED = st.recursive(
    LEAF,
    lambda inner: st.tuples(LEAF, inner, LEAF, inner).map(
        lambda p: f"{p[0]}{{{p[1]}}}{p[2]}{p[3]}"
    ),
    max_leaves=8,
).filter(lambda t: "</think>" not in t)


@given(plain("{}\\"), BALANCED, plain("{}\\"))
def test_boxed_round_trip(before: str, content: str, after: str) -> None:
    assert parse_boxed(f"{before}\\boxed{{{content}}}{after}") == content


@given(BALANCED, plain("\\"), BALANCED)
def test_last_boxed_wins(first: str, middle: str, last: str) -> None:
    assert parse_boxed(f"\\boxed{{{first}}}{middle}\\boxed{{{last}}}") == last


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The answer is \\boxed{42}.", "42"),
        ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
        ("\\boxed{a} then \\boxed{b}", "b"),
        ("\\boxed{a} then \\boxed{cut off", "a"),
        ("\\boxed{}", ""),
        ("<think>\\boxed{draft}</think>no box", None),
        ("boxed{42}", None),
        ("", None),
    ],
)
def test_boxed_examples(text: str, expected: str | None) -> None:
    assert parse_boxed(text) == expected


# -- parse_break_point ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Break point: <3>", 3),
        ("I would pause here.\nBreak point: 5", 5),
        ("break point:<4>", 4),
        ("Break point: <3>\nActually, Break point: <4>", 4),
        ("Break point: <9>", None),  # not a label of this page
        ("Break point: none", None),
        ("<3>", None),
        ("", None),
    ],
)
def test_break_point_examples(text: str, expected: int | None) -> None:
    assert parse_break_point(text, valid={2, 3, 4, 5}) == expected


@given(plain("<>"), st.integers(0, 10**6), plain("<>"))
def test_break_point_round_trip(before: str, label: int, after: str) -> None:
    text = f"{before}\nBreak point: <{label}>\n{after}"
    if "break" not in after.lower():
        assert parse_break_point(text, valid={label}) == label
    assert parse_break_point(text, valid=set()) is None
