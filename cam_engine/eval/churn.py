"""Churn: delete a random share of a built memory's documents, then ingest them again.

``cam eval --churn FRACTION`` runs this on every memory it builds before any question
is asked, so a memory that has been through deletes and re-ingests can be scored
against one built once (``cam eval --paired-with``). Only the public ``Memory`` API is
used: ``delete_document`` one document at a time, then ``ingest_documents`` for the
deleted ones together, as an application would put them back.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from cam_engine.conversation import Conversation
from cam_engine.errors import ConfigError
from cam_engine.memory import Memory


@dataclass
class ChurnReport:
    """What one churn of one memory did."""

    documents: int  # deleted and ingested again
    chunks_removed: int
    chunks_added: int
    delete_seconds: float
    ingest_seconds: float
    llm_calls: int  # summaries written again, by an LLM summarizer (0 with extractive)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_fraction(fraction: float) -> None:
    if not 0.0 < fraction <= 1.0:
        raise ConfigError(f"churn fraction must be above 0 and at most 1, not {fraction}")


def churned_documents(doc_ids: Sequence[str], fraction: float, seed: int) -> list[str]:
    """A random ``fraction`` of ``doc_ids`` (rounded, at least one), the same for a seed,
    in the order given."""
    check_fraction(fraction)
    if not doc_ids:
        return []
    count = max(1, round(fraction * len(doc_ids)))
    picked = set(random.Random(seed).sample(list(doc_ids), count))
    return [d for d in doc_ids if d in picked]


def churn(
    memory: Memory,
    doc_ids: Sequence[str],
    texts: Mapping[str, str | Conversation],
    *,
    batch_size: int = 64,
    on_deleted: Callable[[int], None] | None = None,
) -> ChurnReport:
    """Delete each of ``doc_ids`` from ``memory``, then ingest their ``texts`` again, the
    short ones packed into shared batches as the first build did. ``on_deleted(n)``
    after the n-th delete: a delete can take seconds (it re-clusters what it touched)."""
    started = time.perf_counter()
    deletes = []
    for doc_id in doc_ids:
        deletes.append(memory.delete_document(doc_id))
        if on_deleted is not None:
            on_deleted(len(deletes))
    deleted = time.perf_counter()
    report = memory.ingest_documents(
        [(doc_id, texts[doc_id]) for doc_id in doc_ids], batch_size=batch_size
    )
    batches = [*deletes, *report.batches]
    return ChurnReport(
        documents=len(doc_ids),
        chunks_removed=sum(b.chunks_removed for b in deletes),
        chunks_added=report.chunks_added,
        delete_seconds=round(deleted - started, 2),
        ingest_seconds=round(time.perf_counter() - deleted, 2),
        llm_calls=sum(b.usage.calls for b in batches),
    )


def churn_totals(reports: Sequence[ChurnReport], fraction: float, seed: int) -> dict[str, Any]:
    """The churn of every memory of a run, summed, with what picked the documents."""
    totals: dict[str, Any] = {"fraction": fraction, "seed": seed, "memories": len(reports)}
    for key in ("documents", "chunks_removed", "chunks_added", "llm_calls"):
        totals[key] = sum(getattr(r, key) for r in reports)
    for key in ("delete_seconds", "ingest_seconds"):
        totals[key] = round(sum(getattr(r, key) for r in reports), 2)
    return totals
