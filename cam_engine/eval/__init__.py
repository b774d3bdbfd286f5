"""Evaluation harness pieces: one internal data format, loaders for public sets, metrics.

Every public benchmark is converted to an :class:`~cam_engine.eval.dataset.EvalSet`
(documents, questions, gold evidence as exact text), so the harness that ingests the
documents, asks the questions and scores the answers is written once.
"""

from __future__ import annotations

from cam_engine.eval.dataset import (
    EvalDocument,
    EvalQuestion,
    EvalSet,
    GoldItem,
    load_jsonl,
    write_jsonl,
)
from cam_engine.eval.loaders import KINDS, load

__all__ = [
    "KINDS",
    "EvalDocument",
    "EvalQuestion",
    "EvalSet",
    "GoldItem",
    "load",
    "load_jsonl",
    "write_jsonl",
]
