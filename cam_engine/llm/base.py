"""Interfaces between the engine and anything that writes text.

The engine asks for *tasks* (``Summarizer.summarize``), never for raw completions:
a task can then be served by a chat model through a prompt file, or offline by the
extractive backend, which has no model and says so in ``backend``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, Protocol

EXTRACTIVE = "extractive"
# A JSON Schema (a JSON object) for a reply: what a chat model is asked to send when
# the endpoint supports structured outputs (llm/structured.py).
JsonSchema = Mapping[str, Any]


@dataclass(frozen=True)
class Usage:
    """What LLM work cost: calls, tokens as reported by the endpoint, wall seconds; and
    how the replies that a step parses turned out (llm/structured.py): usable at once,
    usable after one repair call, or unusable (the step fell back)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    parsed_replies: int = 0
    repaired_replies: int = 0
    unusable_replies: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.calls + other.calls,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.seconds + other.seconds,
            self.parsed_replies + other.parsed_replies,
            self.repaired_replies + other.repaired_replies,
            self.unusable_replies + other.unusable_replies,
        )

    def reply_counts(self) -> dict[str, int]:
        """The reply outcomes, as reports and ``--json`` output show them."""
        return {
            "parsed_replies": self.parsed_replies,
            "repaired_replies": self.repaired_replies,
            "unusable_replies": self.unusable_replies,
        }


@dataclass(frozen=True)
class Message:
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class Completion:
    text: str
    model: str
    usage: Usage


class ChatModel(Protocol):
    """A chat-completions endpoint (OpenAI-compatible server, local model, ...).

    ``schema``: the JSON Schema the reply should follow. A backend that can constrain
    its output to it does; one that cannot ignores it (callers parse tolerantly and
    never rely on it).
    """

    @property
    def name(self) -> str: ...

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        schema: JsonSchema | None = None,
    ) -> Completion: ...


@dataclass(frozen=True)
class SummaryResult:
    text: str
    backend: str  # "extractive" or "<chat model name>": shown wherever a user sees output
    usage: Usage


class Summarizer(Protocol):
    """Writes the text of one summary node from the texts of its members (in order)."""

    @property
    def backend(self) -> str: ...

    def summarize(self, texts: Sequence[str], *, max_words: int) -> SummaryResult: ...


@dataclass(frozen=True)
class Selection:
    """Which candidates (indices into the list given) help answer the question."""

    chosen: list[int]
    backend: str
    usage: Usage
    # False when the model's reply could not be used even after a repair: ``chosen`` is
    # then empty for want of an answer, not because nothing helps.
    usable: bool = True


class Selector(Protocol):
    """Picks the helpful candidates in one turn of prune-and-grow."""

    @property
    def backend(self) -> str: ...

    def select(self, question: str, candidates: Sequence[Candidate]) -> Selection: ...


@dataclass(frozen=True)
class Candidate:
    """A memory node as a selector sees it: text, and its vector when stored."""

    text: str
    vector: Any = None  # np.ndarray | None; unit length
    # The relevance retrieval vouches for (None: none, or too little to compete with
    # what was already chosen); LLM selectors judge the text, the offline one this.
    score: float | None = None


class QuotedSpan(NamedTuple):
    """Where a quoted sentence of an answer is: the passage (its index among the
    passages the answerer was given) and the character span of its text there."""

    passage: int
    start: int
    end: int


@dataclass(frozen=True)
class AnswerText:
    text: str
    backend: str
    usage: Usage
    citations: tuple[QuotedSpan, ...] = ()  # the quoted sentences (extractive answers)
    usable: bool = True  # False: the model gave no answer; the caller falls back


class Answerer(Protocol):
    """Writes the answer from the question and the context passages (in order)."""

    @property
    def backend(self) -> str: ...

    def answer(self, question: str, passages: Sequence[str]) -> AnswerText: ...
