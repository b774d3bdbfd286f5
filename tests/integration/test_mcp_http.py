"""`cam mcp` against hostile HTTP clients, and stopped mid-ingest: a real server in a
subprocess, raw sockets and ``http.client`` on loopback, the hashing embedder.

- Host and Origin are checked whatever address the server binds (127.0.0.2 here: a
  loopback address the SDK does not recognize by name), a bearer token is checked when
  one is given, and a non-loopback address without a token is refused at start;
- a request that does not arrive whole within --request-timeout is closed, and slow
  connections beyond --max-connections neither keep a normal client out nor, with the
  file descriptor limit lowered, fill the log;
- SIGTERM (and Ctrl-C) end the server within seconds while an ingest holds a batch
  written and uncommitted, and the memory then holds only whole batches.

Every wait is bounded by a count and a generous deadline; none asserts a speed."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from cam_engine import Memory, Settings
from cam_engine.embed import HashingEmbedder
from tests.invariants import check_memory

ALT_LOOPBACK = "127.0.0.2"  # on Linux all of 127/8 is loopback, but it is not "127.0.0.1"
TOKEN = "s3cret-for-tests-only-7f2a"
EVIL = "evil.example"
INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
)
START_SECONDS = 60  # for the server to listen, or a call to come back: never reached


def server_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAM_")}
    return env | {"CAM_EMBED_MODEL": "hashing:64", "HF_HUB_OFFLINE": "1"} | extra


def cam_mcp(*args: str) -> list[str]:
    return [sys.executable, "-m", "cam_engine.cli", "mcp", *args]


def free_port(host: str) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


class Server:
    """``cam mcp`` running in a subprocess, its stderr in a file."""

    def __init__(self, args: list[str], log: Path, env: dict[str, str], **popen: Any) -> None:
        self.log = log
        with log.open("wb") as errors:
            self.process = subprocess.Popen(
                cam_mcp(*args), env=env, stderr=errors, **({"stdout": subprocess.DEVNULL} | popen)
            )

    def wait_for_port(self, host: str, port: int) -> None:
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.stderr()
            with contextlib.suppress(OSError), socket.create_connection((host, port), 0.5):
                return
            time.sleep(0.1)
        raise AssertionError(f"cam mcp did not listen on {host}:{port}: {self.stderr()}")

    def stderr(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=START_SECONDS)


@contextlib.contextmanager
def http_server(
    tmp_path: Path, host: str, *args: str, env: dict[str, str] | None = None, **popen: Any
) -> Iterator[tuple[Server, int]]:
    port = free_port(host)
    server = Server(
        ["--store", str(tmp_path / "m.db"), "--memory", "m", "--http", f"{host}:{port}", *args],
        tmp_path / "server.log",
        env or server_env(),
        **popen,
    )
    try:
        server.wait_for_port(host, port)
        yield server, port
    finally:
        server.stop()


def initialize(
    host: str, port: int, headers: dict[str, str] | None = None, *, timeout: float = START_SECONDS
) -> int:
    """The status of an MCP initialize request with these headers (Host: HOST:PORT
    unless given)."""
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        connection.request(
            "POST",
            "/mcp",
            INITIALIZE,
            {
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                **(headers or {}),
            },
        )
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


# --- Host, Origin and token ---------------------------------------------------------------


def test_host_and_origin_are_checked_on_any_bind_address(tmp_path: Path) -> None:
    for host in (ALT_LOOPBACK, "127.0.0.1"):
        folder = tmp_path / host
        folder.mkdir()
        extra = ("--allow-host", "agents.lan", "--allow-origin", "https://app.example")
        with http_server(folder, host, *extra) as (server, port):
            assert initialize(host, port) == 200
            assert initialize(host, port, {"Host": EVIL}) == 421
            assert initialize(host, port, {"Host": f"{EVIL}:{port}"}) == 421
            assert initialize(host, port, {"Origin": f"http://{EVIL}"}) == 403
            assert initialize(host, port, {"Origin": f"http://{host}:{port}"}) == 200
            assert initialize(host, port, {"Host": f"localhost:{port}"}) == 200
            assert initialize(host, port, {"Host": f"agents.lan:{port}"}) == 200
            assert initialize(host, port, {"Origin": "https://app.example"}) == 200
            assert initialize(host, port, {"Origin": "https://app.example.evil.example"}) == 403
        said = server.stderr()
        assert "Traceback" not in said
        assert f"serving http://{host}:{port}/mcp; protected by no token" in said


def test_a_token_is_required_when_given(tmp_path: Path) -> None:
    env = server_env(CAM_MCP_TOKEN=TOKEN)
    with http_server(tmp_path, ALT_LOOPBACK, env=env) as (server, port):
        assert initialize(ALT_LOOPBACK, port) == 401
        assert initialize(ALT_LOOPBACK, port, {"Authorization": "Bearer wrong"}) == 401
        assert initialize(ALT_LOOPBACK, port, {"Authorization": TOKEN}) == 401
        good = {"Authorization": f"Bearer {TOKEN}"}
        assert initialize(ALT_LOOPBACK, port, good) == 200
        assert initialize(ALT_LOOPBACK, port, good | {"Host": EVIL}) == 421
        assert initialize(ALT_LOOPBACK, port, good | {"Origin": f"http://{EVIL}"}) == 403

        async def scenario() -> None:  # the SDK's own client, with the token in its headers
            web = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"})
            transport = streamable_http_client(f"http://{ALT_LOOPBACK}:{port}/mcp", http_client=web)
            async with web, Client(transport) as client:
                assert client.server_info is not None and client.server_info.name == "cam"
                assert (await client.call_tool("memories", {})).is_error is False

        anyio.run(scenario)
    said = server.stderr()
    assert TOKEN not in said and "protected by a bearer token" in said


def test_a_non_loopback_address_without_a_token_is_refused_at_start(tmp_path: Path) -> None:
    # 192.0.2.1 (TEST-NET-1) is on no interface here: without the check it would fail to
    # bind instead, and nothing is ever exposed.
    result = subprocess.run(
        cam_mcp("--store", str(tmp_path / "m.db"), "--http", "192.0.2.1:8765"),
        env=server_env(),
        capture_output=True,
        text=True,
        timeout=START_SECONDS,
    )
    assert result.returncode == 2
    assert "needs a token" in result.stderr and "CAM_MCP_TOKEN" in result.stderr
    assert "Traceback" not in result.stderr


# --- slow clients -------------------------------------------------------------------------


def read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (the socket's
    timeout fails the test if it never does)."""
    received = b""
    while chunk := sock.recv(4096):
        received += chunk
    return received


