"""``cam browse``: Neo4j Browser URL and ready Cypher for looking at a memory."""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import click

from cam_engine import Environment
from cam_engine.cli.options import memory_options, open_memory
from cam_engine.store.base import is_neo4j_uri
from cam_engine.store.cypher import load_query


def browser_url(uri: str, env: Environment) -> str:
    if env.neo4j_browser_url:
        return env.neo4j_browser_url
    host = urlsplit(uri).hostname or "localhost"
    return f"http://{host}:7474/browser/"


def _query(name: str) -> str:
    return "\n".join(line for line in load_query(name).splitlines() if not line.startswith("//"))


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

    Paste the :param lines, then a query, into Browser. Load the style sheet
    cypher/browser/style.grass with :style for colours and captions.
    """
    env = Environment.from_env()
    location = store or env.store
    if not is_neo4j_uri(location):
        raise click.ClickException(
            "cam browse needs a memory in Neo4j: pass --store bolt://HOST:7687 "
            "(or set CAM_STORE / CAM_NEO4J_URI)"
        )
    with open_memory(location, memory_name) as memory:
        name = memory.name
        if node_id is not None and memory.node(node_id) is None:
            raise click.ClickException(f"no node {node_id!r} in memory {name!r}")
        activated = [n.id for n, _ in memory.locate(question, top_k)] if question else []
    click.echo(f"Neo4j Browser: {browser_url(location, env)}  (connect to {location})")
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
