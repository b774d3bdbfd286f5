"""Embedders: text to unit-length vectors."""

from cam_engine.embed.base import Embedder
from cam_engine.embed.hashing import HashingEmbedder

__all__ = ["Embedder", "HashingEmbedder", "load_embedder"]


def load_embedder(model: str, *, batch_size: int = 64, device: str | None = None) -> Embedder:
    """The embedder for a model name: ``hashing`` or a sentence-transformers name/path."""
    if model.startswith("hashing"):
        _, _, dim = model.partition(":")
        return HashingEmbedder(dim=int(dim) if dim else 384)
    from cam_engine.embed.sentence_transformers import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(model, batch_size=batch_size, device=device)
