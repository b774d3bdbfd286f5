"""Memories opened for reading beside a writer, for ``cam mcp``'s reading tools.

An ingest holds its batch's transaction open while it builds the hierarchy (with an
LLM summarizer, for seconds), and a question served behind it would wait that long.
On a store whose read snapshot isolates (SQLite in WAL mode), a question can instead
run on a ``Memory`` of its own, over its own connection, inside one read transaction:
it sees the last committed batch, never the one being written.

``ReaderPool`` keeps up to ``size`` such memories and lends each to one call at a time
(a store object holds one connection and one transaction flag, so two threads must
never share it). The memories share one embedder, ``SerialEmbedder``: one model in
memory, called by one thread at a time (a Hugging Face fast tokenizer shared by threads
fails with "Already borrowed"). It is not the writer's: that one embeds whole batches,
and a question would wait behind them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from cam_engine.embed import Embedder, embedding_device
from cam_engine.errors import CamError, ConfigError, StoreError
from cam_engine.memory import Memory

logger = logging.getLogger(__name__)


class SerialEmbedder:
    """Another embedder, called by one thread at a time."""

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def dim(self) -> int:
        with self._lock:  # a lazily loaded model loads here
            return self._inner.dim

    @property
    def device(self) -> str:
        return embedding_device(self._inner)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            return self._inner.embed(texts)


class ReaderPool:
    """Up to ``size`` memories opened by ``open_reader`` on demand, each lent to one
    caller at a time; a caller finding none idle and the pool full waits for one."""

    def __init__(self, open_reader: Callable[[], Memory], size: int) -> None:
        if size < 1:
            raise ConfigError(f"the number of readers must be >= 1, got {size}")
        self._open = open_reader
        self.size = size
        self._idle: list[Memory] = []
        self._opened = 0  # idle and lent
        self._closed = False
        self._changed = threading.Condition()

    @contextmanager
    def lease(self) -> Iterator[Memory]:
        """A reading memory for the block. One that failed in the store is closed, not
        lent again: its connection may be left inside a transaction."""
        memory = self._take()
        try:
            yield memory
        except BaseException as exc:
            if isinstance(exc, StoreError) or not isinstance(exc, CamError):
                self._discard(memory)
            else:  # the question's own error (empty, unknown node): the memory is fine
                self._give_back(memory)
            raise
        self._give_back(memory)

    def close(self) -> None:
        """Close the idle memories now, and those lent when they come back."""
        with self._changed:
            self._closed = True
            idle, self._idle = self._idle, []
            self._changed.notify_all()
        for memory in idle:
            memory.close()

    def _take(self) -> Memory:
        with self._changed:
            while True:
                if self._closed:
                    raise StoreError("the server is shutting down: its memory is closed")
                if self._idle:
                    return self._idle.pop()
                if self._opened < self.size:
                    self._opened += 1
                    break
                self._changed.wait()
        try:
            return self._open()
        except BaseException:
            self._forget()
            raise

    def _give_back(self, memory: Memory) -> None:
        with self._changed:
            if not self._closed:
                self._idle.append(memory)
                self._changed.notify()
                return
        memory.close()

    def _discard(self, memory: Memory) -> None:
        logger.warning("cam mcp: a reading connection failed; the next call opens another")
        self._forget()
        try:
            memory.close()
        except Exception:  # the call's own error is the one to report
            logger.warning("cam mcp: closing the failed reading connection failed", exc_info=True)

    def _forget(self) -> None:
        with self._changed:
            self._opened -= 1
            self._changed.notify()
