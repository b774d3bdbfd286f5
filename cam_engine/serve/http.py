"""``cam mcp --http``: the MCP server over streamable HTTP, guarded against hostile clients.

The SDK's ``MCPServer.run("streamable-http")`` checks the Host and Origin headers only when
it binds exactly 127.0.0.1, localhost or ::1, has no authentication unless given an OAuth
setup, and runs uvicorn with no deadline for a request to arrive and no bound on open
connections: one slow client per file descriptor stops it. ``serve_http`` runs the same
app on uvicorn with:

- Host and Origin checks on every bind address (``HttpSettings.allowed_hosts`` /
  ``allowed_origins``; a request without Origin, from a client that is not a browser,
  passes);
- a bearer token (``Authorization: Bearer TOKEN``) when one is given, compared in constant
  time: 401 without it;
- ``GuardedH11Protocol``: a request's headers and body must arrive within
  ``request_timeout`` seconds of its first byte being awaited (a connection that sends
  nothing, or dribbles its headers, is closed with 408), and at most ``max_connections``
  are open: one more evicts the one that has waited longest for its request, or is
  answered 503 and closed at once, so that the open sockets stay well under the file
  descriptor limit and slow clients cannot keep a normal one out;
- what hostile clients make the SDK, uvicorn, the event loop and this module log (an
  exhausted resource on accept, a client gone mid-request, a refused Host) kept to one
  line per statement and ``LOG_INTERVAL_SECONDS``, with a count, and no tracebacks.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import time
from collections.abc import Generator
from typing import Any

import h11
import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from cam_engine.serve.http_settings import (
    KEEP_ALIVE_SECONDS,
    MAX_CONNECTIONS,
    REQUEST_TIMEOUT_SECONDS,
    HttpSettings,
)

logger = logging.getLogger(__name__)

LOG_INTERVAL_SECONDS = 10.0
ACCEPT_BACKLOG = 32


def _closing_response(status: str, text: str) -> bytes:
    """A whole HTTP/1.1 response that ends its connection, written before any request
    is parsed."""
    body = f"{text}\n".encode()
    head = (
        f"HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\n"
        f"connection: close\r\ncontent-length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


_BUSY = _closing_response("503 Service Unavailable", "too many connections; retry later")
_TIMED_OUT = _closing_response("408 Request Timeout", "the request did not arrive in time")
_WAITING = (h11.IDLE, h11.SEND_BODY)  # their_state while a request is still arriving


def security(settings: HttpSettings) -> TransportSecuritySettings:
    """The SDK's Host and Origin checks, on whatever address the server binds."""
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=settings.hosts,
        allowed_origins=settings.origins,
    )


async def plain_response(
    send: Send, status: int, body: bytes, *headers: tuple[bytes, bytes]
) -> None:
    """Answer an ASGI HTTP request with ``status`` and a short plain-text ``body``."""
    start = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        *headers,
    ]
    await send({"type": "http.response.start", "status": status, "headers": start})
    await send({"type": "http.response.body", "body": body})


class BearerToken:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer TOKEN``,
    compared in constant time; 401 otherwise. The token is never logged."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._authorized(scope):
            await self.app(scope, receive, send)
            return
        await plain_response(
            send,
            401,
            b"missing or wrong bearer token (Authorization: Bearer TOKEN)\n",
            (b"www-authenticate", b'Bearer realm="cam"'),
        )

    def _authorized(self, scope: Scope) -> bool:
        given = [v for k, v in scope["headers"] if k == b"authorization"]
        if len(given) != 1:
            return False
        scheme, _, credentials = given[0].strip().partition(b" ")
        # The scheme is case-insensitive (RFC 7235); the token is compared in constant
        # time, so how long a wrong one takes says nothing of the right one.
        matches = hmac.compare_digest(credentials.strip(), self._token)
        return scheme.lower() == b"bearer" and matches


class NoEventStream:
    """ASGI middleware: GET, which opens a stream for messages the server starts, is
    answered 405, as the MCP spec allows a server that sends none (cam answers calls,
    it never starts a message). Such a stream stays open as long as its client likes
    and counts as a request under way, so a hundred of them would hold every
    connection the server allows."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET":
            await self.app(scope, receive, send)
            return
        body = b"this server sends no stream: POST calls to it\n"
        await plain_response(send, 405, body, (b"allow", b"POST, DELETE"))


def log_loop_error(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The event loop's errors in one line each (``QuietRepeats`` keeps one per
    interval): asyncio reports an exhausted resource on accept (EMFILE) at every retry,
    with a traceback."""
    exc = context.get("exception")
    detail = f": {type(exc).__name__}: {exc}" if exc is not None else ""
    logger.error("cam mcp: %s%s", context.get("message", "event loop error"), detail)


class QuietRepeats(logging.Filter):
    """Each kind of record (the statement logging it) once per interval, with how many were
    dropped; a client that went away mid-request (``ClientDisconnect``, a reset) in one
    line, without the traceback the SDK logs for it. A hostile client can make the SDK
    and uvicorn log at every request; the log stays small whatever it sends."""

    def __init__(self, interval: float = LOG_INTERVAL_SECONDS) -> None:
        super().__init__()
        self.interval = interval
        self._last: dict[tuple[str, int], float] = {}
        self._dropped: dict[tuple[str, int], int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        # Keyed by the statement that logs: its message may quote each request's headers.
        key = (record.pathname, record.lineno)
        now = time.monotonic()
        if now - self._last.get(key, -self.interval) < self.interval:
            self._dropped[key] = self._dropped.get(key, 0) + 1
            return False
        self._last[key] = now
        dropped = self._dropped.pop(key, 0)
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, ClientDisconnect | ConnectionError):
            record.exc_info, record.exc_text = None, None
            record.msg = f"{record.getMessage()}: the client went away ({type(exc).__name__})"
            record.args = None
        if dropped:
            record.msg = (
                f"{record.getMessage()} ({dropped} more like it in the last {self.interval:g} s)"
            )
            record.args = None
        return True


