"""``cam browse``: Neo4j Browser URL and ready Cypher for looking at a memory."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import click

from cam_engine import Environment, Memory
from cam_engine.cli.options import memory_options, open_memory

BOLT_PORT = 7687  # the driver's default when a URI names no port
BROWSER_PORT = 7474  # Neo4j's HTTP connector, which serves Browser at /browser/


def browser_url(uri: str, env: Environment) -> str:
    """Neo4j Browser's address for the server at ``uri``, with its connect form filled in.

    Browser is served by the server's HTTP connector: the Bolt URI's host on port 7474,
    unless ``CAM_NEO4J_BROWSER_URL`` names another address (a proxy, another port, an
    HTTPS connector). The query pre-fills the connection (Browser's ``dbms`` and ``db``
    URL parameters; the user name rides in ``dbms``) and, when no password is configured,
    selects "No authentication" (``preselectAuthMethod=NO_AUTH``). An override that has a
    query of its own is taken as the whole URL.
    """
    parts = urlsplit(uri)
    host = parts.hostname or "localhost"
    if ":" in host:  # an IPv6 address goes back in brackets
        host = f"[{host}]"
    try:
        port = parts.port or BOLT_PORT
    except ValueError:  # not a number: the store rejects such a URI before we get here
        port = BOLT_PORT
    base = env.neo4j_browser_url or f"http://{host}:{BROWSER_PORT}/browser/"
    if "?" in base:
        return base
    query: dict[str, str] = {}
    user = ""
    if env.neo4j_password:
        user = f"{env.neo4j_user}@"
    else:
        query["preselectAuthMethod"] = "NO_AUTH"
    query["dbms"] = f"{parts.scheme.lower()}://{user}{host}:{port}"
    if env.neo4j_database:
        query["db"] = env.neo4j_database
    # Browser reads these with URLSearchParams: a literal '+' (bolt+s) would turn into a
    # space, so it is escaped; ':', '/', '@' and brackets stay readable.
    return f"{base}?{urlencode(query, safe=':/@[]')}"


def style_sheet() -> tuple[str, Path | None]:
    """The ``:style`` command that loads cypher/browser/style.grass, on one line, and
    the file's path when it is a file on disk (to drop onto the Browser window)."""
    sheet = resources.files("cam_engine.cypher").joinpath("browser", "style.grass")
    text = " ".join(sheet.read_text(encoding="utf-8").split())
    return f":style {text}", sheet if isinstance(sheet, Path) else None


def _query(name: str) -> str:
    return "\n".join(
        line for line in Memory.browser_query(name).splitlines() if not line.startswith("//")
    )


def _param(name: str, value: object) -> str:
    # JSON string and list literals are valid Cypher literals for these values.
    return f":param {name} => {json.dumps(value)}"


@click.command()
@memory_options
@click.option("--node", "node_id", metavar="ID", help="Add the subtree and clusters of a node.")
@click.option("--question", help="Add the nodes a question activates (fast localization).")
@click.option("--top-k", default=10, show_default=True, help="Nodes activated by --question.")
def browse(
    store: str | None,
    memory_name: str | None,
    node_id: str | None,
    question: str | None,
    top_k: int,
) -> None:
    """Print the Neo4j Browser URL and Cypher to explore a memory stored in Neo4j.

    The URL is the server's Browser (the --store host, port 7474; set
    CAM_NEO4J_BROWSER_URL for another address) with the connect form filled in, and
    "No authentication" chosen when CAM_NEO4J_PASSWORD is unset. Then comes the :style
    line that loads cypher/browser/style.grass (colours and captions; paste and run it
    once per browser profile), then :param lines and queries to paste.
    """
    env = Environment.from_env()
    location = store if store is not None else env.store
    if not Memory.is_neo4j_location(location):
        raise click.ClickException(
            "cam browse needs a memory in Neo4j: pass --store bolt://HOST:7687 "
            "(or set CAM_STORE / CAM_NEO4J_URI)"
        )
    with open_memory(location, memory_name) as memory:
        name = memory.name
        if node_id is not None and memory.node(node_id) is None:
            raise click.ClickException(f"no node {node_id!r} in memory {name!r}")
        activated = [n.id for n, _ in memory.locate(question, top_k)] if question else []
    auth = "as " + env.neo4j_user if env.neo4j_password else "with no authentication"
    click.echo(f"Neo4j Browser: {browser_url(location, env)}")
    click.echo(f"  (the connect form is filled in for {location}, {auth}: click Connect)")
    style, path = style_sheet()
    drop = f", or drop {path} onto the Browser window" if path else ""
    click.echo(f"Style, once per browser profile: paste this line into the editor and run it{drop}")
    click.echo(style)
    click.echo()
    click.echo(_param("memory", name))
    if node_id is not None:
        click.echo(_param("node", node_id))
    if question:
        click.echo(_param("nodes", activated))
    sections = [
        ("The top two levels", "browse_top_levels"),
        ("Chunks in two or more clusters (the overlap)", "browse_overlap"),
        ("Nodes per level", "browse_levels"),
    ]
    if node_id is not None:
        sections += [
            (f"The subtree of {node_id}", "browse_subtree"),
            (f"The clusters {node_id} belongs to", "browse_chunk_clusters"),
        ]
    if question:
        sections.append(
            (
                f"The {len(activated)} nodes closest to the question (fast localization)",
                "browse_activated",
            )
        )
    for title, query in sections:
        click.echo(f"\n// {title}\n{_query(query)}")
