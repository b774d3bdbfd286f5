"""The ``cam`` command through click's runner, with the model-free hashing embedder."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from cam_engine.cli.main import cli
from tests.conftest import shared_file


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    return {"CAM_STORE": str(tmp_path / "cli.db"), "CAM_EMBED_MODEL": "hashing:64"}


@pytest.fixture()
def text_file(tmp_path: Path) -> Path:
    path = tmp_path / "gap.txt"
    path.write_text(shared_file("haystacks/paul_graham/gap.txt").read_text()[:8000])
    return path


def run(env: dict[str, str], *args: str, input: str | None = None) -> click.testing.Result:
    return CliRunner().invoke(cli, list(args), env=env, input=input, catch_exceptions=False)


def stats(env: dict[str, str], *extra: str) -> dict:
    result = run(env, "stats", "--json", *extra)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_every_command_has_help() -> None:
    def walk(group: click.Group, prefix: list[str]) -> list[list[str]]:
        paths = []
        for name, command in group.commands.items():
            paths.append([*prefix, name])
            if isinstance(command, click.Group):
                paths.extend(walk(command, [*prefix, name]))
        return paths

    for path in walk(cli, []):
        result = CliRunner().invoke(cli, [*path, "--help"])
        assert result.exit_code == 0
        command = cli
        for name in path:
            command = command.commands[name]  # type: ignore[attr-defined]
        assert command.help, f"cam {' '.join(path)} has no help text"


def test_ingest_json_reports_each_batch(env: dict[str, str], text_file: Path) -> None:
    result = run(env, "ingest", str(text_file), "--batch-size", "4", "--json", "--theta", "0.3")
    assert result.exit_code == 0, result.output
    *batches, last = [json.loads(line) for line in result.output.splitlines()]
    assert len(batches) >= 2
    # The last line is the run's: chunks added, kept and removed, summaries written.
    assert last["kind"] == "run" and last["documents"] == ["gap.txt"]
    assert last["chunks_added"] == sum(b["chunks_added"] for b in batches)
    assert last["summaries_written"] == sum(b["summaries_written"] for b in batches)
    assert last["chunks_kept"] == last["chunks_removed"] == 0
    for batch in batches:
        for key in (
            "chunks_added",
            "edges_added",
            "replicas_touched",
            "clusters_changed",
            "summaries_written",
            "llm_calls",
        ):
            assert key in batch
        assert set(batch["seconds"]) >= {
            "chunk",
            "embed",
            "edges",
            "replicas",
            "propagation",
            "summaries",
            "store",
        }
        assert batch["summarizer"] == "extractive"
    data = stats(env)
    assert data["levels"][0]["nodes"] == sum(b["chunks_added"] for b in batches)
    assert data["documents"] == 1 and data["settings"]["theta"] == 0.3


def test_reingest_and_stdin(env: dict[str, str], text_file: Path) -> None:
    run(env, "ingest", str(text_file), "--theta", "0.3")
    before = stats(env)
    again = run(env, "ingest", str(text_file), "--json")
    assert all(json.loads(line)["chunks_added"] == 0 for line in again.output.splitlines())
    assert stats(env) == before
    piped = run(env, "ingest", "-", "--document", "piped", input=text_file.read_text())
    assert piped.exit_code == 0
    assert stats(env)["documents"] == 2


def test_bad_files_are_skipped_with_one_line_errors(
    env: dict[str, str], tmp_path: Path, text_file: Path
) -> None:
    run(env, "ingest", str(text_file), "--theta", "0.3")
    before = stats(env)
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "binary.bin").write_bytes(b"\x00\x01\x02abc")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9 au lait".encode("latin-1"))
    for name, reason in (
        ("empty.txt", "empty"),
        ("binary.bin", "binary"),
        ("latin1.txt", "not valid UTF-8"),
        ("missing.txt", "no such file"),
    ):
        result = CliRunner().invoke(cli, ["ingest", str(tmp_path / name)], env=env)
        assert result.exit_code == 1
        errors = [line for line in result.output.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and name in errors[0] and reason in errors[0]
    assert stats(env) == before


def test_bad_settings_name_the_valid_range(env: dict[str, str], text_file: Path) -> None:
    for args, expected in (
        (["--theta", "1.5"], "[0, 1]"),
        (["--k", "0"], "[1, 1000]"),
        (["--batch-size", "0"], ">= 1"),
        (["--sigma", "-1"], "positive"),
    ):
        result = CliRunner().invoke(cli, ["ingest", str(text_file), *args], env=env)
        assert result.exit_code == 2, result.output
        assert expected in result.output
    assert not Path(env["CAM_STORE"]).exists() or stats(env)["levels"] == []


def test_stats_lists_the_documents_of_the_memory(env: dict[str, str], text_file: Path) -> None:
    run(env, "ingest", str(text_file), "--theta", "0.3")
    run(env, "ingest", "-", "--document", "piped", input=text_file.read_text()[:3000])
    listed = stats(env)["document_list"]
    # A stream's length is known once it has ended.
    assert [(d["id"], d["source"], d["total"], d["version"]) for d in listed] == [
        ("gap.txt", str(text_file), listed[0]["chunks"], 1),
        ("piped", "<stdin>", listed[1]["chunks"], 1),
    ]
    assert all(d["chunks"] > 0 and len(d["sha256"]) == 64 for d in listed)
    assert all(d["updated_at"].endswith("+00:00") for d in listed)
    lines = run(env, "stats").output.splitlines()
    header = lines.index(
        "  id       chunks  version  hash          updated                    source"
    )
    for doc, line in zip(listed, lines[header + 1 : header + 3], strict=True):
        assert line.split() == [
            doc["id"],
            str(doc["chunks"]),
            "1",
            doc["sha256"][:12],
            doc["updated_at"],
            doc["source"],
        ]


def test_stats_lists_twenty_documents_and_every_interrupted_one() -> None:
    from cam_engine.cli.inspect import SHOWN, _document_lines

    done = [
        {"id": f"d{i:02}", "source": f"d{i:02}.txt", "chunks": 3, "total": 3} for i in range(30)
    ]
    partial = {"id": "d25", "source": "d25.txt", "chunks": 1, "total": 3}
    lines = _document_lines([*done[:25], partial, *done[26:]])
    # Records written before versions and hashes: version 1, no hash, no time.
    assert lines[0] == "id   chunks  version  hash  updated  source"
    assert lines[1 : SHOWN + 1] == [
        f"d{i:02}       3        1  -     -        d{i:02}.txt" for i in range(SHOWN)
    ]
    assert lines[SHOWN + 1 :] == [
        "d25  1 of 3        1  -     -        d25.txt (interrupted; running the same ingest "
        "again completes it)",
        "... and 9 more documents (--json lists them all)",
    ]


def test_the_progress_bar_counts_an_updated_documents_kept_chunks() -> None:
    from cam_engine.cli.ingest import _Progress
    from cam_engine.engine.reports import BatchReport

    progress = _Progress(enabled=True)
    # The first batch of an update: 30 chunks kept, 4 added, of 40.
    first = BatchReport("a.md", 0, chunks_added=4, chunks_kept=30, chunks_done=34, chunks_total=40)
    progress.update(first)
    assert progress.bar.pos == 34
    progress.update(BatchReport("a.md", 1, chunks_added=6, chunks_done=40, chunks_total=40))
    assert progress.bar.pos == 40
    progress.close()


def test_show_stats_and_rebuild(env: dict[str, str], text_file: Path) -> None:
    run(env, "ingest", str(text_file), "--theta", "0.3", "--batch-size", "4")
    data = stats(env)
    top = data["levels"][-1]["level"]
    assert top >= 1
    text = run(env, "stats").output
    assert "overlap" in text and data["store"] in text
    rebuilt = run(env, "ingest", "--rebuild")
    assert rebuilt.exit_code == 0 and "rebuilt" in rebuilt.output
    after = stats(env)
    assert after["levels"][0] == data["levels"][0]
    # show a summary of the second level and follow it down to a chunk
    import sqlite3

    with sqlite3.connect(env["CAM_STORE"]) as conn:
        (summary,) = conn.execute("SELECT id FROM nodes WHERE level = 1 LIMIT 1").fetchone()
    shown = json.loads(run(env, "show", summary, "--json").output)
    assert shown["level"] == 1 and shown["children"]
    child = json.loads(run(env, "show", shown["children"][0], "--json").output)
    assert child["level"] == 0 and summary in child["parents"]
    assert "extractive" in run(env, "show", summary).output
    missing = CliRunner().invoke(cli, ["show", "nope"], env=env)
    assert missing.exit_code == 1 and "no node 'nope'" in missing.output


def test_named_memories_are_separate(env: dict[str, str], text_file: Path) -> None:
    run(env, "ingest", str(text_file), "--memory", "one", "--theta", "0.3")
    assert stats(env, "--memory", "one")["documents"] == 1
    # A memory that does not exist is named, with the ones that do; nothing is created.
    missing = CliRunner().invoke(cli, ["stats", "--memory", "two"], env=env)
    assert missing.exit_code == 1
    assert "no memory 'two'" in missing.output and "memories there: one" in missing.output
    assert stats(env, "--memory", "one")["documents"] == 1
    bad = CliRunner().invoke(cli, ["stats", "--memory", "no spaces"], env=env)
    assert bad.exit_code == 1 and "invalid memory name" in bad.output


def test_reading_commands_create_nothing(env: dict[str, str], tmp_path: Path) -> None:
    store = tmp_path / "typo" / "nothing.db"
    for args in (
        ["stats", "--store", str(store)],
        ["ask", "anything", "--store", str(store)],
        ["show", "c0", "--store", str(store)],
        ["ingest", "--rebuild", "--store", str(store)],
    ):
        result = CliRunner().invoke(cli, args, env=env)
        assert result.exit_code == 1, args
        assert f"no store at {store}" in result.output
    assert not store.parent.exists()
    empty_name = CliRunner().invoke(cli, ["stats", "--memory", ""], env=env)
    assert empty_name.exit_code == 1 and "invalid memory name ''" in empty_name.output


def test_store_uris_that_are_not_neo4j_are_refused(env: dict[str, str], tmp_path: Path) -> None:
    for uri, expected in (
        ("http://127.0.0.1:7474", "unknown store URI scheme 'http'"),
        ("bolt:/127.0.0.1:7687", "malformed Neo4j URI"),
        ("BOLT:127.0.0.1", "malformed Neo4j URI"),
    ):
        result = CliRunner().invoke(cli, ["stats", "--store", uri], env=env, catch_exceptions=False)
        assert result.exit_code == 1 and expected in result.output, uri
    # nothing named like the URI was created in the working directory either
    assert not any(p.name.lower().startswith(("http", "bolt")) for p in Path.cwd().iterdir())


def test_ask_refuses_an_empty_memory_and_bad_counts(env: dict[str, str], text_file: Path) -> None:
    run(env, "ingest", str(text_file), "--theta", "0.3")
    zero = CliRunner().invoke(cli, ["ask", "q", "--strategy", "memagent", "--read-tokens", "0"])
    assert zero.exit_code == 2 and "--read-tokens" in zero.output
    from cam_engine import Environment, Memory

    with Memory.open(env["CAM_STORE"], "empty", environment=Environment.from_env(env)) as memory:
        memory.store.save_settings(memory.settings.to_dict())  # exists, holds no chunk
    empty = CliRunner().invoke(cli, ["ask", "anything", "--memory", "empty"], env=env)
    assert empty.exit_code == 1 and "holds no documents yet" in empty.output


def test_show_suggests_ids_for_an_unknown_one(env: dict[str, str], text_file: Path) -> None:
    run(env, "ingest", str(text_file), "--theta", "0.3", "--batch-size", "4")
    missing = CliRunner().invoke(cli, ["show", "c0"], env=env)
    assert missing.exit_code == 1
    suggested = missing.output.split("ids like it: ")[1].split(", ")
    assert suggested and all(s.startswith("c0") for s in suggested)
    shown = json.loads(run(env, "show", suggested[0].strip(), "--json").output)
    assert shown["position"] == 0 and isinstance(shown["position"], int)


def test_stdin_under_a_known_name_updates_the_log_keeping_its_chunks(
    env: dict[str, str], text_file: Path
) -> None:
    """A log piped again, grown, under the same --document: the chunks stored at their
    positions stay (the last one may be replaced, when the new text joined it) and the
    new ones are added; the document's version goes up."""
    text = text_file.read_text()
    run(env, "ingest", "-", "--document", "log", "--theta", "0.3", input=text[:3000])
    (before,) = stats(env)["document_list"]
    grown = run(env, "ingest", "-", "--document", "log", input=text)
    assert grown.exit_code == 0, grown.output
    (after,) = stats(env)["document_list"]
    update, total = grown.output.splitlines()
    kept = int(update.split("kept ")[1].split(",")[0])
    removed = int(update.split("removed ")[1].split(",")[0])
    added = int(update.split("added ")[1].split(" ")[0])
    assert update.startswith("updated document 'log' (version 2): kept ")
    assert update.endswith(" summaries written") or update.endswith(" summary written")
    assert before["chunks"] - 1 <= kept <= before["chunks"] and removed == before["chunks"] - kept
    assert kept + added == after["chunks"] > before["chunks"]
    assert after["version"] == 2 and after["sha256"] != before["sha256"]
    assert total.startswith(f"ingested {added} new chunks in ")
    assert f": kept {kept}, removed {removed}; " in total
    latin1 = CliRunner().invoke(
        cli, ["ingest", "-", "--document", "other"], env=env, input="caf\xe9".encode("latin-1")
    )
    assert latin1.exit_code == 1 and "not valid UTF-8" in latin1.output
    assert stats(env)["document_list"] == [after]


