"""A chat model behind an OpenAI-compatible ``/chat/completions`` endpoint.

Works with OpenAI itself and with local servers that speak the same protocol (vLLM,
llama.cpp, Ollama, LM Studio, ...). Standard library only. Transient failures
(timeouts, dropped connections, 429, 5xx, malformed or empty responses) are retried
with exponential backoff; other client errors fail at once. The API key is sent as a
bearer token and never appears in a message or a log line.

One instance holds only settings, so it may be shared between threads.
"""

from __future__ import annotations

import email.utils
import http.client
import ipaddress
import json
import logging
import math
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, NoReturn

from cam_engine.config import Environment
from cam_engine.errors import ConfigError, LLMError, RetryableLLMError
from cam_engine.llm.base import Completion, Message, Usage

logger = logging.getLogger(__name__)

THINK_END = "</think>"
THINK_START = "<think>"
_MAX_DETAIL = 300  # characters of a server's error message kept in our messages


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
    ) -> None:
        url = (base_url or "").strip().rstrip("/")
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"chat base URL must look like http://host:port/v1, got {base_url!r}")
        if not model or not model.strip():
            raise ConfigError("chat model name must not be empty")
        if not (timeout > 0 and math.isfinite(timeout)):
            raise ConfigError(f"chat timeout must be a positive number of seconds, got {timeout}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ConfigError(f"max_retries must be an integer >= 0, got {max_retries!r}")
        if not (backoff >= 0 and max_backoff >= 0):
            raise ConfigError(f"backoff and max_backoff must be >= 0, got {backoff}, {max_backoff}")
        self._base_url = url
        self._endpoint = f"{url}/chat/completions"
        self._model = model.strip()
        self._api_key = api_key or None
        self._timeout = float(timeout)
        self._max_retries = max_retries
        self._backoff = float(backoff)
        self._max_backoff = float(max_backoff)
        self._sleep = sleep
        self._loopback = _is_loopback(parts.hostname)

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
        return f"openai:{self._model}"

    @property
    def model(self) -> str:
        return self._model

    @property
    def endpoint(self) -> str:
        return self._endpoint

    def __repr__(self) -> str:  # never show the key
        key = "set" if self._api_key else "unset"
        return (
            f"OpenAICompatibleChat(base_url={self._base_url!r}, model={self._model!r}, "
            f"api_key=<{key}>, timeout={self._timeout})"
        )

    def complete(
        self, messages: Sequence[Message], *, max_tokens: int, temperature: float = 0.0
    ) -> Completion:
        if not messages:
            raise ConfigError("a chat completion needs at least one message")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ConfigError(f"max_tokens must be a positive integer, got {max_tokens!r}")
        payload = json.dumps(
            {
                "model": self._model,
                "messages": [{"role": m.role, "content": m.content} for m in messages],
                "max_tokens": max_tokens,
                "temperature": temperature,
            }
        ).encode("utf-8")
        started = time.perf_counter()
        attempts = self._max_retries + 1
        for attempt in range(attempts):
            try:
                text, prompt_tokens, completion_tokens = self._attempt(payload)
            except _Retry as retry:
                cause = self._redact(retry.cause)
                if attempt + 1 >= attempts:
                    raise LLMError(
                        f"chat request to {self._endpoint} (model {self._model!r}) failed after "
                        f"{attempts} attempt{'s' if attempts > 1 else ''}: {cause}"
                    ) from None
                wait = self._wait(attempt, retry.retry_after)
                logger.warning(
                    "chat request to %s (model %s) failed: %s; retry %d/%d in %.2f s",
                    self._endpoint,
                    self._model,
                    cause,
                    attempt + 1,
                    self._max_retries,
                    wait,
                )
                self._sleep(wait)
                continue
            seconds = time.perf_counter() - started
            logger.debug(
                "chat %s: %d prompt + %d completion tokens in %.2f s",
                self._model,
                prompt_tokens,
                completion_tokens,
                seconds,
            )
            usage = Usage(1, prompt_tokens, completion_tokens, seconds)
            return Completion(text=text, model=self._model, usage=usage)
        raise AssertionError("unreachable")  # pragma: no cover

    # -- one attempt -------------------------------------------------------------------

    def _attempt(self, payload: bytes) -> tuple[str, int, int]:
        """POST once; return (text, prompt tokens, completion tokens) or raise ``_Retry``."""
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(self._endpoint, data=payload, headers=headers)
        # A fresh opener per call: nothing mutable is shared between threads. Proxies from
        # the environment are honoured except for a server on this machine.
        handlers = [urllib.request.ProxyHandler({})] if self._loopback else []
        opener = urllib.request.build_opener(*handlers)
        try:
            with opener.open(request, timeout=self._timeout) as response:
                body = response.read()
        except urllib.error.HTTPError as error:
            self._raise_for_status(error)
        except urllib.error.URLError as error:
            if isinstance(error.reason, TimeoutError):
                raise _Retry(f"timed out after {self._timeout:g} s") from None
            raise _Retry(f"cannot connect ({_one_line(str(error.reason))})") from None
        except TimeoutError:
            raise _Retry(f"timed out after {self._timeout:g} s") from None
        except (http.client.HTTPException, OSError) as error:
            detail = _one_line(str(error)) or type(error).__name__
            raise _Retry(f"connection failed ({detail})") from None
        return self._parse(body)

    def _raise_for_status(self, error: urllib.error.HTTPError) -> NoReturn:
        status = error.code
        try:
            detail = _error_detail(error.read())
        except (OSError, http.client.HTTPException):
            detail = ""
        finally:
            error.close()
        cause = f"HTTP {status}" + (f": {detail}" if detail else "")
        if status == 429 or 500 <= status <= 599:
            retry_after = _retry_after(error.headers.get("Retry-After") if error.headers else None)
            raise _Retry(cause, retry_after)
        raise LLMError(
            f"chat request to {self._endpoint} (model {self._model!r}) was rejected: "
            f"{self._redact(cause)}"
        )

    def _parse(self, body: bytes) -> tuple[str, int, int]:
        try:
            data = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            raise _Retry("malformed JSON in the response") from None
        if not isinstance(data, dict):
            raise _Retry("malformed response: not a JSON object")
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices:
            detail = _error_detail(body)
            raise _Retry("response has no choices" + (f" ({detail})" if detail else ""))
        choice = choices[0]
        message = choice.get("message") if isinstance(choice, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if message is None or not (content is None or isinstance(content, str)):
            raise _Retry("malformed response: choices[0].message.content is missing")
        text = _strip_reasoning(content or "")
        if isinstance(choice, dict) and choice.get("finish_reason") == "length":
            logger.info("chat %s: reply cut at max_tokens", self._model)
        usage = data.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        return text, _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))

    def _wait(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(self._max_backoff, retry_after)
        return min(self._max_backoff, self._backoff * 2.0**attempt)

    def _redact(self, text: str) -> str:
        if self._api_key and self._api_key in text:
            text = text.replace(self._api_key, "<api key>")
        return text


class _Retry(RetryableLLMError):
    """One attempt failed in a way worth retrying."""

    def __init__(self, cause: str, retry_after: float | None = None) -> None:
        super().__init__(cause)
        self.cause = cause
        self.retry_after = retry_after


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


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


def _error_detail(body: bytes) -> str:
    """The server's error message from a JSON error body, else the start of the body."""
    text = body.decode("utf-8", errors="replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return _one_line(text)
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return _one_line(error["message"])
        for value in (error, data.get("message"), data.get("detail")):
            if isinstance(value, str):
                return _one_line(value)
        if "choices" in data:
            return ""
    return _one_line(text)


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_DETAIL else text[: _MAX_DETAIL - 1] + "…"


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
