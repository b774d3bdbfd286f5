"""Seconds per phase of a batch, with time spent in the store counted apart.

Store calls happen inside every phase; counting them under "store" tells how much of
a batch is the database and how much is the algorithm.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

PHASES = ("chunk", "embed", "edges", "replicas", "propagation", "summaries", "store")


class PhaseClock:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = dict.fromkeys(PHASES, 0.0)
        self._store_in_phase = 0.0

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        outer_store = self._store_in_phase
        self._store_in_phase = 0.0
        start = time.perf_counter()
        try:
            yield
        finally:
            elapsed = time.perf_counter() - start
            self.seconds[name] = self.seconds.get(name, 0.0) + elapsed - self._store_in_phase
            self._store_in_phase = outer_store + self._store_in_phase

    def add_store(self, seconds: float) -> None:
        self.seconds["store"] += seconds
        self._store_in_phase += seconds

    def total(self) -> float:
        return sum(self.seconds.values())


class TimedStore:
    """Wraps a store so every method call's duration goes to the clock's "store" phase."""

    def __init__(self, store: Any, clock: PhaseClock) -> None:
        self._store = store
        self._clock = clock

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._store.transaction():
            yield
            start = time.perf_counter()  # leaving the block commits: that is store time
        self._clock.add_store(time.perf_counter() - start)

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._store, name)
        if not callable(attribute):
            return attribute

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return attribute(*args, **kwargs)
            finally:
                self._clock.add_store(time.perf_counter() - start)

        return timed
