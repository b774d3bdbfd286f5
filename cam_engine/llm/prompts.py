"""Prompts are data: TOML files in ``cam_engine/llm/prompts/``, loaded by name.

A prompt file holds ``id`` (its file name without ``.toml``), ``version`` (an integer,
raised whenever the wording changes so results can say which prompt made them),
``system`` and ``user`` templates with ``str.format`` fields (``{max_words}``; write
``{{`` and ``}}`` for literal braces) and ``inputs``, the names of those fields. A file
whose fields and ``inputs`` disagree does not load.
"""

from __future__ import annotations

import functools
import logging
import re
import string
import tomllib
from dataclasses import dataclass
from importlib import resources

from cam_engine.errors import PromptError
from cam_engine.llm.base import Message

logger = logging.getLogger(__name__)

PACKAGE = "cam_engine.llm"
FOLDER = "prompts"
SUFFIX = ".toml"
_NAME = re.compile(r"[a-z][a-z0-9_]*")
_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Prompt:
    id: str
    version: int
    system: str
    user: str
    inputs: tuple[str, ...]
    source: str  # where it was read from, for error messages

    def render(self, **inputs: object) -> list[Message]:
        """The chat messages with every input filled in (system first, if not empty)."""
        missing = [name for name in self.inputs if name not in inputs]
        unexpected = sorted(name for name in inputs if name not in self.inputs)
        if missing or unexpected:
            problems = []
            if missing:
                problems.append("missing inputs: " + ", ".join(missing))
            if unexpected:
                problems.append("unexpected inputs: " + ", ".join(unexpected))
            raise PromptError(f"prompt {self.id!r} ({self.source}): " + "; ".join(problems))
        try:
            system = self.system.format(**inputs)
            user = self.user.format(**inputs)
        except (ValueError, TypeError) as error:  # e.g. a format spec the value refuses
            raise PromptError(f"prompt {self.id!r} ({self.source}): {error}") from None
        messages = [Message("system", system)] if system else []
        messages.append(Message("user", user))
        return messages


def load_prompt(name: str) -> Prompt:
    """Load ``prompts/<name>.toml`` from the package; cached, prompts are immutable."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise PromptError(f"invalid prompt name {name!r}: use lower-case letters, digits, '_'")
    return _load(name)


@functools.cache
def _load(name: str) -> Prompt:
    source = f"{FOLDER}/{name}{SUFFIX}"
    resource = resources.files(PACKAGE).joinpath(FOLDER).joinpath(f"{name}{SUFFIX}")
    try:
        text = resource.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PromptError(f"prompt file {source} not found in {PACKAGE}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise PromptError(f"prompt file {source} cannot be read: {error}") from None
    prompt = parse_prompt(text, source=source, expected_id=name)
    logger.debug("loaded prompt %s v%d from %s", prompt.id, prompt.version, source)
    return prompt


def parse_prompt(text: str, *, source: str, expected_id: str | None = None) -> Prompt:
    """Parse and check the text of a prompt file; ``source`` names it in errors."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise PromptError(f"prompt file {source} is not valid TOML: {error}") from None

    def fail(problem: str) -> PromptError:
        return PromptError(f"prompt file {source}: {problem}")

    missing = [key for key in ("id", "version", "system", "user", "inputs") if key not in data]
    if missing:
        raise fail("missing keys: " + ", ".join(missing))
    unknown = sorted(set(data) - {"id", "version", "system", "user", "inputs"})
    if unknown:
        raise fail("unknown keys: " + ", ".join(unknown))
    prompt_id, version = data["id"], data["version"]
    if not isinstance(prompt_id, str) or not _NAME.fullmatch(prompt_id):
        raise fail(f"id must be a lower-case name, got {prompt_id!r}")
    if expected_id is not None and prompt_id != expected_id:
        raise fail(f"id {prompt_id!r} does not match the file name {expected_id!r}")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise fail(f"version must be an integer >= 1, got {version!r}")
    for key in ("system", "user"):
        if not isinstance(data[key], str):
            raise fail(f"{key} must be a string")
    if not data["user"].strip():
        raise fail("user must not be empty")
    inputs = data["inputs"]
    if not isinstance(inputs, list) or not all(isinstance(i, str) for i in inputs):
        raise fail("inputs must be a list of names")
    if len(set(inputs)) != len(inputs):
        raise fail("inputs lists a name twice")
    system, user = data["system"].strip(), data["user"].strip()
    used = template_fields(system, source=source) | template_fields(user, source=source)
    undeclared = sorted(used - set(inputs))
    unused = sorted(set(inputs) - used)
    if undeclared:
        raise fail("fields not listed in inputs: " + ", ".join(undeclared))
    if unused:
        raise fail("inputs not used in system or user: " + ", ".join(unused))
    return Prompt(prompt_id, version, system, user, tuple(inputs), source)


def template_fields(template: str, *, source: str = "<template>") -> set[str]:
    """Names of the ``str.format`` fields of a template; only plain names are allowed."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as error:  # e.g. a single '{' or '}'
        raise PromptError(f"prompt file {source}: bad template ({error})") from None
    fields: set[str] = set()
    for _literal, field, spec, _conversion in parsed:
        if field is None:
            continue
        if not _FIELD.fullmatch(field):
            raise PromptError(
                f"prompt file {source}: field {{{field}}} must be a plain name "
                "(no positions, attributes or indexes)"
            )
        if spec and "{" in spec:
            raise PromptError(f"prompt file {source}: nested field in {{{field}:{spec}}}")
        fields.add(field)
    return fields
