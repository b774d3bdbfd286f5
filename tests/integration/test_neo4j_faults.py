"""Neo4j failures a user meets: no server, wrong password, the server gone mid-batch.

The mid-batch test stops and restarts a server, so it runs its OWN instance of
docker/neo4j-local (a private home under pytest's temp dir, free ports, the cached jars
linked in); the shared server on 7687 is never touched. Without Java 17/21 or the cached
jars those tests skip; with CAM_REQUIRE_NEO4J=1 (CI) they fail instead.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

import pytest
from click.testing import CliRunner, Result

from cam_engine import Memory
from cam_engine.bench.neo4j_private import Neo4jUnavailable, PrivateNeo4j, free_port
from cam_engine.chunking import chunk_document
from cam_engine.cli.main import cli
from cam_engine.config import Settings
from cam_engine.embed import HashingEmbedder
from cam_engine.engine.ingest import IngestPipeline
from cam_engine.engine.reports import BatchReport
from cam_engine.errors import CamError, StoreError
from cam_engine.llm import ExtractiveSummarizer
from cam_engine.llm.base import SummaryResult
from cam_engine.store.neo4j import Neo4jStore
from tests.conftest import shared_file
from tests.invariants import check_memory

pytestmark = pytest.mark.neo4j

DOCUMENT = "haystacks/paul_graham/gap.txt"
DOC_ID = "gap"
BATCH = 32
STOP_AFTER = 2  # whole batches committed before the server is stopped inside the next one
# An authenticated server (e.g. docker/docker-compose.yml) for the wrong-password case.
AUTH_URI = os.environ.get("CAM_TEST_NEO4J_AUTH_URI")
AUTH_USER = os.environ.get("CAM_TEST_NEO4J_AUTH_USER", "neo4j")


def assert_one_line_naming(message: str, uri: str) -> None:
    assert uri in message, message
    assert "\n" not in message.strip(), f"not one line: {message!r}"
    assert "Traceback" not in message, message


def cam(args: Sequence[str], **env: str) -> Result:
    # Environment the CLI would otherwise pick up from the developer's shell.
    clean = {"CAM_STORE": None, "CAM_MEMORY": None, "CAM_NEO4J_URI": None}
    clean |= {"CAM_NEO4J_USER": None, "CAM_NEO4J_PASSWORD": None, "CAM_NEO4J_DATABASE": None}
    return CliRunner().invoke(cli, list(args), env={**clean, **env})


def assert_cli_error(result: Result, uri: str) -> None:
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].startswith("Error: "), result.output
    assert_one_line_naming(lines[0], uri)


# --- no server -------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["bolt", "neo4j"])
def test_opening_a_memory_without_a_server_names_the_uri(scheme: str) -> None:
    uri = f"{scheme}://127.0.0.1:{free_port()}"
    with pytest.raises(StoreError) as caught:
        Memory.open(uri, "faults", embedder=HashingEmbedder(64))
    assert isinstance(caught.value, CamError)
    assert_one_line_naming(str(caught.value), uri)


def test_cli_without_a_server_exits_1_with_one_error_line() -> None:
    uri = f"bolt://127.0.0.1:{free_port()}"
    assert_cli_error(cam(["stats", "--store", uri]), uri)


# --- wrong password --------------------------------------------------------------------


@pytest.mark.skipif(
    AUTH_URI is None,
    reason=(
        "needs a Neo4j server with authentication: set CAM_TEST_NEO4J_AUTH_URI (and "
        "CAM_TEST_NEO4J_AUTH_USER) e.g. to docker/docker-compose.yml's server. "
        "docker/neo4j-local always writes dbms.security.auth_enabled=false and probes "
        "Bolt without credentials, so it cannot start an authenticated instance"
    ),
)
def test_wrong_password_is_one_line_naming_the_uri() -> None:
    assert AUTH_URI is not None
    wrong = f"wrong-{uuid.uuid4().hex}"
    with pytest.raises(StoreError) as caught:
        Neo4jStore.connect(AUTH_URI, "faults", user=AUTH_USER, password=wrong)
    assert_one_line_naming(str(caught.value), AUTH_URI)
    assert_cli_error(
        cam(["stats", "--store", AUTH_URI], CAM_NEO4J_USER=AUTH_USER, CAM_NEO4J_PASSWORD=wrong),
        AUTH_URI,
    )


# --- a private server instance ---------------------------------------------------------


def unavailable(reason: str) -> NoReturn:
    if os.environ.get("CAM_REQUIRE_NEO4J") == "1":
        pytest.fail(f"CAM_REQUIRE_NEO4J=1 but a private Neo4j instance cannot run: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateNeo4j]:
    try:
        server = PrivateNeo4j(tmp_path_factory.mktemp("neo4j-faults"))
    except Neo4jUnavailable as exc:
        unavailable(str(exc))
    server.start()
    try:
        yield server
    finally:
        server.stop()


# --- the server stopped in the middle of a batch ---------------------------------------


class StopServerSummarizer(ExtractiveSummarizer):
    """Stops the server from inside a batch's transaction (summaries are written there),
    on the first summary after ``after`` batches have been committed, then carries on."""

    def __init__(self, server: PrivateNeo4j, committed: list[BatchReport], after: int) -> None:
        self.server = server
        self.committed = committed
        self.after = after
        self.stopped_after: int | None = None  # batches committed when the server stopped

    def summarize(self, texts: Sequence[str], *, max_words: int) -> SummaryResult:
        if self.stopped_after is None and len(self.committed) >= self.after:
            self.server.stop()
            self.stopped_after = len(self.committed)
        return super().summarize(texts, max_words=max_words)


def sqlite_states(
    path: Path, text: str, settings: Settings, embedder: HashingEmbedder
) -> list[dict[str, Any]]:
    """Stats of an uninterrupted SQLite ingest of the same batches, after each batch."""
    states: list[dict[str, Any]] = []
    with Memory.open(path, "reference", settings=settings, embedder=embedder) as memory:
        memory.ingest_text(
            text, DOC_ID, batch_size=BATCH, on_batch=lambda _: states.append(memory.stats())
        )
    return states


def graph_of(stats: dict[str, Any]) -> dict[str, Any]:
    return {key: stats[key] for key in ("documents", "levels", "overlap")}


def test_server_stopped_mid_batch_keeps_whole_batches_and_ingest_resumes(
    instance: PrivateNeo4j, tmp_path: Path
) -> None:
    text = shared_file(DOCUMENT).read_text(encoding="utf-8")
    embedder = HashingEmbedder(64)
    settings = Settings(embed_model=embedder.name, theta=0.3, chunk_tokens=60)
    total = len(chunk_document(DOC_ID, text, settings.chunk_tokens))
    assert total > (STOP_AFTER + 1) * BATCH, "the document must outlast the stopped batch"
    reference = sqlite_states(tmp_path / "reference.db", text, settings, embedder)
    name = f"faults{uuid.uuid4().hex[:8]}"

    committed: list[BatchReport] = []
    summarizer = StopServerSummarizer(instance, committed, STOP_AFTER)
    memory = Memory.open(
        Neo4jStore.connect(instance.uri, name),
        name,
        settings=settings,
        embedder=embedder,
        summarizer=summarizer,
    )
    try:
        with pytest.raises(StoreError) as caught:
            memory.ingest_text(text, DOC_ID, batch_size=BATCH, on_batch=committed.append)
    finally:
        memory.close()
    assert summarizer.stopped_after is not None, "the server was never stopped"
    assert_one_line_naming(str(caught.value), instance.uri)
    # The batch in flight did not report success; earlier ones did, all complete.
    assert len(committed) == summarizer.stopped_after >= STOP_AFTER
    assert [b.chunks_added for b in committed] == [BATCH] * len(committed)
    kept = len(committed) * BATCH

    instance.start()
    with Memory.open(
        Neo4jStore.connect(instance.uri, name), name, settings=settings, embedder=embedder
    ) as memory:
        stats = memory.stats()
        assert stats["levels"][0]["nodes"] == kept
        document = memory.store.get_document(DOC_ID)
        assert document is not None and document.chunks == kept
        # Exactly the memory an uninterrupted ingest had after the same batches.
        assert graph_of(stats) == graph_of(reference[len(committed) - 1])
        check_memory(memory.store, max_cluster_size=settings.max_cluster_size)

        report = memory.ingest_text(text, DOC_ID, batch_size=BATCH)
        assert sum(b.chunks_kept for b in report.batches) == kept
        assert report.chunks_added == total - kept
        stats = memory.stats()
        assert stats["levels"][0]["nodes"] == total
        document = memory.store.get_document(DOC_ID)
        assert document is not None and document.chunks == total
        assert graph_of(stats) == graph_of(reference[-1])
        check_memory(memory.store, max_cluster_size=settings.max_cluster_size)


def test_cli_ingest_cut_off_says_what_was_kept_and_the_same_command_resumes(
    instance: PrivateNeo4j, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`cam ingest` when the server goes away inside a batch: like Ctrl-C, one line says
    how many chunks the committed batches kept and that the same command resumes; once
    the server is back, that command adds exactly the rest."""
    text = shared_file(DOCUMENT).read_text(encoding="utf-8")
    path = tmp_path / "gap.txt"
    path.write_text(text, encoding="utf-8")
    total = len(chunk_document(path.name, text, 60))
    name = f"faults{uuid.uuid4().hex[:8]}"
    args = ["ingest", str(path), "--store", instance.uri, "--memory", name]
    args += ["--batch-size", str(BATCH), "--theta", "0.3", "--chunk-tokens", "60"]
    model = {"CAM_EMBED_MODEL": HashingEmbedder(64).name}

    # The CLI builds its own pipeline and summarizer: count its batches, and stop the
    # server from inside the first summary of the batch after STOP_AFTER of them.
    started: list[int] = []  # batch numbers begun
    stopped_after: list[int] = []  # batches committed when the server was stopped
    add_batch = IngestPipeline._add_batch
    summarize = ExtractiveSummarizer.summarize

    def counted(self: IngestPipeline, *args: Any, **kwargs: Any) -> BatchReport:
        started.append(len(started))
        return add_batch(self, *args, **kwargs)

    def stopping(
        self: ExtractiveSummarizer, texts: Sequence[str], *, max_words: int
    ) -> SummaryResult:
        if not stopped_after and len(started) > STOP_AFTER:
            instance.stop()
            stopped_after.append(len(started) - 1)
        return summarize(self, texts, max_words=max_words)

    monkeypatch.setattr(IngestPipeline, "_add_batch", counted)
    monkeypatch.setattr(ExtractiveSummarizer, "summarize", stopping)
    cut = cam(args, **model)
    monkeypatch.undo()
    assert stopped_after == [STOP_AFTER], "the server was never stopped"
    kept = STOP_AFTER * BATCH
    assert cut.exit_code == 1, cut.output
    assert_cli_error(cut, instance.uri)
    assert (
        f"{kept} new chunks from the batches committed so far are kept; run the same "
        "command again to resume" in cut.output
    ), cut.output

    instance.start()
    again = cam(args, **model)
    assert again.exit_code == 0, again.output
    assert f"ingested {total - kept} new chunks" in again.output, again.output
    stats = json.loads(cam(["stats", "--store", instance.uri, "--memory", name, "--json"]).output)
    (document,) = stats["document_list"]
    assert {k: document[k] for k in ("id", "source", "chunks", "total", "version")} == {
        "id": path.name,
        "source": str(path),
        "chunks": total,
        "total": total,
        "version": 1,  # resumed, not changed
    }
    assert stats["levels"][0]["nodes"] == total and stats["partial_documents"] == []
