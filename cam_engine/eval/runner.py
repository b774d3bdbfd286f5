"""``cam eval``: build memories for an eval set, ask every question with every
strategy, and score the evidence each would send at each token budget.

Scopes: when every question names exactly one document (QMSum meetings, NIAH
haystacks, LoCoMo dialogues) each document gets its own memory; otherwise (HotpotQA,
MuSiQue, 2Wiki: the CAM paper's Appendix G setting) all documents are pooled into
one. Memories live in one SQLite file under ``--out`` (one named memory each), built
with one embedder whose vectors are cached by text, so a second build of the same
documents for a strategy that ``needs_build`` other settings (the no-ego-splitting
ablation, prune-grow-no-flexibility) re-embeds nothing but its own summaries.

What is scored depends on the set's ``scoring``: "evidence" (the share of the gold
items inside each budget's context, and the reciprocal rank of the first passage
holding one) or "summary" (ROUGE-L and ROUGE-2 recall of the reference answer by
the context, for summary questions such as QMSum's general queries). A question
without what its scoring needs is left out and counted (``EvalRun.excluded``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from cam_engine.config import Settings
from cam_engine.conversation import Conversation
from cam_engine.embed.base import Embedder
from cam_engine.engine.reports import BatchReport
from cam_engine.errors import InputError
from cam_engine.eval.churn import ChurnReport, churn, churn_totals, churned_documents
from cam_engine.eval.contexts import (
    TOP_K,
    RankedContext,
    Scope,
    build_suffix,
    ranked_context,
)
from cam_engine.eval.dataset import (
    KIND_LONG,
    SCORING_EVIDENCE,
    SCORING_SUMMARY,
    EvalQuestion,
    EvalSet,
)
from cam_engine.eval.metrics import (
    DEFAULT_RULE,
    Rule,
    approx_tokens,
    bootstrap_ci,
    evidence_recall,
    exact_match,
    paired_difference,
    reciprocal_rank,
    rouge,
    rouge_recall,
    sub_em,
    token_f1,
    truncate_to_budget,
)
from cam_engine.llm.base import Answerer, Usage
from cam_engine.memory import Memory
from cam_engine.retrieval.strategies import Strategy, strategy_named

BUDGETS = (500, 1000, 2000, 4000)
BATCH_SIZE = 64
PAIRED_WITH = "prune-grow"  # compared question by question with every other strategy
POOLED_THETA = 0.32  # docs/defaults.md: pooled short documents need a lower threshold

Progress = Callable[[str, int, int], None]  # (stage, done, total)


@dataclass(frozen=True)
class Metric:
    """A per-budget score of a context: its key in results, its names in tables and plots."""

    key: str
    label: str  # column header and table titles
    axis: str  # plot axis
    # Shown with its 95% interval, compared question by question and plotted; MRR is
    # a secondary figure and gets none of those.
    compared: bool = True


METRICS: dict[str, tuple[Metric, ...]] = {
    SCORING_EVIDENCE: (
        Metric("recall", "recall", "gold evidence recall"),
        Metric("mrr", "MRR", "MRR", compared=False),
    ),
    SCORING_SUMMARY: (
        Metric("rouge_l_recall", "ROUGE-L recall", "ROUGE-L recall of the reference"),
        Metric("rouge2_recall", "ROUGE-2 recall", "ROUGE-2 recall of the reference"),
    ),
}


@dataclass
class QuestionResult:
    question_id: str
    strategy: str
    # metric key -> budget -> value: recall (share of gold items in the context) and
    # mrr, or rouge_l_recall and rouge2_recall (see METRICS)
    scores: dict[str, dict[int, float]]
    tokens: dict[int, int]  # context tokens actually used, per budget
    seconds: float
    llm_calls: int
    activated: int  # passages the strategy ranked before any cut
    # With an answering LLM: its answer from the context cut to the answer budget, the
    # scores (em/f1/sub_em for short answers, rouge1/rouge2/rouge_l for long ones) and
    # what the answer call cost.
    answer: str | None = None
    answer_scores: dict[str, float] = field(default_factory=dict)
    answer_llm_calls: int = 0
    answer_tokens: int = 0
    answer_seconds: float = 0.0
    # Parsed LLM replies of the strategy (selector, adapters) that needed a repair call,
    # and that stayed unusable so the step fell back (llm/structured.py); 0 offline.
    repaired_replies: int = 0
    unusable_replies: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The fields, with each metric's per-budget values at the top level
        (``"recall": {budget: value}``), as results.json has always had them."""
        row = asdict(self)
        return {**{k: v for k, v in row.items() if k != "scores"}, **row["scores"]}


