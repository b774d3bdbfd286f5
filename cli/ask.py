"""``cam ask``: answer a question from a memory, with the evidence."""

from __future__ import annotations

import click

from cam_engine import Environment
from cam_engine.cli.options import (
    chat_for,
    echo_json,
    json_option,
    memory_options,
    open_memory,
)
from cam_engine.errors import CamError
from cam_engine.retrieval import STRATEGIES


@click.command()
@click.argument("question")
@memory_options
@click.option(
    "--strategy",
    type=click.Choice(STRATEGIES),
    default="prune-grow",
    show_default=True,
    help="prune-grow (CAM), global (top-k only) or traverse (top-down from the top level).",
)
@click.option("--top-k", default=10, show_default=True, help="Nodes found by fast localization.")
@click.option("--max-turns", default=5, show_default=True, help="Prune-and-grow turns at most.")
@click.option("--width", default=160, show_default=True, help="Characters per evidence snippet.")
@click.option(
    "--llm",
    type=click.Choice(["extractive", "openai", "local"]),
    default="extractive",
    show_default=True,
    help="Who selects and answers: extractive (offline, quotes the evidence), openai "
    "(CAM_LLM_BASE_URL / CAM_LLM_MODEL endpoint) or local (--model-dir).",
)
@click.option("--model-dir", help="A transformers model directory, for --llm local.")
@json_option
def ask(
    question: str,
    store: str | None,
    memory_name: str | None,
    strategy: str,
    top_k: int,
    max_turns: int,
    width: int,
    llm: str,
    model_dir: str | None,
    as_json: bool,
) -> None:
    """Answer QUESTION from a memory and show the evidence it came from.

    Offline (the default) the answer is extractive: the evidence sentences that best
    match the question, quoted, not written by a model.
    """
    selector = answerer = None
    if llm != "extractive":
        from cam_engine.llm.tasks import ChatAnswerer, ChatSelector

        chat = chat_for(llm, Environment.from_env(), model_dir)
        selector, answerer = ChatSelector(chat), ChatAnswerer(chat)
    try:
        with open_memory(store, memory_name) as memory:
            result = memory.ask(
                question,
                strategy=strategy,
                top_k=top_k,
                max_turns=max_turns,
                selector=selector,
                answerer=answerer,
            )
    except CamError as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        echo_json(result.to_dict())
        return
    click.echo(f"answer ({result.backend}): {result.answer or '(no sentence matched)'}")
    click.echo(
        f"\nevidence ({len(result.evidence)} nodes, {result.retrieval.strategy}, "
        f"{len(result.retrieval.turns)} turns: {result.retrieval.stop}):"
    )
    for e in result.evidence:
        where = f"{e.document} #{e.position:g}" if e.document is not None else "-"
        snippet = " ".join(e.text.split())
        if len(snippet) > width:
            snippet = snippet[: width - 1] + "…"
        click.echo(f"  {e.node_id:<18} L{e.level}  {where:<20} {snippet}")
