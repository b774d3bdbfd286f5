"""The documentation keeps up with the code: every ``cam`` command and option is named
in README.md or docs/*.md, every source file the docs name exists, and no file points at
an issue tracker the project does not have. Each command and option is its own test
case, so a failure names what is missing."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from cam_engine.cli.main import cli

REPO = Path(__file__).resolve().parents[2]
DOC_FILES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

# Where a mention of an issue number would point a reader at a tracker that does not exist.
TRACKER_FREE = [
    ".ci",
    "cam_engine",
    "cli",
    "adapters",
    "cypher",
    "docs",
    "README.md",
    "CHANGELOG.md",
]
# "issue 3", "Issue #14", "issues 2", and a pull-request style "(#12)".
ISSUE_NUMBER = re.compile(r"\bissues? ?#?\d+|\(#\d+\)", re.IGNORECASE)
TEXT_SUFFIXES = {"", ".py", ".md", ".cypher", ".txt", ".toml", ".json", ".yml", ".yaml", ".sh"}


def walk(group: click.Group, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, click.Command]]:
    """Each command under ``group`` as its full name ("bench scale") and itself."""
    for name, command in sorted(group.commands.items()):
        path = (*prefix, name)
        yield " ".join(path), command
        if isinstance(command, click.Group):
            yield from walk(command, path)


def long_options(command: click.Command) -> Iterator[str]:
    """Each option's long form (``--vector-cache``); ``--no-x`` of a ``--x/--no-x``
    flag counts too. ``--help`` is click's own and is left out."""
    for param in command.params:
        if not isinstance(param, click.Option):
            continue
        for flag in [*param.opts, *param.secondary_opts]:
            if flag.startswith("--") and flag != "--help":
                yield flag


COMMANDS = list(walk(cli))
OPTIONS = [(name, flag) for name, command in COMMANDS for flag in long_options(command)]
ROOT_OPTIONS = [("", flag) for flag in long_options(cli) if flag != "--version"]


@pytest.fixture(scope="module")
def docs() -> str:
    return "\n".join(path.read_text(encoding="utf-8") for path in DOC_FILES)


def mentions(docs: str, text: str) -> bool:
    """``text`` as a whole word or option: a mention of --keep is not one of --k."""
    return re.search(rf"(?<![\w-]){re.escape(text)}(?![\w-])", docs) is not None


@pytest.mark.parametrize("name", [name for name, _ in COMMANDS])
def test_command_is_documented(docs: str, name: str) -> None:
    assert mentions(docs, f"cam {name}"), f"`cam {name}` is not in the docs"


@pytest.mark.parametrize(
    ("command", "flag"),
    [
        pytest.param(f"cam {name}".strip(), flag, id=f"cam {name} {flag}".replace("  ", " "))
        for name, flag in ROOT_OPTIONS + OPTIONS
    ],
)
def test_option_is_documented(docs: str, command: str, flag: str) -> None:
    assert mentions(docs, flag), f"{flag} of `{command}` is not in the docs"


# A source file named in the docs: `cam_engine/store/batch.py`, `store/batch.py` or
# `batch.py` (a path relative to the folder the text is about).
CITED_FILE = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w-]+\.(?:py|cypher|toml))(?![\w/])")
# Named in the docs without being a file of the repository.
NOT_FILES = {
    "cam_engine.cypher",  # the package the cypher/ folder is installed as
    "my_cam.py",  # docs/extending.md: the user's own module in an example
    ".devcheck/gpu_check.py",  # docs/benchmarks.md: a script outside the repository
}
SKIPPED_PARTS = {".git", ".venv", "__pycache__", "node_modules"}


def repository_files() -> list[str]:
    files = []
    for folder, subfolders, names in os.walk(REPO):
        subfolders[:] = [s for s in subfolders if s not in SKIPPED_PARTS]
        base = Path(folder).relative_to(REPO)
        files += [(base / name).as_posix() for name in names]
    return files


def test_cited_files_exist() -> None:
    files = repository_files()
    missing = [
        f"{doc.relative_to(REPO)}:{number}: {cited}"
        for doc in DOC_FILES
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1)
        for cited in CITED_FILE.findall(line)
        if not cited.startswith("../")
        and cited not in NOT_FILES
        and not any(f == cited or f.endswith("/" + cited) for f in files)
    ]
    assert not missing, "the docs name files that do not exist:\n" + "\n".join(missing)


def tracker_free_files() -> Iterator[Path]:
    for entry in TRACKER_FREE:
        path = REPO / entry
        if path.is_file():
            yield path
        else:
            yield from (
                file
                for file in sorted(path.rglob("*"))
                if file.is_file()
                and file.suffix in TEXT_SUFFIXES
                and "__pycache__" not in file.parts
            )


def test_no_issue_numbers() -> None:
    hits = [
        f"{file.relative_to(REPO)}:{number}: {line.strip()}"
        for file in tracker_free_files()
        for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1)
        if ISSUE_NUMBER.search(line)
    ]
    assert not hits, "these lines cite issue numbers:\n" + "\n".join(hits)
