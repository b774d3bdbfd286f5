"""Where the embedding model runs: --device, CAM_EMBED_DEVICE, and what stats reports."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from cam_engine.cli.main import cli
from cam_engine.config import Environment
from cam_engine.embed.sentence_transformers import SentenceTransformerEmbedder, resolve_device
from cam_engine.errors import ConfigError

GPU = torch.cuda.is_available()


def test_auto_picks_what_torch_sees_and_cpu_is_always_there() -> None:
    expected = "cuda" if GPU else "mps" if torch.backends.mps.is_available() else "cpu"
    assert resolve_device(None) == resolve_device("auto") == expected
    assert resolve_device("CPU") == "cpu"
    with pytest.raises(ConfigError, match="unknown embedding device 'tpu'"):
        resolve_device("tpu")


@pytest.mark.skipif(GPU, reason="this machine has a GPU: cuda is available")
def test_an_absent_gpu_asked_for_by_name_is_one_clear_error() -> None:
    with pytest.raises(ConfigError, match="'cuda' is not available"):
        resolve_device("cuda")


def test_batch_size_follows_the_device_unless_given() -> None:
    on_cpu = SentenceTransformerEmbedder("all-MiniLM-L6-v2", device="cpu")
    assert on_cpu.device == "cpu" and on_cpu.batch_size == 64
    assert SentenceTransformerEmbedder("m", device="cpu", batch_size=7).batch_size == 7
    with pytest.raises(ConfigError, match="batch size"):
        SentenceTransformerEmbedder("m", batch_size=0)
    with pytest.raises(ConfigError, match="unknown embedding device"):
        SentenceTransformerEmbedder("m", device="gpu0")


def test_the_environment_names_device_and_batch_size() -> None:
    env = Environment.from_env({"CAM_EMBED_DEVICE": "cpu", "CAM_EMBED_BATCH_SIZE": "128"})
    assert env.embed_device == "cpu" and env.embed_batch_size == 128
    assert Environment.from_env({}).embed_device is None


def test_commands_take_device_and_stats_report_it(tmp_path: Path) -> None:
    env = {"CAM_STORE": str(tmp_path / "d.db"), "CAM_EMBED_MODEL": "hashing:64"}
    doc = tmp_path / "doc.txt"
    doc.write_text("The whale swam past the ship.\n\nThe ship sailed after the whale.\n")
    runner = CliRunner()
    ingested = runner.invoke(cli, ["ingest", str(doc), "--device", "cpu"], env=env)
    assert ingested.exit_code == 0, ingested.output
    stats = runner.invoke(cli, ["stats"], env=env)
    assert "embedding: hashing:64 on cpu" in stats.output
    asked = runner.invoke(cli, ["ask", "Who sailed?", "--device", "cpu"], env=env)
    assert asked.exit_code == 0, asked.output
    wrong = runner.invoke(cli, ["ask", "Who sailed?", "--device", "tpu"], env=env)
    assert wrong.exit_code != 0 and "'tpu' is not one of" in wrong.output


def test_on_a_gpu_attention_leaves_out_cudnn_only_while_embedding() -> None:
    """cuDNN's attention builds a plan per input shape (an ingest's shapes never
    repeat): the embedder asks torch for the other kernels, and only around its own
    calls, so a program sharing the process keeps its choice."""
    from cam_engine.embed.sentence_transformers import _attention_without_cudnn

    before = torch.backends.cuda.cudnn_sdp_enabled()
    with _attention_without_cudnn("cuda"):
        assert not torch.backends.cuda.cudnn_sdp_enabled()
        assert torch.backends.cuda.flash_sdp_enabled()
        assert torch.backends.cuda.mem_efficient_sdp_enabled()
    assert torch.backends.cuda.cudnn_sdp_enabled() == before
    with _attention_without_cudnn("cpu"):
        assert torch.backends.cuda.cudnn_sdp_enabled() == before
