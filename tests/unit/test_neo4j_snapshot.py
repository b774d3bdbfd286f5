"""Neo4jStore.read_snapshot without a server: how often it reads, and when it gives up.

The behaviour beside a real writer is tested in tests/contract/test_concurrent_ingest.py
(`cam stats` counts of one commit while another process ingests)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from cam_engine.errors import StoreError
from cam_engine.store.neo4j import SNAPSHOT_ATTEMPTS, Neo4jStore


class ScriptedStore(Neo4jStore):
    """A Neo4jStore whose generation reads come from a script."""

    def __init__(self, generations: list[int]) -> None:
        super().__init__(driver=None, uri="bolt://scripted", memory="m", database=None)
        self.generations: Iterator[int] = iter(generations)

    def _generation(self) -> int:
        return next(self.generations)


def reads(values: list[int]) -> tuple[list[int], Callable[[], int]]:
    calls: list[int] = []
    script = iter(values)

    def read() -> int:
        calls.append(1)
        return next(script)

    return calls, read


def test_two_equal_reads_between_equal_generations_are_returned() -> None:
    calls, read = reads([7, 7])
    assert ScriptedStore([3, 3]).read_snapshot(read) == 7
    assert len(calls) == 2


def test_a_read_that_saw_half_a_batch_is_read_again() -> None:
    # The generation did not move, but the second read differs from the first (a
    # commit's index updates landed in between): a third read must agree with it.
    calls, read = reads([5, 6, 6])
    assert ScriptedStore([3, 3, 3]).read_snapshot(read) == 6
    assert len(calls) == 3


def test_a_batch_committed_during_the_reads_makes_them_run_again() -> None:
    calls, read = reads([5, 5, 5])
    assert ScriptedStore([3, 4, 4]).read_snapshot(read) == 5
    assert len(calls) == 3


def test_a_memory_that_never_holds_still_is_a_clear_error() -> None:
    calls, read = reads(list(range(SNAPSHOT_ATTEMPTS + 1)))
    with pytest.raises(StoreError, match="changed during each of"):
        ScriptedStore([0] * (SNAPSHOT_ATTEMPTS + 1)).read_snapshot(read)
    assert len(calls) == SNAPSHOT_ATTEMPTS + 1
