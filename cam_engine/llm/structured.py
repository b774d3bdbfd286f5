"""One reply a step parses: ask with a JSON Schema, parse tolerantly, repair once.

Every LLM step whose reply the engine parses (the selector's passage numbers,
ReadAgent's pages, MemAgent's memory, GAM's plan, result and reflection) goes through
``ask``:

1. the model is called with the step's schema (an endpoint with structured outputs
   then sends valid JSON; others ignore it, see ``ChatModel``);
2. the reply is parsed with the step's tolerant parser (llm/parsers.py conventions:
   it takes the JSON form and the old free-text forms, never raises);
3. an unusable reply gets ONE repair call (by default): the conversation, the bad
   reply, and a short user message saying what was wrong and the exact shape to send;
4. the result is the value, or ``None`` when the repair failed too: the caller then
   falls back (said in a warning here, with the fallback the format names).

The outcome is counted in the returned ``Usage`` (``parsed_replies``,
``repaired_replies``, ``unusable_replies``), which every report already sums.
Transport failures (``LLMError`` from the chat model) propagate: they are not a bad reply.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from cam_engine.llm.base import ChatModel, Completion, JsonSchema, Message, Usage
from cam_engine.llm.parsers import strip_thinking

logger = logging.getLogger(__name__)

T = TypeVar("T")
Outcome = Literal["parsed", "repaired", "unusable"]
# One chat call: the messages and the schema to ask for (None: plain).
Complete = Callable[[Sequence[Message], JsonSchema | None], Completion]
SHOWN = 200  # characters of a bad reply quoted in a log line
ECHOED = 4000  # characters of a bad reply sent back in the repair call


@dataclass(frozen=True)
class ReplyFormat(Generic[T]):
    """What one step expects back.

    ``name``: the step, in log lines; ``schema``: the JSON Schema asked for (its
    ``title`` names it to the endpoint); ``parse``: the tolerant parser, ``None`` for an
    unusable reply; ``shape``: the exact reply to send, as the repair message puts it;
    ``fallback``: what the step does with no usable reply, for the warning.
    """

    name: str
    schema: JsonSchema
    parse: Callable[[str], T | None]
    shape: str
    fallback: str


@dataclass(frozen=True)
class StructuredReply(Generic[T]):
    value: T | None  # None: unusable, the caller falls back
    outcome: Outcome
    text: str  # the last reply's text
    usage: Usage  # every call made, with this outcome counted

    @property
    def usable(self) -> bool:
        return self.value is not None


def object_schema(title: str, properties: dict[str, Any]) -> dict[str, Any]:
    """A JSON object schema with exactly these properties, all required (what strict
    structured outputs need)."""
    return {
        "title": title,
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


INTEGER_LIST: dict[str, Any] = {"type": "array", "items": {"type": "integer"}}
STRING_LIST: dict[str, Any] = {"type": "array", "items": {"type": "string"}}


def chat_call(chat: ChatModel, *, max_tokens: int) -> Complete:
    """``Complete`` for ``chat`` at temperature 0 with this reply budget."""

    def call(messages: Sequence[Message], schema: JsonSchema | None) -> Completion:
        return chat.complete(messages, max_tokens=max_tokens, temperature=0.0, schema=schema)

    return call


def ask(
    complete: Complete,
    messages: Sequence[Message],
    reply: ReplyFormat[T],
    *,
    backend: str,
    repairs: int = 1,
) -> StructuredReply[T]:
    """Call, parse, and repair up to ``repairs`` times (see the module docstring)."""
    completion = complete(messages, reply.schema)
    usage = completion.usage
    value = reply.parse(completion.text)
    if value is not None:
        return StructuredReply(value, "parsed", completion.text, usage + counted("parsed"))
    for attempt in range(1, repairs + 1):
        logger.warning(
            "%s: %s reply could not be used (%r); asking again (repair %d of %d)",
            backend,
            reply.name,
            completion.text[:SHOWN],
            attempt,
            repairs,
        )
        completion = complete(repair_messages(messages, completion.text, reply), reply.schema)
        usage += completion.usage
        value = reply.parse(completion.text)
        if value is not None:
            return StructuredReply(value, "repaired", completion.text, usage + counted("repaired"))
    logger.warning(
        "%s: %s reply unusable (%r); %s",
        backend,
        reply.name,
        completion.text[:SHOWN],
        reply.fallback,
    )
    return StructuredReply(None, "unusable", completion.text, usage + counted("unusable"))


def repair_messages(
    messages: Sequence[Message], bad_reply: str, reply: ReplyFormat[T]
) -> list[Message]:
    """The conversation, the bad reply, and what was wrong with it and what to send."""
    shown = bad_reply if len(bad_reply) <= ECHOED else bad_reply[:ECHOED] + " …"
    problem = (
        "it was empty"
        if not strip_thinking(bad_reply).strip()
        else "it was not in the requested form"
    )
    return [
        *messages,
        Message("assistant", shown.strip() or "(empty reply)"),
        Message(
            "user",
            f"Your reply could not be used: {problem}. "
            f"Reply again with only {reply.shape}, and nothing else.",
        ),
    ]


def counted(outcome: Outcome) -> Usage:
    """A ``Usage`` that counts one reply of this outcome (for steps that parse without
    ``ask``, e.g. a summary that is asked for again when empty)."""
    return Usage(
        parsed_replies=int(outcome == "parsed"),
        repaired_replies=int(outcome == "repaired"),
        unusable_replies=int(outcome == "unusable"),
    )
