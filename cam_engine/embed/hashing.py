"""A model-free embedder: signed feature hashing of lower-cased word uni- and bigrams.

It needs no download and is fast, so unit tests and quick experiments use it. It
captures word overlap only (no synonyms), which is all the tests need.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Sequence

import numpy as np

from cam_engine.embed.base import normalize_rows, within_window

_WORD = re.compile(r"[a-z0-9]+")
# Word pieces it reads of a text, like a model's window: as many tokens as the largest
# chunk budget (chunk_tokens <= 4096), so every chunk is read whole.
WINDOW = 4096


class HashingEmbedder:
    def __init__(self, dim: int = 384) -> None:
        self._dim = dim

    @property
    def name(self) -> str:
        return f"hashing:{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(within_window(texts, WINDOW)):
            words = _WORD.findall(text.lower())
            for feature in [*words, *(f"{a} {b}" for a, b in itertools.pairwise(words))]:
                digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                out[row, value % self._dim] += 1.0 if (value >> 63) & 1 else -1.0
        return normalize_rows(out)
