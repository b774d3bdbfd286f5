"""``cam export`` / ``cam import``: a real memory moved between SQLite files through the
export file, whole; and every malformed or interrupted import leaving nothing."""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from cam_engine import ConfigError, Environment, InputError, Memory
from cam_engine.adapters.readagent import build_view
from cam_engine.cli.main import cli
from cam_engine.embed import HashingEmbedder
from cam_engine.progress import Progress
from cam_engine.store.base import open_store
from cam_engine.store.sqlite import SqliteStore
from cam_engine.transfer import ExportFile, import_memory
from tests.conftest import shared_file
from tests.support.memory_contents import answers, comparable_stats, memory_contents

EMBEDDER = HashingEmbedder(64)
NO_ENV = Environment.from_env({})


def romeo_text() -> str:
    """The first acts of Romeo and Juliet: about 80 chunks, four levels."""
    return shared_file("haystacks/gutenberg/pg1513.txt").read_text()[:60_000]


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A memory of real text with a ReadAgent view, in its own SQLite file."""
    path = tmp_path_factory.mktemp("original") / "original.db"
    with Memory.open(path, "play", embedder=EMBEDDER, environment=NO_ENV) as memory:
        memory.ingest_text(romeo_text(), "romeo")
        build_view(memory, None, None, min_words=60, max_words=200)
    return path


@pytest.fixture(scope="module")
def exported(original: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("exported") / "play.jsonl.gz"
    with open_memory(original, "play") as memory:
        report = memory.export(path)
    assert report.counts["node"] > 100 and report.counts["view_node"] > 10
    return path


def open_memory(path: Path, name: str) -> Memory:
    return Memory.open(path, name, embedder=EMBEDDER, environment=NO_ENV, create=False)


def left_in(path: Path, name: str) -> list[str]:
    """What a store file holds of memory ``name``: its settings, any node or document."""
    if not path.exists():
        return []
    store = SqliteStore(path, name)
    try:
        held = []
        if store.load_settings() is not None:
            held.append("settings")
        if store.nodes_page("", 1):
            held.append("nodes")
        if store.documents():
            held.append("documents")
        if store.view_nodes_page("", 1):
            held.append("views")
        return held
    finally:
        store.close()


def test_a_memory_moves_whole_and_answers_as_before(
    original: Path, exported: Path, tmp_path: Path
) -> None:
    target = tmp_path / "copy.db"
    report = Memory.import_from(exported, target, "copy", environment=NO_ENV)
    assert report.memory == "copy" and report.counts["document"] == 1
    with open_memory(original, "play") as before, open_memory(target, "copy") as after:
        assert memory_contents(after.store) == memory_contents(before.store)
        assert comparable_stats(after) == comparable_stats(before)
        assert answers(after) == answers(before)
        top = before.top_level()[1][0].id
        assert after.node(top).to_dict() == before.node(top).to_dict()  # type: ignore[union-attr]


def test_an_imported_memory_takes_further_ingests(exported: Path, tmp_path: Path) -> None:
    target = tmp_path / "copy.db"
    Memory.import_from(exported, target, "copy", environment=NO_ENV)
    more = shared_file("haystacks/gutenberg/pg84.txt").read_text()[:20_000]
    with open_memory(target, "copy") as memory:
        chunks = memory.count_chunks()
        report = memory.ingest_text(more, "frankenstein")
        assert report.chunks_added > 0
        assert memory.count_chunks() == chunks + report.chunks_added
        assert [d.id for d in memory.documents()] == ["frankenstein", "romeo"]
        # the old document's chunks are still found, and linked to the new ones' levels
        assert memory.ask("Who killed Tybalt?").evidence


def test_plain_and_gzip_files_hold_the_same_records(original: Path, tmp_path: Path) -> None:
    with open_memory(original, "play") as memory:
        memory.export(tmp_path / "play.jsonl")
        memory.export(tmp_path / "play.jsonl.gz")
    plain = (tmp_path / "play.jsonl").read_text().splitlines()
    unzipped = gzip.decompress((tmp_path / "play.jsonl.gz").read_bytes()).decode().splitlines()
    assert plain[1:] == unzipped[1:]
    header = json.loads(plain[0])
    assert header["format"] == "cam-memory" and header["version"] == 1
    assert header["memory"] == "play" and header["dimensions"] == 64
    assert header["embed_model"] == "hashing:64"
    assert sum(header["counts"].values()) == len(plain) - 1
    kinds = [json.loads(line)["record"] for line in plain[1:]]
    order = ["document", "node", "edge", "replica", "members", "view_node", "counter"]
    assert kinds == sorted(kinds, key=order.index)


def test_an_existing_memory_or_file_is_refused(
    original: Path, exported: Path, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match="memory 'play' already exists"):
        Memory.import_from(exported, original, environment=NO_ENV)
    with open_memory(original, "play") as memory:
        assert memory.count_chunks() > 0  # untouched
        with pytest.raises(ConfigError, match="exists: give a new file name"):
            memory.export(exported)


# --- malformed files: one line naming what is wrong, and nothing left ------------------------


def rewrite(source: Path, target: Path, change: Callable[[list[str]], list[str]]) -> Path:
    lines = gzip.decompress(source.read_bytes()).decode().splitlines(keepends=True)
    target.write_text("".join(change(lines)))
    return target


def edit(record_kind: str, occurrence: int, **fields: object) -> Callable[[list[str]], list[str]]:
    """Change some fields of the ``occurrence``-th record of ``record_kind``."""

    def change(lines: list[str]) -> list[str]:
        seen = 0
        for i, line in enumerate(lines[1:], start=1):
            record = json.loads(line)
            if record.get("record") == record_kind:
                if seen == occurrence:
                    record.update(fields)
                    lines[i] = json.dumps(record) + "\n"
                    return lines
                seen += 1
        raise AssertionError(f"no {record_kind} record {occurrence}")

    return change


def edit_header(**fields: object) -> Callable[[list[str]], list[str]]:
    def change(lines: list[str]) -> list[str]:
        header = json.loads(lines[0])
        header.update(fields)
        return [json.dumps(header) + "\n", *lines[1:]]

    return change


def copy_record(kind: str, over: int, source: int, lines: list[str]) -> list[str]:
    """The ``over``-th record of ``kind`` replaced by a copy of the ``source``-th."""
    at = [i for i, line in enumerate(lines) if json.loads(line).get("record") == kind]
    lines[at[over]] = lines[at[source]]
    return lines


SHORT_VECTOR = base64.b64encode(b"\0" * 4 * 63).decode()
MALFORMED: dict[str, tuple[Callable[[list[str]], list[str]], str]] = {
    "not an export": (edit_header(format="something-else"), r"line 1: not a cam export"),
    "a later version": (edit_header(version=99), r"line 1: format version 99"),
    "header dimensions": (edit_header(dimensions=32), r"line 1: header: dimensions 32 differ"),
    "vector of other size": (
        edit("node", 40, vector=SHORT_VECTOR),
        r"line \d+: node record: 'vector' holds 63 float32 values, not the header's 64",
    ),
    "bad base64": (edit("view_node", 5, vector="@@not base64@@"), r"'vector' is not base64"),
    "an empty id": (edit("node", 3, id=""), r"node record: 'id' must not be empty"),
    "an unknown node kind": (
        edit("node", 100, kind="x) DETACH DELETE n //"),
        r"node record: 'kind' must be 'chunk' or 'summary'",
    ),
    "a missing field": (edit("edge", 3, score=None), r"edge record: 'score' must be a number"),
    "a truncated line": (
        lambda lines: [*lines[:-30], lines[-30][: len(lines[-30]) // 2]],
        r"line \d+: the line is cut short",
    ),
    "lines missing at the end": (
        lambda lines: lines[:-3],
        r"the file ends after line \d+ with .* records: it is truncated",
    ),
    "not JSON": (lambda lines: [*lines[:90], "{oops\n", *lines[91:]], r"line 91: not a JSON"),
    "out of order": (
        lambda lines: [lines[0], *lines[2:], lines[1]],
        r"a document record after counter records",
    ),
    "a dangling member": (
        edit("members", 2, members=["c0-nosuchnode"]),
        r"line \d+: members record names node 'c0-nosuchnode', which the file does not hold",
    ),
    "a duplicate id": (
        lambda lines: copy_record("view_node", 1, 0, lines),
        r"line \d+: a second view_node record for '.*' \(the first is on line \d+\)",
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_file_is_one_line_and_leaves_nothing(
    case: str, exported: Path, tmp_path: Path
) -> None:
    change, message = MALFORMED[case]
    bad = rewrite(exported, tmp_path / "bad.jsonl", change)
    target = tmp_path / "target.db"
    with pytest.raises(InputError, match=message) as raised:
        Memory.import_from(bad, target, "copy", environment=NO_ENV)
    assert "\n" not in str(raised.value)
    assert left_in(target, "copy") == []


def test_a_failed_import_leaves_the_store_s_other_memories(exported: Path, tmp_path: Path) -> None:
    bad = rewrite(exported, tmp_path / "bad.jsonl", edit("edge", 7, dst="x"))
    target = tmp_path / "kept.db"
    with open_memory_store(target, "other"):  # a store file that holds another memory
        pass
    with pytest.raises(InputError, match="edge record names node 'x'"):
        Memory.import_from(bad, target, "copy", environment=NO_ENV)
    assert left_in(target, "copy") == []
    assert target.exists() and left_in(target, "other") == ["settings", "nodes", "documents"]


def open_memory_store(path: Path, name: str) -> Memory:
    memory = Memory.open(path, name, embedder=EMBEDDER, environment=NO_ENV)
    memory.ingest_text("Romeo speaks. Juliet answers from the balcony.", "short")
    return memory


def test_an_import_interrupted_halfway_leaves_nothing(exported: Path, tmp_path: Path) -> None:
    target = tmp_path / "target.db"
    reports: list[Progress] = []

    def interrupt(progress: Progress) -> None:
        reports.append(progress)
        if len(reports) == 3:  # documents, then two batches of nodes committed
            raise KeyboardInterrupt

    with ExportFile(exported) as source:
        store = open_store(target, "copy")
        with pytest.raises(KeyboardInterrupt):
            import_memory(source, store, on_progress=interrupt, batch_records=50)
        store.close()
    assert reports[-1].done < reports[-1].total  # type: ignore[operator]
    assert left_in(target, "copy") == []
    # and the same file imports whole afterwards
    Memory.import_from(exported, target, "copy", environment=NO_ENV)
    assert left_in(target, "copy") == ["settings", "nodes", "documents", "views"]


def test_what_a_killed_import_left_is_removed_before_the_next(
    exported: Path, tmp_path: Path
) -> None:
    target = tmp_path / "target.db"
    with open_memory_store(target, "other"):  # (a new file with no memory is removed on close)
        pass
    with ExportFile(exported) as source:  # a process killed before its settings commit
        store = open_store(target, "copy")
        records = source.records()
        document = next(records).value
        with store.transaction():
            store.upsert_document(document)
        store.close()
    assert left_in(target, "copy") == ["documents"]
    Memory.import_from(exported, target, "copy", environment=NO_ENV)
    with open_memory(target, "copy") as memory:
        assert [d.id for d in memory.documents()] == ["romeo"]


def test_a_very_long_line_is_refused_unread(
    exported: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import cam_engine.transfer.reader as reader

    monkeypatch.setattr(reader, "MAX_LINE_CHARS", 500)
    target = tmp_path / "target.db"
    with pytest.raises(InputError, match=r"line \d+: the line is longer than 500 characters"):
        Memory.import_from(exported, target, "copy", environment=NO_ENV)
    assert left_in(target, "copy") == []


# --- the commands ---------------------------------------------------------------------------


def test_cam_export_and_import(original: Path, tmp_path: Path) -> None:
    env = {"CAM_STORE": str(original), "CAM_EMBED_MODEL": "hashing:64"}
    file = tmp_path / "play.jsonl.gz"
    out = CliRunner().invoke(cli, ["export", "play", str(file)], env=env)
    assert out.exit_code == 0, out.output
    assert f"exported memory 'play' to {file}" in out.output
    target = str(tmp_path / "copy.db")
    out = CliRunner().invoke(
        cli, ["import", str(file), "--as", "copy", "--store", target, "--json"], env=env
    )
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["counts"]["node"] > 100
    stats = [
        CliRunner().invoke(cli, ["stats", "--json", *args], env=env)
        for args in (["--memory", "play"], ["--memory", "copy", "--store", target])
    ]
    shown = [
        {k: v for k, v in json.loads(s.stdout).items() if k not in ("memory", "store")}
        for s in stats
    ]
    assert shown[0] == shown[1]
    again = CliRunner().invoke(
        cli, ["import", str(file), "--as", "copy", "--store", target], env=env
    )
    assert again.exit_code == 1
    assert again.output.strip().splitlines() == [
        f"Error: memory 'copy' already exists in {Path(target).resolve()}: import under "
        "another name (--as NAME), or delete it first (cam delete)"
    ]


def test_a_record_repeated_in_two_batches_is_caught_by_the_counts(
    exported: Path, tmp_path: Path
) -> None:
    bad = rewrite(exported, tmp_path / "bad.jsonl", lambda ls: copy_record("view_node", 30, 0, ls))
    target = tmp_path / "target.db"
    with ExportFile(bad) as source:
        store = open_store(target, "copy")
        with pytest.raises(InputError, match=r"view_node \d+ in the file, \d+ written"):
            import_memory(source, store, batch_records=10)
        store.close()
    assert left_in(target, "copy") == []
