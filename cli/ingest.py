"""``cam ingest``: add documents to a memory, batch by batch."""

from __future__ import annotations

import sys
from typing import Any

import click

from cam_engine import Environment, Memory, Settings
from cam_engine.api import (
    CLI_OPTIONS,
    PAGE,
    BatchReport,
    DocumentChange,
    IngestError,
    IngestReport,
    check_encoding,
    document_changes,
    format_names,
    sample_path,
)
from cam_engine.cli.interrupts import exit_interrupted
from cam_engine.cli.options import (
    chat_for,
    device_option,
    echo_json,
    json_option,
    llm_option,
    memory_options,
    open_memory,
    plural,
)
from cam_engine.cli.terminal import printable
from cam_engine.errors import CamError, StoreUnavailableError, StoreWriteError

_SETTING_OPTIONS = {
    "chunk_tokens": int,
    "alpha": float,
    "sigma": float,
    "theta": float,
    "k": int,
    "max_cluster_size": int,
    "max_levels": int,
    "resummarize_drift": float,
    "embed_model": str,
}


def _settings(values: dict[str, Any]) -> Settings | None:
    given = {k: v for k, v in values.items() if v is not None}
    if not given:
        return None
    model = Environment.from_env().embed_model
    if model and "embed_model" not in given:
        given["embed_model"] = model
    try:
        return Settings(**given)
    except CamError as exc:
        raise click.BadParameter(str(exc)) from exc


class _Progress:
    """A progress bar per document on a terminal (a count for a stream, whose length is
    not known ahead); silent otherwise. The bar counts the document's chunks done, kept
    or added: an updated document's kept chunks fill it at its first batch."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.bar: Any = None
        self.document: str | None = None
        self.counting = False  # a stream's count is on the line

    def update(self, report: BatchReport) -> None:
        if not self.enabled:
            return
        if report.document != self.document:
            self.close()
            self.document = report.document
            if report.chunks_total:
                self.bar = click.progressbar(
                    length=report.chunks_total,
                    label=printable(report.document),
                    file=sys.stderr,
                    show_pos=True,
                )
                self.bar.__enter__()
        if self.bar is not None:
            self.bar.update(max(report.chunks_done - self.bar.pos, 0))
        else:
            self.counting = True
            line = f"{printable(report.document)}: {report.chunks_done} chunks"
            click.echo(f"\r{line}", nl=False, err=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None
        if self.counting:
            click.echo("", err=True)
            self.counting = False


def _view_options(page_words: str, session_tokens: int) -> dict[str, dict[str, int]]:
    try:
        low, high = (int(v) for v in page_words.split(","))
    except ValueError:
        raise click.BadParameter(
            f"expected MIN,MAX words, got {page_words!r}", param_hint="--page-words"
        ) from None
    if not 0 < low < high:
        raise click.BadParameter(
            f"need 0 < MIN < MAX, got {page_words!r}", param_hint="--page-words"
        )
    if session_tokens < 1:
        raise click.BadParameter(
            f"must be >= 1, got {session_tokens}", param_hint="--session-tokens"
        )
    return {
        "readagent": {"min_words": low, "max_words": high},
        "gam": {"session_tokens": session_tokens},
    }


def _build_view(
    memory: Memory,
    view: str,
    doc_ids: list[str] | None,
    backend: str,
    options: dict[str, dict[str, int]],
    as_json: bool,
    show_progress: bool,
) -> None:
    """Build one adapter view; its LLM steps use the summarizer's backend."""
    from cam_engine.adapters.registry import VIEW_BUILDERS

    if doc_ids is not None and not doc_ids:
        if not as_json:
            click.echo(
                f"view {view}: up to date (no new text; `cam ingest --view {view}` "
                "without PATH rebuilds it for every document)"
            )
        return
    chat = chat_for(backend, Environment.from_env())

    def pages(done: int) -> None:
        click.echo(f"\rview readagent: {plural(done, 'page')} gisted", nl=False, err=True)

    def sessions(document: str, index: int, total: int) -> None:
        line = f"view gam: {printable(document)} session {index + 1}/{total}"
        click.echo(f"\r{line}", nl=False, err=True)

    extra: dict[str, Any] = {}
    if show_progress:
        extra = {"on_page": pages} if view == "readagent" else {"on_session": sessions}
    report = VIEW_BUILDERS[view](memory, doc_ids, chat, **options[view], **extra)
    if show_progress:
        click.echo("", err=True)
    if as_json:
        echo_json(report.to_dict())
        return
    click.echo(
        f"view {view}: {plural(report.nodes_written, 'node')} over "
        f"{plural(report.documents, 'document')} "
        f"({report.backend}, {report.log.usage.calls} LLM calls)"
    )