@dataclass
class EvalRun:
    name: str
    strategies: list[str]
    budgets: list[int]
    questions: int  # questions scored (``excluded`` ones not included)
    build: dict[str, Any]  # memories, chunks, seconds, summaries, llm calls
    results: list[QuestionResult] = field(default_factory=list)
    scoring: str = SCORING_EVIDENCE
    excluded: list[str] = field(default_factory=list)  # ids of questions not scored
    excluded_reason: str = ""  # why: "no gold evidence" or "no reference answer"
    # Set by ``cam eval --paired-with``: {"file": the earlier results.json, "rows": this
    # run minus it per strategy, metric and budget (eval.compare.paired_runs)}.
    paired_with: dict[str, Any] = field(default_factory=dict)

    @property
    def metrics(self) -> tuple[Metric, ...]:
        return METRICS[self.scoring]

    @property
    def compared(self) -> list[Metric]:
        """The metrics compared question by question (recall; or ROUGE-L and ROUGE-2)."""
        return [m for m in self.metrics if m.compared]

    def summary(self) -> list[dict[str, Any]]:
        """Per strategy and budget: each metric's mean with its 95% bootstrap interval
        (``recall``, ``recall_low``, ``recall_high``, ``mrr``, ...)."""
        rows = []
        for strategy in self.strategies:
            mine = [r for r in self.results if r.strategy == strategy]
            if not mine:
                continue
            for budget in self.budgets:
                row: dict[str, Any] = {"strategy": strategy, "budget": budget}
                for metric in self.metrics:
                    mean, low, high = bootstrap_ci([r.scores[metric.key][budget] for r in mine])
                    row[metric.key] = mean
                    row[f"{metric.key}_low"], row[f"{metric.key}_high"] = low, high
                row["tokens"] = float(np.mean([r.tokens[budget] for r in mine]))
                row["seconds_per_question"] = float(np.mean([r.seconds for r in mine]))
                row["llm_calls_per_question"] = float(np.mean([r.llm_calls for r in mine]))
                row.update(_reply_rates(mine))
                row["questions"] = len(mine)
                rows.append(row)
        return rows

    def paired(self, strategy: str, budget: int, metric: str | None = None) -> list[dict[str, Any]]:
        """``strategy`` against every other on the same questions: the mean difference of
        ``metric`` (default: the first compared one, recall or ROUGE-L recall) at
        ``budget`` with a paired 95% bootstrap interval, and how many questions each
        side wins. Paired intervals are much tighter than comparing two means."""
        key = metric or self.compared[0].key
        mine = {
            r.question_id: r.scores[key][budget] for r in self.results if r.strategy == strategy
        }
        rows = []
        for other in self.strategies:
            theirs = {
                r.question_id: r.scores[key][budget] for r in self.results if r.strategy == other
            }
            if other == strategy or not mine.keys() & theirs.keys():
                continue
            head = {"strategy": strategy, "other": other, "metric": key, "budget": budget}
            rows.append(head | paired_difference(mine, theirs))
        return rows

    def answer_summary(self) -> list[dict[str, Any]]:
        """Per strategy: mean answer scores with 95% bootstrap intervals, and answer cost."""
        rows = []
        for strategy in self.strategies:
            mine = [r for r in self.results if r.strategy == strategy and r.answer is not None]
            if not mine:
                continue
            row: dict[str, Any] = {"strategy": strategy, "questions": len(mine)}
            for metric in sorted({m for r in mine for m in r.answer_scores}):
                values = [r.answer_scores[metric] for r in mine if metric in r.answer_scores]
                row[metric], row[f"{metric}_low"], row[f"{metric}_high"] = bootstrap_ci(values)
            row["llm_calls_per_question"] = float(np.mean([r.answer_llm_calls for r in mine]))
            row["tokens_per_question"] = float(np.mean([r.answer_tokens for r in mine]))
            row["answer_seconds_per_question"] = float(np.mean([r.answer_seconds for r in mine]))
            rows.append(row)
        return rows

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "scoring": self.scoring,
            "metrics": [m.key for m in self.metrics],
            "strategies": self.strategies,
            "budgets": self.budgets,
            "questions": self.questions,
            "excluded": {
                "count": len(self.excluded),
                "reason": self.excluded_reason,
                "ids": self.excluded,
            },
            "build": self.build,
            "summary": self.summary(),
            "answers": self.answer_summary(),
            "paired": [
                row
                for strategy in self.strategies
                if strategy == PAIRED_WITH
                for metric in self.compared
                for budget in self.budgets
                for row in self.paired(strategy, budget, metric.key)
            ],
            "results": [r.to_dict() for r in self.results],
        } | ({"paired_with": self.paired_with} if self.paired_with else {})