def test_a_changed_file_is_updated_and_the_run_says_what_was_kept(
    env: dict[str, str], text_file: Path
) -> None:
    run(env, "ingest", str(text_file), "--theta", "0.3", "--batch-size", "4")
    (before,) = stats(env)["document_list"]
    text = text_file.read_text()
    cut = text.index("\n", 6000)  # the essay's lines after that are replaced
    text_file.write_text(text[:cut] + "\nA new closing line about startups and gaps.\n")
    result = run(env, "ingest", str(text_file), "--json")
    assert result.exit_code == 0, result.output
    *batches, last = [json.loads(line) for line in result.output.splitlines()]
    (after,) = stats(env)["document_list"]
    assert last["kind"] == "run" and "kind" not in batches[0]
    assert last["chunks_kept"] == batches[0]["chunks_kept"] > 0
    assert last["chunks_removed"] == sum(b["chunks_removed"] for b in batches) > 0
    assert last["chunks_added"] == sum(b["chunks_added"] for b in batches) > 0
    assert last["chunks_kept"] + last["chunks_added"] == after["chunks"]
    assert last["chunks_kept"] + last["chunks_removed"] == before["chunks"]
    assert last["summaries_written"] == sum(b["summaries_written"] for b in batches)
    (change,) = last["document_changes"]
    assert change["document"] == "gap.txt" and change["version"] == after["version"] == 2
    assert stats(env)["levels"][0]["nodes"] == after["chunks"]
    # The same file again: nothing to do, and the version stays.
    again = run(env, "ingest", str(text_file))
    assert again.output.startswith("nothing new: every chunk is already in memory 'default'")
    assert stats(env)["document_list"] == [after]
    text_file.write_text(text)  # back to the first text: version 3, one line per document
    back = run(env, "ingest", str(text_file)).output.splitlines()
    assert back[0].startswith("updated document 'gap.txt' (version 3): kept ")
    assert back[1].startswith("ingested ") and "summar" in back[1]


