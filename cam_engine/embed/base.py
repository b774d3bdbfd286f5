"""The embedder interface the engine depends on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into an (n, dim) float32 array of L2-normalized rows."""

    @property
    def name(self) -> str:
        """Model identity, stored with a memory so vectors of two models never mix."""
        ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0  # an all-zero row stays zero instead of becoming NaN
    return vectors / norms


# The most characters one word piece stands for. A BERT WordPiece tokenizer makes
# pieces of vocabulary entries (MiniLM's longest is 18 characters) and gives one [UNK]
# to a word it cannot piece together of up to 100 characters (its
# ``max_input_chars_per_word``); a BPE tokenizer's pieces are shorter still. So a
# model that reads ``n`` pieces never reads past ``n * PIECE_CHARS`` characters.
PIECE_CHARS = 100


def within_window(texts: Sequence[str], pieces: int) -> list[str]:
    """Each text cut to the ``pieces * PIECE_CHARS`` characters a model reading
    ``pieces`` word pieces can see, before a tokenizer is given it: the model drops
    the rest anyway, and a tokenizer handed 20 MB builds gigabytes of pieces first."""
    limit = pieces * PIECE_CHARS
    return [text if len(text) <= limit else text[:limit] for text in texts]
