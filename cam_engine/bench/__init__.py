"""Benchmarks and measurements: scripts that print figures, never timed tests."""

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def shared_data_dir() -> Path:
    """../shared/data beside the checkout (the layout of this project and of CI), so a
    benchmark finds its data from any working directory."""
    return Path(__file__).resolve().parents[3] / "shared" / "data"


def process_mb(field: str = "VmRSS") -> float:
    """One memory figure of this process from /proc/self/status, in MB: ``VmRSS`` (resident
    now) or ``VmHWM`` (the peak resident); NaN where the kernel gives none (not Linux)."""
    try:
        lines = Path("/proc/self/status").read_text(encoding="ascii").splitlines()
    except OSError:
        return float("nan")
    for line in lines:
        if line.startswith(field + ":"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def print_figures(
    figures: Mapping[str, Any],
    out: Path | None = None,
    details: Mapping[str, Any] | None = None,
) -> None:
    """Print a benchmark's figures as one JSON line; with ``out``, also write them there,
    with ``details`` (such as every point's result) added and indented when given."""
    line = json.dumps(figures, sort_keys=True)
    print(line)
    if out is not None:
        text = line if details is None else json.dumps({**figures, **details}, indent=2)
        out.write_text(text + "\n", encoding="utf-8")
