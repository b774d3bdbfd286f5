"""The Python API's edges: what a caller gets for mistakes, without the CLI in between."""

from __future__ import annotations

from pathlib import Path

import pytest

from cam_engine import (
    ConfigError,
    Environment,
    InputError,
    Memory,
    NotFoundError,
    Settings,
    StoreError,
)
from cam_engine.embed import HashingEmbedder
from tests.conftest import shared_file

EMBEDDER = HashingEmbedder(64)
NO_ENV = Environment.from_env({})


def text_file(tmp_path: Path) -> Path:
    path = tmp_path / "gap.txt"
    path.write_text(shared_file("haystacks/paul_graham/gap.txt").read_text()[:3000])
    return path


def test_one_path_is_one_document_not_its_characters(tmp_path: Path) -> None:
    path = text_file(tmp_path)
    with Memory.open(tmp_path / "m.db", "m", embedder=EMBEDDER, environment=NO_ENV) as memory:
        report = memory.ingest(str(path))
        assert not report.errors and report.chunks_added > 0
        assert [d.id for d in memory.store.documents()] == ["gap.txt"]


def test_bad_paths_are_reported_with_their_source(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.db", "m", embedder=EMBEDDER, environment=NO_ENV) as memory:
        report = memory.ingest(["", str(tmp_path / "missing.txt")])
        assert [e.source for e in report.errors] == ["", str(tmp_path / "missing.txt")]
        assert "empty path" in report.errors[0].message
        assert report.chunks_added == 0 and memory.store.documents() == []


def test_a_new_memory_takes_its_model_from_the_embedder_given(tmp_path: Path) -> None:
    settings = Settings(theta=0.4)  # the model left at its default
    with Memory.open(
        tmp_path / "m.db", "m", settings=settings, embedder=EMBEDDER, environment=NO_ENV
    ) as memory:
        assert memory.settings.embed_model == EMBEDDER.name and memory.settings.theta == 0.4
    # Reopening with the same settings (the model again left at its default) is no conflict.
    with Memory.open(
        tmp_path / "m.db", "m", settings=settings, embedder=EMBEDDER, environment=NO_ENV
    ) as memory:
        assert memory.settings.theta == 0.4
    named = Settings(embed_model="other-model")
    with pytest.raises(ConfigError, match="vectors of two models cannot be mixed"):
        Memory.open(tmp_path / "n.db", "m", settings=named, embedder=EMBEDDER, environment=NO_ENV)


def test_reading_a_missing_memory_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="no store at"):
        Memory.open(tmp_path / "none.db", "m", embedder=EMBEDDER, create=False)
    assert not (tmp_path / "none.db").exists()


def test_a_closed_memory_says_so(tmp_path: Path) -> None:
    memory = Memory.open(tmp_path / "m.db", "m", embedder=EMBEDDER, environment=NO_ENV)
    memory.ingest_text("One sentence about whales. Another about ships.", "d")
    memory.close()
    with pytest.raises(StoreError, match="is closed"):
        memory.stats()


def test_empty_text_is_an_input_error(tmp_path: Path) -> None:
    memory = Memory.open(tmp_path / "m.db", "m", embedder=EMBEDDER, environment=NO_ENV)
    with memory, pytest.raises(InputError, match="empty"):
        memory.ingest_text("   ", "d")


def test_the_top_level_covers_every_chunk(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "m.db", "m", embedder=EMBEDDER, environment=NO_ENV) as memory:
        assert memory.top_level() == (0, [])
        memory.ingest(shared_file("haystacks/paul_graham/gap.txt"))
        level, nodes = memory.top_level()
        assert level == max(row["level"] for row in memory.stats()["levels"]) >= 1
        assert nodes and {n.level for n in nodes} == {level}
        assert [n.position for n in nodes] == sorted(n.position or 0.0 for n in nodes)
        # Every chunk is reachable from the top level, walking down through members.
        reached, frontier = set(), [n.id for n in nodes]
        while frontier:
            reached.update(frontier)
            views = [memory.node(i) for i in frontier]
            frontier = [c.id for v in views if v is not None for c in v.children]
        assert {c.id for c in memory.chunks()} <= reached


