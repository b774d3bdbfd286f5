"""The default model, all-MiniLM-L6-v2, computed with numpy instead of torch.

sentence-transformers needs torch and transformers, which take ~13 s to import on a
small machine: longer than most questions take to answer. This module runs the same
network with what is already installed: the weights read with ``safetensors.numpy``,
the text split by the ``tokenizers`` library (the Rust tokenizer behind transformers'
fast tokenizer, importing in ~0.1 s), and the BERT encoder written out in numpy:
embeddings, 6 layers of 12-head self-attention and a GELU feed-forward, then the
sentence-transformers pipeline of the model (``modules.json``): mean pooling over the
attention mask and L2 normalization. It matches sentence-transformers on the CPU to
~1e-7 in cosine (tests/integration/test_minilm_numpy.py), so vectors of either runtime
mix in one memory.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from cam_engine.embed.base import normalize_rows, within_window
from cam_engine.errors import EmbeddingError

logger = logging.getLogger(__name__)

RUNTIME = "numpy"  # what embedding_device() shows beside the device
BATCH_SIZE = 16  # texts per forward pass: the activations of one layer stay in cache
_LAYER_NORM_EPS = 1e-12  # config.json's layer_norm_eps
# Query rows per attention product. OpenBLAS runs a product of m*n*k <= 262,144 on one
# thread; a 256-token text's (rows x 32) @ (32 x 256) stays under that at 32 rows. Over
# it, each of the 12 heads' small products wakes every BLAS thread, which on a busy
# 2-core machine made attention 20x slower than on one thread.
_ATTENTION_ROWS = 32
_GELU_ROWS = 64  # 64 x 1536 floats: 384 KiB, within a core's L2 cache


class MiniLMNumpyEmbedder:
    """``Embedder`` for all-MiniLM-L6-v2 (its folder ``model_dir``: ``config.json``,
    ``model.safetensors``, ``tokenizer.json``, ``sentence_bert_config.json``), on the
    CPU with numpy. ``name`` is the name the memory stores (the same as with
    sentence-transformers: the vectors are the same). Loads on first use; one
    instance may be shared between threads."""

    def __init__(self, name: str, model_dir: Path, *, batch_size: int | None = None) -> None:
        self._name = name
        self._dir = model_dir
        self._batch_size = batch_size or BATCH_SIZE
        self._lock = threading.Lock()
        self._model: _Encoder | None = None
        self._tokenizer: Any = None
        self._counter: Any = None  # the tokenizer without truncation

    @property
    def name(self) -> str:
        return self._name

    @property
    def device(self) -> str:
        return "cpu"

    @property
    def runtime(self) -> str:
        return RUNTIME

    @property
    def batch_size(self) -> int:
        return self._batch_size

    @property
    def dim(self) -> int:
        return self._load()[0].dim

    @property
    def max_seq_length(self) -> int:
        """Word pieces per text, [CLS] and [SEP] included; the rest is cut off."""
        return int(self._load()[1].truncation["max_length"])

    def count_word_pieces(self, text: str) -> int:
        """Word pieces the model's tokenizer makes of ``text`` (no special tokens), all
        of them: as sentence-transformers' tokenizer counts them, not cut off."""
        with self._lock:
            if self._counter is None:
                self._counter = load_tokenizer(self._dir, truncate=False)
            counter = self._counter
        return len(counter.encode(text, add_special_tokens=False).ids)

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's token ids as the model reads them: [CLS], word pieces, [SEP],
        cut to ``max_seq_length`` from the right."""
        tokenizer = self._load()[1]
        window = int(tokenizer.truncation["max_length"])
        return [e.ids for e in tokenizer.encode_batch(within_window(texts, window))]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        encoder, tokenizer = self._load()
        if not texts:
            return np.zeros((0, encoder.dim), dtype=np.float32)
        window = int(tokenizer.truncation["max_length"])
        try:
            ids = [e.ids for e in tokenizer.encode_batch(within_window(texts, window))]
        except Exception as exc:  # the tokenizer raises TypeError/Exception on bad input
            raise EmbeddingError(f"embedding with {self._name!r} failed: {exc}") from exc
        out = np.empty((len(ids), encoder.dim), dtype=np.float32)
        # Like sentence-transformers: longest first, so a batch pads to similar lengths.
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        for start in range(0, len(order), self._batch_size):
            rows = order[start : start + self._batch_size]
            out[rows] = encoder.sentence_vectors([ids[i] for i in rows])
        return normalize_rows(out)

    def _load(self) -> tuple[_Encoder, Any]:
        with self._lock:
            if self._model is None:
                try:
                    self._tokenizer = load_tokenizer(self._dir)
                    self._model = _Encoder.from_dir(self._dir)
                except Exception as exc:  # a missing file, a bad JSON, a missing tensor
                    raise EmbeddingError(
                        f"cannot load embedding model {self._name!r} from {self._dir}: {exc}"
                    ) from exc
                logger.info("loaded embedding model %s (numpy)", self._name)
            return self._model, self._tokenizer


def load_tokenizer(model_dir: Path, *, truncate: bool = True) -> Any:
    """The model's tokenizer, truncating as sentence-transformers does: to
    ``max_seq_length`` of ``sentence_bert_config.json`` (256 for MiniLM; the
    ``tokenizer.json`` shipped says 128 and pads to it, which sentence-transformers
    overrides), from the right, no padding; with ``truncate=False``, not at all."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.no_padding()
    if not truncate:
        tokenizer.no_truncation()
        return tokenizer
    config = json.loads((model_dir / "sentence_bert_config.json").read_text(encoding="utf-8"))
    tokenizer.enable_truncation(max_length=int(config["max_seq_length"]))
    return tokenizer


