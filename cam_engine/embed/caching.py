"""An embedder that remembers: each text embedded once, optionally across runs."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from cam_engine.embed import embedding_device
from cam_engine.embed.base import Embedder
from cam_engine.errors import ConfigError


class CachingEmbedder:
    """Another embedder's vectors, each text embedded at most once.

    With ``cache_file`` (an .npz) the vectors also outlive the process: ``save()``
    writes every vector known, keyed by the SHA-256 of its text, and a later run with
    the same file and model embeds only texts it has not seen (cam eval --embed-cache).
    """

    def __init__(self, inner: Embedder, cache_file: Path | None = None) -> None:
        self._inner = inner
        self._cache: dict[str, np.ndarray] = {}
        self._stored: dict[str, np.ndarray] = {}  # by text hash, from cache_file
        self._file = cache_file
        self.computed = 0  # texts embedded by the inner model
        self.seconds = 0.0  # spent in embed(), cache hits included
        if cache_file is not None and cache_file.exists():
            self._stored = self._read(cache_file)

    def _read(self, path: Path) -> dict[str, np.ndarray]:
        try:
            with np.load(path, allow_pickle=False) as data:
                model, keys, vectors = str(data["model"]), data["keys"], data["vectors"]
        except (OSError, KeyError, ValueError) as exc:
            raise ConfigError(f"embedding cache {path}: not readable ({exc})") from exc
        if model != self._inner.name:
            raise ConfigError(
                f"embedding cache {path} holds vectors of {model!r}, not {self._inner.name!r}"
            )
        return dict(zip((str(k) for k in keys), vectors, strict=True))

    def save(self) -> None:
        """Write every known vector to the cache file (atomically; no-op without one, or
        when every vector came from it). Two processes sharing a file each write a
        file of their own and rename it into place: the last rename wins, whole."""
        if self._file is None or self.computed == 0:
            return
        known = dict(self._stored)
        known.update((_text_key(t), v) for t, v in self._cache.items())
        partial = self._file.with_name(f"{self._file.name}.{os.getpid()}.partial.npz")
        np.savez(
            partial,
            model=np.array(self._inner.name),
            keys=np.array(list(known), dtype=str),
            vectors=np.stack(list(known.values())) if known else np.zeros((0, self.dim)),
        )
        partial.replace(self._file)

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def dim(self) -> int:
        return self._inner.dim

    @property
    def device(self) -> str:
        return embedding_device(self._inner)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        start = time.perf_counter()
        try:
            missing = []
            for text in dict.fromkeys(texts):
                if text in self._cache:
                    continue
                stored = self._stored.get(_text_key(text)) if self._stored else None
                if stored is not None:
                    self._cache[text] = stored
                else:
                    missing.append(text)
            if missing:
                vectors = self._inner.embed(missing)
                self._cache.update(zip(missing, vectors, strict=True))
                self.computed += len(missing)
            if not texts:
                return np.zeros((0, self.dim), dtype=np.float32)
            return np.stack([self._cache[t] for t in texts])
        finally:
            self.seconds += time.perf_counter() - start


def _text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
