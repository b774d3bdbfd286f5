"""Benchmarks and measurements: scripts that print figures, never timed tests."""

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def shared_data_dir() -> Path:
    """../shared/data beside the checkout (the layout of this project and of CI), so a
    benchmark finds its data from any working directory."""
    return Path(__file__).resolve().parents[3] / "shared" / "data"


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