class _FormatChoice(click.Choice[str]):
    """``auto`` or a registered format's name, as registered when the command runs (a
    format registered after this module was imported is a choice too)."""

    def __init__(self) -> None:
        super().__init__(())

    @property
    def choices(self) -> tuple[str, ...]:
        return ("auto", *format_names())

    @choices.setter
    def choices(self, _: object) -> None:
        pass  # click's __init__ sets them; they are the registry's


@click.command()
@click.argument("paths", nargs=-1, required=False)
@memory_options
@click.option("--batch-size", default=64, show_default=True, help="Chunks per batch (transaction).")
@click.option("--document", help="Document id for a single file or stdin (default: file name).")
@click.option(
    "--document-prefix",
    metavar="PREFIX",
    help="Put PREFIX and / before each file's document id: with --document-prefix notes, "
    "folder/a.md is document notes/a.md (a folder's files are named by their path inside it).",
)
@click.option(
    "--sample",
    is_flag=True,
    help="Also ingest the sample book shipped with CAM Engine (Frankenstein, public "
    "domain; document id frankenstein.txt): a first try needs no file of your own.",
)
@click.option(
    "--encoding",
    default="utf-8",
    show_default=True,
    metavar="NAME",
    help="Encoding of text files and stdin, e.g. latin-1 or cp1252 (PDF, EPUB and HTML "
    "files say their own).",
)
@click.option(
    "--format",
    "file_format",
    type=_FormatChoice(),
    default="auto",
    show_default=True,
    help="Read every file as this format. auto: from its content and extension (a .jsonl "
    "of {speaker, text, time, session} turns, or a .json with LoCoMo's session_N lists, is "
    "a conversation: chunks of whole turns, a session from a new chunk, dated).",
)
@click.option(
    "--rebuild",
    is_flag=True,
    help="After adding PATHS (if any), rebuild every level from the stored chunks in one pass.",
)
@llm_option("Who writes the summaries (and the --view's LLM steps):", "--summarizer")
@click.option(
    "--llm-concurrency",
    default=4,
    show_default=True,
    type=click.IntRange(min=1),
    help="LLM calls in flight at once (summaries of a batch); extractive runs serially.",
)
@click.option(
    "--view",
    "views",
    multiple=True,
    type=click.Choice(["readagent", "gam"]),
    help="Also build this adapter view (repeatable) over the documents ingested now, or "
    "over every document of the memory when no PATH is given. Its LLM steps use the "
    "--summarizer backend.",
)
@click.option("--page-words", default="280,600", show_default=True, help="readagent: min,max.")
@click.option("--session-tokens", default=2048, show_default=True, help="gam: tokens/session.")
@click.option("--chunk-tokens", type=int, help="New memory: tokens per chunk [16, 4096].")
@click.option("--alpha", type=float, help="New memory: cosine weight in the edge score [0, 1].")
@click.option("--sigma", type=float, help="New memory: positional decay (> 0).")
@click.option("--theta", type=float, help="New memory: minimum edge score [0, 1].")
@click.option("--k", type=int, help="New memory: edges kept per chunk [1, 1000].")
@click.option("--max-cluster-size", type=int, help="New memory: largest cluster [2, 10000].")
@click.option("--max-levels", type=int, help="New memory: summary levels [0, 50].")
@click.option(
    "--resummarize-drift",
    type=float,
    help="New memory: a cluster's summary is written again once its members differ from "
    "those it was written from by more than this share of its size [0, 1]; 0: on any "
    "change (default 0.25).",
)
@click.option(
    "--no-ego-split",
    "ego_split",
    flag_value=False,
    default=None,
    help="New memory: no ego-splitting, so clusters do not overlap (CAM's 'w/o "
    "flexibility' ablation, asked with --strategy prune-grow-no-flexibility). For "
    "comparison, not for use.",
)
@click.option(
    "--embed-model",
    help="New memory: sentence-transformers model name or path (default all-MiniLM-L6-v2, "
    "bundled; or $CAM_EMBED_MODEL), or openai:NAME for model NAME of an OpenAI-compatible "
    "/v1/embeddings API at $CAM_EMBED_BASE_URL (key: $CAM_EMBED_API_KEY, else "
    "$OPENAI_API_KEY; $CAM_EMBED_BATCH_SIZE inputs per request, default 128).",
)
@device_option
@json_option
def ingest(
    paths: tuple[str, ...],
    store: str | None,
    memory_name: str | None,
    batch_size: int,
    document: str | None,
    document_prefix: str | None,
    sample: bool,
    encoding: str,
    file_format: str,
    rebuild: bool,
    summarizer: str,
    llm_concurrency: int,
    views: tuple[str, ...],
    page_words: str,
    session_tokens: int,
    device: str | None,
    as_json: bool,
    **setting_values: Any,
) -> None:
    """Ingest files, folders or - (stdin) into a memory, in batches.

    A document's id is --document, else the file's name, or a folder's file's path
    inside the folder (after --document-prefix). Re-ingesting an unchanged document
    changes nothing; a changed one is updated: chunks whose text stayed are kept,
    the others removed, the new ones added, and its version goes up. stdin under the
    same --document is compared position by position, so a log that grew costs only
    its new chunks. Two PATHs that would be the same document are refused. With --json,
    one JSON object is printed per batch, then one for the run ("kind": "run").
    """
    if batch_size < 1:
        raise click.BadParameter(
            f"must be an integer >= 1, got {batch_size}", param_hint="--batch-size"
        )
    if sample:
        paths = (*paths, str(sample_path()))
    if not paths and not rebuild and not views:
        raise click.UsageError(
            "give at least one PATH (a file, a folder or -), or --sample, or --rebuild, or --view"
        )
    view_options = _view_options(page_words, session_tokens)
    try:
        encoding = check_encoding(encoding, CLI_OPTIONS)
    except CamError as exc:
        raise click.UsageError(str(exc)) from exc
    memory = open_memory(
        store,
        memory_name,
        settings=_settings(setting_values),
        summarizer=summarizer,
        llm_concurrency=llm_concurrency,
        create=bool(paths),  # --rebuild or --view alone work on a memory that exists
        device=device,
    )
    progress = _Progress(enabled=not as_json and sys.stderr.isatty())
    committed = [0]  # chunks added by the batches committed so far

    def on_batch(report: BatchReport) -> None:
        committed[0] += report.chunks_added
        if as_json:
            echo_json(report.to_dict())
        progress.update(report)

    def on_error(error: IngestError) -> None:
        click.echo(printable(f"error: {error.message}"), err=True)

    failed = False
    touched: list[str] = []
    changed: set[str] = set()
    memory.options = CLI_OPTIONS
    try:
        with memory:
            memory.prepare_writes()  # a read-only store is refused before any work
            _warn_of_mixed_summaries(memory)
            if paths:
                result = memory.ingest(
                    list(paths),
                    batch_size=batch_size,
                    document=document,
                    document_prefix=document_prefix,
                    on_batch=on_batch,
                    on_error=on_error,
                    encoding=encoding,
                    file_format=None if file_format == "auto" else file_format,
                )
                progress.close()
                failed = bool(result.errors)
                touched = list(dict.fromkeys(b.document for b in result.batches if b.document))
                # Changed documents: their views are built again (an update may only
                # have removed or moved chunks).
                changed = {c.document for c in document_changes(result.batches) if c.changed}
                if as_json or result.batches or not failed:
                    _report_run(result, memory, as_json)
            if rebuild:
                report = memory.rebuild(on_batch=on_batch if as_json else None)
                if not as_json:
                    click.echo(
                        f"rebuilt all levels from {report.chunks_added} chunks: "
                        f"{report.summaries_written} summaries"
                    )
            for view in views:
                # A document re-ingested unchanged keeps its view, unless it has none yet
                # (an earlier run stopped before building it).
                doc_ids = (
                    [d for d in touched if d in changed or not memory.view_nodes(view, PAGE, d)]
                    if paths
                    else None
                )
                _build_view(
                    memory, view, doc_ids, summarizer, view_options, as_json, progress.enabled
                )
    except (StoreUnavailableError, StoreWriteError) as exc:
        # The Neo4j server went away, or the disk is full: as with Ctrl-C, the batch in
        # flight was rolled back and the committed ones are kept.
        progress.close()
        raise click.ClickException(f"{exc}; {_kept(committed[0])}") from exc
    except CamError as exc:
        progress.close()
        raise click.ClickException(str(exc)) from exc
    except KeyboardInterrupt:
        progress.close()
        exit_interrupted(_kept(committed[0]))
    if failed:
        sys.exit(1)


