"""``cam mcp``'s tools through the SDK's own client, connected in-process (no subprocess),
with the model-free hashing embedder. tests/integration/test_mcp_server.py runs the
server as `cam mcp` over stdio and HTTP."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import click
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult

from cam_engine import Environment, Memory, Settings
from cam_engine.cli.mcp import parse_http
from cam_engine.embed import HashingEmbedder
from cam_engine.faults import FaultPlan, FaultPoint, arm
from cam_engine.llm import ExtractiveSummarizer, SummaryResult
from cam_engine.serve.mcp import create_server
from cam_engine.serve.tools import READERS, MemoryTools
from cam_engine.store.sqlite import SqliteStore
from tests.conftest import shared_file

T = TypeVar("T")
TOOLS = {
    "ingest_text",
    "ingest_file",
    "delete_document",
    "ask",
    "search",
    "show_node",
    "stats",
    "memories",
}
QUESTION = "Where did Walton twice hire himself as an under-mate?"
ANSWER = "Greenland whaler"


@pytest.fixture(scope="module")
def letter() -> str:
    """Walton's first letter and more (about 12,000 characters of Frankenstein)."""
    text = shared_file("haystacks/gutenberg/pg84.txt").read_text(encoding="utf-8")
    start = text.index("St. Petersburgh, Dec. 11th")
    return text[start : start + 12_000]


def tools_for(
    store: Path,
    *,
    allow: Sequence[Path] = (),
    summarizer: Any = None,
    model: str = "hashing:64",
    readers: int = READERS,
) -> MemoryTools:
    env = Environment.from_env({"CAM_STORE": str(store), "CAM_EMBED_MODEL": model})
    return MemoryTools(
        None, "m", environment=env, allow=allow, summarizer=summarizer, readers=readers
    )


def serve(tools: MemoryTools, scenario: Callable[[Client], Awaitable[T]]) -> T:
    async def main() -> T:
        async with Client(create_server(tools)) as client:
            return await scenario(client)

    tools.start()
    try:
        return anyio.run(main)
    finally:
        tools.close()