def test_document_prefix_and_two_paths_that_would_be_one_document(
    env: dict[str, str], tmp_path: Path
) -> None:
    essays = shared_file("haystacks/paul_graham")
    a, b = tmp_path / "a", tmp_path / "b"
    (a / "sub").mkdir(parents=True)
    b.mkdir()
    (a / "x.md").write_text((essays / "gap.txt").read_text()[:2500])
    (a / "sub" / "y.md").write_text((essays / "gap.txt").read_text()[2500:5000])
    (b / "x.md").write_text((essays / "gap.txt").read_text()[5000:7500])
    for args in ([str(a / "x.md"), str(b / "x.md")], [str(a), str(b)]):
        clash = CliRunner().invoke(cli, ["ingest", *args], env=env)
        assert clash.exit_code == 1
        assert clash.output == (
            f"Error: {a / 'x.md'} and {b / 'x.md'} would both be document 'x.md' (the second "
            "would replace the first): ingest one of them with --document, or each folder "
            "with --document-prefix\n"
        )
        assert not Path(env["CAM_STORE"]).exists()  # refused before anything was written
    result = run(env, "ingest", str(a), "--document-prefix", "notes/", "--theta", "0.3")
    assert result.exit_code == 0, result.output
    assert run(env, "ingest", str(b), "--document-prefix", "b").exit_code == 0
    # A folder and a file in it are one source, not a clash.
    assert run(env, "ingest", str(a), str(a / "x.md")).exit_code == 0
    ids = [d["id"] for d in stats(env)["document_list"]]
    assert ids == ["b/x.md", "notes/sub/y.md", "notes/x.md", "sub/y.md", "x.md"]
    for args, expected in (
        (["-", "--document-prefix", "p"], "--document-prefix is for files and folders"),
        ([str(a / "x.md"), "--document", "d", "--document-prefix", "p"], "give one of them"),
        ([str(a), "--document-prefix", "/"], "--document-prefix is empty"),
    ):
        refused = CliRunner().invoke(cli, ["ingest", *args], env=env, input="text")
        assert refused.exit_code == 1 and expected in refused.output, refused.output
    assert [d["id"] for d in stats(env)["document_list"]] == ids


