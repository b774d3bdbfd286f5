"""Embedders: text to unit-length vectors."""

from cam_engine.embed.base import Embedder
from cam_engine.embed.hashing import HashingEmbedder

__all__ = ["Embedder", "HashingEmbedder", "embedding_device", "load_embedder"]


def embedding_device(embedder: Embedder) -> str:
    """Where an embedder computes: its ``device`` when it has one (sentence-transformers,
    or a wrapper of one), else cpu (the hashing embedder, or an embedder of your own)."""
    return str(getattr(embedder, "device", "cpu"))


def load_embedder(
    model: str, *, batch_size: int | None = None, device: str | None = None
) -> Embedder:
    """The embedder for a model name: ``hashing`` or a sentence-transformers name/path,
    on ``device`` (auto, cpu, cuda, mps; default auto: a GPU when torch sees one)."""
    if model.startswith("hashing"):
        _, _, dim = model.partition(":")
        return HashingEmbedder(dim=int(dim) if dim else 384)
    from cam_engine.embed.sentence_transformers import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(model, batch_size=batch_size, device=device)