def data(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    # The text content carries the same JSON, for clients that read only text.
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
    return result.structured_content


def error(result: CallToolResult) -> str:
    assert result.is_error
    (content,) = result.content
    text = content.text  # type: ignore[union-attr]
    assert "\n" not in text and "Traceback" not in text and "Error executing tool" not in text
    return text


def test_eight_tools_each_with_a_schema_and_a_description(tmp_path: Path) -> None:
    async def scenario(client: Client) -> None:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert set(listed) == TOOLS
        for tool in listed.values():
            assert tool.description and len(tool.description) > 40, tool.name
            assert tool.input_schema["type"] == "object"
        ask = listed["ask"].input_schema
        assert ask["required"] == ["question"]
        assert "prune-grow" in ask["properties"]["strategy"]["enum"]
        assert ask["properties"]["top_k"]["minimum"] == 1
        assert listed["ingest_text"].input_schema["required"] == ["text", "document"]
        assert listed["show_node"].input_schema["required"] == ["node_id"]
        assert listed["search"].annotations and listed["search"].annotations.read_only_hint
        assert listed["delete_document"].input_schema["required"] == ["document"]
        # Deleting, and ingesting under an id the memory holds, replace what was there.
        for name in ("delete_document", "ingest_text", "ingest_file"):
            hints = listed[name].annotations
            assert hints and hints.destructive_hint and not hints.read_only_hint, name

    serve(tools_for(tmp_path / "s.db"), scenario)


def test_ingest_then_ask_search_show_and_stats(tmp_path: Path, letter: str) -> None:
    async def scenario(client: Client) -> None:
        report = data(await client.call_tool("ingest_text", {"text": letter, "document": "f"}))
        assert report["documents"] == ["f"] and report["chunks_added"] > 5
        assert report["batches"][0]["summarizer"] == "extractive"
        again = data(await client.call_tool("ingest_text", {"text": letter, "document": "f"}))
        assert again["chunks_added"] == 0 and again["chunks_skipped"] == report["chunks_added"]

        answer = data(await client.call_tool("ask", {"question": QUESTION}))
        assert answer["backend"] == "extractive" and answer["strategy"] == "prune-grow"
        assert ANSWER in answer["answer"]
        assert ANSWER in " ".join(" ".join(e["text"].split()) for e in answer["evidence"])
        first = answer["evidence"][0]
        node = data(await client.call_tool("show_node", {"node_id": first["node_id"]}))
        assert node["id"] == first["node_id"] and node["text"] == first["text"]
        assert node["level"] == 0 and node["document"] == "f" and node["parents"]
        parent = data(await client.call_tool("show_node", {"node_id": node["parents"][0]}))
        assert first["node_id"] in parent["children"]

        flat = data(await client.call_tool("ask", {"question": QUESTION, "strategy": "bm25"}))
        assert flat["strategy"] == "bm25" and len(flat["evidence"]) <= 10
        few = data(await client.call_tool("ask", {"question": QUESTION, "top_k": 2}))
        assert len(few["turns"]) <= 5

        found = data(await client.call_tool("search", {"query": QUESTION, "top_k": 5}))
        scores = [n["score"] for n in found["nodes"]]
        assert len(scores) == 5 and scores == sorted(scores, reverse=True)
        assert {n["level"] for n in found["nodes"]} <= {0, 1, 2, 3}

        stats = data(await client.call_tool("stats", {}))
        assert stats["memory"] == "m" and stats["documents"] == 1
        assert stats["embedder"]["model"] == "hashing:64"
        listed = data(await client.call_tool("memories", {}))
        assert listed == {"store": str(tmp_path / "s.db"), "memories": ["m"], "serving": "m"}

    serve(tools_for(tmp_path / "s.db"), scenario)


def test_an_update_and_a_deletion_report_what_they_did(tmp_path: Path, letter: str) -> None:
    """ingest_text under a known id updates the document (its unchanged chunks kept);
    delete_document removes one document and leaves the other whole, and the reads see
    it gone."""
    other = shared_file("haystacks/gutenberg/pg1342.txt").read_text(encoding="utf-8")[20_000:26_000]
    cut = letter.index("\n\n", 9_000)  # the letter's last paragraphs are replaced
    revised = letter[:cut] + "\n\nThe ice closed around the ship before the sun rose."

    async def scenario(client: Client) -> None:
        first = data(await client.call_tool("ingest_text", {"text": letter, "document": "f"}))
        data(await client.call_tool("ingest_text", {"text": other, "document": "b"}))
        update = data(await client.call_tool("ingest_text", {"text": revised, "document": "f"}))
        assert update["documents"] == ["f"]
        assert 0 < update["chunks_removed"] < first["chunks_added"]
        assert update["chunks_kept"] == first["chunks_added"] - update["chunks_removed"]
        assert update["chunks_added"] >= 1
        (change,) = update["document_changes"]
        assert change["version"] == 2 and change["chunks_kept"] == update["chunks_kept"]
        stats = data(await client.call_tool("stats", {}))
        listed = {d["id"]: d for d in stats["document_list"]}
        assert listed["f"]["version"] == 2 and listed["b"]["version"] == 1
        assert listed["f"]["chunks"] == update["chunks_kept"] + update["chunks_added"]
        assert listed["f"]["updated_at"] and listed["f"]["sha256"]

        deleted = data(await client.call_tool("delete_document", {"document": "b"}))
        assert deleted["document"] == "b" and deleted["chunks_removed"] == listed["b"]["chunks"]
        assert {"summaries_written", "summaries_removed", "seconds"} <= set(deleted)
        after = data(await client.call_tool("stats", {}))
        assert [d["id"] for d in after["document_list"]] == ["f"]
        assert after["levels"][0]["nodes"] == listed["f"]["chunks"]
        found = data(await client.call_tool("search", {"query": other[:300], "top_k": 20}))
        assert found["nodes"] and all(n["document"] in ("f", None) for n in found["nodes"])
        text = error(await client.call_tool("delete_document", {"document": "b"}))
        assert text == "no document 'b' in memory 'm': its documents are f"

    serve(tools_for(tmp_path / "s.db"), scenario)


def test_reading_before_the_first_ingest_says_how_to_start(tmp_path: Path) -> None:
    async def scenario(client: Client) -> None:
        for name, arguments in (("ask", {"question": QUESTION}), ("stats", {})):
            text = error(await client.call_tool(name, arguments))
            assert "memory 'm' does not exist yet" in text and "ingest_text" in text
        listed = data(await client.call_tool("memories", {}))
        assert listed["memories"] == []

    serve(tools_for(tmp_path / "new.db"), scenario)
    assert not (tmp_path / "new.db").exists()  # reading created nothing


def test_an_existing_memory_is_opened_with_its_own_settings(tmp_path: Path, letter: str) -> None:
    store = tmp_path / "s.db"
    settings = Settings(embed_model="hashing:32", chunk_tokens=100)
    with Memory.open(store, "m", settings=settings, embedder=HashingEmbedder(32)) as memory:
        memory.ingest_text(letter, "f")

    async def scenario(client: Client) -> None:
        stats = data(await client.call_tool("stats", {}))
        assert stats["settings"]["chunk_tokens"] == 100
        assert stats["embedder"]["model"] == "hashing:32"
        assert ANSWER in data(await client.call_tool("ask", {"question": QUESTION}))["answer"]

    # CAM_EMBED_MODEL names another model: the memory's own settings win, as in `cam ask`.
    serve(tools_for(store, model=""), scenario)


def test_engine_and_argument_errors_are_one_line_tool_errors(tmp_path: Path, letter: str) -> None:
    async def scenario(client: Client) -> None:
        data(await client.call_tool("ingest_text", {"text": letter, "document": "f"}))
        text = error(await client.call_tool("show_node", {"node_id": "s1-zz"}))
        assert text.startswith("no node 's1-zz' in memory 'm'; ids like it: s1-")
        text = error(await client.call_tool("ask", {"question": QUESTION, "strategy": "nope"}))
        assert text.startswith("unknown strategy 'nope': use one of prune-grow")
        assert error(await client.call_tool("ask", {"question": " "})) == "the question is empty"
        text = error(await client.call_tool("ask", {"question": QUESTION, "top_k": 0}))
        assert text == (
            "invalid arguments for ask: top_k: Input should be greater than or equal to 1"
        )
        text = error(await client.call_tool("ask", {}))
        assert text == "invalid arguments for ask: question: Field required"
        text = error(await client.call_tool("ask", {"question": QUESTION, "strategy": "lookup"}))
        assert "no readagent view" in text
        text = error(await client.call_tool("delete_document", {"document": "g"}))
        assert text == "no document 'g' in memory 'm': its documents are f"
        text = error(await client.call_tool("delete_document", {"document": ""}))
        assert text.startswith("invalid arguments for delete_document: document:")
        assert error(await client.call_tool("ingest_text", {"text": " ", "document": "g"})) == (
            "document 'g' is empty"
        )

    serve(tools_for(tmp_path / "s.db"), scenario)


class FailingSummarizer:
    backend = "extractive"

    def summarize(self, texts: Sequence[str], *, max_words: int) -> SummaryResult:
        raise RuntimeError("the summarizer broke\nsecond line")


def test_an_unexpected_exception_is_a_tool_error_without_traceback(
    tmp_path: Path, letter: str
) -> None:
    async def scenario(client: Client) -> CallToolResult:
        return await client.call_tool("ingest_text", {"text": letter, "document": "f"})

    result = serve(tools_for(tmp_path / "s.db", summarizer=FailingSummarizer()), scenario)
    assert error(result) == (
        "ingest_text failed unexpectedly: RuntimeError: the summarizer broke second line"
    )


def test_ingest_file_reads_only_under_allowed_roots(tmp_path: Path, letter: str) -> None:
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    allowed.mkdir()
    outside.mkdir()
    (allowed / "letter.txt").write_text(letter, encoding="utf-8")
    (outside / "secret.txt").write_text("the secret plans of the pole expedition", "utf-8")
    (allowed / "link.txt").symlink_to(outside / "secret.txt")
    (allowed / "notes").mkdir()
    (allowed / "notes" / "a.txt").write_text("Notes on the voyage north.", "utf-8")

    async def scenario(client: Client) -> None:
        def ingest(path: Path | str, **extra: Any) -> Awaitable[CallToolResult]:
            return client.call_tool("ingest_file", {"path": str(path), **extra})

        text = error(await ingest(outside / "secret.txt"))
        assert text.startswith(f"{outside / 'secret.txt'}: outside the folders this server")
        assert str(allowed) in text
        assert "outside the folders" in error(await ingest(allowed / "link.txt"))
        assert "outside the folders" in error(await ingest(allowed / ".." / "outside"))
        assert "outside the folders" in error(await ingest("-"))  # never the server's stdin
        assert "no such file" in error(await ingest(allowed / "missing.txt"))

        report = data(await ingest(allowed / "letter.txt"))
        assert report["documents"] == ["letter.txt"] and report["chunks_added"] > 5
        named = data(await ingest(allowed / "notes" / "a.txt", document="notes"))
        assert named["documents"] == ["notes"]
        # A folder whose files include a link out of the allowed root is refused whole.
        assert "link.txt links outside" in error(await ingest(allowed))
        stats = data(await client.call_tool("stats", {}))
        assert stats["documents"] == 2

    serve(tools_for(tmp_path / "s.db", allow=[allowed]), scenario)


def test_ingest_file_without_allow_says_how_to_allow(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("Some text to read.", encoding="utf-8")

    async def scenario(client: Client) -> str:
        return error(await client.call_tool("ingest_file", {"path": str(tmp_path / "a.txt")}))

    text = serve(tools_for(tmp_path / "s.db"), scenario)
    assert "cam mcp --allow FOLDER" in text and "ingest_text" in text


class RecordingSummarizer:
    """The extractive summarizer, slowed down, noting the thread of each call (each tool
    call runs in a worker thread of its own)."""

    backend = "extractive"

    def __init__(self) -> None:
        self.inner = ExtractiveSummarizer()
        self.calls: list[int] = []
        self.active = 0
        self.most_active = 0
        self.lock = threading.Lock()

    def summarize(self, texts: Sequence[str], *, max_words: int) -> SummaryResult:
        with self.lock:
            self.active += 1
            self.most_active = max(self.most_active, self.active)
            self.calls.append(threading.get_ident())
        time.sleep(0.01)
        try:
            return self.inner.summarize(texts, max_words=max_words)
        finally:
            with self.lock:
                self.active -= 1


def test_concurrent_ingests_run_one_at_a_time(tmp_path: Path, letter: str) -> None:
    other = shared_file("haystacks/gutenberg/pg1342.txt").read_text(encoding="utf-8")[20_000:32_000]
    summarizer = RecordingSummarizer()

    async def scenario(client: Client) -> list[dict[str, Any]]:
        reports: list[dict[str, Any]] = []
        seed = {"text": "The memory is created by this first text.", "document": "seed"}
        data(await client.call_tool("ingest_text", seed))
        summarizer.calls.clear()

        async def ingest(text: str, document: str) -> None:
            arguments = {"text": text, "document": document, "batch_size": 4}
            reports.append(data(await client.call_tool("ingest_text", arguments)))

        async with anyio.create_task_group() as group:
            group.start_soon(ingest, letter, "a")
            group.start_soon(ingest, other, "b")
        return reports

    reports = serve(tools_for(tmp_path / "s.db", summarizer=summarizer), scenario)
    assert sorted(r["documents"][0] for r in reports) == ["a", "b"]
    assert all(r["chunks_added"] > 0 for r in reports)
    assert summarizer.most_active == 1
    # Each ingest's summaries were written in one run: the two never interleaved.
    runs = [c for i, c in enumerate(summarizer.calls) if i == 0 or c != summarizer.calls[i - 1]]
    assert len(runs) == len(set(runs)) == 2


def seeded_store(store: Path, letter: str) -> int:
    """A memory "m" holding the letter; its chunk count."""
    settings = Settings(embed_model="hashing:64")
    with Memory.open(store, "m", settings=settings, embedder=HashingEmbedder(64)) as memory:
        memory.ingest_text(letter, "f")
        return memory.count_chunks()


@contextmanager
def second_batch_held(marker: Path) -> Iterator[None]:
    """This process's next ingest holds its second batch written and not committed
    (the fault checkpoint applied:2) while ``marker`` exists."""
    arm(FaultPlan(pause_at=FaultPoint("applied", 2), pause_file=marker))
    try:
        yield
    finally:
        arm(None)


@contextmanager
def released_after(marker: Path, seconds: float = 60.0) -> Iterator[list[str]]:
    """Release the held batch on the way out, failed or not, and after ``seconds`` at
    the latest: a tool call waiting for it cannot be cancelled (the server's worker
    thread runs on), so a test that went wrong would hang instead of failing. Yields a
    list that says whether the deadline released it."""
    released: list[str] = []

    def release() -> None:
        released.append(f"released after {seconds:g} s: a read waited for the held batch")
        marker.unlink(missing_ok=True)

    timer = threading.Timer(seconds, release)
    timer.start()
    try:
        yield released
    finally:
        timer.cancel()
        marker.unlink(missing_ok=True)


async def until_exists(marker: Path) -> None:
    while not marker.exists():
        await anyio.sleep(0.01)


def test_reads_beside_an_open_batch_see_only_the_committed_batches(
    tmp_path: Path, letter: str
) -> None:
    """While an ingest holds its second batch written and uncommitted, every reading
    tool answers, from the batches committed before it; once the batch commits, the
    same reading memory (one reader here) finds its chunks: its vectors were read
    again."""
    other = shared_file("haystacks/gutenberg/pg1342.txt").read_text(encoding="utf-8")[20_000:32_000]
    tail = " ".join(other.split()[-40:])  # words of the document's last chunk
    store, marker = tmp_path / "s.db", tmp_path / "held"
    seeded = seeded_store(store, letter)

    def late(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Chunks of "b" past its first batch (four chunks): the held batch and later."""
        return [n for n in nodes if n["document"] == "b" and n["level"] == 0 and n["position"] >= 4]

    async def scenario(client: Client) -> None:
        report: dict[str, Any] = {}

        async def ingest() -> None:
            arguments = {"text": other, "document": "b", "batch_size": 4}
            report.update(data(await client.call_tool("ingest_text", arguments)))

        async def ask(question: str) -> None:
            answer = data(await client.call_tool("ask", {"question": question}))
            assert not released, released
            assert answer["evidence"] and not late(answer["evidence"]), answer["evidence"]

        with released_after(marker) as released:
            async with anyio.create_task_group() as group:
                group.start_soon(ingest)
                await until_exists(marker)
                async with anyio.create_task_group() as askers:
                    for question in (QUESTION, tail) * 4:
                        askers.start_soon(ask, question)
                stats = data(await client.call_tool("stats", {}))
                documents = {d["id"]: d["chunks"] for d in stats["document_list"]}
                assert documents == {"f": seeded, "b": 4}
                assert stats["levels"][0]["nodes"] == seeded + 4
                found = data(await client.call_tool("search", {"query": tail}))
                assert found["nodes"] and not late(found["nodes"])
                top = await client.read_resource("cam://memory/m/top")
                assert json.loads(top.contents[0].text)["nodes"]  # type: ignore[union-attr]
                first = found["nodes"][0]["id"]
                assert data(await client.call_tool("show_node", {"node_id": first}))["id"] == first
                assert not report and not released  # the ingest is still held
                marker.unlink()
        assert report["chunks_added"] > 8
        found = data(await client.call_tool("search", {"query": tail}))
        assert late(found["nodes"])
        stats = data(await client.call_tool("stats", {}))
        assert stats["levels"][0]["nodes"] == seeded + report["chunks_added"]

    with second_batch_held(marker):
        serve(tools_for(store, readers=1), scenario)


def test_without_isolated_snapshots_a_read_waits_for_the_ingest(
    tmp_path: Path, letter: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store whose reads are statement by statement (Neo4j) gets no reading memories:
    a read sent while an ingest's batch is held answers after the whole ingest."""
    other = shared_file("haystacks/gutenberg/pg1342.txt").read_text(encoding="utf-8")[20_000:32_000]
    store, marker = tmp_path / "s.db", tmp_path / "held"
    seeded = seeded_store(store, letter)
    monkeypatch.setattr(SqliteStore, "isolated_snapshots", False)

    async def scenario(client: Client) -> None:
        done: list[str] = []
        report: dict[str, Any] = {}

        async def ingest() -> None:
            arguments = {"text": other, "document": "b", "batch_size": 4}
            report.update(data(await client.call_tool("ingest_text", arguments)))
            done.append("ingest")

        async def stats() -> None:
            counts = data(await client.call_tool("stats", {}))["document_list"]
            assert report, f"stats answered while the batch was held: {counts}"
            assert {d["id"]: d["chunks"] for d in counts} == {
                "f": seeded,
                "b": report["chunks_added"],
            }
            done.append("stats")

        with released_after(marker) as released:
            async with anyio.create_task_group() as group:
                group.start_soon(ingest)
                await until_exists(marker)
                group.start_soon(stats)
                # Time for the read to reach the lock; were it not to wait, it would
                # answer meanwhile with the first batch only and fail above.
                await anyio.sleep(0.3)
                marker.unlink()
        assert done == ["ingest", "stats"] and not released

    with second_batch_held(marker):
        serve(tools_for(store), scenario)


def test_the_top_level_resource(tmp_path: Path, letter: str) -> None:
    async def scenario(client: Client) -> None:
        listed = [str(r.uri) for r in (await client.list_resources()).resources]
        assert listed == ["cam://memory/m/top"]
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["cam://memory/{name}/top"]
        with pytest.raises(MCPError, match="memory 'm' does not exist yet"):
            await client.read_resource("cam://memory/m/top")

        data(await client.call_tool("ingest_text", {"text": letter, "document": "f"}))
        (content,) = (await client.read_resource("cam://memory/m/top")).contents
        assert content.mime_type == "application/json"
        top = json.loads(content.text)  # type: ignore[union-attr]
        stats = data(await client.call_tool("stats", {}))
        assert top["memory"] == "m" and top["level"] == stats["levels"][-1]["level"] >= 1
        assert len(top["nodes"]) == stats["levels"][-1]["nodes"]
        for node in top["nodes"]:
            shown = data(await client.call_tool("show_node", {"node_id": node["id"]}))
            assert shown["text"] == node["text"] and shown["level"] == top["level"]
        with pytest.raises(MCPError, match="this server holds memory 'm', not 'other'"):
            await client.read_resource("cam://memory/other/top")

    serve(tools_for(tmp_path / "s.db"), scenario)


def test_a_store_that_cannot_be_opened_fails_each_tool_with_the_reason(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    store.write_text("not a database", encoding="utf-8")

    async def scenario(client: Client) -> list[str]:
        calls = [("stats", {}), ("ask", {"question": QUESTION}), ("search", {"query": "x"})]
        return [error(await client.call_tool(name, arguments)) for name, arguments in calls]

    for text in serve(tools_for(store), scenario):
        assert text == f"cannot open SQLite store {store}: file is not a database"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("8000", ("127.0.0.1", 8000)),
        (":8000", ("127.0.0.1", 8000)),
        ("0.0.0.0:9000", ("0.0.0.0", 9000)),
        ("localhost:1", ("localhost", 1)),
        ("[::1]:8000", ("::1", 8000)),
    ],
)
def test_http_address(value: str, expected: tuple[str, int]) -> None:
    assert parse_http(value) == expected


@pytest.mark.parametrize("value", ["", "host", "host:", "host:0", "host:70000", "host:x"])
def test_http_address_refused(value: str) -> None:
    with pytest.raises(click.BadParameter, match=r"expected \[HOST:\]PORT"):
        parse_http(value)


def test_ask_keeps_to_the_documents_given_and_cites_them(tmp_path: Path, letter: str) -> None:
    other = " ".join(f"Walton hired a ship in Greenland {i} times." for i in range(200))

    async def scenario(client: Client) -> None:
        data(await client.call_tool("ingest_text", {"text": letter, "document": "letter"}))
        data(await client.call_tool("ingest_text", {"text": other, "document": "decoy"}))
        ask = {"question": QUESTION, "strategy": "hybrid"}
        whole = data(await client.call_tool("ask", ask))
        assert {e["document"] for e in whole["evidence"]} == {"letter", "decoy"}
        kept = data(await client.call_tool("ask", {**ask, "documents": ["letter"]}))
        assert {e["document"] for e in kept["evidence"]} == {"letter"}
        for e in kept["evidence"]:
            assert letter[e["start_char"] : e["end_char"]] == e["text"]
            assert e["citation"] == f"letter:{e['start_char']}-{e['end_char']}"
        text = error(await client.call_tool("ask", {**ask, "documents": ["lettre"]}))
        assert "no document 'lettre'" in text and "decoy, letter" in text

    serve(tools_for(tmp_path / "s.db"), scenario)
