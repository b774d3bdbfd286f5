"""Shared fixtures: where the shared evaluation data lives, small memories."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
GUTENBERG = SHARED_DATA / "haystacks" / "gutenberg"


def shared_file(relative: str) -> Path:
    path = SHARED_DATA / relative
    if not path.exists():
        pytest.skip(f"shared data not found: {path} (clone with ../shared beside the repo)")
    return path
