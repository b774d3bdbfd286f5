"""Embedders: text to unit-length vectors."""

from __future__ import annotations

from cam_engine.config import Environment
from cam_engine.embed.base import Embedder
from cam_engine.embed.hashing import HashingEmbedder

__all__ = ["Embedder", "HashingEmbedder", "embedding_device", "load_embedder", "model_name"]
HASHING_DIM = 384  # the hashing embedder's size when its name gives none


def model_name(model: str) -> str:
    """The name the embedder ``load_embedder(model)`` gives will carry: ``hashing`` is
    ``hashing:384``; every other name is its own."""
    return f"hashing:{HASHING_DIM}" if model == "hashing" else model


def embedding_device(embedder: Embedder) -> str:
    """Where an embedder computes: its ``device`` when it has one (sentence-transformers,
    ``api`` for an embedding API, or a wrapper of either), else cpu (the hashing
    embedder, or an embedder of your own); then its ``runtime`` in brackets when it has
    one: ``cpu (numpy)``, ``cuda (torch)``."""
    device = str(getattr(embedder, "device", "cpu"))
    runtime = getattr(embedder, "runtime", None)
    return f"{device} ({runtime})" if runtime else device


def load_embedder(
    model: str,
    *,
    batch_size: int | None = None,
    device: str | None = None,
    environment: Environment | None = None,
    dim: int | None = None,
) -> Embedder:
    """The embedder for a model name: ``hashing``, ``openai:NAME`` (an OpenAI-compatible
    API at ``CAM_EMBED_BASE_URL``, from ``environment``, else the process environment)
    or a sentence-transformers name/path, on ``device`` (auto, cpu, cuda, mps; default
    auto: a GPU when torch sees one; an API ignores it). The default model runs with
    numpy on the CPU, without importing torch (``default_model.py``). ``dim`` is the
    dimension a memory recorded: an API that now returns another is an error."""
    if model.startswith("hashing"):
        _, _, size = model.partition(":")
        return HashingEmbedder(dim=int(size) if size else HASHING_DIM)
    if model.startswith("openai:"):
        from cam_engine.embed.openai_compat import OpenAICompatibleEmbedder

        env = environment or Environment.from_env()
        return OpenAICompatibleEmbedder.from_environment(
            env, model.removeprefix("openai:"), batch_size=batch_size, dim=dim
        )
    from cam_engine.embed.default_model import default_model_embedder, is_default_model

    if is_default_model(model):
        return default_model_embedder(model, device=device, batch_size=batch_size)
    from cam_engine.embed.sentence_transformers import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(model, batch_size=batch_size, device=device)