NOISY_LOGGERS = (  # what a client's requests make log, one record per request
    __name__,
    "mcp.server.streamable_http",
    "mcp.server.streamable_http_manager",
    "mcp.server.transport_security",
    "uvicorn.error",
)


def quiet_repeats() -> None:
    quiet = QuietRepeats()
    for name in NOISY_LOGGERS:
        logging.getLogger(name).addFilter(quiet)


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request to arrive whole, and a
    bound on the connections open at once.

    At the bound, a new connection takes the place of the one that has waited longest
    for its request (a slow or idle client: it is answered 408 and closed); only when
    every open connection has a request under way (a tool call, an event stream) is the
    new one answered 503 and closed. So slow clients cannot hold a normal one out."""

    request_timeout: float = REQUEST_TIMEOUT_SECONDS
    max_connections: int = MAX_CONNECTIONS
    _deadline: asyncio.TimerHandle | None = None
    _waiting_since: float | None = None  # when the request now awaited began to be
    _refused = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.connections) >= self.max_connections and not self._evict_one():
            self._refused = True
            self.transport = transport
            logger.warning(
                "cam mcp: refused a connection: %d open, each with a request under way, "
                "the most allowed (--max-connections)",
                len(self.connections),
            )
            transport.write(_BUSY)
            transport.close()
            return
        super().connection_made(transport)
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_deadline()
        if not self._refused:
            super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def _waiting(self) -> bool:
        return not self.transport.is_closing() and self.conn.their_state in _WAITING

    def _watch(self) -> None:
        """Arm the deadline while a request is awaited or arriving; disarm it once the
        request is whole (the app's answer may take as long as the tool call does)."""
        if not self._waiting():
            self._cancel_deadline()
        elif self._deadline is None:
            self._waiting_since = time.monotonic()
            self._deadline = self.loop.call_later(self.request_timeout, self._expire)

    def _cancel_deadline(self) -> None:
        self._waiting_since = None
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _evict_one(self) -> bool:
        """Close the connection that has waited longest for its request; False if none
        is waiting."""
        waiting = [
            c
            for c in self.connections
            if isinstance(c, GuardedH11Protocol) and c._waiting_since is not None
        ]
        if not waiting:
            return False
        oldest = min(waiting, key=lambda c: c._waiting_since or 0.0)
        logger.warning(
            "cam mcp: %d connections open, the most allowed (--max-connections): closed "
            "the one that had waited longest for its request",
            len(self.connections),
        )
        oldest._close_unanswered()
        self.connections.discard(oldest)
        return True

    def _expire(self) -> None:
        self._deadline = None
        if self._waiting():
            logger.info(
                "cam mcp: closed a connection whose request did not arrive within %g s "
                "(--request-timeout)",
                self.request_timeout,
            )
            self._close_unanswered()

    def _close_unanswered(self) -> None:
        self._cancel_deadline()
        if self.conn.their_state is h11.IDLE:  # no request under way: say why it ends
            self.transport.write(_TIMED_OUT)
        self.transport.close()


def guarded_protocol(settings: HttpSettings) -> type[GuardedH11Protocol]:
    """The protocol class uvicorn instantiates per connection, with ``settings``' bounds."""
    return type(
        "CamH11Protocol",
        (GuardedH11Protocol,),
        {
            "request_timeout": settings.request_timeout,
            "max_connections": settings.max_connections,
        },
    )


class _Uvicorn(uvicorn.Server):
    """uvicorn that leaves SIGINT and SIGTERM to the handlers installed before it
    (serve/stopping.py), which end the process within seconds: its own handlers wait
    for every call in flight to finish."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def http_app(server: MCPServer[Any], settings: HttpSettings) -> ASGIApp:
    """The streamable HTTP app at /mcp, with the Host, Origin and token checks."""
    # Stateless, with JSON replies: every tool is one request and its answer, so the
    # server keeps no session per client and holds no event stream open for one (a
    # client opening thousands of sessions, or a hundred GET streams, would otherwise
    # hold memory for 30 minutes each, or every connection the server allows).
    app: ASGIApp = server.streamable_http_app(
        transport_security=security(settings),
        host=settings.host,
        stateless_http=True,
        json_response=True,
    )
    app = NoEventStream(app)
    return BearerToken(app, settings.token) if settings.token else app


def uvicorn_server(app: ASGIApp, settings: HttpSettings) -> uvicorn.Server:
    verbose = logging.getLogger().isEnabledFor(logging.INFO)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        http=guarded_protocol(settings),
        ws="none",
        lifespan="on",
        timeout_keep_alive=int(min(KEEP_ALIVE_SECONDS, settings.request_timeout)) or 1,
        # asyncio accepts up to `backlog` connections at once, before those evicted
        # for them have closed: a small burst keeps the sockets under the fd limit.
        backlog=ACCEPT_BACKLOG,
        # uvicorn's own lines, and a line per request, with `cam -v` only.
        log_level="info" if verbose else "warning",
        access_log=verbose,
    )
    return _Uvicorn(config)


def serve_http(server: MCPServer[Any], settings: HttpSettings) -> None:
    """Serve ``server`` at http://HOST:PORT/mcp until the process is stopped."""
    web = uvicorn_server(http_app(server, settings), settings)

    quiet_repeats()

    async def run() -> None:
        asyncio.get_running_loop().set_exception_handler(log_loop_error)
        await web.serve()

    asyncio.run(run())