def _kept(chunks: int) -> str:
    """What an ingest stopped part-way keeps. Each batch is its own transaction: the one
    in flight was rolled back and every earlier one is stored, and re-ingesting skips
    stored chunks, so running the same command again resumes."""
    return (
        f"{plural(chunks, 'new chunk')} from the batches committed so far are kept; "
        "run the same command again to resume"
    )


def _warn_of_mixed_summaries(memory: Memory) -> None:
    """The summarizer is chosen per command, not stored with the memory: say so before
    an ingest or a rebuild writes summaries by another backend than those already there."""
    others = {b for b in memory.stats()["summaries_by_backend"] if b} - {memory.summarizer.backend}
    if others:
        by = ", ".join(sorted(others))
        click.echo(
            f"warning: memory {memory.name!r} has summaries by {by}; summaries "
            f"written now will be by {memory.summarizer.backend} (--summarizer)",
            err=True,
        )


def _report_run(result: IngestReport, memory: Memory, as_json: bool) -> None:
    """What the run did: a line per updated document and one for the run, or the
    run's JSON object."""
    versions = {d.id: d.version for d in memory.documents()}
    summary = result.summary(versions)
    if as_json:
        echo_json(
            {
                "kind": "run",
                "memory": memory.name,
                "store": memory.location,
                "summarizer": memory.summarizer.backend,
                **summary,
            }
        )
        return
    for change in document_changes(result.batches):
        version = versions.get(change.document, 1)
        if change.changed and version > 1:
            click.echo(printable(_updated_line(change, version)))
    click.echo(printable(_ingest_line(result, summary, memory)))


