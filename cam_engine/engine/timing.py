"""Seconds per phase of a batch, with time spent in the store counted apart.

Store calls happen inside every phase; counting them under "store" tells how much of
a batch is the database and how much is the algorithm.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

PHASES = ("chunk", "embed", "names", "edges", "replicas", "propagation", "summaries", "store")


class PhaseClock:
    """Seconds per phase. Phases may nest (summaries embed their texts): time spent in
    an inner phase or in the store is counted there and not in the enclosing phase."""

    def __init__(self, now: Callable[[], float] = time.perf_counter) -> None:
        self.now = now
        self.seconds: dict[str, float] = dict.fromkeys(PHASES, 0.0)
        self.store_calls = 0  # calls that reached the store (a commit is one)
        self._excluded: list[float] = []  # per open phase: seconds counted elsewhere

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        self._excluded.append(0.0)
        start = self.now()
        try:
            yield
        finally:
            elapsed = self.now() - start
            excluded = self._excluded.pop()
            self.seconds[name] = self.seconds.get(name, 0.0) + elapsed - excluded
            if self._excluded:
                self._excluded[-1] += elapsed

    def add_store(self, seconds: float) -> None:
        self.seconds["store"] += seconds
        self.store_calls += 1
        if self._excluded:
            self._excluded[-1] += seconds

    def total(self) -> float:
        return sum(self.seconds.values())