def scope_of(evalset: EvalSet) -> dict[str, list[str]]:
    """Memory name -> the document ids it holds (see the module docstring)."""
    if evalset.questions and all(len(q.doc_ids) == 1 for q in evalset.questions):
        used = dict.fromkeys(q.doc_ids[0] for q in evalset.questions)
        # Memory names are plain identifiers; document ids can be anything.
        return {f"doc{i:04d}": [doc] for i, doc in enumerate(used)}
    return {"pool": [d.id for d in evalset.documents]}


def settings_for(evalset: EvalSet, scopes: dict[str, list[str]], base: Settings) -> Settings:
    if list(scopes) == ["pool"] and base.theta == Settings().theta:
        return replace(base, theta=POOLED_THETA)
    return base


def run_eval(
    evalset: EvalSet,
    *,
    embedder: Embedder,
    workdir: Path,
    strategies: Sequence[str],
    budgets: Sequence[int] = BUDGETS,
    settings: Settings | None = None,
    rule: Rule = DEFAULT_RULE,
    top_k: int = TOP_K,
    answerer: Answerer | None = None,
    answer_budget: int = 1000,
    churn_fraction: float | None = None,
    churn_seed: int = 0,
    progress: Progress | None = None,
) -> EvalRun:
    """Build the memories of ``evalset`` and score every strategy on every question.

    ``rule`` decides when a gold item counts as in the context (metrics.evidence_recall):
    "coverage" for paragraphs and turns that can straddle chunks, "substring" for a
    needle, whose one informative token is the number. With an ``answerer`` (an LLM),
    each strategy's context cut to ``answer_budget`` tokens is also answered and scored.
    With ``churn_fraction``, that share of the documents (picked by ``churn_seed``) is
    deleted from each built memory and ingested again before any question (eval.churn).
    Questions the set cannot score (``EvalSet.scorable``) are left out before anything
    is built and listed in ``EvalRun.excluded``; InputError when none is left.
    """
    evalset.validate()
    excluded = [q.id for q in evalset.questions if not evalset.scorable(q)]
    if excluded:
        kept = [q for q in evalset.questions if evalset.scorable(q)]
        if not kept:
            raise InputError(
                f"{evalset.name}: none of the {len(excluded)} questions can be scored "
                f"({evalset.unscorable_reason})"
            )
        evalset = replace(evalset, questions=kept)
    notify = progress or (lambda stage, done, total: None)
    scopes = scope_of(evalset)
    chosen = settings_for(evalset, scopes, settings or Settings(embed_model=embedder.name))
    workdir.mkdir(parents=True, exist_ok=True)
    db = workdir / "eval-memories.db"
    if db.exists():  # a fresh build every run: results must not depend on leftovers
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
    # A conversation is ingested as one (turn_chunking), as `cam ingest` reads a transcript.
    texts: dict[str, str | Conversation] = {
        d.id: d.conversation or d.text for d in evalset.documents
    }
    specs = [strategy_named(s) for s in strategies]
    # Each other build the strategies need, by its memory-name suffix.
    builds = {build_suffix(s.needs_build): s.needs_build for s in specs if s.needs_build}

    build: dict[str, Any] = {
        "memories": len(scopes),
        "settings": chosen.to_dict(),
        "top_k": top_k,
    }
    started = time.perf_counter()
    built: dict[str, Scope] = {}
    llm_calls = 0
    build_usage = Usage()  # the summaries' LLM replies: repaired, unusable
    summary_calls = 0  # Summarizer.summarize calls building the memories: LLM calls with a chat one
    documents_done, documents_total = 0, sum(len(ids) for ids in scopes.values())
    churned: set[str] = set()
    if churn_fraction is not None:
        every = [doc for ids in scopes.values() for doc in ids]
        churned = set(churned_documents(every, churn_fraction, churn_seed))
    churns: list[ChurnReport] = []
    for name, doc_ids in scopes.items():
        scope = Scope(Memory.open(db, name, settings=chosen, embedder=embedder), top_k=top_k)
        built[name] = scope
        for suffix, needs in builds.items():
            scope.builds[suffix] = Memory.open(
                db, f"{name}-{suffix}", settings=replace(chosen, **needs), embedder=embedder
            )
        # Short documents share batches: one batch per paragraph would run the whole
        # hierarchy update 2,000 times for pooled HotpotQA.
        pairs = [(doc_id, texts[doc_id]) for doc_id in doc_ids]

        written = [0]  # chunks, over the batches of this scope so far

        def tick(
            batch: BatchReport,
            done: int = documents_done,
            size: int = len(pairs),
            written: list[int] = written,
        ) -> None:
            # A pooled memory or a long haystack is one step of minutes, so each batch
            # reports too. Pooled batches mix short documents of about one chunk each:
            # chunks written approximate the documents reached (at most all of them).
            written[0] += batch.chunks_added + batch.chunks_skipped
            reached = min(written[0], size) if size > 1 else 0
            notify("build", done + reached, documents_total)

        reports = [
            m.ingest_documents(pairs, batch_size=BATCH_SIZE, on_batch=tick)
            for m in scope.memories()
        ]
        llm_calls += sum(b.usage.calls for r in reports for b in r.batches)
        build_usage = sum((r.usage for r in reports), build_usage)
        summary_calls += sum(b.summary_calls for r in reports for b in r.batches)
        if mine := [doc for doc in doc_ids if doc in churned]:
            for churning in scope.memories():
                churns.append(_churn(churning, mine, texts, notify))
                llm_calls += churns[-1].llm_calls
        llm_calls += _build_views(scope, specs)
        documents_done += len(doc_ids)
        notify("build", documents_done, documents_total)
    build["seconds"] = round(time.perf_counter() - started, 2)
    if churn_fraction is not None:
        build["churn"] = churn_totals(churns, churn_fraction, churn_seed)
    stats = [s.memory.stats() for s in built.values()]
    build["chunks"] = sum(s["levels"][0]["nodes"] for s in stats if s["levels"])
    build["summaries"] = sum(lv["nodes"] for s in stats for lv in s["levels"] if lv["level"] > 0)
    build["summarizer"] = next(iter(built.values())).memory.summarizer.backend
    build["llm_calls"] = llm_calls  # 0 with the extractive summarizer and views
    build["repaired_replies"] = build_usage.repaired_replies
    build["unusable_replies"] = build_usage.unusable_replies
    build["summary_calls"] = summary_calls

    by_doc = {doc: name for name, ids in scopes.items() for doc in ids}
    run = EvalRun(
        evalset.name,
        list(strategies),
        list(budgets),
        len(evalset.questions),
        build,
        scoring=evalset.scoring,
        excluded=excluded,
        excluded_reason=evalset.unscorable_reason if excluded else "",
    )
    try:
        total = len(evalset.questions)
        for done, question in enumerate(evalset.questions, start=1):
            # One memory per document, or one pooled memory ("pool") for them all.
            scope = built["pool"] if "pool" in built else built[by_doc[question.doc_ids[0]]]
            # Embedded once before any strategy is timed: each then finds it cached.
            embedder.embed([question.question])
            for strategy in strategies:
                result, ranked = _score(scope, question, strategy, budgets, rule, evalset.scoring)
                if answerer is not None:
                    _answer(result, answerer, question, ranked, answer_budget)
                run.results.append(result)
            notify("questions", done, total)
    finally:
        for scope in built.values():
            for memory in scope.memories():
                memory.close()
    return run


