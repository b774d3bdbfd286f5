"""Questions, queries and texts given directly are bounded: past their limit (CAM_MAX_*)
they are refused in one line naming it, before any work, through the API and MCP alike;
a text given directly with a NUL is refused as a text file with one is."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from mcp import Client

from cam_engine import Memory
from cam_engine.config import Environment
from cam_engine.errors import InputError
from cam_engine.serve.tools import MemoryTools
from tests.unit.test_mcp_server import data, error, serve

TEXT = "Walton hired himself as an under-mate in a Greenland whaler.\n\nTwice."
HUGE = "whale " * 700_000  # 4 MiB


def _env(store: Path, **limits: str) -> Environment:
    return Environment.from_env(
        {"CAM_STORE": str(store), "CAM_EMBED_MODEL": "hashing:64", **limits}
    )


def _memory(tmp_path: Path, **limits: str) -> Memory:
    return Memory.open(tmp_path / "m.db", "m", environment=_env(tmp_path / "m.db", **limits))


def test_a_question_past_the_limit_is_refused_naming_it(tmp_path: Path) -> None:
    with _memory(tmp_path) as memory:
        memory.ingest_text(TEXT, "walton")
        for call in (memory.ask, memory.locate):
            with pytest.raises(InputError) as refused:
                call(HUGE)
            assert str(refused.value).endswith(
                "4,200,000 characters: refused, over the limit of 10,000 characters "
                "(raise it with CAM_MAX_QUERY_CHARS)"
            )
    with _memory(tmp_path, CAM_MAX_QUERY_CHARS="20") as memory:
        assert memory.ask("Who was a whaler?").evidence  # 17 characters: within
        with pytest.raises(InputError, match=r"^the question: 21 characters: refused"):
            memory.ask("Who was it, a whaler?")


def test_a_text_past_the_limit_is_refused_and_nothing_is_stored(tmp_path: Path) -> None:
    with _memory(tmp_path, CAM_MAX_TEXT_MB="0.001") as memory:  # 1,048 characters
        with pytest.raises(InputError) as refused:
            memory.ingest_text("word " * 210, "long")
        message = str(refused.value)
        assert message.startswith("document 'long': 1,050 characters: refused, over the limit")
        assert message.endswith("1,048 characters (raise it with CAM_MAX_TEXT_MB)")
        memory.ingest_text("word " * 200, "short")
        assert [d.id for d in memory.documents()] == ["short"]


def test_a_text_with_a_nul_is_refused_as_a_binary_file_is(tmp_path: Path) -> None:
    with _memory(tmp_path) as memory:
        with pytest.raises(InputError) as refused:
            memory.ingest_text("Call me Ishmael.\x00\x01 Some years ago.", "nul")
        assert str(refused.value) == (
            "document 'nul': looks binary (NUL bytes), not a text document"
        )
        assert memory.documents() == []


def test_mcp_refuses_long_queries_and_texts_and_nuls_in_one_line(tmp_path: Path) -> None:
    env = _env(tmp_path / "s.db", CAM_MAX_TEXT_MB="0.001")

    async def scenario(client: Client) -> None:
        data(await client.call_tool("ingest_text", {"text": TEXT, "document": "walton"}))
        for tool, argument in (("search", "query"), ("ask", "question")):
            text = error(await client.call_tool(tool, {argument: HUGE}))
            assert text.endswith(
                "refused, over the limit of 10,000 characters (raise it with CAM_MAX_QUERY_CHARS)"
            )
        text = error(await client.call_tool("ingest_text", {"text": "a " * 600, "document": "g"}))
        assert text.startswith("document 'g': 1,200 characters: refused, over the limit")
        text = error(await client.call_tool("ingest_text", {"text": "a\x00b", "document": "n"}))
        assert text == "document 'n': looks binary (NUL bytes), not a text document"
        stats = data(await client.call_tool("stats", {}))
        assert stats["documents"] == 1

    serve(MemoryTools(None, "m", environment=env), scenario)


def test_mcp_refuses_a_bad_text_without_waiting_for_an_ingest(tmp_path: Path) -> None:
    tools = MemoryTools(None, "m", environment=_env(tmp_path / "s.db"))
    tools.load()
    refused: list[str] = []

    def call() -> None:
        try:
            tools.ingest_text("a\x00b", "n")
        except InputError as exc:
            refused.append(str(exc))

    with tools._lock:  # an ingest in progress
        caller = threading.Thread(target=call)
        caller.start()
        caller.join(30)
        assert not caller.is_alive() and refused
    tools.close()
