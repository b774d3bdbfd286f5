"""``cam mcp``: serve a memory to MCP clients (agents), over stdio or streamable HTTP."""

from __future__ import annotations

import ipaddress
import sys
from dataclasses import replace

import click

from cam_engine import Environment
from cam_engine.api import Answerer, ChatModel, Selector
from cam_engine.cli.options import (
    chat_for,
    device_option,
    llm_option,
    memory_options,
    summarizer_for,
)
from cam_engine.errors import CamError
from cam_engine.serve.http_settings import (
    KEEP_ALIVE_SECONDS,
    MAX_CONNECTIONS,
    REQUEST_TIMEOUT_SECONDS,
    HttpSettings,
    url_host,
)
from cam_engine.serve.stopping import stop_on_signals
from cam_engine.serve.tools import READERS, MemoryTools

LOOPBACK = "127.0.0.1"


def parse_http(value: str) -> tuple[str, int]:
    """``HOST:PORT``, ``:PORT`` or ``PORT`` (host 127.0.0.1); ``[::1]:PORT`` for IPv6."""
    host, sep, port = value.strip().rpartition(":")
    if not sep:
        host, port = "", value.strip()
    host = host.strip("[]") or LOOPBACK
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise click.BadParameter(
            f"expected [HOST:]PORT with a port in 1-65535, got {value!r}", param_hint="--http"
        )
    return host, int(port)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@click.command("mcp")
