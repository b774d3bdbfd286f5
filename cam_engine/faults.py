"""Fault injection for crash tests: named checkpoints where a test stops the process.

A TEST KNOB, not a feature. The ingest path calls ``checkpoint(name)`` at a few places:

- ``embedded``: the prefetch worker has embedded a batch (engine/prefetch.py);
- ``before_apply``: a batch is built, nothing of it written yet (store/batch.py);
- ``writing``: inside the write, the nodes written and the rest not (store/change.py);
- ``applied``: every bulk write done, the transaction not committed;
- ``committed``: the batch's transaction has committed.

With ``CAM_CRASH_AT=POINT:N`` the process sends itself SIGKILL at the Nth hit of
POINT (counted from 1, in this process); with ``CAM_PAUSE_AT=POINT:N`` and
``CAM_PAUSE_FILE=PATH`` it writes its pid to PATH at that hit and waits until PATH is
removed (so a test can kill a database server at a known point), then carries on.
Both are read from the process environment once, here: they are no part of
``config.Environment``, which holds only what users configure. Without them a checkpoint is one
global lookup and a return: nothing measurable.

tests/integration/test_crash.py and ``cam bench crash`` use them.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cam_engine.errors import ConfigError

logger = logging.getLogger(__name__)

CHECKPOINTS = ("embedded", "before_apply", "writing", "applied", "committed")
PAUSE_LIMIT_SECONDS = 600.0  # a pause nobody ends does not hold the process forever
_POLL_SECONDS = 0.05


@dataclass(frozen=True)
class FaultPoint:
    """The Nth hit (from 1) of a named checkpoint."""

    name: str
    hit: int


def _fault_point(env: Mapping[str, str], name: str) -> FaultPoint | None:
    text = env.get(name)
    if not text:
        return None
    point, _, hit = text.rpartition(":")
    if not point or not hit.isdigit() or int(hit) < 1:
        raise ConfigError(f"{name} must be CHECKPOINT:N with N >= 1, got {text!r}")
    return FaultPoint(point, int(hit))


@dataclass(frozen=True)
class FaultPlan:
    crash_at: FaultPoint | None = None
    pause_at: FaultPoint | None = None
    pause_file: Path | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> FaultPlan | None:
        """The plan CAM_CRASH_AT, CAM_PAUSE_AT and CAM_PAUSE_FILE ask for (in ``env``,
        default the process environment), or None (checkpoints do nothing)."""
        env = os.environ if env is None else env
        crash_at = _fault_point(env, "CAM_CRASH_AT")
        pause_at = _fault_point(env, "CAM_PAUSE_AT")
        pause_file = env.get("CAM_PAUSE_FILE") or None
        if crash_at is None and pause_at is None:
            return None
        for point in (crash_at, pause_at):
            if point is not None and point.name not in CHECKPOINTS:
                raise ConfigError(
                    f"unknown fault checkpoint {point.name!r}; known: {', '.join(CHECKPOINTS)}"
                )
        if pause_at is not None and pause_file is None:
            raise ConfigError("CAM_PAUSE_AT needs CAM_PAUSE_FILE (where the pid is written)")
        return cls(crash_at, pause_at, Path(pause_file) if pause_file else None)


_UNREAD = object()
_plan: object = _UNREAD  # FaultPlan | None once read
_hits: Counter[str] = Counter()
_lock = threading.Lock()


def arm(plan: FaultPlan | None) -> None:
    """Use ``plan`` instead of the environment's (None disarms); hit counts restart."""
    global _plan
    with _lock:
        _plan = plan
        _hits.clear()


def hits() -> dict[str, int]:
    """Each checkpoint's hits since the last ``arm`` (a test arms ``FaultPlan()``, which
    stops nowhere, to count the points a run passes before killing it at each)."""
    with _lock:
        return dict(_hits)


def checkpoint(name: str) -> None:
    """Crash or pause here if the fault plan names this hit; otherwise nothing."""
    plan = _plan
    if plan is None:
        return
    if plan is _UNREAD:
        arm(FaultPlan.from_env())
        plan = _plan
        if plan is None:
            return
    assert isinstance(plan, FaultPlan)
    with _lock:
        _hits[name] += 1
        hit = _hits[name]
    if plan.pause_at == FaultPoint(name, hit) and plan.pause_file is not None:
        _pause(plan.pause_file, name, hit)
    if plan.crash_at == FaultPoint(name, hit):
        logger.warning("fault injection: SIGKILL at %s:%d", name, hit)
        os.kill(os.getpid(), signal.SIGKILL)


def _pause(marker: Path, name: str, hit: int) -> None:
    logger.warning("fault injection: paused at %s:%d until %s is removed", name, hit, marker)
    partial = marker.with_name(marker.name + ".part")
    partial.write_text(f"{os.getpid()}\n", encoding="utf-8")
    partial.replace(marker)  # whoever waits for the file reads it whole
    deadline = time.monotonic() + PAUSE_LIMIT_SECONDS
    while marker.exists() and time.monotonic() < deadline:
        time.sleep(_POLL_SECONDS)
