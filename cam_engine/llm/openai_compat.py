"""A chat model behind an OpenAI-compatible ``/chat/completions`` endpoint.

Works with OpenAI itself and with local servers that speak the same protocol (vLLM,
llama.cpp, Ollama, LM Studio, ...). Standard library only. Transient failures
(timeouts, dropped connections, 429, 5xx, malformed or empty responses) are retried
with exponential backoff; other client errors fail at once (cam_engine/http_client.py,
shared with the API embedder). The API key is sent as a bearer token and never
appears in a message or a log line.

Structured outputs: a call with a ``schema`` sends ``response_format`` (type
``json_schema``, strict). An endpoint that refuses it (HTTP 400/415/422 whose message
names response_format, json_schema, grammar or an unsupported feature) is asked again
without it at once, and every later call of the instance is plain; that is logged once.
``structured=False`` (``CAM_LLM_STRUCTURED=off``) never sends a schema.

One instance holds settings and that one flag (set under a lock), so it may be shared
between threads.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from cam_engine.config import Environment
from cam_engine.errors import ConfigError, LLMError
from cam_engine.http_client import JsonEndpoint, Rejected, Transient, error_detail, json_object
from cam_engine.llm.base import Completion, JsonSchema, Message, Usage

logger = logging.getLogger(__name__)

THINK_END = "</think>"
THINK_START = "<think>"
# What a refusal of structured outputs looks like: the status, and words of its message.
SCHEMA_REFUSAL_STATUSES = (400, 415, 422)
_SCHEMA_REFUSAL = re.compile(
    r"response_format|json_schema|structured output|grammar|schema|not supported|unsupported",
    re.IGNORECASE,
)
_SCHEMA_NAME = re.compile(r"[^A-Za-z0-9_-]+")


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
        structured: bool = True,
        name: str | None = None,
        max_reply_tokens: int | None = None,
    ) -> None:
        # A cap over every task's own reply budget (CAM_LLM_MAX_TOKENS): a small model
        # that writes until it is stopped costs that cap, not the task's budget.
        if max_reply_tokens is not None and (
            isinstance(max_reply_tokens, bool) or max_reply_tokens < 1
        ):
            raise ConfigError(f"CAM_LLM_MAX_TOKENS must be >= 1, got {max_reply_tokens!r}")
        self._max_reply_tokens = max_reply_tokens
        # What outputs are labelled with: openai:<model> unless the caller knows better
        # (a local llama.cpp server speaks this protocol but is not OpenAI).
        self._name = name or f"openai:{model}"
        self._structured = structured
        self._schema_lock = threading.Lock()
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
        options.setdefault("structured", env.llm_structured != "off")
        options.setdefault("max_reply_tokens", env.llm_max_tokens)
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

    @property
    def sends_schemas(self) -> bool:
        """Whether a call with a ``schema`` sends it (False once the endpoint refused)."""
        with self._schema_lock:
            return self._structured

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        schema: JsonSchema | None = None,
    ) -> Completion:
        if not messages:
            raise ConfigError("a chat completion needs at least one message")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ConfigError(f"max_tokens must be a positive integer, got {max_tokens!r}")
        if self._max_reply_tokens is not None:
            max_tokens = min(max_tokens, self._max_reply_tokens)
        payload: dict[str, Any] = {
            "model": self._api.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        started = time.perf_counter()
        text, prompt_tokens, completion_tokens = self._post(payload, schema)
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

    def _post(self, payload: dict[str, Any], schema: JsonSchema | None) -> tuple[str, int, int]:
        """POST with ``response_format`` when a schema is given and the endpoint has not
        refused one; on such a refusal, remember it and POST again plainly."""
        if schema is None or not self.sends_schemas:
            return self._api.post(payload, self._parse)
        try:
            structured = {**payload, "response_format": response_format(schema)}
            return self._api.post(structured, self._parse)
        except LLMError as error:
            if not _refuses_schema(error):
                raise
            self._stop_sending_schemas(error)
        return self._api.post(payload, self._parse)

    def _stop_sending_schemas(self, error: LLMError) -> None:
        with self._schema_lock:
            first = self._structured
            self._structured = False
        if first:  # another thread may have seen the same refusal: log it once
            logger.warning(
                "chat %s does not take response_format (%s); asking without a schema from now on",
                self._api.model,
                error.__cause__,
            )

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


def response_format(schema: JsonSchema) -> dict[str, Any]:
    """The ``response_format`` of a request whose reply must follow ``schema``; its
    name is the schema's ``title`` (letters, digits, ``_`` and ``-`` only) or "reply"."""
    title = schema.get("title")
    name = _SCHEMA_NAME.sub("_", title)[:64] if isinstance(title, str) and title else "reply"
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "schema": dict(schema), "strict": True},
    }


def _refuses_schema(error: LLMError) -> bool:
    """Whether the endpoint rejected the request for its ``response_format``."""
    cause = error.__cause__
    return (
        isinstance(cause, Rejected)
        and cause.status in SCHEMA_REFUSAL_STATUSES
        and _SCHEMA_REFUSAL.search(cause.detail) is not None
    )


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