def test_a_request_that_does_not_arrive_in_time_is_closed(tmp_path: Path) -> None:
    with http_server(tmp_path, "127.0.0.1", "--request-timeout", "1") as (server, port):
        address = ("127.0.0.1", port)
        silent = socket.create_connection(address, timeout=START_SECONDS)
        half_headers = socket.create_connection(address, timeout=START_SECONDS)
        half_headers.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty")
        half_body = socket.create_connection(address, timeout=START_SECONDS)
        half_body.sendall(
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json"
            "\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n"
            '{"jsonrpc": "2.0",'.encode()
        )
        for sock in (silent, half_headers):
            with sock:
                assert read_until_closed(sock).startswith(b"HTTP/1.1 408 ")
        with half_body:
            assert b" 200 " not in read_until_closed(half_body)
        assert initialize("127.0.0.1", port) == 200  # a whole request is still answered
    assert "Traceback" not in server.stderr()


def lower_fd_limit(limit: int) -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))


def test_slow_connections_past_the_fd_limit_keep_no_client_out_and_the_log_short(
    tmp_path: Path,
) -> None:
    fd_limit, slow_count, cap = 128, 200, 32
    with http_server(
        tmp_path,
        "127.0.0.1",
        "--max-connections",
        str(cap),
        preexec_fn=lambda: lower_fd_limit(fd_limit),
    ) as (server, port):
        slow: list[socket.socket] = []
        stop = threading.Event()

        def dribble() -> None:  # a header byte every half second on each connection
            while not stop.wait(0.5):
                for sock in slow:
                    with contextlib.suppress(OSError):
                        sock.send(b"X")

        try:
            for _ in range(slow_count):
                sock = socket.create_connection(("127.0.0.1", port), timeout=5)
                with contextlib.suppress(OSError):
                    sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                slow.append(sock)
            threading.Thread(target=dribble, daemon=True).start()
            statuses = []
            for _ in range(5):  # normal clients, each after the slow ones came
                with contextlib.suppress(OSError):
                    statuses.append(initialize("127.0.0.1", port, timeout=20))
            assert statuses == [200] * 5
            time.sleep(1.0)  # more dribbles: the log must not grow with them
        finally:
            stop.set()
            for sock in slow:
                sock.close()
    said = server.stderr()
    assert "Traceback" not in said
    assert len(said.splitlines()) < 10, said[:3000]


