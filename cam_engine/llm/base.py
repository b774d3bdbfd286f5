"""Interfaces between the engine and anything that writes text.

The engine asks for *tasks* (``Summarizer.summarize``), never for raw completions:
a task can then be served by a chat model through a prompt file, or offline by the
extractive backend, which has no model and says so in ``backend``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, Protocol

EXTRACTIVE = "extractive"


@dataclass(frozen=True)
class Usage:
    """What LLM work cost: calls, tokens as reported by the endpoint, wall seconds."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.calls + other.calls,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.seconds + other.seconds,
        )


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
    """A chat-completions endpoint (OpenAI-compatible server, local model, ...)."""

    @property
    def name(self) -> str: ...

    def complete(
        self, messages: Sequence[Message], *, max_tokens: int, temperature: float = 0.0
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


class Answerer(Protocol):
    """Writes the answer from the question and the context passages (in order)."""

    @property
    def backend(self) -> str: ...

    def answer(self, question: str, passages: Sequence[str]) -> AnswerText: ...
