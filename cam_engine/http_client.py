"""JSON over HTTP to an OpenAI-compatible API: the part the chat client
(llm/openai_compat.py) and the embedder (embed/openai_compat.py) share.

A ``JsonEndpoint`` POSTs a JSON body to one URL and hands the reply to a parser.
Transient failures (timeouts, dropped connections, 429, 5xx, and replies the parser
finds malformed by raising ``Transient``) are retried with exponential backoff, or
after the server's ``Retry-After``; other client errors fail at once. The API key is
sent as a bearer token and never appears in a message or a log line. Standard library
only; an instance holds only settings, so it may be shared between threads.
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
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, NoReturn, TypeVar

from cam_engine.errors import CamError, ConfigError

logger = logging.getLogger(__name__)

T = TypeVar("T")
MAX_DETAIL = 300  # characters of a server's error message kept in our messages


class Transient(CamError):
    """One attempt failed in a way worth retrying. Parsers raise it for a malformed
    reply; it never leaves ``JsonEndpoint.post``."""

    def __init__(self, cause: str, retry_after: float | None = None) -> None:
        super().__init__(cause)
        self.cause = cause
        self.retry_after = retry_after


class Rejected(Exception):
    """Why a server refused a request (an HTTP 4xx other than 429): set as the
    ``__cause__`` of the error ``JsonEndpoint.post`` raises, so a client can tell what
    the server objected to (e.g. an unsupported ``response_format``)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"HTTP {status}" + (f": {detail}" if detail else ""))
        self.status = status
        self.detail = detail


class JsonEndpoint:
    """POST ``{base_url}/{path}`` for a ``what`` client ("chat", "embedding") of ``model``.

    A call makes at most ``max_retries + 1`` attempts; the wait before retry ``i`` (from
    0) is ``backoff * 2**i`` seconds, or the server's ``Retry-After``, capped at
    ``max_backoff``. ``sleep`` is injectable so tests need not wait. A failure for good
    is an ``error`` (LLMError, EmbeddingError) naming the URL and the model; ``hints``
    add advice to the message of a rejected request, by HTTP status.
    """

    def __init__(
        self,
        base_url: str,
        path: str,
        *,
        what: str,
        model: str,
        error: type[CamError],
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 4,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        hints: Mapping[int, str] | None = None,
    ) -> None:
        url = (base_url or "").strip().rstrip("/")
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(
                f"{what} base URL must look like http://host:port/v1, got {base_url!r}"
            )
        if not model or not model.strip():
            raise ConfigError(f"{what} model name must not be empty")
        if not (timeout > 0 and math.isfinite(timeout)):
            raise ConfigError(f"{what} timeout must be a positive number of seconds, got {timeout}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ConfigError(f"max_retries must be an integer >= 0, got {max_retries!r}")
        if not (backoff >= 0 and max_backoff >= 0):
            raise ConfigError(f"backoff and max_backoff must be >= 0, got {backoff}, {max_backoff}")
        self.base_url = url
        self.url = f"{url}/{path.lstrip('/')}"
        self.what = what
        self.model = model.strip()
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self._error = error
        self._api_key = api_key or None
        self._backoff = float(backoff)
        self._max_backoff = float(max_backoff)
        self._sleep = sleep
        self._hints = dict(hints or {})
        self._loopback = _is_loopback(parts.hostname)

    @property
    def has_key(self) -> bool:
        return self._api_key is not None

    def post(self, payload: Mapping[str, Any], parse: Callable[[bytes], T]) -> T:
        """POST ``payload`` and return ``parse(body)`` of the first good reply."""
        data = json.dumps(payload).encode("utf-8")
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            try:
                return parse(self._attempt(data))
            except Transient as retry:
                cause = self.redact(retry.cause)
                if attempt + 1 >= attempts:
                    raise self._error(
                        f"{self.what} request to {self.url} (model {self.model!r}) failed after "
                        f"{attempts} attempt{'s' if attempts > 1 else ''}: {cause}"
                    ) from None
                wait = self._wait(attempt, retry.retry_after)
                logger.warning(
                    "%s request to %s (model %s) failed: %s; retry %d/%d in %.2f s",
                    self.what,
                    self.url,
                    self.model,
                    cause,
                    attempt + 1,
                    self.max_retries,
                    wait,
                )
                self._sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    def redact(self, text: str) -> str:
        if self._api_key and self._api_key in text:
            text = text.replace(self._api_key, "<api key>")
        return text

    # -- one attempt -------------------------------------------------------------------

    def _attempt(self, payload: bytes) -> bytes:
        """POST once; return the body of a 200 reply or raise ``Transient``."""
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(self.url, data=payload, headers=headers)
        # A fresh opener per call: nothing mutable is shared between threads. Proxies from
        # the environment are honoured except for a server on this machine.
        handlers = [urllib.request.ProxyHandler({})] if self._loopback else []
        opener = urllib.request.build_opener(*handlers)
        try:
            with opener.open(request, timeout=self.timeout) as response:
                body: bytes = response.read()
                return body
        except urllib.error.HTTPError as error:
            self._raise_for_status(error)
        except urllib.error.URLError as error:
            if isinstance(error.reason, TimeoutError):
                raise Transient(f"timed out after {self.timeout:g} s") from None
            raise Transient(f"cannot connect ({one_line(str(error.reason))})") from None
        except TimeoutError:
            raise Transient(f"timed out after {self.timeout:g} s") from None
        except (http.client.HTTPException, OSError) as error:
            detail = one_line(str(error)) or type(error).__name__
            raise Transient(f"connection failed ({detail})") from None

    def _raise_for_status(self, error: urllib.error.HTTPError) -> NoReturn:
        status = error.code
        try:
            detail = error_detail(error.read())
        except (OSError, http.client.HTTPException):
            detail = ""
        finally:
            error.close()
        cause = f"HTTP {status}" + (f": {detail}" if detail else "")
        if status == 429 or 500 <= status <= 599:
            retry_after = _retry_after(error.headers.get("Retry-After") if error.headers else None)
            raise Transient(cause, retry_after)
        hint = self._hints.get(status)
        raise self._error(
            f"{self.what} request to {self.url} (model {self.model!r}) was rejected: "
            f"{self.redact(cause)}" + (f" ({hint})" if hint else "")
        ) from Rejected(status, self.redact(detail))

    def _wait(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(self._max_backoff, retry_after)
        return min(self._max_backoff, self._backoff * 2.0**attempt)


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


def json_object(body: bytes) -> dict[str, Any]:
    """A reply's JSON object; ``Transient`` (retried) when it is not one."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise Transient("malformed JSON in the response") from None
    if not isinstance(data, dict):
        raise Transient("malformed response: not a JSON object")
    return data


def error_detail(body: bytes, *, result_key: str = "choices") -> str:
    """The server's error message from a JSON error body, else the start of the body
    (nothing for a body that holds ``result_key``: a reply, not an error)."""
    text = body.decode("utf-8", errors="replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return one_line(text)
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return one_line(error["message"])
        for value in (error, data.get("message"), data.get("detail")):
            if isinstance(value, str):
                return one_line(value)
        if result_key in data:
            return ""
    return one_line(text)


def one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_DETAIL else text[: MAX_DETAIL - 1] + "…"


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
