"""What every adapter shares: the cost log of a run and the shape of its answer.

An adapter step is served either by a chat model (``ChatModel``: an OpenAI-compatible
endpoint or a local model) or, with ``chat=None``, by an offline extractive rule that
calls no model and says ``backend="extractive"`` in everything it returns.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from cam_engine.errors import InputError
from cam_engine.llm.base import EXTRACTIVE, ChatModel, Completion, JsonSchema, Message, Usage
from cam_engine.llm.structured import ReplyFormat, StructuredReply, ask
from cam_engine.memory import Memory

T = TypeVar("T")


def count_tokens(text: str) -> int:
    """Tokens of ``text``, approximated as 4/3 per whitespace word (English BPE
    tokenizers average about 1.3): adapters budget text for whatever model serves them,
    so no one tokenizer is right; the approximation is used everywhere alike."""
    return math.ceil(len(text.split()) * 4 / 3)


@dataclass
class CallLog:
    """The LLM cost of one adapter run: calls, tokens (as the endpoint reports them,
    else approximated), seconds, the largest context (prompt) sent in one call, and how
    the parsed replies turned out (``Usage.reply_counts``)."""

    usage: Usage = field(default_factory=Usage)
    largest_context_tokens: int = 0

    def complete(
        self, chat: ChatModel, messages: Sequence[Message], *, max_tokens: int
    ) -> Completion:
        """One chat call at temperature 0, recorded."""
        completion = self._call(chat, messages, max_tokens, None)
        self.usage += completion.usage
        return completion

    def ask(
        self,
        chat: ChatModel,
        messages: Sequence[Message],
        reply: ReplyFormat[T],
        *,
        max_tokens: int,
    ) -> StructuredReply[T]:
        """A reply in ``reply``'s format, with one repair call when the first is
        unusable (llm/structured.py); its calls and outcome recorded."""

        def call(sent: Sequence[Message], schema: JsonSchema | None) -> Completion:
            return self._call(chat, sent, max_tokens, schema)

        answer = ask(call, messages, reply, backend=chat.name)
        self.usage += answer.usage
        return answer

    def _call(
        self,
        chat: ChatModel,
        messages: Sequence[Message],
        max_tokens: int,
        schema: JsonSchema | None,
    ) -> Completion:
        completion = chat.complete(messages, max_tokens=max_tokens, temperature=0.0, schema=schema)
        sent = completion.usage.prompt_tokens or sum(count_tokens(m.content) for m in messages)
        self.largest_context_tokens = max(self.largest_context_tokens, sent)
        return completion

    def to_dict(self) -> dict[str, Any]:
        return {
            "llm_calls": self.usage.calls,
            "prompt_tokens": self.usage.prompt_tokens,
            "completion_tokens": self.usage.completion_tokens,
            "llm_seconds": round(self.usage.seconds, 3),
            "largest_context_tokens": self.largest_context_tokens,
            **self.usage.reply_counts(),
        }


def document_ids(memory: Memory, doc_ids: Sequence[str] | None) -> list[str]:
    """The documents an adapter works on: all of the memory's (in its order) when
    ``doc_ids`` is None, else those ids once each, in the order given. An id the memory
    does not hold is an ``InputError`` naming it."""
    known = [record.id for record in memory.documents()]
    if doc_ids is None:
        return known
    missing = sorted(set(doc_ids) - set(known))
    if missing:
        raise InputError(f"no such document in the memory: {', '.join(missing)}")
    return list(dict.fromkeys(doc_ids))


def backend_of(chat: ChatModel | None) -> str:
    return EXTRACTIVE if chat is None else chat.name


@dataclass
class Source:
    """A piece of evidence an adapter answered from: a view node or a chunk."""

    id: str
    kind: str  # "page", "memory_state", "chunk", ...
    document: str | None
    text: str


@dataclass
class AdapterAnswer:
    """An adapter's answer, where it came from and what it cost."""

    question: str
    answer: str
    backend: str
    strategy: str
    sources: list[Source]
    log: CallLog
    details: dict[str, Any] = field(default_factory=dict)  # strategy-specific figures

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "answer": self.answer,
            "backend": self.backend,
            "strategy": self.strategy,
            "sources": [vars(s) for s in self.sources],
            **self.log.to_dict(),
            **self.details,
        }


@dataclass
class ViewReport:
    """What building a view over some documents wrote and cost."""

    view: str
    backend: str
    documents: int = 0
    nodes_written: int = 0
    log: CallLog = field(default_factory=CallLog)
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "view": self.view,
            "backend": self.backend,
            "documents": self.documents,
            "nodes_written": self.nodes_written,
            **self.log.to_dict(),
            **self.details,
        }