def _build_views(scope: Scope, specs: Sequence[Strategy]) -> int:
    """The adapter views the strategies read, built extractively on the memories they
    are asked of; the LLM calls that took (none offline)."""
    from cam_engine.adapters.registry import VIEW_BUILDERS

    wanted = {(scope.memory_for(s).name, s.view): scope.memory_for(s) for s in specs if s.view}
    calls = 0
    for (_, view), memory in sorted(wanted.items(), key=lambda item: item[0]):
        calls += VIEW_BUILDERS[view](memory, None, None).log.usage.calls
    return calls


def _churn(
    memory: Memory, doc_ids: list[str], texts: dict[str, str | Conversation], notify: Progress
) -> ChurnReport:
    """``eval.churn`` on one memory, its deletes reported as stage "churn"."""
    report = churn(
        memory,
        doc_ids,
        texts,
        batch_size=BATCH_SIZE,
        on_deleted=lambda done: notify("churn", done, len(doc_ids)),
    )
    notify("churn", len(doc_ids), len(doc_ids))
    return report


def _score(
    scope: Scope,
    question: EvalQuestion,
    strategy: str,
    budgets: Sequence[int],
    rule: Rule,
    scoring: str = SCORING_EVIDENCE,
) -> tuple[QuestionResult, RankedContext]:
    start = time.perf_counter()
    ranked = ranked_context(scope, strategy, question.question)
    seconds = time.perf_counter() - start
    gold = [g.text for g in question.gold]
    scores: dict[str, dict[int, float]] = {m.key: {} for m in METRICS[scoring]}
    tokens = {}
    for budget in budgets:
        context = truncate_to_budget(ranked.passages, budget)
        if scoring == SCORING_SUMMARY:
            found = rouge_recall(context, question.answers)
            scores["rouge_l_recall"][budget] = found.rouge_l
            scores["rouge2_recall"][budget] = found.rouge2
        else:
            scores["recall"][budget] = evidence_recall(context, gold, rule=rule)
            scores["mrr"][budget] = reciprocal_rank(context, gold, rule=rule)
        tokens[budget] = sum(approx_tokens(p) for p in context)
    result = QuestionResult(
        question.id,
        strategy,
        scores,
        tokens,
        round(seconds, 4),
        ranked.usage.calls,
        len(ranked.passages),
        repaired_replies=ranked.usage.repaired_replies,
        unusable_replies=ranked.usage.unusable_replies,
    )
    return result, ranked


