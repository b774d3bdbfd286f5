"""Benchmarks and measurements: scripts that print figures, never timed tests."""

from pathlib import Path


def shared_data_dir() -> Path:
    """../shared/data beside the checkout (the layout of this project and of CI), so a
    benchmark finds its data from any working directory."""
    return Path(__file__).resolve().parents[3] / "shared" / "data"
