"""The summarize task served by a chat model through the ``summarize`` prompt file."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from cam_engine.errors import ConfigError
from cam_engine.llm.base import ChatModel, SummaryResult, Usage
from cam_engine.llm.extractive import ExtractiveSummarizer
from cam_engine.llm.prompts import load_prompt
from cam_engine.llm.structured import counted

logger = logging.getLogger(__name__)

PROMPT = "summarize"
# Room for the reply when no max_tokens is given: about 1.3 tokens per English word,
# doubled for other languages and tokenizers, plus a margin.
TOKENS_PER_WORD = 2
TOKEN_MARGIN = 64


def number_passages(texts: Sequence[str]) -> str:
    """``[1] first text`` and so on, one blank line apart, in the given order."""
    return "\n\n".join(f"[{i}] {text.strip()}" for i, text in enumerate(texts, start=1))


def check_count(name: str, value: object, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


class ChatTask:
    """A task served by a chat model through one prompt file; ``backend`` is the model's
    name, so every output says who wrote it."""

    def __init__(self, chat: ChatModel, prompt: str, max_tokens: int | None) -> None:
        if max_tokens is not None:
            check_count("max_tokens", max_tokens, minimum=1)
        self._chat = chat
        self._max_tokens = max_tokens
        self._prompt = load_prompt(prompt)

    @property
    def backend(self) -> str:
        return self._chat.name

    @property
    def prompt_version(self) -> int:
        return self._prompt.version


class ChatSummarizer(ChatTask):
    """``Summarizer`` that asks a chat model (temperature 0) for each summary.

    An empty reply is asked for once more (counted as repaired when the second is
    not empty); empty twice, the node gets the extractive summary of its members,
    labelled ``backend="extractive"`` (the model wrote none of it) and counted as an
    unusable reply, with a warning. Usage counts every call made.
    """

    def __init__(self, chat: ChatModel, *, max_tokens: int | None = None) -> None:
        super().__init__(chat, PROMPT, max_tokens)

    def summarize(self, texts: Sequence[str], *, max_words: int) -> SummaryResult:
        if isinstance(max_words, bool) or not isinstance(max_words, int) or max_words < 1:
            raise ConfigError(f"max_words must be a positive integer, got {max_words!r}")
        members = [text for text in texts if text.strip()]
        if not members:
            return SummaryResult("", self.backend, Usage())
        messages = self._prompt.render(passages=number_passages(members), max_words=max_words)
        max_tokens = self._max_tokens or max_words * TOKENS_PER_WORD + TOKEN_MARGIN
        usage = Usage()
        for outcome in ("parsed", "repaired"):
            completion = self._chat.complete(messages, max_tokens=max_tokens, temperature=0.0)
            usage += completion.usage
            text = completion.text.strip()
            if text:
                return SummaryResult(text, self.backend, usage + counted(outcome))
            logger.warning(
                "%s returned an empty summary of %d passages (attempt %d of 2)",
                self.backend,
                len(members),
                1 if outcome == "parsed" else 2,
            )
        logger.warning(
            "%s returned an empty summary twice for %d passages; writing the extractive "
            "summary instead (if it is a reasoning model, raise max_tokens)",
            self.backend,
            len(members),
        )
        fallback = ExtractiveSummarizer().summarize(members, max_words=max_words)
        return SummaryResult(fallback.text, fallback.backend, usage + counted("unusable"))
