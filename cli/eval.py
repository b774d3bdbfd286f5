"""``cam eval``: retrieval quality on real data against baselines (no LLM needed)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from cam_engine.api import EVAL, require_extra
from cam_engine.cli.options import LiveHelp, chat_for, device_option, echo_json, llm_option
from cam_engine.errors import CamError

if TYPE_CHECKING:
    from cam_engine.api import CachingEmbedder

KINDS = ("hotpotqa", "musique", "2wiki", "qmsum", "locomo", "jsonl", "niah", "books")
PROGRESS_INTERVAL = 30.0  # seconds between progress lines when stderr is not a terminal
# What each stage of run_eval's progress is called, and what it counts.
STAGES = {
    "build": ("building memories", "documents"),
    "churn": ("deleting documents and ingesting them again", "documents"),
    "questions": ("asking", "questions"),
}


def _strategies_help() -> str:
    """--strategies' help, with the registry's names as they are when it is shown."""
    from cam_engine.api import STRATEGIES
    from cam_engine.eval.books import default_strategies
    from cam_engine.eval.contexts import strategy_names

    return (
        "Comma-separated `cam ask --strategy` names, of: "
        + ", ".join(STRATEGIES)
        + ". Default: "
        + ", ".join(strategy_names(None))
        + " (the adapters only where each question has its own document); books: "
        + ", ".join(default_strategies())
        + "."
    )


def _ints(text: str, what: str, minimum: int = 0) -> list[int]:
    """Comma-separated integers, each at least ``minimum``: sorted, without repeats."""
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise click.BadParameter(f"{what} must be comma-separated integers, got {text!r}") from None
    if not values or any(v < minimum for v in values):
        raise click.BadParameter(f"{what} must be integers >= {minimum}, got {text!r}")
    return sorted(set(values))


class _Bar:
    """One progress bar per stage, on stderr, only on a terminal."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.stage = ""
        self.bar: Any = None
        self.done = 0

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        if stage != self.stage:
            self.close()
            self.stage, self.done = stage, 0
            label = STAGES[stage][0]
            self.bar = click.progressbar(length=total, label=label, file=sys.stderr)
            self.bar.__enter__()
        self.bar.update(done - self.done)
        self.done = done

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None