# --- stopping mid-ingest --------------------------------------------------------------------


def words(count: int, seed: int) -> str:
    """Text of ``count`` words in sentences, different for each seed."""
    vocabulary = "river stone lantern harbour winter orchard signal copper meadow archive"
    pool = [f"{w}{(seed * 31 + i) % 97}" for i, w in enumerate(vocabulary.split() * 20)]
    out = [pool[(i * 7 + seed) % len(pool)] for i in range(count)]
    return " ".join(" ".join(out[i : i + 12]) + "." for i in range(0, count, 12))


def seeded(store: Path) -> int:
    with Memory.open(
        store, "m", settings=Settings(embed_model="hashing:64"), embedder=HashingEmbedder(64)
    ) as memory:
        memory.ingest_text(words(1200, 1), "seed")
        return memory.count_chunks()


def stdio_messages(arguments: dict[str, Any]) -> bytes:
    messages = [
        json.loads(INITIALIZE),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "ingest_text", "arguments": arguments},
        },
    ]
    return b"".join(json.dumps(m).encode() + b"\n" for m in messages)


def call_over_http(port: int, arguments: dict[str, Any]) -> None:
    """Call ingest_text in a background thread; the call never returns (the server is
    stopped during it), so its failure is expected and ignored."""

    async def call() -> None:
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            await client.call_tool("ingest_text", arguments)

    def run() -> None:
        with contextlib.suppress(BaseException):
            anyio.run(call)

    threading.Thread(target=run, daemon=True).start()


@pytest.mark.parametrize(
    ("transport", "signum"),
    [("http", signal.SIGTERM), ("stdio", signal.SIGTERM), ("stdio", signal.SIGINT)],
)
def test_a_signal_mid_ingest_stops_the_server_and_keeps_whole_batches(
    tmp_path: Path, transport: str, signum: int
) -> None:
    store, marker = tmp_path / "m.db", tmp_path / "held"
    seed_chunks = seeded(store)
    # The server's second batch (its first is committed) waits, written and uncommitted,
    # until the marker is removed: for ten minutes unless the signal ends it.
    env = server_env(CAM_PAUSE_AT="applied:2", CAM_PAUSE_FILE=str(marker))
    arguments = {"text": words(2000, 2), "document": "held", "batch_size": 4}
    args = ["--store", str(store), "--memory", "m"]
    if transport == "http":
        port = free_port("127.0.0.1")
        server = Server([*args, "--http", str(port)], tmp_path / "server.log", env)
        server.wait_for_port("127.0.0.1", port)
        call_over_http(port, arguments)
    else:
        server = Server(args, tmp_path / "server.log", env, stdin=subprocess.PIPE)
        assert server.process.stdin is not None
        server.process.stdin.write(stdio_messages(arguments))
        server.process.stdin.flush()
    try:
        deadline = time.monotonic() + START_SECONDS
        while not marker.exists() and time.monotonic() < deadline:
            assert server.process.poll() is None, server.stderr()
            time.sleep(0.05)
        assert marker.exists(), f"the ingest never reached its second batch: {server.stderr()}"
        server.process.send_signal(signum)
        try:
            status = server.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{signal.Signals(signum).name} did not stop the server in 30 s")
    finally:
        marker.unlink(missing_ok=True)  # a server still running carries on, then is killed
        server.stop()
    said = server.stderr()
    assert status == 128 + signum, said
    assert "a call in flight was stopped" in said and "Traceback" not in said

    with Memory.open(store, "m", embedder=HashingEmbedder(64)) as memory:
        stats = memory.stats()
        chunks = {d["id"]: d["chunks"] for d in stats["document_list"]}
        assert chunks == {"seed": seed_chunks, "held": 4}  # the first batch, whole
        assert stats["levels"][0]["nodes"] == seed_chunks + 4
        check_memory(memory.store, max_cluster_size=memory.settings.max_cluster_size)
