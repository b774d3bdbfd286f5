"""``ReaderPool`` and ``SerialEmbedder`` (cam_engine/serve/readers.py), on real SQLite
memories: each memory lent to one caller at a time, reused, replaced after a store
failure, closed with the pool."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from cam_engine import Memory, Settings
from cam_engine.embed import HashingEmbedder
from cam_engine.errors import ConfigError, InputError, NotFoundError, StoreError
from cam_engine.serve.readers import ReaderPool, SerialEmbedder


class Opener:
    """Opens memory "m" of one store, and keeps every memory it opened."""

    def __init__(self, store: Path) -> None:
        self.store = store
        self.opened: list[Memory] = []
        self.failures = 0  # the next opens that fail

    def __call__(self) -> Memory:
        if self.failures:
            self.failures -= 1
            raise NotFoundError("memory 'm' does not exist yet")
        settings = Settings(embed_model="hashing:16")
        memory = Memory.open(self.store, "m", settings=settings, embedder=HashingEmbedder(16))
        self.opened.append(memory)
        return memory


def is_closed(memory: Memory) -> bool:
    try:
        memory.count_chunks()
    except StoreError:
        return True
    return False


def test_each_caller_gets_a_memory_of_its_own_and_memories_are_reused(tmp_path: Path) -> None:
    opener = Opener(tmp_path / "s.db")
    pool = ReaderPool(opener, 2)
    with pool.lease() as first, pool.lease() as second:
        assert first is not second
    with pool.lease() as again:
        assert again in (first, second)
    assert len(opener.opened) == 2


def test_a_caller_waits_for_a_memory_when_all_are_lent(tmp_path: Path) -> None:
    opener = Opener(tmp_path / "s.db")
    pool = ReaderPool(opener, 1)
    got: list[Memory] = []

    def borrow() -> None:
        with pool.lease() as memory:
            got.append(memory)

    with pool.lease() as lent:
        other = threading.Thread(target=borrow)
        other.start()
    other.join(timeout=60)
    # The pool holds one memory: the other caller can only have had it once given back.
    assert got == [lent] and len(opener.opened) == 1


def test_a_memory_that_failed_in_the_store_is_closed_and_replaced(tmp_path: Path) -> None:
    opener = Opener(tmp_path / "s.db")
    pool = ReaderPool(opener, 1)
    with pytest.raises(StoreError), pool.lease() as broken:
        raise StoreError("disk I/O error")
    assert is_closed(broken)
    with pytest.raises(InputError), pool.lease() as asked:  # the caller's error: kept
        raise InputError("the question is empty")
    assert asked is not broken and not is_closed(asked)
    with pool.lease() as again:
        assert again is asked
    assert len(opener.opened) == 2


def test_a_memory_that_cannot_be_opened_frees_its_place(tmp_path: Path) -> None:
    opener = Opener(tmp_path / "s.db")
    opener.failures = 1
    pool = ReaderPool(opener, 1)
    with pytest.raises(NotFoundError), pool.lease():
        pass
    with pool.lease() as memory:
        assert memory is opener.opened[0]


def test_closing_closes_idle_memories_and_lent_ones_when_given_back(tmp_path: Path) -> None:
    pool = ReaderPool(Opener(tmp_path / "s.db"), 2)
    with pool.lease() as lent:
        with pool.lease() as idle:
            pass
        pool.close()
        assert is_closed(idle) and not is_closed(lent)
    assert is_closed(lent)
    with pytest.raises(StoreError, match="shutting down"), pool.lease():
        pass


def test_a_pool_needs_one_memory_at_least(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="readers must be >= 1"):
        ReaderPool(Opener(tmp_path / "s.db"), 0)


def test_the_serial_embedder_is_its_model() -> None:
    inner = HashingEmbedder(16)
    serial = SerialEmbedder(inner)
    assert (serial.name, serial.dim, serial.device) == ("hashing:16", 16, "cpu")
    texts = ["the whaler", "the pole"]
    assert np.array_equal(serial.embed(texts), inner.embed(texts))
