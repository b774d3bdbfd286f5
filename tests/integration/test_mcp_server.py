"""`cam mcp` as an agent runs it: a subprocess, driven by the MCP SDK's own client over
stdio (and over streamable HTTP with --http), on a real text. The hashing embedder keeps
it fast; tests/unit/test_mcp_server.py covers each tool's cases in-process."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult

from tests.conftest import shared_file
from tests.unit.test_mcp_server import QUESTION, TOOLS

pytestmark = [pytest.mark.realdata]

ANSWER = "Greenland whaler"


@pytest.fixture(scope="module")
def letter() -> str:
    text = shared_file("haystacks/gutenberg/pg84.txt").read_text(encoding="utf-8")
    start = text.index("St. Petersburgh, Dec. 11th")
    return text[start : start + 12_000]


def server_env() -> dict[str, str]:
    """This environment without the CAM_* settings of whoever runs the tests."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAM_")}
    return env | {"CAM_EMBED_MODEL": "hashing:384", "HF_HUB_OFFLINE": "1"}


def cam_mcp(*args: str) -> list[str]:
    return [sys.executable, "-m", "cam_engine.cli", "mcp", *args]


def data(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def error(result: CallToolResult) -> str:
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert "\n" not in text and "Traceback" not in text
    return text


def test_stdio_end_to_end(tmp_path: Path, letter: str) -> None:
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    allowed.mkdir()
    outside.mkdir()
    (allowed / "more.txt").write_text(letter[6000:], encoding="utf-8")
    (outside / "other.txt").write_text("Text the server must not read.", encoding="utf-8")
    store = tmp_path / "m.db"
    command, *args = cam_mcp("--store", str(store), "--memory", "m", "--allow", str(allowed))
    params = StdioServerParameters(command=command, args=args, env=server_env())

    async def scenario() -> None:
        with (tmp_path / "server.log").open("w") as log:
            async with (
                stdio_client(params, errlog=log) as (read, write),
                ClientSession(read, write) as session,
            ):
                hello = await session.initialize()
                assert hello.server_info.name == "cam"
                assert hello.capabilities.tools is not None
                assert hello.capabilities.resources is not None
                assert "ingest_text" in (hello.instructions or "")

                tools = {t.name: t for t in (await session.list_tools()).tools}
                assert set(tools) == TOOLS
                for tool in tools.values():
                    assert tool.description and tool.input_schema["type"] == "object"
                assert tools["ask"].input_schema["required"] == ["question"]

                report = data(
                    await session.call_tool("ingest_text", {"text": letter, "document": "f"})
                )
                assert report["memory"] == "m" and report["chunks_added"] > 5
                assert report["store"] == str(store)

                answer = data(await session.call_tool("ask", {"question": QUESTION}))
                assert ANSWER in answer["answer"] and answer["backend"] == "extractive"
                ids = [e["node_id"] for e in answer["evidence"]]
                assert ids and any(
                    ANSWER in " ".join(e["text"].split()) for e in answer["evidence"]
                )
                for evidence in answer["evidence"][:3]:
                    node = data(
                        await session.call_tool("show_node", {"node_id": evidence["node_id"]})
                    )
                    assert node["id"] == evidence["node_id"] and node["text"] == evidence["text"]

                found = data(await session.call_tool("search", {"query": QUESTION, "top_k": 3}))
                assert len(found["nodes"]) == 3 and found["nodes"][0]["score"] > 0
                assert data(await session.call_tool("stats", {}))["documents"] == 1
                assert data(await session.call_tool("memories", {}))["memories"] == ["m"]

                refused = error(
                    await session.call_tool("ingest_file", {"path": str(outside / "other.txt")})
                )
                assert "outside the folders this server may read" in refused
                more = data(
                    await session.call_tool("ingest_file", {"path": str(allowed / "more.txt")})
                )
                assert more["documents"] == ["more.txt"] and more["chunks_added"] > 0

                missing = error(await session.call_tool("show_node", {"node_id": "no-such-id"}))
                assert missing.startswith("no node 'no-such-id' in memory 'm'")

                top = await session.read_resource("cam://memory/m/top")
                nodes = json.loads(top.contents[0].text)["nodes"]  # type: ignore[union-attr]
                assert nodes and all(n["id"] and n["text"] for n in nodes)

    anyio.run(scenario)
    assert "Traceback" not in (tmp_path / "server.log").read_text()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_port(port: int, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert server.poll() is None, log.read_text()
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"cam mcp --http did not listen on {port}: {log.read_text()}")


def test_streamable_http(tmp_path: Path, letter: str) -> None:
    port = free_port()
    log = tmp_path / "server.log"
    with log.open("wb") as errors:
        server = subprocess.Popen(
            cam_mcp("--store", str(tmp_path / "m.db"), "--memory", "m", "--http", str(port)),
            env=server_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,
        )
    try:
        wait_for_port(port, server, log)

        async def scenario() -> None:
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                assert client.server_info is not None and client.server_info.name == "cam"
                assert {t.name for t in (await client.list_tools()).tools} == TOOLS
                report = data(
                    await client.call_tool("ingest_text", {"text": letter, "document": "f"})
                )
                assert report["chunks_added"] > 5
                answer = data(await client.call_tool("ask", {"question": QUESTION}))
                assert ANSWER in answer["answer"]
                refused = error(await client.call_tool("ingest_file", {"path": str(tmp_path)}))
                assert "--allow" in refused

        anyio.run(scenario)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert "Traceback" not in log.read_text()
