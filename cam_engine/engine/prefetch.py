"""Chunk and embed the next batch while the engine works on the current one.

Ingest time would otherwise be embed + engine per batch; with one batch prepared ahead
in a worker thread it tends to max(embed, engine) (torch releases the GIL while it
computes, and the engine's SQLite and Python work needs little of the embedder's
cores on a GPU). The queue holds one batch, so memory stays bounded, and a failure in
the worker (unreadable input, an embedding error) is raised in the caller, at the
batch it belongs to: batches before it are committed, nothing after it is written.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from cam_engine.faults import checkpoint
from cam_engine.types import Chunk

Embed = Callable[[Sequence[str]], np.ndarray]
_POLL_SECONDS = 0.1  # how often a blocked worker checks whether the caller stopped


@dataclass
class PreparedBatch:
    chunks: list[Chunk]
    chunk_seconds: float  # producing (reading, chunking) the batch
    vectors: dict[str, np.ndarray] = field(default_factory=dict)  # chunk id -> vector
    embed_seconds: float = 0.0


class _Done:
    """The worker's last item: the batches ran out, or this exception stopped them."""

    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error


def prefetched(
    batches: Iterator[tuple[list[Chunk], float]],
    embed: Embed,
    *,
    skip: Callable[[Chunk], bool] = lambda chunk: False,
) -> Generator[PreparedBatch, None, None]:
    """``batches`` with their chunks embedded one batch ahead, in a worker thread.

    Chunks for which ``skip`` is true (already in the memory) are not embedded; the
    caller embeds any new chunk that has no vector. ``skip`` runs in the worker, so it
    must not use the store (decide from a set read beforehand). Closing the iterator
    (a break, an exception, Ctrl-C in the caller) stops the worker and waits for the
    embedding it is running, if any, to end: a thread still inside torch when the
    interpreter shuts down is killed there and takes the process down with SIGABRT
    ("terminate called without an active exception"). The worker is a daemon thread
    and is not otherwise waited for, so one blocked reading stdin never holds the process.
    """
    ready: queue.Queue[PreparedBatch | _Done] = queue.Queue(maxsize=1)
    stop = threading.Event()
    embedding = threading.Lock()  # held by the worker while it embeds

    def hand_over(item: PreparedBatch | _Done) -> bool:
        while not stop.is_set():
            try:
                ready.put(item, timeout=_POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        try:
            for chunks, chunk_seconds in batches:
                prepared = PreparedBatch(chunks, chunk_seconds)
                wanted = [c for c in chunks if not skip(c)]
                if wanted:
                    with embedding:
                        if stop.is_set():  # checked under the lock: closing waits for it
                            return
                        start = time.perf_counter()
                        vectors = embed([c.text for c in wanted])
                    prepared.embed_seconds = time.perf_counter() - start
                    prepared.vectors = dict(zip((c.id for c in wanted), vectors, strict=True))
                    checkpoint("embedded")  # fault injection (cam_engine/faults.py)
                if not hand_over(prepared):
                    return
            hand_over(_Done())
        except BaseException as exc:  # handed to the caller, who raises it
            hand_over(_Done(exc))

    worker = threading.Thread(target=work, name="cam-prefetch", daemon=True)
    worker.start()
    try:
        while True:
            item = ready.get()
            if isinstance(item, _Done):
                if item.error is not None:
                    raise item.error
                return
            yield item
    finally:
        stop.set()
        with embedding:  # the worker's embedding in progress has ended; none starts now
            pass
