"""The crash sweep's points (cam_engine/bench/crash.py): every target and phase gets
its share, hits stay within the run, and only the ingest is killed by a timer."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from cam_engine.bench.crash import INGEST, PHASES, TARGETS, TIMER, invariants_of, spread_points
from cam_engine.errors import CamError
from cam_engine.faults import CHECKPOINTS


def test_points_rotate_over_targets_and_their_phases() -> None:
    points = spread_points(48, batches=17, seconds=10.0, targets=TARGETS)
    assert Counter(p.target for p in points) == {t: 12 for t in TARGETS}
    for target in TARGETS:
        phases = Counter(p.phase for p in points if p.target == target)
        expected = PHASES if target == INGEST else CHECKPOINTS
        assert set(phases) == set(expected), (target, phases)
        assert max(phases.values()) - min(phases.values()) <= 1, (target, phases)


def test_hits_spread_from_the_first_batch_to_the_last() -> None:
    points = spread_points(60, batches=17, seconds=10.0)
    for phase in CHECKPOINTS:
        hits = sorted(p.hit for p in points if p.phase == phase)
        assert hits[0] == 1 and hits[-1] == 17, (phase, hits)
    delays = [p.delay for p in points if p.phase == TIMER]
    assert min(delays) == 1.0 and max(delays) == 9.5


def test_labels_name_what_failed_where() -> None:
    points = spread_points(4, batches=9, seconds=1.0, targets=TARGETS)
    assert [p.label for p in points] == [
        "embedded:5",
        "server@embedded:5",
        "drop@embedded:5",
        "reply@embedded:5",
    ]


def test_the_invariants_are_checked_only_when_wanted(tmp_path: Path) -> None:
    """``--no-invariants`` (a base of 10^5 chunks, where the check takes hours) leaves
    the memory unopened; from a checkout the check runs and finds the memory."""
    missing = str(tmp_path / "none.db")
    assert invariants_of(missing, "m", wanted=False) == (None, "")
    with pytest.raises(CamError, match=r"none\.db"):  # the check opened it: there is none
        invariants_of(missing, "m")
