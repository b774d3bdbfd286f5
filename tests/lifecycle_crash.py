"""Crash tests of deleting and updating a document: a small memory, the operation run
once cleanly (in this process, counting the fault checkpoints it passes and keeping
the memory's rows after each of its transactions), then killed at every checkpoint in
a subprocess, and run again.

Run as ``python -m tests.lifecycle_crash OP DB TARGET`` it is that subprocess: OP is
``update`` (TARGET: the file to ingest, named as the stored document), ``stdin`` (that
file's text piped, under the file's name) or ``delete`` (TARGET: the document id), on
memory ``m`` of the SQLite file DB. The fault knob comes from the environment
(CAM_CRASH_AT, cam_engine/faults.py).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cam_engine import faults
from cam_engine.bench.crash import Rows, child_env, memory_rows
from cam_engine.config import Settings
from cam_engine.embed import load_embedder
from cam_engine.engine.reports import BatchReport
from cam_engine.errors import InputError
from cam_engine.memory import Memory
from cam_engine.store.base import open_store
from tests.invariants import check_memory

MEMORY = "m"
BATCH = 2  # an update adding four chunks takes two batches
SETTINGS = Settings(chunk_tokens=24, theta=0.3, embed_model="hashing:64")
ROOT = Path(__file__).resolve().parents[1]

# Four topics, each with its own words: the hashing embedder links a topic's paragraphs.
TOPICS = (
    "whale harpoon ship sea captain sail mast deck ocean wave crew voyage",
    "garden rose soil seed water bloom leaf root spring weed spade flower",
    "engine piston fuel valve gear shaft crank oil spark bolt torque motor",
    "court judge law trial jury verdict witness appeal clerk bench case oath",
)


def paragraph(topic: int, n: int) -> str:
    """A paragraph of about 20 tokens in the words of ``topic`` (one chunk each)."""
    words = TOPICS[topic].split()
    picked = [words[(n * 5 + k * 7) % len(words)] for k in range(16)]
    return f"Note {n} on {words[0]}: " + " ".join(picked) + "."


def text_of(paragraphs: list[str]) -> str:
    return "\n\n".join(paragraphs) + "\n"


def first_version() -> list[str]:
    """The updated document before the update: 24 paragraphs, six per topic."""
    return [paragraph(i // 6, i) for i in range(24)]


def second_version() -> list[str]:
    """One paragraph replaced, one removed (the chunks after it move), three inserted:
    two removals, moves, and four chunks added in two batches."""
    v2 = first_version()
    v2[8] = paragraph(3, 108)
    del v2[15]
    v2[20:20] = [paragraph(1, 120), paragraph(2, 121), paragraph(0, 122)]
    return v2


def piped_version() -> list[str]:
    """The text piped on stdin: one paragraph replaced in place, the last three gone
    (the stream's last transaction removes the chunks past its end)."""
    piped = first_version()[:-3]
    piped[8] = paragraph(3, 108)
    return piped


def other_document() -> list[str]:
    """The deleted document: its paragraphs share topics (and clusters) with the other."""
    return [paragraph(i % 4, 200 + i) for i in range(12)]


def open_memory(db: Path) -> Memory:
    return Memory.open(db, MEMORY, settings=SETTINGS, embedder=load_embedder("hashing:64"))


def perform(
    op: str, db: Path, target: str, on_batch: Callable[[BatchReport], None] | None = None
) -> None:
    """The operation, once: what the killed subprocess and the reruns do."""
    with open_memory(db) as memory:
        if op == "update":
            report = memory.ingest([target], batch_size=BATCH, on_batch=on_batch)
        elif op == "stdin":  # the text of file ``target`` piped under the file's name
            with open(target, encoding="utf-8") as stream:
                report = memory.ingest(
                    ["-"],
                    document=Path(target).name,
                    stdin=stream,
                    batch_size=BATCH,
                    on_batch=on_batch,
                )
        elif op == "delete":
            memory.delete_document(target)
            return
        else:
            raise ValueError(f"unknown operation {op!r}")
        if report.errors:
            raise InputError(report.errors[0].message)


def rows_of(db: Path) -> Rows:
    store = open_store(db, MEMORY, create=False)
    try:
        return memory_rows(store)
    finally:
        store.close()


def check_invariants(db: Path) -> None:
    store = open_store(db, MEMORY, create=False)
    try:
        check_memory(store, max_cluster_size=SETTINGS.max_cluster_size)
    finally:
        store.close()


def chunk_texts(rows: Rows) -> dict[str, list[str]]:
    """Each document's chunk texts by position, from a memory's rows."""
    by_doc: dict[str, list[tuple[float, str]]] = {}
    for _id, level, _kind, text, doc_id, position, *_ in rows["nodes"]:
        if level == 0 and doc_id is not None:
            by_doc.setdefault(doc_id, []).append((position or 0.0, text))
    return {doc: [t for _, t in sorted(chunks)] for doc, chunks in sorted(by_doc.items())}


def copy_memory(source: Path, target: Path) -> None:
    """A copy of a closed SQLite memory (its file and any write-ahead log beside it)."""
    for part in source.parent.glob(source.name + "*"):
        shutil.copyfile(part, target.parent / (target.name + part.name[len(source.name) :]))


@dataclass
class Reference:
    """The operation run once without a crash, from the same memory."""

    states: list[Rows]  # the memory before, then after each committed transaction
    hits: dict[str, int]  # checkpoint -> times the run passed it
    final: Rows = field(init=False)

    def __post_init__(self) -> None:
        self.final = self.states[-1]


def clean_run(op: str, template: Path, db: Path, target: str) -> Reference:
    """Run ``op`` on a copy of ``template`` in this process, counting checkpoints and
    keeping the rows after every batch (each its own transaction)."""
    copy_memory(template, db)
    states = [rows_of(db)]
    faults.arm(faults.FaultPlan())  # stops nowhere: only counts
    try:
        perform(op, db, target, on_batch=lambda _report: states.append(rows_of(db)))
        counted = faults.hits()
    finally:
        faults.arm(None)
    final = rows_of(db)
    if final != states[-1]:
        states.append(final)
    return Reference(states, counted)


def crashed_run(op: str, db: Path, target: str, point: str) -> int:
    """Run ``op`` in a subprocess killed at checkpoint hit ``point``: its return code."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.lifecycle_crash", op, str(db), target],
        env=child_env(CAM_CRASH_AT=point),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode not in (-9, 0):
        raise RuntimeError(f"{op} at {point}: exit {done.returncode}\n{done.stderr}")
    return done.returncode


if __name__ == "__main__":
    perform(sys.argv[1], Path(sys.argv[2]), sys.argv[3])