def _updated_line(change: DocumentChange, version: int) -> str:
    return (
        f"updated document {change.document!r} (version {version}): kept "
        f"{change.chunks_kept}, removed {change.chunks_removed}, added "
        f"{plural(change.chunks_added, 'chunk')}; "
        f"{plural(change.summaries_written, 'summary')} written"
    )


def _ingest_line(result: IngestReport, summary: dict[str, Any], memory: Memory) -> str:
    where = f"memory {memory.name!r} ({memory.location})"
    if not (result.chunks_added or summary["chunks_removed"] or summary["chunks_moved"]):
        return f"nothing new: every chunk is already in {where}"
    written = sum(1 for b in result.batches if b.chunks_added or b.chunks_removed or b.chunks_moved)
    kept, removed = summary["chunks_kept"], summary["chunks_removed"]
    # A run that only added (new documents) says nothing of kept and removed chunks.
    revised = f": kept {kept}, removed {removed}" if kept or removed else ""
    # Summaries the model left empty twice are extractive: the line never credits them
    # to the model.
    unusable = summary["unusable_replies"]
    fallback = f" ({unusable} of them extractive: empty replies)" if unusable else ""
    return (
        f"ingested {plural(result.chunks_added, 'new chunk')} in {plural(written, 'batch')} "
        f"into {where}{revised}; {plural(summary['summaries_written'], 'summary')} written "
        f"by {memory.summarizer.backend}{fallback}"
    )
