"""What a batch did, as plain data (the CLI prints it; ``--json`` dumps it)."""

from __future__ import annotations

from collections.abc import Mapping
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
    summaries_written: int = 0  # summarized: new clusters and rewritten ones
    summaries_new: int = 0  # of those, clusters that had no summary before
    # Clusters whose members changed and whose summary kept its text: the members it
    # was written from are still close enough (Settings.resummarize_drift).
    summaries_kept: int = 0
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
    top_summaries_removed: int = 0  # covering summaries (and levels dropped) gone
    summaries_rewritten: int = 0  # again, with a larger budget: they repeated a node's text
    # Summarizer.summarize calls, all of the above together (declined summaries too):
    # with a chat summarizer these are its LLM calls; the extractive one makes none.
    summary_calls: int = 0

    @property
    def summaries_written(self) -> int:
        written = sum(level.summaries_written for level in self.levels)
        return written + self.top_summaries_written

    @property
    def summaries_removed(self) -> int:
        removed = sum(level.summaries_removed for level in self.levels)
        return removed + self.top_summaries_removed

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["replicas_touched"] = sum(level.replicas_touched for level in self.levels)
        data["clusters_changed"] = {str(lv.level): lv.clusters_changed for lv in self.levels}
        data["summaries_written"] = self.summaries_written
        data["summaries_removed"] = self.summaries_removed
        data["llm_calls"] = self.usage.calls
        data.update(self.usage.reply_counts())  # summaries: empty twice = unusable
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

    @property
    def usage(self) -> Usage:
        """The LLM work of every batch together."""
        return sum((b.usage for b in self.batches), Usage())

    def summary(self, versions: Mapping[str, int] | None = None) -> dict[str, Any]:
        """The run's figures, all batches together and per document, with each
        document's ``version`` after the run where ``versions`` has it (what the MCP
        ingest tools return and ``cam ingest --json`` prints last)."""
        changes = []
        for change in document_changes(self.batches):
            data = change.to_dict()
            if versions is not None and change.document in versions:
                data["version"] = versions[change.document]
            changes.append(data)
        return {
            "documents": [c["document"] for c in changes],
            "document_changes": changes,
            "chunks_added": self.chunks_added,
            "chunks_kept": sum(kept_chunks(b) for b in self.batches),
            "chunks_removed": self.chunks_removed,
            "chunks_moved": sum(b.chunks_moved for b in self.batches),
            "chunks_skipped": sum(b.chunks_skipped for b in self.batches),
            "summaries_written": self.summaries_written,
            "summaries_removed": sum(b.summaries_removed for b in self.batches),
            "llm_calls": sum(b.usage.calls for b in self.batches),
            **self.usage.reply_counts(),
            "errors": [{"source": e.source, "message": e.message} for e in self.errors],
        }


@dataclass
class DocumentChange:
    """What one ingest did to one document, from its batches' reports."""

    document: str
    chunks_added: int = 0
    chunks_kept: int = 0  # stored before, and left as they were (or only moved)
    chunks_removed: int = 0
    chunks_moved: int = 0
    summaries_written: int = 0
    batches: int = 0  # that wrote something

    @property
    def changed(self) -> bool:
        return bool(self.chunks_added or self.chunks_removed or self.chunks_moved)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def document_changes(batches: list[BatchReport]) -> list[DocumentChange]:
    """Each document's totals over ``batches``, in the order they came. A batch packing
    chunks of several documents (``ingest_documents``) names none and is counted
    nowhere here."""
    changes: dict[str, DocumentChange] = {}
    for b in batches:
        if b.document is None:
            continue
        change = changes.setdefault(b.document, DocumentChange(b.document))
        change.chunks_added += b.chunks_added
        change.chunks_kept += kept_chunks(b)
        change.chunks_removed += b.chunks_removed
        change.chunks_moved += b.chunks_moved
        change.summaries_written += b.summaries_written
        change.batches += bool(b.chunks_added or b.chunks_removed or b.chunks_moved)
    return list(changes.values())


def kept_chunks(batch: BatchReport) -> int:
    """The chunks a batch found stored and left: ``chunks_kept`` for a document whose
    text is known up front (its first batch; the one batch of an unchanged document
    says it as ``chunks_skipped`` too), ``chunks_skipped`` for a stream, whose batches
    keep each chunk already stored at its position."""
    return max(batch.chunks_kept, batch.chunks_skipped)
