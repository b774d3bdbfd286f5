"""The parsers of the structured steps take the JSON object a schema asks for AND the
old free-text forms, and never raise (property tests; llm/parsers.py conventions)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cam_engine.adapters.gam import parse_integration, parse_plan, parse_reflection
from cam_engine.adapters.memagent import parse_memory_update
from cam_engine.adapters.readagent import STOP, parse_page_choice
from cam_engine.llm.parsers import parse_number_list

SYNTAX = st.sampled_from(
    ["[", "]", "{", "}", ",", " ", "1", "-4", '"', ":", "Page ", "STOP", '"memory"', "\\boxed{"]
)
NOISY = st.lists(st.one_of(st.text(max_size=5), SYNTAX), max_size=30).map("".join)
ANY_TEXT = st.one_of(st.text(), NOISY)
WORDS = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40)


@settings(max_examples=300)
@given(ANY_TEXT, st.integers(0, 30))
def test_no_reply_parser_raises(text: str, count: int) -> None:
    memory = parse_memory_update(text)
    assert memory is None or (isinstance(memory, str) and memory.strip() == memory != "")
    choice = parse_page_choice(text, count=count)
    assert choice is None or choice == STOP or 1 <= choice <= count
    plan = parse_plan(text)
    assert plan is None or isinstance(plan, dict)
    integration = parse_integration(text)
    assert integration is None or isinstance(integration["content"], str)
    reflection = parse_reflection(text)
    assert reflection is None or isinstance(reflection["enough"], bool)


@given(st.lists(st.integers(1, 20), max_size=6), st.sampled_from(["passages", "pages"]))
def test_number_lists_parse_in_both_forms(numbers: list[int], key: str) -> None:
    expected = list(dict.fromkeys(numbers))
    assert parse_number_list(json.dumps({key: numbers}), count=20) == expected
    assert parse_number_list(f"I want to look up Page {numbers} to check.", count=20) == expected


@given(WORDS)
def test_a_memory_parses_in_every_form(text: str) -> None:
    memory = text.strip()
    if not memory or memory.startswith("{") or "\\boxed{" in memory or "</think>" in memory:
        return
    assert parse_memory_update(json.dumps({"memory": text})) == memory
    if "{" not in memory and "}" not in memory:
        assert parse_memory_update(f"Notes: \\boxed{{{text}}}") == memory
    if not memory.startswith("<think>"):
        assert parse_memory_update(text) == memory  # MemAgent's own form: the whole reply


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"memory": "Walton sails north."}', "Walton sails north."),
        ('<think>hm</think>{"memory": " kept "}', "kept"),
        ("Walton sails north.", "Walton sails north."),
        ("The memory: \\boxed{Walton sails north.}", "Walton sails north."),
        ('{"memory": ""}', None),
        ('{"memory": "cut off at max_tok', None),  # broken JSON: repaired, not stored
        ("", None),
        ("<think>still thinking", None),
    ],
)
def test_memory_update_examples(reply: str, expected: str | None) -> None:
    assert parse_memory_update(reply) == expected


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"choice": "Page 7"}', 7),
        ('{"choice": "STOP"}', STOP),
        ('{"choice": 3}', 3),
        ('{"choice": "Page 99"}', None),
        ('{"choice": true}', None),
        ("Page 7", 7),
        ("STOP", STOP),
        ('{"choice": "I would rather not"}', None),
    ],
)
def test_page_choice_in_both_forms(reply: str, expected: int | None) -> None:
    assert parse_page_choice(reply, count=10) == expected


def test_gam_parsers_take_the_schema_objects() -> None:
    plan = {
        "info_needs": ["who"],
        "tools": ["keyword"],
        "keyword_collection": ["Walton"],
        "vector_queries": [],
        "page_index": [0],
    }
    assert parse_plan("<think>plan</think>" + json.dumps(plan)) == plan
    assert parse_integration('{"content": "Facts.", "sources": [1]}') == {
        "content": "Facts.",
        "sources": [1],
    }
    assert parse_integration('{"sources": [1]}') is None
    assert parse_reflection('{"enough": "TRUE", "new_requests": []}') == {
        "enough": True,
        "new_requests": [],
    }
    assert parse_reflection('{"enough": "maybe"}') is None