def _answer(
    result: QuestionResult,
    answerer: Answerer,
    question: EvalQuestion,
    ranked: RankedContext,
    budget: int,
) -> None:
    reply = answerer.answer(question.question, truncate_to_budget(ranked.passages, budget))
    result.answer = reply.text
    result.answer_scores = answer_scores(reply.text, question)
    result.answer_llm_calls = reply.usage.calls
    result.answer_tokens = reply.usage.prompt_tokens + reply.usage.completion_tokens
    result.answer_seconds = round(reply.usage.seconds, 3)
    # An empty answer twice scores 0 (the model failed, not retrieval) and is counted.
    result.unusable_replies += reply.usage.unusable_replies


def _reply_rates(results: Sequence[QuestionResult]) -> dict[str, float]:
    """Per question, the LLM replies that needed a repair call and that stayed unusable."""
    return {
        "repaired_replies_per_question": float(np.mean([r.repaired_replies for r in results])),
        "unusable_replies_per_question": float(np.mean([r.unusable_replies for r in results])),
    }


def answer_scores(prediction: str, question: EvalQuestion) -> dict[str, float]:
    """EM, token F1 and sub_em (SQuAD normalization) for short answers; ROUGE-1/2/L for
    free-form ones."""
    if question.kind == KIND_LONG:
        scores = rouge(prediction, question.answers)
        return {"rouge1": scores.rouge1, "rouge2": scores.rouge2, "rouge_l": scores.rouge_l}
    return {
        "em": exact_match(prediction, question.answers),
        "f1": token_f1(prediction, question.answers),
        "sub_em": sub_em(prediction, question.answers),
    }


def answer_table(run: EvalRun) -> str:
    """Answer quality per strategy (mean [95% CI]), when an LLM answered."""
    rows = run.answer_summary()
    if not rows:
        return ""
    metrics = [m for m in ("em", "f1", "sub_em", "rouge1", "rouge2", "rouge_l") if m in rows[0]]
    lines = [
        "| strategy | " + " | ".join(metrics) + " | LLM calls/q | tokens/q |",
        "|---" * (3 + len(metrics)) + "|",
    ]
    for row in rows:
        cells = [f"{row[m]:.3f} [{row[m + '_low']:.3f}, {row[m + '_high']:.3f}]" for m in metrics]
        lines.append(
            f"| {row['strategy']} | "
            + " | ".join(cells)
            + f" | {row['llm_calls_per_question']:.1f} | {row['tokens_per_question']:.0f} |"
        )
    return "\n".join(lines)