class _Layer:
    """One encoder layer's weights, transposed for ``x @ w``, Q, K and V fused."""

    def __init__(self, w: dict[str, np.ndarray], prefix: str) -> None:
        def get(name: str) -> np.ndarray:
            return w[f"{prefix}.{name}"]

        qkv = [f"attention.self.{part}" for part in ("query", "key", "value")]
        self.qkv = np.ascontiguousarray(np.concatenate([get(f"{p}.weight") for p in qkv]).T)
        self.qkv_bias = np.concatenate([get(f"{p}.bias") for p in qkv])
        self.out = np.ascontiguousarray(get("attention.output.dense.weight").T)
        self.out_bias = get("attention.output.dense.bias")
        self.norm1 = (
            get("attention.output.LayerNorm.weight"),
            get("attention.output.LayerNorm.bias"),
        )
        self.up = np.ascontiguousarray(get("intermediate.dense.weight").T)
        self.up_bias = get("intermediate.dense.bias")
        self.down = np.ascontiguousarray(get("output.dense.weight").T)
        self.down_bias = get("output.dense.bias")
        self.norm2 = (get("output.LayerNorm.weight"), get("output.LayerNorm.bias"))


class _Encoder:
    """BERT's encoder (post-layer-norm, absolute positions, exact GELU) and mean pooling."""

    def __init__(self, weights: dict[str, np.ndarray], heads: int, layers: int) -> None:
        self.words = weights["embeddings.word_embeddings.weight"]
        self.positions = weights["embeddings.position_embeddings.weight"]
        self.segment = weights["embeddings.token_type_embeddings.weight"][0]  # one sentence
        self.norm = (weights["embeddings.LayerNorm.weight"], weights["embeddings.LayerNorm.bias"])
        self.layers = [_Layer(weights, f"encoder.layer.{i}") for i in range(layers)]
        self.dim = int(self.words.shape[1])
        self.heads = heads

    @classmethod
    def from_dir(cls, model_dir: Path) -> _Encoder:
        from safetensors.numpy import load_file

        config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
        if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu":
            raise ValueError("not a BERT model with GELU: use sentence-transformers for it")
        weights = load_file(str(model_dir / "model.safetensors"))
        return cls(weights, int(config["num_attention_heads"]), int(config["num_hidden_layers"]))

    def sentence_vectors(self, ids: list[list[int]]) -> np.ndarray:
        """Mean of the last layer over each text's tokens (not normalized)."""
        length = max(len(row) for row in ids)
        tokens = np.zeros((len(ids), length), dtype=np.int64)
        mask = np.zeros((len(ids), length), dtype=np.float32)
        for i, row in enumerate(ids):
            tokens[i, : len(row)] = row
            mask[i, : len(row)] = 1.0
        hidden = self.hidden_states(tokens, mask)
        summed = np.einsum("btd,bt->bd", hidden, mask)
        return summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)

    def hidden_states(self, tokens: np.ndarray, mask: np.ndarray) -> np.ndarray:
        length = tokens.shape[1]
        x = self.words[tokens] + self.positions[:length] + self.segment
        x = _layer_norm(x, *self.norm)
        # Padding gets the lowest float as attention score, as in transformers.
        blocked = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        for layer in self.layers:
            x = self._layer(x, blocked, layer)
        return x

    def _layer(self, x: np.ndarray, blocked: np.ndarray, layer: _Layer) -> np.ndarray:
        batch, length, dim = x.shape
        head = dim // self.heads
        # 2-D products: numpy hands a stacked (3-D) operand to BLAS one slice at a time.
        flat = x.reshape(batch * length, dim)
        qkv = flat @ layer.qkv
        qkv += layer.qkv_bias
        qkv = qkv.reshape(batch, length, 3, self.heads, head)
        q, k, v = (qkv[:, :, i].transpose(0, 2, 1, 3) for i in range(3))  # (b, h, t, d)
        q = q * np.float32(1.0 / math.sqrt(head))
        keys = k.transpose(0, 1, 3, 2)
        context = np.empty((batch, self.heads, length, head), dtype=np.float32)
        for start in range(0, length, _ATTENTION_ROWS):
            rows = slice(start, start + _ATTENTION_ROWS)
            scores = q[:, :, rows] @ keys + blocked
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context[:, :, rows] = scores @ v
        merged = context.transpose(0, 2, 1, 3).reshape(batch * length, dim)
        attended = merged @ layer.out
        attended += layer.out_bias
        attended += flat
        flat = _layer_norm(attended, *layer.norm1)
        inner = flat @ layer.up
        inner += layer.up_bias
        # GELU's dozen element-wise passes, a block of rows at a time: in the cache.
        for start in range(0, len(inner), _GELU_ROWS):
            _gelu(inner[start : start + _GELU_ROWS])
        out = inner @ layer.down
        out += layer.down_bias
        out += flat
        return _layer_norm(out, *layer.norm2).reshape(batch, length, dim)


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    variance = np.mean(centred * centred, axis=-1, keepdims=True)
    return centred / np.sqrt(variance + _LAYER_NORM_EPS) * weight + bias


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, x * Phi(x) (not the tanh approximation), in place.

    Phi(x) = (1 + erf(x / sqrt 2)) / 2, erf by Abramowitz & Stegun 7.1.26 (absolute
    error < 1.5e-7, below float32's resolution here): numpy has no erf, and scipy's
    would cost an import. With z = |x| / sqrt 2, 1 - erf(z) = poly(t) exp(-z^2) where
    t = 1 / (1 + p z), so Phi(|x|) = 1 - tail and Phi(-|x|) = tail, tail = that / 2.
    """
    z = np.abs(x)
    z *= np.float32(1.0 / math.sqrt(2.0))
    t = z * np.float32(_ERF_P)
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    tail = t * np.float32(_ERF_A[-1])
    for coefficient in reversed(_ERF_A[:-1]):
        tail += np.float32(coefficient)
        tail *= t
    z *= z
    np.negative(z, out=z)
    np.exp(z, out=z)
    tail *= z
    tail *= np.float32(0.5)
    np.subtract(np.float32(1.0), tail, out=tail, where=x >= 0)
    x *= tail
    return x


_ERF_P = 0.3275911
_ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
