"""The fault-injection hook (cam_engine/faults.py): its knobs, a kill at the named hit
only, and a pause that lasts until its file is removed."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cam_engine import faults
from cam_engine.config import Environment
from cam_engine.errors import ConfigError
from cam_engine.faults import FaultPlan, FaultPoint, arm, checkpoint


@pytest.fixture(autouse=True)
def disarmed() -> Iterator[None]:
    arm(None)
    yield
    arm(None)


def test_the_knobs_are_read_by_the_fault_plan_not_the_environment() -> None:
    knobs = {"CAM_CRASH_AT": "applied:3", "CAM_PAUSE_AT": "committed:1", "CAM_PAUSE_FILE": "/x"}
    assert FaultPlan.from_env(knobs) == FaultPlan(
        crash_at=FaultPoint("applied", 3),
        pause_at=FaultPoint("committed", 1),
        pause_file=Path("/x"),
    )
    assert FaultPlan.from_env({}) is None
    assert Environment.from_env(knobs) == Environment.from_env({})


@pytest.mark.parametrize("text", ["applied", "applied:0", "applied:x", ":3", "applied:-1"])
def test_a_malformed_point_is_a_config_error(text: str) -> None:
    with pytest.raises(ConfigError, match="CAM_CRASH_AT"):
        FaultPlan.from_env({"CAM_CRASH_AT": text})


def test_an_unknown_checkpoint_or_a_pause_without_a_file_is_refused() -> None:
    with pytest.raises(ConfigError, match="unknown fault checkpoint"):
        FaultPlan.from_env({"CAM_CRASH_AT": "nowhere:1"})
    with pytest.raises(ConfigError, match="CAM_PAUSE_FILE"):
        FaultPlan.from_env({"CAM_PAUSE_AT": "applied:1"})


def test_an_unarmed_checkpoint_does_nothing() -> None:
    for name in faults.CHECKPOINTS:
        checkpoint(name)


def test_the_process_is_killed_at_the_named_hit_and_not_before(tmp_path: Path) -> None:
    script = (
        "from cam_engine.faults import checkpoint\n"
        "for i in range(1, 5):\n"
        "    checkpoint('committed'); checkpoint('applied')\n"
        "    print(i, flush=True)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={"CAM_CRASH_AT": "applied:3", "PATH": ""},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == -9, done.stderr
    assert done.stdout.split() == ["1", "2"]


def test_a_pause_writes_the_pid_and_waits_until_its_file_is_removed(tmp_path: Path) -> None:
    marker = tmp_path / "paused"
    arm(FaultPlan(pause_at=FaultPoint("before_apply", 2), pause_file=marker))
    checkpoint("before_apply")
    assert not marker.exists()
    worker = threading.Thread(target=checkpoint, args=("before_apply",))
    worker.start()
    deadline = time.monotonic() + 10
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert marker.read_text().strip().isdigit()
    time.sleep(0.2)
    assert worker.is_alive(), "the checkpoint should wait while the file exists"
    marker.unlink()
    worker.join(timeout=10)
    assert not worker.is_alive()