class _Ticker:
    """A progress line every ``interval`` seconds, for a stderr that is not a terminal
    (a CI log, nohup): a bar there is one line per update, or nothing for an hour."""

    def __init__(
        self,
        write: Callable[[str], None],
        *,
        interval: float = PROGRESS_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.write = write
        self.interval = interval
        self.clock = clock
        self.started = self.last = clock()

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = self.clock()
        if now - self.last < self.interval:
            return
        self.last = now
        what, unit = STAGES[stage]
        elapsed = now - self.started
        self.write(f"cam eval: {what}, {done}/{total} {unit} done, {elapsed:.0f} s elapsed")

    def close(self) -> None:
        pass


@click.command("eval")
@click.argument("kind", type=click.Choice(KINDS))
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--strategies", cls=LiveHelp, help_from=_strategies_help)
@click.option("--budgets", default="500,1000,2000,4000", show_default=True, help="Tokens.")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    help="Ask only the first N questions (HotpotQA-style sets also pool fewer documents).",
)
@click.option("--level", help="HotpotQA only: keep questions of this level (e.g. hard).")
@click.option(
    "--queries",
    type=click.Choice(["specific", "general"]),
    help="QMSum only: specific (default: each query's gold turns, scored by evidence "
    "recall) or general (one summary question per meeting, scored by ROUGE-L and ROUGE-2 "
    "recall of the reference answer by the context).",
)
@click.option("--lengths", default="32000,128000", show_default=True, help="NIAH: haystack tokens.")
@click.option("--depths", default="0,25,50,75,100", show_default=True, help="NIAH: percent.")
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    help="Write results.json, table.md and plots here, and keep the memories built "
    "(eval-memories.db; a new run rebuilds them).",
)
@click.option(
    "--top-k",
    default=10,
    show_default=True,
    type=click.IntRange(min=1),
    help="CAM: nodes found by fast localization.",
)
@llm_option(
    "Also answer each question from each strategy's context and score the answers "
    "(EM/F1/sub_em, or ROUGE for free-form answers), by this model; extractive (the "
    "default) scores retrieval only.",
)
@click.option(
    "--answer-budget",
    default=1000,
    show_default=True,
    type=click.IntRange(min=1),
    help="Context tokens the answering LLM gets.",
)
@click.option(
    "--embed-model",
    help="Embedding model: a sentence-transformers name or path, or openai:NAME for an "
    "OpenAI-compatible API at $CAM_EMBED_BASE_URL (default: $CAM_EMBED_MODEL, else "
    "all-MiniLM-L6-v2, bundled).",
)
@device_option
@click.option(
    "--embed-cache",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Keep embedding vectors in this .npz between runs: texts embedded by an earlier "
    "run with the same model are not embedded again.",
)
@click.option(
    "--churn",
    type=click.FloatRange(min=0.0, max=1.0, min_open=True),
    help="After building each memory, delete this share of its documents (picked at "
    "random by --seed) one by one and ingest them again, then ask the questions.",
)
@click.option(
    "--seed",
    default=0,
    show_default=True,
    type=int,
    help="--churn: what picks the documents to churn.",
)
@click.option(
    "--paired-with",
    type=click.Path(exists=True, path_type=Path),
    help="An earlier run's results.json (or its --out folder): print and write this run "
    "minus that one, per strategy and budget, question by question with a paired "
    "bootstrap interval (e.g. a churned memory against one built once).",
)
@click.option(
    "--books-dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="books only: the folder of the books the check set names (<doc>.txt).",
)
@click.option(
    "--scoped",
    is_flag=True,
    help="books only: keep each question to its own book, as `cam ask --document` does.",
)
@click.option(
    "--resummarize-drift",
    type=click.FloatRange(0.0, 1.0),
    help="The memories' resummarize_drift (default: the Settings default): how far a "
    "cluster's members may drift before its summary is written again.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print everything as JSON (per question too)."
)
def eval_command(
    kind: str,
    path: Path,
    strategies: str | None,
    budgets: str,
    limit: int | None,
    level: str | None,
    queries: str | None,
    lengths: str,
    depths: str,
    out: Path | None,
    top_k: int,
    llm: str,
    answer_budget: int,
    embed_model: str | None,
    device: str | None,
    embed_cache: Path | None,
    churn: float | None,
    seed: int,
    paired_with: Path | None,
    books_dir: Path | None,
    scoped: bool,
    resummarize_drift: float | None,
    as_json: bool,
) -> None:
    """Measure the evidence each strategy puts in an LLM's context, on real data.

    KIND is the data format and PATH its file (for niah: a folder of .txt essays, e.g.
    ../shared/data/haystacks/paul_graham). Every strategy answers from the same chunks;
    each question's gold evidence (supporting sentences, transcript turns, the needle)
    is looked for in the context cut to each budget. Offline: no LLM is called; with
    --llm each context is also answered and the answers scored. Questions without gold
    evidence are left out and counted, not scored 0. `qmsum --queries general` asks
    summary questions instead: how much of the reference summary (ROUGE-L and ROUGE-2
    recall) each context holds. For locomo PATH may be locomo10.json, the
    locomo10.zip the LoCoMo repository ships, or a folder of its per-conversation files.
    Without a terminal, a progress line goes to stderr every 30 s. With --churn each
    memory is built, then a share of its documents deleted and ingested again before
    the questions; --paired-with compares such a run with one built once.

    \b
    KIND jsonl reads your own data, one JSON object per line:
      {"type": "set", "name": "my-eval", "scoring": "evidence"}   (optional, first)
      {"type": "document", "id": "d1", "text": "...", "title": "..."}
      {"type": "document", "id": "c1", "turns": [{"speaker": "Ann", "text": "...",
       "time": "2023-05-08", "session": "1"}, ...]}   (a conversation: chunked by turns)
      {"type": "question", "id": "q1", "question": "...", "answers": ["..."],
       "gold": [{"doc_id": "d1", "text": "..."}], "doc_ids": ["d1"], "kind": "short"}
    Gold "text" must occur verbatim in its document (a turn: "Ann: ..."); kind is short
    (exact match, F1) or long (ROUGE). With "scoring": "summary" the answers are reference
    summaries and gold may be empty: contexts are scored by ROUGE recall of the answers.

    \b
    KIND books asks a check set of short-answer questions on whole books, all books in
    ONE memory, and scores each strategy's offline answer and evidence by whether they
    contain an accepted answer (tests/data/book_questions.jsonl, --books-dir):
      {"id": "pg84-14", "doc": "pg84", "question": "...", "answers": ["Orkney"],
       "type": "where"}
    Its --strategies are `cam ask --strategy` names, as for every KIND (lookup and
    research build their views once).
    """
    import tempfile

    from cam_engine import Environment, Settings
    from cam_engine.eval.compare import load_results, paired_runs
    from cam_engine.eval.contexts import strategy_names
    from cam_engine.eval.loaders import load
    from cam_engine.eval.metrics import DEFAULT_RULE
    from cam_engine.eval.niah import length_and_depth, niah_set
    from cam_engine.eval.runner import (
        PAIRED_WITH,
        answer_table,
        headline,
        markdown_table,
        paired_tables,
        paired_with_tables,
        run_eval,
        scope_of,
        write_outputs,
    )

    if kind == "books":
        refused = (
            ("--churn", churn),
            ("--paired-with", paired_with),
            ("--resummarize-drift", resummarize_drift),
        )
        for name, value in refused:
            if value is not None:
                raise click.BadParameter("not for books", param_hint=name)
        _eval_books(
            path,
            books_dir,
            strategies,
            limit,
            out,
            embed_model,
            device,
            embed_cache,
            as_json,
            scoped=scoped,
        )
        return
    if books_dir is not None:
        raise click.BadParameter("only for books", param_hint="--books-dir")
    if scoped:
        raise click.BadParameter("only for books", param_hint="--scoped")
    answerer = None
    chat = chat_for(llm, Environment.from_env())
    if chat is not None:
        from cam_engine.api import ChatAnswerer

        answerer = ChatAnswerer(chat)
    if queries is not None and kind != "qmsum":
        raise click.BadParameter("only for qmsum", param_hint="--queries")
    bar: _Bar | _Ticker
    if sys.stderr.isatty():
        bar = _Bar(enabled=not as_json)
    else:
        bar = _Ticker(lambda line: click.echo(line, err=True))
    try:
        if kind == "niah":
            evalset = niah_set(
                path,
                lengths=_ints(lengths, "--lengths", minimum=1),
                depths=_ints(depths, "--depths"),
            )
        else:
            options: dict[str, str] = {"level": level} if level else {}
            if queries is not None:
                options["queries"] = queries
            evalset = load(kind, path, limit, **options)
        if limit is not None:
            evalset.questions = evalset.questions[:limit]
        if not evalset.questions:
            detail = f" of level {level!r}" if level else ""
            raise click.ClickException(f"{path}: no questions{detail} to ask")
        if out is not None:
            # Said before the run, not after it: --out's recall.png is plotted at the end.
            require_extra("matplotlib", EVAL, "cam eval --out (its recall.png)")
            try:
                out.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise click.ClickException(
                    f"--out {out}: cannot make it a folder ({exc.strerror})"
                ) from exc
        earlier = load_results(paired_with) if paired_with is not None else None
        pooled = list(scope_of(evalset)) == ["pool"]
        names = strategy_names(strategies.split(",") if strategies else None, pooled=pooled)
        # Cached by text: the ablation memory and repeated texts are embedded once.
        embedder = _caching_embedder(embed_model, device, embed_cache)
        with tempfile.TemporaryDirectory(prefix="cam-eval-") as scratch:
            run = run_eval(
                evalset,
                embedder=embedder,
                workdir=out or Path(scratch),
                strategies=names,
                budgets=_ints(budgets, "--budgets", minimum=1),
                settings=None
                if resummarize_drift is None
                else Settings(embed_model=embedder.name, resummarize_drift=resummarize_drift),
                rule="substring" if kind == "niah" else DEFAULT_RULE,
                top_k=top_k,
                answerer=answerer,
                answer_budget=answer_budget,
                churn_fraction=churn,
                churn_seed=seed,
                progress=bar,
            )
        embedder.save()  # a no-op without --embed-cache
        if earlier is not None:
            run.paired_with = {"file": str(paired_with), "rows": paired_runs(run, earlier)}
    except CamError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        bar.close()
    if out is not None:
        written = write_outputs(run, out)
        if kind == "niah":
            from cam_engine.eval.plots import heatmap

            by_cell: dict[tuple[int, int], list[float]] = {}
            for r in run.results:
                if r.strategy == PAIRED_WITH or len(run.strategies) == 1:
                    cell = length_and_depth(r.question_id)
                    by_cell.setdefault(cell, []).append(r.scores["recall"][max(run.budgets)])
            if by_cell:
                values = {c: sum(v) / len(v) for c, v in by_cell.items()}
                written.append(
                    heatmap(
                        values,
                        out / "niah.png",
                        title=f"needle recall at {max(run.budgets)} tokens",
                        row_label="haystack tokens",
                        col_label="depth %",
                    )
                )
        if not as_json:
            click.echo("wrote " + ", ".join(str(p) for p in written), err=True)
    if as_json:
        echo_json(run.to_dict())
        return
    click.echo(headline(run))
    click.echo(markdown_table(run))
    for metric, table in paired_tables(run):
        click.echo(f"\nquestion by question ({metric.label} difference, wins/losses):\n{table}")
    for table in paired_with_tables(run):
        click.echo(f"\n{table}")
    answers = answer_table(run)
    if answers and answerer is not None:
        click.echo(f"\nanswers from {answer_budget} tokens of context ({answerer.backend}):")
        click.echo(answers)


