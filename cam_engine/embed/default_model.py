"""Which runtime computes the default model, all-MiniLM-L6-v2.

numpy (``minilm_numpy.py``) on the CPU: it imports in ~0.2 s where torch takes ~13 s,
and embeds as fast as torch on the CPU (docs/benchmarks.md, "A cold cam ask"). torch
(sentence-transformers) on a GPU, where it is many times faster for a book's chunks.
With the device left to ``auto``, whether there is a GPU is known without torch when
no GPU device file exists (Linux); otherwise the question is left to torch, and asked
only when a batch large enough to use it comes (``GpuForBatches``): a question is
embedded with numpy either way.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from cam_engine.embed.base import Embedder
from cam_engine.embed.minilm_numpy import MiniLMNumpyEmbedder
from cam_engine.embed.sentence_transformers import (
    BUNDLED_MODELS,
    DEVICES,
    SentenceTransformerEmbedder,
    resolve_model_path,
)
from cam_engine.errors import ConfigError

SMALL_CALL = 8  # texts (a question, a few): embedded with numpy even when a GPU is there
# Device files a GPU that torch can use shows on Linux: NVIDIA, AMD ROCm, WSL's GPU.
_GPU_DEVICE_FILES = ("nvidia[0-9]*", "kfd", "dxg")


def is_default_model(model: str) -> bool:
    return model in BUNDLED_MODELS


def gpu_possible(dev: Path = Path("/dev")) -> bool:
    """False when no GPU can be there, known without importing torch: Linux with none
    of the GPU device files. Elsewhere (macOS has MPS; Windows has no /dev) only torch
    can tell, so True."""
    if not sys.platform.startswith("linux"):
        return True
    return any(any(dev.glob(pattern)) for pattern in _GPU_DEVICE_FILES)


def default_model_embedder(
    model: str, *, device: str | None = None, batch_size: int | None = None
) -> Embedder:
    """numpy on the CPU (``device`` cpu, or auto with no GPU possible); torch on a GPU
    named (cuda, mps); with auto and a GPU possible, questions numpy, batches where
    torch runs them (``GpuForBatches``)."""
    choice = (device or "auto").lower()
    if choice not in DEVICES:
        raise ConfigError(f"unknown embedding device {device!r}: use one of {', '.join(DEVICES)}")
    if choice in ("cuda", "mps"):
        return SentenceTransformerEmbedder(model, batch_size=batch_size, device=choice)
    on_cpu = MiniLMNumpyEmbedder(model, Path(resolve_model_path(model)), batch_size=batch_size)
    if choice == "cpu" or not gpu_possible():
        return on_cpu
    return GpuForBatches(on_cpu, SentenceTransformerEmbedder(model, batch_size=batch_size))


class GpuForBatches:
    """The default model where a GPU may be there (device auto): calls of fewer than
    ``SMALL_CALL`` texts on the CPU with numpy, so asking a question never waits for
    torch to import; larger ones with torch when it sees a GPU, else numpy. Both
    compute the same vectors (within fp16's ~1e-3 in cosine on a GPU)."""

    def __init__(self, on_cpu: MiniLMNumpyEmbedder, on_device: SentenceTransformerEmbedder):
        self._cpu = on_cpu
        self._device = on_device

    @property
    def name(self) -> str:
        return self._cpu.name

    @property
    def dim(self) -> int:
        return self._cpu.dim

    @property
    def device(self) -> str:
        """Where batches run (asks torch, importing it, the first time)."""
        return self._device.device

    @property
    def runtime(self) -> str:
        return self._cpu.runtime if self.device == "cpu" else "torch"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) < SMALL_CALL or self.device == "cpu":
            return self._cpu.embed(texts)
        return self._device.embed(texts)
