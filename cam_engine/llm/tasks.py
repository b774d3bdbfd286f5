"""The select and answer tasks served by a chat model through prompt files.

- ``ChatSelector`` (``select`` prompt): one turn of prune-and-grow. The reply is asked
  for as ``{"passages": [1, 3]}`` (``SELECT_SCHEMA``; a bare ``[1, 3]`` parses too). A
  reply without a list of passage numbers gets a repair call (llm/structured.py), at
  most ``retries`` of them; then the selection is marked unusable, and prune-and-grow
  chooses that turn the offline way (retrieval/prune_grow.py).
- ``ChatAnswerer`` (``answer`` prompt): the answer from the retrieved passages. An
  empty reply is asked for once more; a second one is an unusable answer (the caller
  answers offline, ``Memory.ask`` with the extractive answerer).

Both call the model at temperature 0 and count the usage of every call. Transport
failures (``LLMError`` from the chat model) propagate: they are not a bad reply.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from cam_engine.llm.base import AnswerText, Candidate, ChatModel, Selection, Usage
from cam_engine.llm.parsers import parse_number_list, strip_thinking
from cam_engine.llm.structured import INTEGER_LIST, ReplyFormat, ask, chat_call, object_schema
from cam_engine.llm.summarizer import ChatTask, check_count, number_passages

logger = logging.getLogger(__name__)

SELECT_PROMPT = "select"
ANSWER_PROMPT = "answer"
NO_CONTEXT = "(no passages were found)"
SELECT_SCHEMA = object_schema("select", {"passages": INTEGER_LIST})
SELECT_SHAPE = (
    'a JSON object like {"passages": [1, 3]}: the numbers of the helpful passages, [] if none helps'
)


class ChatSelector(ChatTask):
    """``Selector`` that asks a chat model which candidates help answer the question."""

    _max_tokens: int  # never None here: __init__ requires an int (ChatTask allows None)

    def __init__(self, chat: ChatModel, *, max_tokens: int = 64, retries: int = 1) -> None:
        super().__init__(chat, SELECT_PROMPT, check_count("max_tokens", max_tokens, minimum=1))
        self._retries = check_count("retries", retries, minimum=0)

    def select(self, question: str, candidates: Sequence[Candidate]) -> Selection:
        if not candidates:
            return Selection([], self.backend, Usage())
        passages = number_passages([c.text for c in candidates])
        messages = self._prompt.render(question=question, passages=passages)
        count = len(candidates)
        reply = ask(
            chat_call(self._chat, max_tokens=self._max_tokens),
            messages,
            ReplyFormat(
                "select",
                SELECT_SCHEMA,
                lambda text: parse_number_list(text, count=count),
                SELECT_SHAPE,
                "selecting nothing",
            ),
            backend=self.backend,
            repairs=self._retries,
        )
        if reply.value is None:
            return Selection([], self.backend, reply.usage, usable=False)
        return Selection([n - 1 for n in reply.value], self.backend, reply.usage)


class ChatAnswerer(ChatTask):
    """``Answerer`` that asks a chat model for a concise answer from the context only."""

    _max_tokens: int  # never None here: __init__ requires an int (ChatTask allows None)

    def __init__(self, chat: ChatModel, *, max_tokens: int = 512) -> None:
        super().__init__(chat, ANSWER_PROMPT, check_count("max_tokens", max_tokens, minimum=1))

    def answer(self, question: str, passages: Sequence[str]) -> AnswerText:
        texts = [p for p in passages if p.strip()]
        context = number_passages(texts) if texts else NO_CONTEXT
        messages = self._prompt.render(question=question, context=context)
        usage = Usage()
        for attempt in (1, 2):
            completion = self._chat.complete(messages, max_tokens=self._max_tokens, temperature=0.0)
            usage += completion.usage
            text = strip_thinking(completion.text).strip()
            if text:
                return AnswerText(text, self.backend, usage)
            logger.warning("%s returned an empty answer (attempt %d of 2)", self.backend, attempt)
        logger.warning(
            "%s returned an empty answer twice (if it is a reasoning model, raise "
            "max_tokens); the answer is extractive",
            self.backend,
        )
        return AnswerText("", self.backend, usage + Usage(unusable_replies=1), usable=False)
