"""Vectors for the small hand-built memory of tests/unit/conftest.py (known answers)."""

from __future__ import annotations

import numpy as np


def axis(i: int, dim: int = 16) -> np.ndarray:
    v = np.zeros(dim, dtype=np.float32)
    v[i] = 1.0
    return v


def mix(*parts: tuple[int, float]) -> np.ndarray:
    v = sum(w * axis(i) for i, w in parts)
    return (v / np.linalg.norm(v)).astype(np.float32)
