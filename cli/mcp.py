"""``cam mcp``: serve a memory to MCP clients (agents), over stdio or streamable HTTP."""

from __future__ import annotations

import ipaddress
import sys
from dataclasses import replace

import click

from cam_engine import Environment
from cam_engine.cli.options import chat_for, device_option, memory_options, summarizer_for
from cam_engine.errors import CamError
from cam_engine.llm.base import Answerer, ChatModel, Selector
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
    "127.0.0.1 (loopback only); there is no authentication, so bind another address only "
    "on a network you trust.",
)
@click.option(
    "--summarizer",
    type=click.Choice(["extractive", "openai"]),
    default="extractive",
    show_default=True,
    help="Who writes the summaries of ingested text: extractive (offline) or openai "
    "(CAM_LLM_BASE_URL / CAM_LLM_MODEL endpoint).",
)
@click.option(
    "--llm",
    type=click.Choice(["extractive", "openai", "local"]),
    default="extractive",
    show_default=True,
    help="Who selects evidence and answers in ask: extractive (offline, quotes the "
    "evidence), openai (CAM_LLM_BASE_URL / CAM_LLM_MODEL endpoint) or local (--model-dir).",
)
@click.option("--model-dir", help="A transformers model directory, for --llm local.")
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
    summarizer: str,
    llm: str,
    model_dir: str | None,
    llm_concurrency: int,
    readers: int,
    device: str | None,
) -> None:
    """Serve one memory to MCP clients (agents) over stdio, or streamable HTTP with --http.

    Tools: ingest_text, ingest_file, delete_document, ask, search, show_node, stats,
    memories; resource cam://memory/NAME/top (the top level's summaries). The memory and
    its embedding model are loaded once and kept warm; a memory that does not exist yet
    is created by the first ingest. stdout carries the protocol; logs go to stderr (-v for more).
    Client configuration: README.md, "Serving a memory to agents".
    """
    address = parse_http(http) if http is not None else None
    env = Environment.from_env()
    if device is not None:  # --device beats CAM_EMBED_DEVICE
        env = replace(env, embed_device=device)
    chat: ChatModel | None = None
    selector: Selector | None = None
    answerer: Answerer | None = None
    if llm != "extractive":
        from cam_engine.llm.tasks import ChatAnswerer, ChatSelector

        chat = chat_for(llm, env, model_dir)
        selector, answerer = ChatSelector(chat), ChatAnswerer(chat)

    # Imported here: the SDK takes about a second to load, which other commands need not wait.
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
    try:
        if address is None:
            if sys.stdin.isatty():
                click.echo(
                    f"cam mcp: serving memory {tools.name!r} over stdio, for an MCP client "
                    "that starts this command (Ctrl-C stops it)",
                    err=True,
                )
            server.run("stdio")
        else:
            host, port = address
            if not _is_loopback(host):
                click.echo(f"warning: serving {host}:{port} without authentication", err=True)
            server.run("streamable-http", host=host, port=port)
    finally:
        tools.close()