def _eval_books(
    path: Path,
    books_dir: Path | None,
    strategies: str | None,
    limit: int | None,
    out: Path | None,
    embed_model: str | None,
    device: str | None,
    embed_cache: Path | None,
    as_json: bool,
    *,
    scoped: bool = False,
) -> None:
    """``cam eval books``: the books of the check set in one memory (kept in --out as
    books.db, so a rerun ingests nothing), each strategy's answers scored."""
    import json
    import tempfile

    from cam_engine import Memory
    from cam_engine.eval.books import (
        BookRun,
        ask_books,
        book_paths,
        build_memory,
        default_strategies,
        load_book_questions,
        markdown_table,
    )
    from cam_engine.eval.contexts import check_name

    if books_dir is None:
        raise click.BadParameter("books needs the folder of its books", param_hint="--books-dir")
    names = strategies.split(",") if strategies else default_strategies()
    ticker = _Ticker(lambda line: click.echo(line, err=True))
    try:
        for name in names:
            check_name(name)
        questions = load_book_questions(path)[:limit]
        paths = book_paths(questions, books_dir)
        embedder = _caching_embedder(embed_model, device, embed_cache)
        with tempfile.TemporaryDirectory(prefix="cam-eval-books-") as scratch:
            folder = out or Path(scratch)
            folder.mkdir(parents=True, exist_ok=True)
            run = BookRun(names, questions)
            started = time.perf_counter()
            with Memory.open(folder / "books.db", "books", embedder=embedder) as memory:
                build_memory(memory, paths, names)
                embedder.save()  # a no-op without --embed-cache
                run.build = {
                    "books": [p.name for p in paths],
                    "chunks": memory.count_chunks(),
                    "seconds": round(time.perf_counter() - started, 1),
                    "scoped": scoped,
                }
                run.results = ask_books(
                    memory,
                    questions,
                    names,
                    scoped=scoped,
                    progress=lambda done, total: ticker("ask", done, total),
                )
            embedder.save()
    except CamError as exc:
        raise click.ClickException(str(exc)) from exc
    if out is not None:
        (out / "results.json").write_text(json.dumps(run.to_dict(), indent=1) + "\n")
        (out / "table.md").write_text(markdown_table(run) + "\n")
    if as_json:
        echo_json(run.to_dict())
        return
    click.echo(
        f"{len(questions)} questions on {', '.join(run.build['books'])} in one memory "
        f"({run.build['chunks']} chunks, built or opened in {run.build['seconds']} s)"
        + (", each question kept to its book" if scoped else "")
    )
    click.echo(markdown_table(run))


def _caching_embedder(
    embed_model: str | None, device: str | None, embed_cache: Path | None
) -> CachingEmbedder:
    """The embedder an evaluation runs with (--embed-model, else $CAM_EMBED_MODEL, else
    the default), its vectors kept by text in --embed-cache between runs."""
    from cam_engine import Environment
    from cam_engine.api import DEFAULT_EMBED_MODEL, CachingEmbedder, load_embedder

    env = Environment.from_env()
    inner = load_embedder(
        embed_model or env.embed_model or DEFAULT_EMBED_MODEL,
        device=device or env.embed_device,
        batch_size=env.embed_batch_size,
        environment=env,
    )
    return CachingEmbedder(inner, embed_cache)
