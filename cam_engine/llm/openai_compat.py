"""A chat model behind an OpenAI-compatible ``/chat/completions`` endpoint.

Works with OpenAI itself and with local servers that speak the same protocol (vLLM,
llama.cpp, Ollama, LM Studio, ...). Standard library only. Transient failures
(timeouts, dropped connections, 429, 5xx, malformed or empty responses) are retried
with exponential backoff; other client errors fail at once (cam_engine/http_api.py,
shared with the API embedder). The API key is sent as a bearer token and never
appears in a message or a log line.

One instance holds only settings, so it may be shared between threads.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from cam_engine.config import Environment
from cam_engine.errors import ConfigError, LLMError
from cam_engine.http_api import JsonEndpoint, Transient, error_detail, json_object
from cam_engine.llm.base import Completion, Message, Usage

logger = logging.getLogger(__name__)

THINK_END = "</think>"
THINK_START = "<think>"


class OpenAICompatibleChat:
    """``ChatModel`` over HTTP: POST ``{base_url}/chat/completions``.

    ``base_url`` is the API root, e.g. ``http://localhost:8000/v1``. A call makes at most
    ``max_retries + 1`` attempts; the wait before retry ``i`` (from 0) is
    ``backoff * 2**i`` seconds, or the server's ``Retry-After``, capped at ``max_backoff``.
    ``sleep`` is injectable so tests need not wait. ``Usage.seconds`` of a completion is
    the wall time of the whole call, retries and waits included.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        max_retries: int = 4,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        name: str | None = None,
    ) -> None:
        # What outputs are labelled with: openai:<model> unless the caller knows better
        # (a local llama.cpp server speaks this protocol but is not OpenAI).
        self._name = name or f"openai:{model}"
        self._api = JsonEndpoint(
            base_url,
            "chat/completions",
            what="chat",
            model=model,
            error=LLMError,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
            max_backoff=max_backoff,
            sleep=sleep,
        )

    @classmethod
    def from_environment(cls, env: Environment, **options: Any) -> OpenAICompatibleChat:
        """Build from ``CAM_LLM_BASE_URL``, ``CAM_LLM_MODEL`` and the optional API key."""
        base_url, model = env.llm_base_url, env.llm_model
        if not base_url or not model:
            missing = [
                var
                for var, value in (("CAM_LLM_BASE_URL", base_url), ("CAM_LLM_MODEL", model))
                if not value
            ]
            raise ConfigError(
                f"{' and '.join(missing)} must be set to use a chat model "
                "(e.g. CAM_LLM_BASE_URL=http://localhost:8000/v1 CAM_LLM_MODEL=<model>)"
            )
        # CAM_LLM_TIMEOUT / CAM_LLM_MAX_RETRIES: a slow local model needs a longer wait
        # and fewer retries than a hosted API; options given in code win.
        if env.llm_timeout is not None:
            options.setdefault("timeout", env.llm_timeout)
        if env.llm_max_retries is not None:
            options.setdefault("max_retries", env.llm_max_retries)
        return cls(base_url, model, env.llm_api_key, **options)

    @property
    def name(self) -> str:
        return self._name

    @property
    def model(self) -> str:
        return self._api.model

    @property
    def endpoint(self) -> str:
        return self._api.url

    def __repr__(self) -> str:  # never show the key
        key = "set" if self._api.has_key else "unset"
        return (
            f"OpenAICompatibleChat(base_url={self._api.base_url!r}, model={self._api.model!r}, "
            f"api_key=<{key}>, timeout={self._api.timeout})"
        )

    def complete(
        self, messages: Sequence[Message], *, max_tokens: int, temperature: float = 0.0
    ) -> Completion:
        if not messages:
            raise ConfigError("a chat completion needs at least one message")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ConfigError(f"max_tokens must be a positive integer, got {max_tokens!r}")
        payload = {
            "model": self._api.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        started = time.perf_counter()
        text, prompt_tokens, completion_tokens = self._api.post(payload, self._parse)
        seconds = time.perf_counter() - started
        logger.debug(
            "chat %s: %d prompt + %d completion tokens in %.2f s",
            self._api.model,
            prompt_tokens,
            completion_tokens,
            seconds,
        )
        usage = Usage(1, prompt_tokens, completion_tokens, seconds)
        return Completion(text=text, model=self._api.model, usage=usage)

    # -- one reply ---------------------------------------------------------------------

    def _parse(self, body: bytes) -> tuple[str, int, int]:
        data = json_object(body)
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices:
            detail = error_detail(body)
            raise Transient("response has no choices" + (f" ({detail})" if detail else ""))
        choice = choices[0]
        message = choice.get("message") if isinstance(choice, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if message is None or not (content is None or isinstance(content, str)):
            raise Transient("malformed response: choices[0].message.content is missing")
        text = _strip_reasoning(content or "")
        if isinstance(choice, dict) and choice.get("finish_reason") == "length":
            logger.info("chat %s: reply cut at max_tokens", self._api.model)
        usage = data.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        return text, _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))


def _strip_reasoning(text: str) -> str:
    """Drop a reasoning model's thinking: everything up to the last ``</think>``."""
    if THINK_END in text:
        return text.rsplit(THINK_END, 1)[1].strip()
    if text.lstrip().startswith(THINK_START):  # cut off while still thinking
        logger.warning("chat reply ended inside <think>: no answer (raise max_tokens)")
        return ""
    return text


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
