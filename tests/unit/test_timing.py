"""Phase accounting: nested phases and store calls are each counted once."""

from __future__ import annotations

from cam_engine.engine.timing import PhaseClock


class FakeTime:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t

    def spend(self, seconds: float) -> None:
        self.t += seconds


class SlowStore:
    """Meters its calls into the clock the way store.batch.BatchStore does."""

    def __init__(self, time: FakeTime, clock: PhaseClock) -> None:
        self.time = time
        self.clock = clock

    def read(self) -> int:
        start = self.clock.now()
        self.time.spend(2.0)
        self.clock.add_store(self.clock.now() - start)
        return 7


def test_nested_phases_and_store_time_are_counted_once() -> None:
    fake = FakeTime()
    clock = PhaseClock(now=fake)
    store = SlowStore(fake, clock)
    with clock.phase("summaries"):
        fake.spend(1.0)
        assert store.read() == 7
        with clock.phase("embed"):
            fake.spend(3.0)
            store.read()
        fake.spend(0.5)
    assert clock.seconds["summaries"] == 1.5
    assert clock.seconds["embed"] == 3.0
    assert clock.seconds["store"] == 4.0
    assert clock.total() == fake.t  # every second lands in exactly one phase
