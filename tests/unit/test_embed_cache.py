"""The caching embedder: each text embedded once, and across runs with a cache file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cam_engine.embed import HashingEmbedder
from cam_engine.embed.caching import CachingEmbedder
from cam_engine.errors import ConfigError


class Counting(HashingEmbedder):
    def __init__(self, dim: int = 16, name: str | None = None) -> None:
        super().__init__(dim)
        self.seen: list[str] = []
        self._name = name

    @property
    def name(self) -> str:
        return self._name or super().name

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.seen.extend(texts)
        return super().embed(texts)


def test_vectors_outlive_the_process_only_with_a_cache_file(tmp_path: Path) -> None:
    cache = tmp_path / "vectors.npz"
    first = CachingEmbedder(Counting(), cache)
    vectors = first.embed(["a whale", "a ship", "a whale"])
    assert first.computed == 2 and np.allclose(vectors[0], vectors[2])
    first.save()

    inner = Counting()
    second = CachingEmbedder(inner, cache)
    again = second.embed(["a ship", "a whale", "the sea"])
    assert inner.seen == ["the sea"]  # only the new text reached the model
    assert np.allclose(again[1], vectors[0]) and np.allclose(again[0], vectors[1])

    CachingEmbedder(Counting(), None).save()  # no file: nothing to write, no error
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vectors.npz"]


def test_a_run_that_embedded_nothing_new_leaves_the_file_alone(tmp_path: Path) -> None:
    cache = tmp_path / "vectors.npz"
    first = CachingEmbedder(Counting(), cache)
    first.embed(["a whale"])
    first.save()
    inode = cache.stat().st_ino  # a rewrite renames a new file into place
    reader = CachingEmbedder(Counting(), cache)
    reader.embed(["a whale"])
    reader.save()  # two runs sharing one cache would race to rewrite it
    assert reader.computed == 0 and cache.stat().st_ino == inode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vectors.npz"]


def test_a_cache_of_another_model_is_refused(tmp_path: Path) -> None:
    cache = tmp_path / "vectors.npz"
    made = CachingEmbedder(Counting(name="model-a"), cache)
    made.embed(["text"])
    made.save()
    with pytest.raises(ConfigError, match="model-a"):
        CachingEmbedder(Counting(name="model-b"), cache)
    cache.write_bytes(b"not an npz")
    with pytest.raises(ConfigError, match="not readable"):
        CachingEmbedder(Counting(name="model-a"), cache)