def test_no_op_reingest_and_interrupt_messages(
    env: dict[str, str], text_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = run(env, "ingest", str(text_file), "--theta", "0.3", "--batch-size", "4")
    assert "new chunks in" in first.output and "batchs" not in first.output
    again = run(env, "ingest", str(text_file))
    assert "nothing new: every chunk is already in memory 'default'" in again.output
    from cam_engine.engine.ingest import IngestPipeline

    calls = {"n": 0}
    original = IngestPipeline._add_batch

    def interrupted(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return original(self, *args, **kwargs)

    monkeypatch.setattr(IngestPipeline, "_add_batch", interrupted)
    other = text_file.with_name("other.txt")
    other.write_text(shared_file("haystacks/paul_graham/gap.txt").read_text()[8000:14000])
    stopped = CliRunner().invoke(cli, ["ingest", str(other), "--batch-size", "1"], env=env)
    assert stopped.exit_code == 130
    assert "interrupted:" in stopped.output and "run the same command again" in stopped.output
    partial = stats(env)["partial_documents"]
    assert [d["id"] for d in partial] == ["other.txt"] and 0 < partial[0]["chunks"] < partial[0][
        "total"
    ]
    assert "other.txt  2 of" in run(env, "stats").output
    monkeypatch.setattr(IngestPipeline, "_add_batch", original)
    assert run(env, "ingest", str(other), "--batch-size", "1").exit_code == 0
    assert stats(env)["partial_documents"] == []


def test_a_store_lost_mid_ingest_says_what_was_kept_and_the_same_command_resumes(
    env: dict[str, str], text_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `cam ingest` says when the store goes away (tests/integration/test_neo4j_faults.py
    stops a real Neo4j server; here the third batch raises what the store raises then)."""
    from cam_engine.engine.ingest import IngestPipeline
    from cam_engine.errors import StoreUnavailableError

    original = IngestPipeline._add_batch
    calls = {"n": 0}

    def lost(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 3:
            raise StoreUnavailableError("lost Neo4j at bolt://db:7687: defunct connection")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(IngestPipeline, "_add_batch", lost)
    args = ["ingest", str(text_file), "--batch-size", "2", "--theta", "0.3"]
    cut = CliRunner().invoke(cli, args, env=env)
    assert cut.exit_code == 1
    assert cut.output == (
        "Error: lost Neo4j at bolt://db:7687: defunct connection; 4 new chunks from the "
        "batches committed so far are kept; run the same command again to resume\n"
    )
    (document,) = stats(env)["partial_documents"]
    assert document["chunks"] == 4 < document["total"]
    monkeypatch.setattr(IngestPipeline, "_add_batch", original)
    again = run(env, *args)
    assert f"ingested {document['total'] - 4} new chunks" in again.output
    assert stats(env)["partial_documents"] == []


def test_memories_are_listed_and_one_is_deleted(env: dict[str, str], text_file: Path) -> None:
    run(env, "ingest", str(text_file), "--memory", "one", "--theta", "0.3")
    run(env, "ingest", str(text_file), "--memory", "two", "--theta", "0.3")
    assert json.loads(run(env, "memories", "--json").output) == ["one", "two"]
    kept = stats(env, "--memory", "two")
    refused = CliRunner().invoke(cli, ["delete", "--memory", "one"], env=env, input="n\n")
    assert "delete memory 'one' (1 document) from" in refused.output
    assert refused.exit_code == 1 and json.loads(run(env, "memories", "--json").output) == [
        "one",
        "two",
    ]
    deleted = run(env, "delete", "--memory", "one", "--yes")
    assert deleted.exit_code == 0 and "deleted memory 'one'" in deleted.output
    assert run(env, "memories").output.split() == ["two"]
    assert stats(env, "--memory", "two") == kept
    import sqlite3

    with sqlite3.connect(env["CAM_STORE"]) as conn:
        for table in ("nodes", "edges", "replicas", "members", "documents", "view_nodes"):
            rows = conn.execute(f"SELECT COUNT(*) FROM {table} WHERE memory = 'one'").fetchone()
            assert rows == (0,), table
    again = CliRunner().invoke(cli, ["delete", "--memory", "one", "--yes"], env=env)
    assert again.exit_code == 1 and "no memory 'one'" in again.output


def test_documents_are_deleted_after_every_id_is_checked(
    env: dict[str, str], text_file: Path
) -> None:
    other = text_file.with_name("other.txt")
    other.write_text(shared_file("haystacks/paul_graham/gap.txt").read_text()[8000:14000])
    run(env, "ingest", str(text_file), str(other), "--theta", "0.3", "--batch-size", "4")
    before = stats(env)
    chunks = {d["id"]: d["chunks"] for d in before["document_list"]}
    unknown = CliRunner().invoke(
        cli, ["delete", "--document", "gap.txt", "--document", "gap.tx", "--yes"], env=env
    )
    assert unknown.exit_code == 1
    assert unknown.output == (
        "Error: no document 'gap.tx' in memory 'default': its documents are gap.txt, other.txt\n"
    )
    refused = CliRunner().invoke(cli, ["delete", "--document", "gap.txt"], env=env, input="n\n")
    assert refused.exit_code == 1
    assert "delete 1 document (gap.txt) from memory 'default' in " in refused.output
    assert stats(env) == before
    deleted = run(env, "delete", "--document", "gap.txt", "--yes")
    assert deleted.exit_code == 0, deleted.output
    line = deleted.output.strip()
    assert line.startswith(f"deleted document 'gap.txt': {chunks['gap.txt']} chunks removed; ")
    after = stats(env)
    assert [d["id"] for d in after["document_list"]] == ["other.txt"]
    assert after["levels"][0]["nodes"] == chunks["other.txt"]
    as_json = run(env, "delete", "--document", "other.txt", "--yes", "--json")
    report = json.loads(as_json.output)
    assert report["deleted"] == "document" and report["document"] == "other.txt"
    assert report["chunks_removed"] == chunks["other.txt"]
    assert {"summaries_written", "summaries_removed", "levels"} <= set(report)
    empty = stats(env)
    assert empty["documents"] == 0 and empty["levels"] == []
    assert json.loads(run(env, "memories", "--json").output) == ["default"]  # still there


def test_an_ingest_that_fails_leaves_no_store_behind(env: dict[str, str], tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["ingest", str(tmp_path / "missing.txt")], env=env)
    assert result.exit_code == 1
    assert "no such file or folder" in result.output
    assert not Path(env["CAM_STORE"]).exists()


def test_ingest_sample_reads_the_book_shipped_with_the_package(env: dict[str, str]) -> None:
    result = run(env, "ingest", "--sample", "--batch-size", "256", "--json")
    assert result.exit_code == 0, result.output
    (document,) = stats(env)["document_list"]
    assert document["id"] == "frankenstein.txt"
    assert document["chunks"] == document["total"] > 400
    # The reader cut Project Gutenberg's header and licence away.
    answer = run(env, "ask", "Who is Victor's friend from Geneva?", "--strategy", "bm25", "--json")
    texts = " ".join(e["text"] for e in json.loads(answer.output)["evidence"])
    assert "Clerval" in texts
    assert "Project Gutenberg" not in texts