@memory_options
@click.option(
    "--allow",
    "allow",
    multiple=True,
    type=click.Path(exists=True),
    metavar="PATH",
    help="Let the ingest_file tool read files under PATH, a folder or a file (repeatable; "
    "symlinks are resolved). None by default: every path is refused.",
)
@click.option(
    "--http",
    "http",
    metavar="[HOST:]PORT",
    help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio. HOST defaults to "
    "127.0.0.1 (loopback only); any other address than a loopback one needs --token.",
)
@click.option(
    "--token",
    envvar="CAM_MCP_TOKEN",
    metavar="TOKEN",
    help="With --http: every request must carry 'Authorization: Bearer TOKEN' (401 "
    "otherwise). Required when HOST is not a loopback address; optional on loopback. "
    "Prefer the CAM_MCP_TOKEN variable: a command line is visible to other users.",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME[:PORT]",
    help="With --http: also accept requests whose Host header is NAME (at any port unless "
    "one is given; repeatable). Accepted by default: 127.0.0.1, localhost, [::1] and HOST, "
    "at the server's port; any other Host is refused (421), against DNS rebinding.",
)
@click.option(
    "--allow-origin",
    "allow_origins",
    multiple=True,
    metavar="URL",
    help="With --http: also accept browser requests whose Origin header is URL, e.g. "
    "https://app.example (repeatable; 'http://name:*' for any port). Accepted by default: "
    "http(s):// of the default hosts; any other Origin is refused (403). Requests "
    "without Origin (clients that are not browsers) are accepted.",
)
@click.option(
    "--request-timeout",
    default=REQUEST_TIMEOUT_SECONDS,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help="With --http: a request's headers and body must arrive within SECONDS, or its "
    "connection is closed (408); an idle connection between requests is closed after "
    f"{KEEP_ALIVE_SECONDS:.0f} s. A call's answer may take as long as it needs.",
)
@click.option(
    "--max-connections",
    default=MAX_CONNECTIONS,
    show_default=True,
    type=click.IntRange(min=1),
    help="With --http: connections open at once. One more takes the place of the "
    "connection that has waited longest for its request (408); when every one has a "
    "request under way, it is answered 503 and closed. Keep it well under the file "
    "descriptor limit (ulimit -n).",
)
@llm_option("Who writes the summaries of ingested text:", "--summarizer")
@llm_option(
    "Who selects evidence and answers in ask (one local model named by both options "
    "is loaded once):"
)
@click.option(
    "--llm-concurrency",
    default=4,
    show_default=True,
    type=click.IntRange(min=1),
    help="LLM calls in flight at once (summaries of a batch).",
)
@click.option(
    "--readers",
    default=READERS,
    show_default=True,
    type=click.IntRange(min=1),
    help="Reading calls (ask, search, show_node, stats) served at once, each on its own "
    "connection, beside an ingest (SQLite; on Neo4j every call waits for an ingest).",
)
@device_option
def mcp(
    store: str | None,
    memory_name: str | None,
    allow: tuple[str, ...],
    http: str | None,
    token: str | None,
    allow_hosts: tuple[str, ...],
    allow_origins: tuple[str, ...],
    request_timeout: float,
    max_connections: int,
    summarizer: str,
    llm: str,
    llm_concurrency: int,
    readers: int,
    device: str | None,
) -> None:
    """Serve one memory to MCP clients (agents) over stdio, or streamable HTTP with --http.

    Tools: ingest_text, ingest_file, delete_document, ask, search, show_node, stats,
    memories; resource cam://memory/NAME/top (the top level's summaries). The memory and
    its embedding model are loaded once and kept warm; a memory that does not exist yet
    is created by the first ingest. stdout carries the protocol; logs go to stderr (-v for more).
    SIGTERM or Ctrl-C stops the server within seconds, whatever it is doing: an ingest in
    flight keeps its committed batches and loses only the one being written.
    Client configuration: README.md, "Serving a memory to agents".
    """
    settings = None
    if http is not None:
        host, port = parse_http(http)
        settings = HttpSettings(
            host,
            port,
            token=token or None,
            allowed_hosts=allow_hosts,
            allowed_origins=allow_origins,
            request_timeout=request_timeout,
            max_connections=max_connections,
        )
        if settings.token is None and not _is_loopback(host):
            raise click.UsageError(
                f"--http {http}: serving a non-loopback address needs a token: set "
                "CAM_MCP_TOKEN (or --token) and send 'Authorization: Bearer TOKEN'"
            )
    env = Environment.from_env()
    if device is not None:  # --device beats CAM_EMBED_DEVICE
        env = replace(env, embed_device=device)
    selector: Selector | None = None
    answerer: Answerer | None = None
    chat: ChatModel | None = chat_for(llm, env)
    if chat is not None:
        from cam_engine.api import ChatAnswerer, ChatSelector

        selector, answerer = ChatSelector(chat), ChatAnswerer(chat)

    # Imported here: the SDK takes about a second to load, which other commands need not wait.
    from cam_engine.serve.http import serve_http
    from cam_engine.serve.mcp import create_server

    try:
        tools = MemoryTools(
            store,
            memory_name,
            environment=env,
            summarizer=summarizer_for(summarizer, env),
            chat=chat,
            selector=selector,
            answerer=answerer,
            allow=allow,
            llm_concurrency=llm_concurrency,
            readers=readers,
        )
    except CamError as exc:
        raise click.ClickException(str(exc)) from exc
    server = create_server(tools)
    tools.start()
    stop_on_signals(tools)
    try:
        if settings is None:
            if sys.stdin.isatty():
                click.echo(
                    f"cam mcp: serving memory {tools.name!r} over stdio, for an MCP client "
                    "that starts this command (Ctrl-C stops it)",
                    err=True,
                )
            server.run("stdio")
        else:
            click.echo(_protection(settings), err=True)
            serve_http(server, settings)
    finally:
        tools.close()


def _protection(settings: HttpSettings) -> str:
    """What guards the HTTP server, in one line (never the token itself); a warning when
    it is reachable from other machines."""
    where = f"http://{url_host(settings.host)}:{settings.port}/mcp"
    token = "a bearer token" if settings.token else "no token (loopback only)"
    line = (
        f"serving {where}; protected by {token}, Host checked against "
        f"{', '.join(settings.hosts)}, Origin against {len(settings.origins)} allowed "
        f"origins; requests time out after {settings.request_timeout:g} s, "
        f"{settings.max_connections} connections at most"
    )
    if _is_loopback(settings.host):
        return f"cam mcp: {line}"
    return (
        f"warning: {line}. Plain HTTP: the token and the memory cross the network "
        "unencrypted; serve only a network you trust, or put TLS in front"
    )
