"""Embeddings from an OpenAI-compatible ``/embeddings`` endpoint (``--embed-model
openai:NAME``): OpenAI itself, or a local server that speaks the protocol (vLLM,
llama.cpp, Ollama, LM Studio, text-embeddings-inference, ...).

Texts go in requests of ``batch_size`` inputs, with the chat client's timeout, retry
and ``Retry-After`` rules (cam_engine/http_client.py). The dimension is not known until
the API answers: it is read from the first response, and every later response must
match it (and a memory's recorded ``embed_dim``, when one is given).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cam_engine.config import Environment
from cam_engine.embed.base import normalize_rows, within_window
from cam_engine.errors import ConfigError, EmbeddingError
from cam_engine.http_client import JsonEndpoint, Transient, error_detail, json_object

logger = logging.getLogger(__name__)

PREFIX = "openai:"  # model names of this embedder: openai:text-embedding-3-small
API_BATCH_SIZE = 128  # inputs per request; OpenAI takes up to 2048, local servers fewer
# Tokens an API model reads of one input (OpenAI's embedding models take 8,191): each
# input is cut to what that many pieces can span before it is sent.
API_WINDOW = 8192
DEVICE = "api"  # what embedding_device() and cam stats show for it
_PROBE = "dimension probe"  # embedded to learn the dimension when it is asked first
_HINTS = {
    401: "check the API key: CAM_EMBED_API_KEY, else OPENAI_API_KEY",
    403: "check the API key: CAM_EMBED_API_KEY, else OPENAI_API_KEY",
    404: "check the model name and that CAM_EMBED_BASE_URL is the API root, e.g. "
    "http://localhost:8000/v1",
}


class OpenAICompatibleEmbedder:
    """``Embedder`` over HTTP: POST ``{base_url}/embeddings``.

    ``dim`` is the size the vectors must have, as recorded with a memory; without it
    the first response sets it. A blank text is not sent (APIs refuse empty input) and
    gets a zero row, as the hashing embedder gives a text without words. Rows come back
    in input order (by each item's ``index``), L2-normalized, float32.

    Without ``base_url`` the embedder can be named and opened, so commands that only
    read a memory work without the API; its first request is then a ``ConfigError``.
    One instance may be shared between threads.
    """

    def __init__(
        self,
        base_url: str | None,
        model: str,
        api_key: str | None = None,
        *,
        dim: int | None = None,
        batch_size: int | None = None,
        timeout: float = 60.0,
        max_retries: int = 4,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not model or not model.strip():
            raise ConfigError(f"the embedding model needs a name after {PREFIX!r}")
        if batch_size is not None and (
            isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1
        ):
            raise ConfigError(f"the embedding batch size must be >= 1, got {batch_size!r}")
        if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int) or dim < 1):
            raise ConfigError(f"the embedding dimension must be an integer >= 1, got {dim!r}")
        self._model = model.strip()
        self._api: JsonEndpoint | None = None
        if base_url:
            self._api = JsonEndpoint(
                base_url,
                "embeddings",
                what="embedding",
                model=self._model,
                error=EmbeddingError,
                api_key=api_key,
                timeout=timeout,
                max_retries=max_retries,
                backoff=backoff,
                max_backoff=max_backoff,
                sleep=sleep,
                hints=_HINTS,
            )
        self._batch_size = batch_size or API_BATCH_SIZE
        self._recorded = dim  # the memory's embed_dim, if any
        self._dim: int | None = None  # learned from a response
        self._lock = threading.Lock()
        self.requests = 0  # requests answered, for tests and logs

    @classmethod
    def from_environment(
        cls, env: Environment, model: str, **options: Any
    ) -> OpenAICompatibleEmbedder:
        """``model`` (without ``openai:``) at ``CAM_EMBED_BASE_URL``, with the key from
        ``CAM_EMBED_API_KEY`` (else ``OPENAI_API_KEY``) and ``CAM_EMBED_BATCH_SIZE``;
        options given in code win."""
        if options.get("batch_size") is None:
            options["batch_size"] = env.embed_batch_size
        return cls(env.embed_base_url, model, env.embed_api_key, **options)

    @property
    def name(self) -> str:
        return f"{PREFIX}{self._model}"

    @property
    def device(self) -> str:
        return DEVICE

    @property
    def batch_size(self) -> int:
        return self._batch_size

    @property
    def endpoint(self) -> str | None:
        return self._api.url if self._api is not None else None

    @property
    def dim(self) -> int:
        """The vectors' size: learned from the first response, else the recorded one,
        else asked of the API with one short probe text."""
        if self._dim is None and self._recorded is None:
            self.embed([_PROBE])
        return self._dim or self._recorded or 0

    def __repr__(self) -> str:  # never show the key
        key = "set" if self._api is not None and self._api.has_key else "unset"
        return (
            f"OpenAICompatibleEmbedder(endpoint={self.endpoint!r}, model={self._model!r}, "
            f"api_key=<{key}>, dim={self._dim or self._recorded})"
        )

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = within_window(texts, API_WINDOW)
        sent = [i for i, text in enumerate(texts) if text.strip()]
        parts = [
            self._request([texts[i] for i in sent[start : start + self._batch_size]])
            for start in range(0, len(sent), self._batch_size)
        ]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if parts:
            out[sent] = np.concatenate(parts)
        return out

    # -- one request -------------------------------------------------------------------

    def _request(self, inputs: list[str]) -> np.ndarray:
        if self._api is None:
            raise ConfigError(
                f"CAM_EMBED_BASE_URL must be set to use the embedding model {self.name!r} "
                "(e.g. CAM_EMBED_BASE_URL=http://localhost:8000/v1)"
            )
        api = self._api
        started = time.perf_counter()
        vectors = api.post(
            {"model": self._model, "input": inputs}, lambda body: _parse(body, len(inputs))
        )
        self._check_dim(vectors.shape[1], api.url)
        with self._lock:
            self.requests += 1
        logger.debug(
            "embedded %d texts with %s in %.2f s",
            len(inputs),
            self._model,
            time.perf_counter() - started,
        )
        return normalize_rows(vectors)

    def _check_dim(self, dim: int, url: str) -> None:
        where = f"embedding model {self._model!r} at {url}"
        with self._lock:
            if self._recorded is not None and dim != self._recorded:
                raise EmbeddingError(
                    f"{where} returned {dim}-dimensional vectors, not the {self._recorded} "
                    "recorded with the memory (embed_dim): vectors of two sizes cannot be "
                    "mixed; use the model the memory was built with, or another --memory"
                )
            if self._dim is not None and dim != self._dim:
                raise EmbeddingError(
                    f"{where} returned {dim}-dimensional vectors after {self._dim}-dimensional "
                    "ones: vectors of two sizes cannot be mixed"
                )
            if self._dim is None:
                logger.info("%s: %d-dimensional vectors", where, dim)
            self._dim = dim


def _parse(body: bytes, count: int) -> np.ndarray:
    """The (count, dim) float32 matrix of an embeddings reply, rows in input order;
    ``Transient`` (retried) for a reply that is not one."""
    data = json_object(body)
    items = data.get("data")
    if not isinstance(items, list) or not items:
        detail = error_detail(body, result_key="data")
        raise Transient("response has no data" + (f" ({detail})" if detail else ""))
    if len(items) != count:
        raise Transient(f"malformed response: {len(items)} embeddings for {count} inputs")
    rows: list[Any] = [None] * count
    for position, item in enumerate(items):
        if not isinstance(item, dict):
            raise Transient(f"malformed response: data[{position}] is not an object")
        index = item.get("index", position)
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
            raise Transient(f"malformed response: data[{position}].index is {index!r}")
        if rows[index] is not None:
            raise Transient(f"malformed response: index {index} appears twice")
        vector = item.get("embedding")
        if not isinstance(vector, list) or not vector:
            # A base64 string is what encoding_format=base64 gives; we never ask for it.
            raise Transient(f"malformed response: data[{position}].embedding is not a list")
        rows[index] = vector
    if len({len(row) for row in rows}) != 1:
        raise Transient("malformed response: embeddings of different lengths")
    try:
        matrix = np.asarray(rows, dtype=np.float32)
    except (TypeError, ValueError):
        raise Transient("malformed response: an embedding holds something not a number") from None
    if matrix.ndim != 2 or not np.isfinite(matrix).all():
        raise Transient("malformed response: an embedding is not a list of finite numbers")
    return matrix
