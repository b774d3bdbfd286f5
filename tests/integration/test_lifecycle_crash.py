"""A delete and an update killed (SIGKILL) at every fault checkpoint they pass.

After each kill the memory must be one the operation passes through when nothing
fails: the memory before it, or after one of its transactions (one for a delete; one
per batch for an update, the first doing the removals and moves), never a mix. Then
the same operation runs again, and the memory must equal the one the clean run left:
rows (nodes with vectors, edges, replicas, memberships, document records, counters),
chunk texts by position, and tests/invariants.py's ``check_memory``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cam_engine.bench.crash import Rows, row_diff
from cam_engine.errors import NotFoundError
from tests.lifecycle_crash import (
    Reference,
    check_invariants,
    chunk_texts,
    clean_run,
    copy_memory,
    crashed_run,
    first_version,
    open_memory,
    other_document,
    perform,
    piped_version,
    rows_of,
    second_version,
    text_of,
)

UPDATED, DELETED = "notes.txt", "other.txt"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The memory both operations start from (the updated document's first version
    and the document deleted), and the updated document's second version."""
    root = tmp_path_factory.mktemp("lifecycle")
    for name, paragraphs in ((UPDATED, first_version()), (DELETED, other_document())):
        (root / "v1").mkdir(exist_ok=True)
        (root / "v1" / name).write_text(text_of(paragraphs), encoding="utf-8")
    (root / "v2").mkdir()
    (root / "v2" / UPDATED).write_text(text_of(second_version()), encoding="utf-8")
    (root / "piped").mkdir()
    (root / "piped" / UPDATED).write_text(text_of(piped_version()), encoding="utf-8")
    with open_memory(root / "template.db") as memory:
        report = memory.ingest([root / "v1" / UPDATED, root / "v1" / DELETED], batch_size=8)
        assert not report.errors
    check_invariants(root / "template.db")
    return root


def points(reference: Reference) -> list[str]:
    """Every checkpoint hit of the clean run, as CAM_CRASH_AT names it."""
    hits = sorted(reference.hits.items())
    return [f"{name}:{hit}" for name, count in hits for hit in range(1, count + 1)]


def mixed(reference: Reference, got: Rows) -> str:
    """How a memory differs from each state of the clean run (rows lost, rows extra)."""
    return "; ".join(
        f"state {i}: lost {lost}, extra {extra}"
        for i, (lost, extra) in enumerate(row_diff(s, got) for s in reference.states)
    )


def test_update_killed_at_every_checkpoint_is_whole_batches_and_the_rerun_finishes(
    folder: Path, tmp_path: Path
) -> None:
    target = str(folder / "v2" / UPDATED)
    reference = clean_run("update", folder / "template.db", tmp_path / "clean.db", target)
    # The clean update: removals and moves with the first added chunks, then the rest.
    assert len(reference.states) == 3, "two transactions that write"
    texts = chunk_texts(reference.final)
    assert texts[UPDATED] == second_version()
    # Two batches, each embedded apart (the plan's read passes no fault point).
    assert reference.hits["committed"] == 2 and reference.hits["embedded"] == 2
    stopped_between_batches = 0
    for point in points(reference):
        db = tmp_path / f"{point.replace(':', '-')}.db"
        copy_memory(folder / "template.db", db)
        assert crashed_run("update", db, target, point) == -9, f"{point}: not killed"
        crashed = rows_of(db)
        assert crashed in reference.states, f"{point}: a mix, {mixed(reference, crashed)}"
        check_invariants(db)
        if crashed not in (reference.states[0], reference.final):
            stopped_between_batches += 1
        perform("update", db, target)
        resumed = rows_of(db)
        assert chunk_texts(resumed) == texts, f"{point}: chunks after the rerun"
        assert resumed == reference.final, f"{point}: the rerun's memory differs"
        check_invariants(db)
    assert stopped_between_batches > 0, "no kill left the update between its batches"


def test_stdin_update_killed_at_every_checkpoint_is_whole_batches_and_the_rerun_finishes(
    folder: Path, tmp_path: Path
) -> None:
    # Piped text under a known name replaces chunks position by position, batch by
    # batch; a last transaction removes the chunks past the stream's end.
    target = str(folder / "piped" / UPDATED)
    reference = clean_run("stdin", folder / "template.db", tmp_path / "clean.db", target)
    texts = chunk_texts(reference.final)
    assert texts[UPDATED] == piped_version()
    assert len(reference.states) >= 3, "a batch that replaces, then the end of the stream"
    for point in points(reference):
        db = tmp_path / f"{point.replace(':', '-')}.db"
        copy_memory(folder / "template.db", db)
        assert crashed_run("stdin", db, target, point) == -9, f"{point}: not killed"
        crashed = rows_of(db)
        assert crashed in reference.states, f"{point}: a mix, {mixed(reference, crashed)}"
        check_invariants(db)
        perform("stdin", db, target)
        resumed = rows_of(db)
        assert chunk_texts(resumed) == texts, f"{point}: chunks after the rerun"
        assert resumed == reference.final, f"{point}: the rerun's memory differs"
        check_invariants(db)


def test_delete_killed_at_every_checkpoint_is_old_or_new_and_the_rerun_finishes(
    folder: Path, tmp_path: Path
) -> None:
    reference = clean_run("delete", folder / "template.db", tmp_path / "clean.db", DELETED)
    assert len(reference.states) == 2, "one transaction"
    assert DELETED not in chunk_texts(reference.final)
    assert {d[0] for d in reference.final["documents"]} == {UPDATED}
    for point in points(reference):
        db = tmp_path / f"{point.replace(':', '-')}.db"
        copy_memory(folder / "template.db", db)
        assert crashed_run("delete", db, DELETED, point) == -9, f"{point}: not killed"
        crashed = rows_of(db)
        assert crashed in reference.states, f"{point}: a mix, {mixed(reference, crashed)}"
        check_invariants(db)
        if crashed == reference.final:
            # Killed after its commit: the rerun finds nothing left to delete.
            with pytest.raises(NotFoundError, match=DELETED):
                perform("delete", db, DELETED)
        else:
            perform("delete", db, DELETED)
        assert rows_of(db) == reference.final, f"{point}: the rerun's memory differs"
        check_invariants(db)
