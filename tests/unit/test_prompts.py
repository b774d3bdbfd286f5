"""Prompt files: loading, checking and rendering."""

from __future__ import annotations

import tomllib
from importlib import resources

import pytest

from cam_engine.errors import PromptError
from cam_engine.llm.base import Message
from cam_engine.llm.prompts import (
    Prompt,
    load_prompt,
    parse_prompt,
    template_fields,
)

GOOD = """
id = "greet"
version = 2
inputs = ["name", "count"]
system = "You greet {count} times."
user = "Greet {name}. Literal braces: {{json}}."
"""


def test_summarize_prompt_loads() -> None:
    prompt = load_prompt("summarize")
    assert prompt.id == "summarize"
    assert prompt.version >= 1
    assert set(prompt.inputs) == {"passages", "max_words"}
    assert prompt.source == "prompts/summarize.toml"
    assert load_prompt("summarize") is prompt  # cached


def test_summarize_prompt_renders() -> None:
    messages = load_prompt("summarize").render(passages="[1] Ann met Bob.", max_words=42)
    assert [m.role for m in messages] == ["system", "user"]
    assert all(isinstance(m, Message) for m in messages)
    user = messages[-1].content
    assert "[1] Ann met Bob." in user
    assert "42 words" in user
    assert "{" not in "".join(m.content for m in messages)


def test_values_are_not_reformatted() -> None:
    messages = load_prompt("summarize").render(passages="a {max_words} {0} } {", max_words=10)
    assert "a {max_words} {0} } {" in messages[-1].content


def test_every_prompt_file_loads_and_declares_its_fields() -> None:
    folder = resources.files("cam_engine.llm").joinpath("prompts")
    names = sorted(
        entry.name.removesuffix(".toml")
        for entry in folder.iterdir()
        if entry.name.endswith(".toml")
    )
    assert "summarize" in names
    for name in names:
        prompt = load_prompt(name)
        assert prompt.id == name
        raw = tomllib.loads(folder.joinpath(f"{name}.toml").read_text(encoding="utf-8"))
        fields = template_fields(raw["system"]) | template_fields(raw["user"])
        assert fields == set(raw["inputs"]) == set(prompt.inputs), name
        # Rendering with every declared input works and fills every field.
        messages = prompt.render(**{field: f"<{field}>" for field in prompt.inputs})
        text = "".join(m.content for m in messages)
        for field in prompt.inputs:
            assert f"<{field}>" in text


def test_missing_inputs_are_named() -> None:
    with pytest.raises(PromptError, match="missing inputs: max_words") as caught:
        load_prompt("summarize").render(passages="x")
    assert "summarize" in str(caught.value)


def test_unexpected_inputs_are_named() -> None:
    with pytest.raises(PromptError, match="unexpected inputs: extra, other"):
        load_prompt("summarize").render(passages="x", max_words=5, other=1, extra=2)


def test_missing_and_unexpected_together() -> None:
    with pytest.raises(PromptError, match="missing inputs: passages; unexpected inputs: pasages"):
        load_prompt("summarize").render(pasages="x", max_words=5)


def test_unknown_prompt_names_the_file() -> None:
    with pytest.raises(PromptError, match=r"prompts/no_such_prompt\.toml"):
        load_prompt("no_such_prompt")


@pytest.mark.parametrize("name", ["../errors", "Summarize", "", "a/b", "x.toml"])
def test_bad_prompt_names(name: str) -> None:
    with pytest.raises(PromptError, match="invalid prompt name"):
        load_prompt(name)


def test_parse_and_render() -> None:
    prompt = parse_prompt(GOOD, source="greet.toml", expected_id="greet")
    assert prompt == Prompt(
        "greet",
        2,
        "You greet {count} times.",
        "Greet {name}. Literal braces: {{json}}.",
        ("name", "count"),
        "greet.toml",
    )
    assert prompt.render(name="Ann", count=3) == [
        Message("system", "You greet 3 times."),
        Message("user", "Greet Ann. Literal braces: {json}."),
    ]


def test_empty_system_gives_only_a_user_message() -> None:
    text = 'id = "u"\nversion = 1\ninputs = ["x"]\nsystem = ""\nuser = "Do {x}."\n'
    assert parse_prompt(text, source="u.toml").render(x="it") == [Message("user", "Do it.")]


def test_bad_format_spec_value_is_a_prompt_error() -> None:
    text = 'id = "n"\nversion = 1\ninputs = ["n"]\nsystem = ""\nuser = "{n:d} words"\n'
    prompt = parse_prompt(text, source="n.toml")
    assert prompt.render(n=5)[0].content == "5 words"
    with pytest.raises(PromptError, match=r"'n' \(n\.toml\)"):
        prompt.render(n="five")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("id = ", "not valid TOML"),
        ('id = "greet"\nversion = 1\nsystem = ""\nuser = "hi"\n', "missing keys: inputs"),
        (GOOD + 'extra = "x"\n', "unknown keys: extra"),
        (GOOD.replace('id = "greet"', 'id = "other"'), "does not match the file name"),
        (GOOD.replace("version = 2", 'version = "2"'), "version must be an integer"),
        (GOOD.replace("version = 2", "version = 0"), "version must be an integer"),
        (GOOD.replace('["name", "count"]', '["name"]'), "fields not listed in inputs: count"),
        (
            GOOD.replace('["name", "count"]', '["name", "count", "spare"]'),
            "inputs not used in system or user: spare",
        ),
        (GOOD.replace('["name", "count"]', '["name", "count", "name"]'), "twice"),
        (GOOD.replace('["name", "count"]', '"name"'), "inputs must be a list"),
        (GOOD.replace("Greet {name}", "Greet {0} {name}"), "plain name"),
        (GOOD.replace("Greet {name}", "Greet {name.upper}"), "plain name"),
        (GOOD.replace("Literal braces: {{json}}", "Stray brace: }"), "bad template"),
        (GOOD.replace('system = "You greet {count} times."', "system = 3"), "must be a string"),
    ],
)
def test_malformed_files_name_the_file(text: str, problem: str) -> None:
    with pytest.raises(PromptError) as caught:
        parse_prompt(text, source="prompts/greet.toml", expected_id="greet")
    message = str(caught.value)
    assert "prompts/greet.toml" in message
    assert problem in message
