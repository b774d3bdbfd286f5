"""``cam ask``: answer a question from a memory, with the evidence."""

from __future__ import annotations

import sys

import click

from cam_engine import Environment, Memory
from cam_engine.api import ADAPTER, DEFAULT, described, strategy_named
from cam_engine.cli.options import (
    LiveHelp,
    StrategyName,
    chat_for,
    device_option,
    echo_json,
    json_option,
    llm_option,
    memory_options,
    open_memory,
    plural,
)
from cam_engine.cli.progress import ProgressLines
from cam_engine.cli.terminal import printable
from cam_engine.errors import CamError


def _require_chunks(memory: Memory) -> None:
    """An empty memory can answer nothing: say so before loading any model."""
    if memory.count_chunks() == 0:
        raise click.ClickException(
            f"memory {memory.name!r} holds no documents yet: add some with `cam ingest`"
        )


def _require_view(memory: Memory, view: str | None) -> None:
    if view is not None and view not in memory.stats().get("views", {}):
        raise click.ClickException(
            f"memory {memory.name!r} has no {view} view: build it with `cam ingest --view {view}`"
        )


@click.command()
@click.argument("question")
@memory_options
@click.option(
    "--strategy",
    type=StrategyName(),
    default=DEFAULT,
    show_default=True,
    cls=LiveHelp,
    help_from=described,
)
@click.option(
    "--top-k",
    default=10,
    type=click.IntRange(min=1),
    show_default=True,
    help="prune-grow and global: nodes offered by localization; traverse: children kept "
    "per level; hybrid, dense, bm25: chunks kept as evidence. The adapters have their own "
    "options below.",
)
@click.option(
    "--max-turns",
    default=5,
    type=click.IntRange(min=1),
    show_default=True,
    help="Prune-and-grow turns at most.",
)
@click.option(
    "--width",
    default=160,
    type=click.IntRange(min=2),
    show_default=True,
    help="Characters per evidence snippet.",
)
@llm_option("Who selects the evidence, answers, and runs the adapters' strategies:")
@click.option(
    "--max-pages",
    default=5,
    type=click.IntRange(min=1),
    show_default=True,
    help="lookup/lookup-seq: pages.",
)
@click.option(
    "--max-iters",
    default=3,
    type=click.IntRange(min=1),
    show_default=True,
    help="research: iterations.",
)
@click.option(
    "--output",
    "research_output",
    type=click.Choice(["integration", "sources", "extracts"]),
    default="integration",
    show_default=True,
    help="research: the integrated result only, with its source pages, or with extracts.",
)
@click.option(
    "--read-tokens",
    default=5000,
    type=click.IntRange(min=1),
    show_default=True,
    help="memagent: tokens/step.",
)
@click.option(
    "--memory-tokens",
    default=1024,
    type=click.IntRange(min=1),
    show_default=True,
    help="memagent: memory cap.",
)
@click.option("--restart", is_flag=True, help="memagent: start over instead of resuming.")
@click.option(
    "--document",
    "documents",
    multiple=True,
    metavar="ID",
    help="Keep the question to this document (repeat for several; ids as `cam stats` "
    "lists them): only its chunks, and summaries of it alone, are searched and cited.",
)
@device_option
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
    max_pages: int,
    max_iters: int,
    research_output: str,
    read_tokens: int,
    memory_tokens: int,
    restart: bool,
    documents: tuple[str, ...],
    device: str | None,
    as_json: bool,
) -> None:
    """Answer QUESTION from a memory and show the evidence it came from.

    Offline (the default) the answer is extractive: the evidence sentences that best
    match the question, quoted, not written by a model. Each piece of evidence is cited
    as DOCUMENT:START-END, the characters of the document's text it is (with p.N for a
    PDF's page); a summary cites the span of each document its chunks come from.
    """
    spec = strategy_named(strategy)
    options_by_strategy: dict[str, dict[str, object]] = {
        "lookup": {"max_pages": max_pages},
        "lookup-seq": {"max_pages": max_pages},
        "research": {"max_iters": max_iters, "output": research_output},
        "memagent": {
            "chunk_tokens": read_tokens,
            "memory_tokens": memory_tokens,
            "resume": not restart,
        },
    }
    progress = ProgressLines(terminal=sys.stderr.isatty())
    try:
        with open_memory(store, memory_name, device=device) as memory:
            _require_chunks(memory)
            _require_view(memory, spec.view)
            # The model starts only once the memory is known to be there: a large one
            # takes a while to load.
            chat = chat_for(llm, Environment.from_env())
            selector = answerer = None
            if chat is not None:
                from cam_engine.api import ChatAnswerer, ChatSelector

                selector, answerer = ChatSelector(chat), ChatAnswerer(chat)
            # Offline, the CAM strategies answer in a moment: only LLM turns and the
            # adapters' reading take long enough to report.
            on_progress = progress if spec.family == ADAPTER or chat is not None else None
            result = memory.ask(
                question,
                strategy=strategy,
                top_k=top_k,
                max_turns=max_turns,
                selector=selector,
                answerer=answerer,
                chat=chat,
                options=options_by_strategy.get(strategy, {}),
                documents=documents,
                on_progress=on_progress,
            )
    except CamError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        progress.close()
    if as_json:
        echo_json(result.to_dict())
        return
    found = result.retrieval
    answer = printable(result.answer, lines=True)  # a chat model's answer keeps its lines
    click.echo(f"answer ({result.backend}): {answer or '(no sentence matched)'}")
    if result.answer_citations:  # where the quoted sentences are
        quoted = "; ".join(c.citation for c in result.answer_citations)
        click.echo(printable(f"quoted from: {quoted}"))
    if spec.family == ADAPTER:
        click.echo(
            f"\n{strategy}: {plural(len(result.evidence), 'source')}, "
            f"{found.details.get('llm_calls', 0)} LLM calls, largest context "
            f"{found.details.get('largest_context_tokens', 0)} tokens"
        )
    else:
        click.echo(
            f"\nevidence ({plural(len(result.evidence), 'node')}, chunks most relevant first, "
            "then summaries, "
            f"{strategy}, {plural(len(found.turns), 'turn')}"
            f"{': ' + found.stop if found.stop else ''}):"
        )
    id_width = max((len(e.node_id) for e in result.evidence), default=0)
    cite_width = min(max((len(e.citation) for e in result.evidence), default=0), 40)
    for e in result.evidence:
        # Adapter sources (pages, memory states) are not memory levels.
        level = "  " if spec.family == ADAPTER else f"L{e.level}"
        snippet = " ".join(e.text.split())
        if len(snippet) > width:
            snippet = snippet[: width - 1] + "…"
        line = f"  {e.node_id:<{id_width}} {level}  {e.citation:<{cite_width}}  {snippet}"
        click.echo(printable(line))
