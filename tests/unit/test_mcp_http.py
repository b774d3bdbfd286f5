"""The parts of ``cam mcp --http``'s guard that need no socket: which Host and Origin
values are let in, the bearer token check, and the log kept short. The server itself, on
loopback, is tested in tests/integration/test_mcp_http.py."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import pytest
from starlette.requests import ClientDisconnect

from cam_engine.serve.http import BearerToken, QuietRepeats
from cam_engine.serve.http_settings import HttpSettings

TOKEN = "s3cret-for-tests-only"


def test_hosts_are_the_loopback_names_and_the_bind_address_at_the_port() -> None:
    settings = HttpSettings("127.0.0.2", 8765)
    assert settings.hosts == [
        "127.0.0.1:8765",
        "localhost:8765",
        "[::1]:8765",
        "127.0.0.2:8765",
    ]
    assert "http://127.0.0.2:8765" in settings.origins
    assert "https://localhost:8765" in settings.origins
    assert all(":8765" in origin for origin in settings.origins)


def test_hosts_and_origins_given_are_added() -> None:
    settings = HttpSettings(
        "::",
        80,
        allowed_hosts=("agents.lan", "box:9000", "[fe80::1]:80"),
        allowed_origins=("https://app.example/",),
    )
    hosts = settings.hosts
    assert "[::]:80" in hosts
    assert {"agents.lan:*", "agents.lan", "box:9000", "[fe80::1]:80"} <= set(hosts)
    assert "box:9000:*" not in hosts and "[fe80::1]:80:*" not in hosts
    assert "https://app.example" in settings.origins


def status_for(headers: list[tuple[bytes, bytes]]) -> int:
    """The status of a request with these headers, through the token check to an app
    that answers 200."""
    sent: list[dict[str, Any]] = []

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def main() -> None:
        scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": headers}
        await BearerToken(inner, TOKEN)(scope, receive, send)

    anyio.run(main)
    return int(sent[0]["status"])


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ([], 401),
        ([(b"authorization", b"Bearer wrong")], 401),
        ([(b"authorization", TOKEN.encode())], 401),
        ([(b"authorization", f"Basic {TOKEN}".encode())], 401),
        ([(b"authorization", f"Bearer {TOKEN}x".encode())], 401),
        ([(b"authorization", f"Bearer {TOKEN}".encode())] * 2, 401),
        ([(b"authorization", f"Bearer {TOKEN}".encode())], 200),
        ([(b"authorization", f"bearer {TOKEN}".encode())], 200),
    ],
)
def test_the_bearer_token(headers: list[tuple[bytes, bytes]], status: int) -> None:
    assert status_for(headers) == status


def record(message: str, exc: BaseException | None = None, line: int = 10) -> logging.LogRecord:
    exc_info = (type(exc), exc, None) if exc is not None else None
    return logging.LogRecord("mcp.server", logging.ERROR, "sdk.py", line, message, None, exc_info)


def test_repeated_records_pass_once_per_interval() -> None:
    quiet = QuietRepeats(interval=3600)
    passed = [
        r for r in (record(f"Invalid Host header: h{i}") for i in range(1000)) if quiet.filter(r)
    ]
    assert [r.getMessage() for r in passed] == ["Invalid Host header: h0"]
    assert quiet.filter(record("another statement", line=20))

    quiet.interval = 0  # the next one passes, with the count of those dropped
    [again] = [r for r in [record("Invalid Host header: h1000")] if quiet.filter(r)]
    assert again.getMessage().endswith("(999 more like it in the last 0 s)")


def test_a_client_gone_is_one_line_without_traceback() -> None:
    gone = record("Error handling POST request", ClientDisconnect())
    assert QuietRepeats().filter(gone)
    assert gone.exc_info is None
    assert gone.getMessage() == (
        "Error handling POST request: the client went away (ClientDisconnect)"
    )
