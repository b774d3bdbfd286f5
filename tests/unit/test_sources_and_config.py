"""Reading input documents, and the settings/environment of a memory."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from cam_engine.config import Environment, Settings, check_batch_size
from cam_engine.errors import CamError, ConfigError, InputError
from cam_engine.sources import CLI_OPTIONS, Source, expand_paths, read_text, unique_sources

# --- read_text ----------------------------------------------------------------------------


def _input_error(path: Path) -> str:
    with pytest.raises(InputError) as info:
        read_text(path)
    message = str(info.value)
    assert str(path) in message
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"", "empty"),
        (b" \n\t\r\n  ", "empty"),
        (b"text\x00more", "binary"),
        (b"\x00\x01\x02\x03", "binary"),
        (b"caf\xe9 latin-1", "UTF-8"),
        (b"ok\n\xff\xfe", "UTF-8"),
    ],
)
def test_read_text_rejects_bad_files_naming_them(
    tmp_path: Path, content: bytes, words: str
) -> None:
    path = tmp_path / "bad doc.txt"
    path.write_bytes(content)
    assert words in _input_error(path)


def test_non_utf8_message_points_at_the_bad_byte(tmp_path: Path) -> None:
    path = tmp_path / "latin.txt"
    path.write_bytes(b"abc\xe9")
    message = _input_error(path)
    assert "0xe9" in message and "offset 3" in message


def test_read_text_of_a_missing_file_names_it(tmp_path: Path) -> None:
    assert "cannot read" in _input_error(tmp_path / "gone.txt")


def test_read_text_accepts_utf8_and_hashes_the_bytes(tmp_path: Path) -> None:
    data = "Ünïcödé text — fine.\n".encode()
    path = tmp_path / "ok.txt"
    path.write_bytes(data)
    assert read_text(path) == ("Ünïcödé text — fine.\n", hashlib.sha256(data).hexdigest())


def test_read_text_strips_a_utf8_bom(tmp_path: Path) -> None:
    path = tmp_path / "bom.txt"
    data = b"\xef\xbb\xbfHello"
    path.write_bytes(data)
    assert read_text(path) == ("Hello", hashlib.sha256(data).hexdigest())


@pytest.mark.parametrize("content", [b"\xef\xbb\xbf", b"\xef\xbb\xbf \r\n"])
def test_read_text_rejects_a_bom_only_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bom-only.txt"
    path.write_bytes(content)
    assert "empty" in _input_error(path)


def test_read_text_rejects_unicode_whitespace_only(tmp_path: Path) -> None:
    path = tmp_path / "spaces.txt"
    path.write_bytes("\u00a0\u3000\n".encode())
    assert "empty" in _input_error(path)


def test_non_utf8_message_after_a_bom_points_at_the_bad_byte(tmp_path: Path) -> None:
    path = tmp_path / "bom-latin.txt"
    path.write_bytes(b"\xef\xbb\xbfab\xff")  # the bad byte 0xff is at file offset 5
    message = _input_error(path)
    assert "0xff" in message and "offset 5" in message


# --- expand_paths -------------------------------------------------------------------------


def _tree(root: Path, files: list[str]) -> None:
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"content of {name}\n")


def test_folder_gives_its_files_sorted_with_relative_ids(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    _tree(root, ["b.txt", "a.txt", "sub/c.txt", "sub/.hidden.txt", ".git/config", ".env"])
    sources = list(expand_paths([str(root)]))
    assert sources == [
        Source("a.txt", root / "a.txt"),
        Source("b.txt", root / "b.txt"),
        Source("sub/c.txt", root / "sub" / "c.txt"),
    ]


def test_a_file_is_named_by_its_name_or_by_document(tmp_path: Path) -> None:
    _tree(tmp_path, ["dir/notes.md"])
    path = tmp_path / "dir" / "notes.md"
    assert list(expand_paths([str(path)])) == [Source("notes.md", path)]
    assert list(expand_paths([str(path)], document="mine")) == [Source("mine", path)]


def test_stdin_is_a_source_without_a_path() -> None:
    (source,) = expand_paths(["-"])
    assert source == Source("stdin", None)
    assert isinstance(source, Source) and source.label == "<stdin>"


def test_missing_path_yields_an_error_naming_it(tmp_path: Path) -> None:
    _tree(tmp_path, ["here.txt"])
    missing = str(tmp_path / "not-here.txt")
    results = list(expand_paths([missing, str(tmp_path / "here.txt")]))
    assert isinstance(results[0], InputError)
    assert missing in str(results[0])
    assert results[1] == Source("here.txt", tmp_path / "here.txt")  # the rest still comes


def test_folder_of_hidden_files_only_is_an_error(tmp_path: Path) -> None:
    _tree(tmp_path / "box", [".only"])
    (result,) = expand_paths([str(tmp_path / "box")])
    assert isinstance(result, InputError)
    assert str(tmp_path / "box") in str(result)


def test_document_name_needs_exactly_one_file(tmp_path: Path) -> None:
    _tree(tmp_path, ["a.txt", "b.txt"])
    (result,) = expand_paths([str(tmp_path / "a.txt"), str(tmp_path / "b.txt")], document="x")
    assert isinstance(result, InputError)
    (result,) = expand_paths([str(tmp_path)], document="x")
    assert isinstance(result, InputError)


def test_a_document_prefix_goes_before_each_file_id_joined_by_a_slash(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    _tree(root, ["a.md", "sub/b.md"])
    expected = [
        Source("notes/a.md", root / "a.md"),
        Source("notes/sub/b.md", root / "sub" / "b.md"),
    ]
    for prefix in ("notes", "notes/", " notes// "):
        assert list(expand_paths([str(root)], document_prefix=prefix)) == expected
    one = root / "a.md"
    assert list(expand_paths([str(one)], document_prefix="x")) == [Source("x/a.md", one)]
    for prefix, paths, document, message in (
        ("/", [str(root)], None, "`document_prefix` is empty"),
        (
            "p",
            ["-"],
            None,
            "`document_prefix` is for files and folders: name stdin with `document`",
        ),
        ("p", [str(one)], "d", "`document` names one document: give one of them"),
    ):
        (error,) = expand_paths(paths, document=document, document_prefix=prefix)
        assert isinstance(error, InputError) and message in str(error)
    (flag,) = expand_paths(["-"], document_prefix="p", options=CLI_OPTIONS)
    assert "--document-prefix is for files and folders: name stdin with --document" in str(flag)


def test_two_sources_of_one_document_id_are_refused_naming_both(tmp_path: Path) -> None:
    _tree(tmp_path, ["a/x.md", "b/x.md", "a/y.md"])
    a, b = tmp_path / "a", tmp_path / "b"
    with pytest.raises(InputError) as refused:
        unique_sources(expand_paths([str(a), str(b)]), CLI_OPTIONS)
    assert str(refused.value) == (
        f"{a / 'x.md'} and {b / 'x.md'} would both be document 'x.md' (the second would "
        "replace the first): ingest one of them with --document, or each folder with "
        "--document-prefix"
    )
    with pytest.raises(InputError, match="'stdin'"):
        unique_sources(expand_paths(["-", "-"]))
    # The same file twice (a folder and a file in it) is one source.
    kept = unique_sources(expand_paths([str(a), str(a / "x.md"), str(tmp_path / "gone")]))
    assert kept[:2] == [Source("x.md", a / "x.md"), Source("y.md", a / "y.md")]
    assert len(kept) == 3 and isinstance(kept[2], InputError)


# --- Settings -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value", "range_text"),
    [
        ("theta", -0.01, "[0, 1]"),
        ("theta", 1.5, "[0, 1]"),
        ("theta", float("nan"), "[0, 1]"),
        ("alpha", -1, "[0, 1]"),
        ("alpha", 1.01, "[0, 1]"),
        ("k", 0, "[1, "),
        ("k", -3, "[1, "),
        ("k", 2.0, "[1, "),
        ("sigma", 0, "positive"),
        ("sigma", -1.0, "positive"),
        ("sigma", float("inf"), "positive"),
        ("chunk_tokens", 0, "["),
        ("max_rounds", 0, "[1, "),
    ],
)
def test_settings_reject_out_of_range_values(name: str, value: Any, range_text: str) -> None:
    with pytest.raises(ConfigError) as info:
        Settings(**{name: value})
    message = str(info.value)
    assert message.startswith(name)
    assert range_text in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("name", "value"),
    [("theta", 0.0), ("theta", 1.0), ("alpha", 0), ("alpha", 1), ("k", 1), ("sigma", 1e-3)],
)
def test_settings_accept_the_range_ends(name: str, value: Any) -> None:
    assert getattr(Settings(**{name: value}), name) == value


def test_check_batch_size_names_the_range() -> None:
    with pytest.raises(ConfigError, match=r"batch size.*\[1, "):
        check_batch_size(0)
    assert check_batch_size(1) == 1
    assert issubclass(ConfigError, CamError)


def test_settings_round_trip_through_a_dict() -> None:
    custom = Settings(alpha=0.7, sigma=1.5, theta=0.45, k=5, chunk_tokens=256, seed=7)
    for settings in (Settings(), custom):
        data = settings.to_dict()
        assert Settings.from_dict(data) == settings
        assert Settings.from_dict({**data, "unknown_future_setting": 1}) == settings
    assert custom.differences(Settings()) != []
    assert custom.differences(custom) == []


# --- Environment --------------------------------------------------------------------------


def test_environment_never_shows_the_api_key() -> None:
    key = "sk-secret-0123456789abcdef"
    env = Environment.from_env({"CAM_LLM_API_KEY": key, "CAM_STORE": "/tmp/m.db"})
    assert env.llm_api_key == key
    for shown in (repr(env), str(env), f"{env}", repr([env]), repr({"env": env})):
        assert key not in shown
    assert "<set>" in repr(env)
    assert "<unset>" in repr(Environment.from_env({}))


def test_environment_falls_back_to_openai_key_and_defaults() -> None:
    env = Environment.from_env({"OPENAI_API_KEY": "sk-other", "CAM_MEMORY": "books"})
    assert env.llm_api_key == "sk-other"
    assert env.memory == "books"
    assert Environment.from_env({"CAM_LLM_API_KEY": ""}).llm_api_key is None
    assert Environment.from_env({}).memory == "default"