def test_an_extractive_answer_cites_the_evidence_span_of_each_sentence(tmp_path: Path) -> None:
    text = (
        "Victor studied at the university for two years and his work went well.\n\n"
        "He went at last to the remotest of the Orkneys to build the second creature, "
        "on a rock whose high sides were beaten by the waves.\n\n"
        "The weather was cold in that northern place."
    )
    with Memory.open(tmp_path / "m.db", "m", embedder=EMBEDDER, environment=NO_ENV) as memory:
        memory.ingest_text(text, "book")
        result = memory.ask("Where did Victor go to build the second creature?")
    assert "Orkneys" in result.answer
    assert result.answer_citations
    quoted = [
        " ".join(result.evidence[c.evidence].text[c.start : c.end].split())
        for c in result.answer_citations
    ]
    assert all(q in result.answer for q in quoted)
    assert any("Orkneys" in q for q in quoted)
    # ... and where it is in the document: text[start_char:end_char] is the sentence.
    orkneys = next(
        c
        for c in result.answer_citations
        if "Orkneys" in result.evidence[c.evidence].text[c.start : c.end]
    )
    assert orkneys.document == "book" and orkneys.start_char is not None
    assert text[orkneys.start_char : orkneys.end_char].startswith("He went at last")
    assert orkneys.citation == f"book:{orkneys.start_char}-{orkneys.end_char}"
    assert result.to_dict()["answer_citations"][0].keys() == {
        "evidence",
        "start",
        "end",
        "document",
        "start_char",
        "end_char",
        "citation",
    }


def test_documents_are_deleted_only_once_every_id_is_known(tmp_path: Path) -> None:
    essay = shared_file("haystacks/paul_graham/gap.txt").read_text()
    with Memory.open(tmp_path / "m.db", "m", embedder=EMBEDDER, environment=NO_ENV) as memory:
        memory.ingest_documents([("a", essay[:3000]), ("b", essay[3000:6000])], batch_size=4)
        memory.ingest_text(essay[6000:9000], "c", batch_size=4)
        before = memory.stats()
        with pytest.raises(NotFoundError) as missing:
            memory.delete_documents(["a", "b", "d"])
        assert str(missing.value) == "no document 'd' in memory 'm': its documents are a, b, c"
        assert memory.stats() == before  # a and b are still there
        heard: list[str | None] = []
        reports = memory.delete_documents(
            ["a", "c", "a"], on_deleted=lambda r: heard.append(r.document)
        )
        assert heard == ["a", "c"] and [r.document for r in reports] == heard
        chunks = {d["id"]: d["chunks"] for d in before["document_list"]}
        assert [r.chunks_removed for r in reports] == [chunks["a"], chunks["c"]]
        assert [d.id for d in memory.documents()] == ["b"]
        assert {c.doc_id for c in memory.chunks()} == {"b"}


def test_ingest_names_a_folders_documents_with_a_prefix(tmp_path: Path) -> None:
    folder = tmp_path / "essays"
    folder.mkdir()
    text_file(folder)
    with Memory.open(tmp_path / "m.db", "m", embedder=EMBEDDER, environment=NO_ENV) as memory:
        report = memory.ingest([folder], document_prefix="pg")
        assert not report.errors and [d.id for d in memory.documents()] == ["pg/gap.txt"]
        with pytest.raises(InputError, match=r"would both be document 'gap\.txt'"):
            memory.ingest([folder, text_file(tmp_path)])
        assert [d.id for d in memory.documents()] == ["pg/gap.txt"]


def test_the_hashing_model_named_without_its_size_opens_and_reopens(tmp_path: Path) -> None:
    env = Environment.from_env({"CAM_EMBED_MODEL": "hashing", "CAM_STORE": str(tmp_path / "m.db")})
    with Memory.open(environment=env) as memory:
        memory.ingest_text("A note about whales and the sea.", "note")
        assert memory.settings.embed_model == "hashing:384"
    with Memory.open(environment=env, create=False) as memory:
        assert [d.id for d in memory.documents()] == ["note"]
    with Memory.open(
        tmp_path / "n.db", settings=Settings(embed_model="hashing"), environment=env
    ) as memory:
        assert memory.embedder.name == memory.settings.embed_model == "hashing:384"