def paired_table(run: EvalRun, metric: Metric | None = None) -> str:
    """prune-grow minus each other strategy, per budget: mean [95% CI] (wins/losses),
    of ``metric`` (default: the first compared one, recall or ROUGE-L recall)."""
    if PAIRED_WITH not in run.strategies or len(run.strategies) < 2:
        return ""
    key = (metric or run.compared[0]).key
    others = [s for s in run.strategies if s != PAIRED_WITH]
    lines = [
        f"| {PAIRED_WITH} minus | " + " | ".join(f"@{b}" for b in run.budgets) + " |",
        "|---" * (1 + len(run.budgets)) + "|",
    ]
    rows = {
        (r["other"], r["budget"]): r for b in run.budgets for r in run.paired(PAIRED_WITH, b, key)
    }
    for other in others:
        cells = []
        for b in run.budgets:
            r = rows.get((other, b))
            cells.append(
                f"{r['difference']:+.3f} [{r['low']:+.3f}, {r['high']:+.3f}] "
                f"({r['wins']}/{r['losses']})"
                if r
                else "-"
            )
        lines.append(f"| {other} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def paired_tables(run: EvalRun) -> list[tuple[Metric, str]]:
    """One paired table per compared metric (recall; or ROUGE-L and ROUGE-2 recall)."""
    tables = [(m, paired_table(run, m)) for m in run.compared]
    return [(m, t) for m, t in tables if t]


def paired_with_tables(run: EvalRun) -> list[str]:
    """With ``paired_with``: per compared metric, this run minus the earlier one."""
    if not run.paired_with:
        return []
    from cam_engine.eval.compare import paired_runs_table

    earlier, rows = run.paired_with["file"], run.paired_with["rows"]
    return [
        f"{m.label}, this run minus {earlier}, question by question:\n\n"
        + paired_runs_table(rows, m.key)
        for m in run.compared
    ]


def markdown_table(run: EvalRun) -> str:
    """Each metric per strategy (rows) and budget (columns); compared metrics (recall,
    ROUGE recall) with their 95% CI, MRR without."""
    head = "| strategy | " + " | ".join(f"{m.label}@{b}" for m in run.metrics for b in run.budgets)
    lines = [head + " |", "|---" * (1 + len(run.metrics) * len(run.budgets)) + "|"]
    rows = run.summary()
    for strategy in run.strategies:
        mine = {r["budget"]: r for r in rows if r["strategy"] == strategy}
        if not mine:
            continue
        cells = []
        for m in run.metrics:
            for b in run.budgets:
                row = mine[b]
                cell = f"{row[m.key]:.3f}"
                if m.compared:
                    cell += f" [{row[m.key + '_low']:.3f}, {row[m.key + '_high']:.3f}]"
                cells.append(cell)
        lines.append(f"| {strategy} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def headline(run: EvalRun) -> str:
    """The run in one line: questions scored and left out, build time, localization."""
    excluded = f" ({len(run.excluded)} excluded: {run.excluded_reason})" if run.excluded else ""
    noun = "summary question" if run.scoring == SCORING_SUMMARY else "question"
    what = noun if run.questions == 1 else noun + "s"
    if run.scoring == SCORING_SUMMARY:
        what += ", scored by ROUGE recall"
    churned = run.build.get("churn")
    churn = (
        f" ({churned['documents']} documents then deleted and ingested again)" if churned else ""
    )
    return (
        f"{run.name}: {run.questions} {what}{excluded}, memories built in "
        f"{run.build['seconds']} s{churn}, CAM top-k {run.build['top_k']}"
    )


def write_outputs(run: EvalRun, out: Path) -> list[Path]:
    """results.json (everything, per question), table.md and recall.png in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "results.json", out / "table.md"]
    written[0].write_text(json.dumps(run.to_dict(), indent=1, sort_keys=True))
    paired = [f"{m.label}, question by question:\n\n{t}" for m, t in paired_tables(run)]
    parts = [markdown_table(run), *paired, *paired_with_tables(run), answer_table(run)]
    written[1].write_text("\n\n".join(p for p in parts if p) + "\n")
    from cam_engine.eval.plots import recall_plot

    written.append(recall_plot(run, out / "recall.png"))
    return written
