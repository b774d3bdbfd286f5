"""What a batch did, as plain data (the CLI prints it; ``--json`` dumps it)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from cam_engine.llm.base import Usage


@dataclass
class LevelReport:
    level: int
    affected_nodes: int = 0
    replicas_touched: int = 0
    propagation_rounds: int = 0
    propagation_capped: bool = False
    clusters_split: int = 0
    singletons_absorbed: int = 0
    clusters_changed: int = 0
    summaries_written: int = 0
    summaries_removed: int = 0


@dataclass
class BatchReport:
    document: str | None
    batch: int
    chunks_added: int = 0
    chunks_skipped: int = 0  # already in the memory (re-ingest is a no-op)
    chunks_kept: int = 0  # an updated document's chunks whose text stayed (first batch)
    chunks_moved: int = 0  # of those, at a new position (written again, not re-embedded)
    chunks_removed: int = 0  # deleted with their edges, replicas and memberships
    edges_added: int = 0
    levels: list[LevelReport] = field(default_factory=list)
    summarizer: str = ""
    usage: Usage = field(default_factory=Usage)
    seconds: dict[str, float] = field(default_factory=dict)
    store_calls: int = 0  # store verbs called (and commits): round trips on Neo4j
    chunks_done: int = 0  # of this document so far
    chunks_total: int | None = None  # of this document, when known up front
    top_nodes: int = 0  # nodes of the top level after the batch (0: one root, no cover)
    top_summaries_written: int = 0  # covering top-level summaries written anew
    summaries_rewritten: int = 0  # again, with a larger budget: they repeated a node's text

    @property
    def summaries_written(self) -> int:
        written = sum(level.summaries_written for level in self.levels)
        return written + self.top_summaries_written

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["replicas_touched"] = sum(level.replicas_touched for level in self.levels)
        data["clusters_changed"] = {str(lv.level): lv.clusters_changed for lv in self.levels}
        data["summaries_written"] = self.summaries_written
        data["llm_calls"] = self.usage.calls
        data["seconds"] = {k: round(v, 4) for k, v in self.seconds.items()}
        return data


@dataclass
class IngestError:
    source: str
    message: str


@dataclass
class IngestReport:
    batches: list[BatchReport] = field(default_factory=list)
    errors: list[IngestError] = field(default_factory=list)

    @property
    def chunks_added(self) -> int:
        return sum(b.chunks_added for b in self.batches)

    @property
    def chunks_removed(self) -> int:
        return sum(b.chunks_removed for b in self.batches)

    @property
    def chunks_kept(self) -> int:
        return sum(b.chunks_kept for b in self.batches)

    @property
    def summaries_written(self) -> int:
        return sum(b.summaries_written for b in self.batches)
