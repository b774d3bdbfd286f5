"""``cam eval``: build memories for an eval set, ask every question with every
strategy, and score the evidence each would send at each token budget.

Scopes: when every question names exactly one document (QMSum meetings, NIAH
haystacks, LoCoMo dialogues) each document gets its own memory; otherwise (HotpotQA,
MuSiQue, 2Wiki: the CAM paper's Appendix G setting) all documents are pooled into
one. Memories live in one SQLite file under ``--out`` (one named memory each), built
with one embedder whose vectors are cached by text, so the no-ego-splitting ablation
re-embeds nothing but its own summaries.
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
from cam_engine.embed.base import Embedder
from cam_engine.eval.contexts import (
    NEEDS_ABLATION,
    NEEDS_VIEW,
    STRATEGIES,
    TOP_K,
    RankedContext,
    Scope,
)
from cam_engine.eval.dataset import KIND_LONG, EvalQuestion, EvalSet
from cam_engine.eval.metrics import (
    DEFAULT_RULE,
    Rule,
    approx_tokens,
    bootstrap_ci,
    evidence_recall,
    exact_match,
    reciprocal_rank,
    rouge,
    sub_em,
    token_f1,
    truncate_to_budget,
)
from cam_engine.llm.base import Answerer
from cam_engine.memory import Memory

BUDGETS = (500, 1000, 2000, 4000)
BATCH_SIZE = 64
PAIRED_WITH = "cam-prune-grow"  # compared question by question with every other strategy
POOLED_THETA = 0.32  # docs/defaults.md: pooled short documents need a lower threshold

Progress = Callable[[str, int, int], None]  # (stage, done, total)


@dataclass
class QuestionResult:
    question_id: str
    strategy: str
    recall: dict[int, float]  # budget -> share of gold items in the context
    mrr: dict[int, float]
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


@dataclass
class EvalRun:
    name: str
    strategies: list[str]
    budgets: list[int]
    questions: int
    build: dict[str, Any]  # memories, chunks, seconds, summaries, llm calls
    results: list[QuestionResult] = field(default_factory=list)

    def summary(self) -> list[dict[str, Any]]:
        """Per strategy and budget: mean recall and MRR with 95% bootstrap intervals."""
        rows = []
        for strategy in self.strategies:
            mine = [r for r in self.results if r.strategy == strategy]
            if not mine:
                continue
            for budget in self.budgets:
                recall = bootstrap_ci([r.recall[budget] for r in mine])
                mrr = bootstrap_ci([r.mrr[budget] for r in mine])
                rows.append(
                    {
                        "strategy": strategy,
                        "budget": budget,
                        "recall": recall[0],
                        "recall_low": recall[1],
                        "recall_high": recall[2],
                        "mrr": mrr[0],
                        "mrr_low": mrr[1],
                        "mrr_high": mrr[2],
                        "tokens": float(np.mean([r.tokens[budget] for r in mine])),
                        "seconds_per_question": float(np.mean([r.seconds for r in mine])),
                        "llm_calls_per_question": float(np.mean([r.llm_calls for r in mine])),
                        "questions": len(mine),
                    }
                )
        return rows

    def paired(self, strategy: str, budget: int) -> list[dict[str, Any]]:
        """``strategy`` against every other on the same questions: the mean difference of
        recall at ``budget`` with a paired 95% bootstrap interval, and how many questions
        each side wins. Paired intervals are much tighter than comparing two means."""
        mine = {r.question_id: r.recall[budget] for r in self.results if r.strategy == strategy}
        rows = []
        for other in self.strategies:
            theirs = {r.question_id: r.recall[budget] for r in self.results if r.strategy == other}
            common = sorted(mine.keys() & theirs.keys())
            if other == strategy or not common:
                continue
            diffs = [mine[q] - theirs[q] for q in common]
            mean, low, high = bootstrap_ci(diffs)
            rows.append(
                {
                    "strategy": strategy,
                    "other": other,
                    "budget": budget,
                    "difference": mean,
                    "low": low,
                    "high": high,
                    "wins": sum(d > 0 for d in diffs),
                    "losses": sum(d < 0 for d in diffs),
                }
            )
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
            "strategies": self.strategies,
            "budgets": self.budgets,
            "questions": self.questions,
            "build": self.build,
            "summary": self.summary(),
            "answers": self.answer_summary(),
            "paired": [
                row
                for strategy in self.strategies
                if strategy == PAIRED_WITH
                for budget in self.budgets
                for row in self.paired(strategy, budget)
            ],
            "results": [asdict(r) for r in self.results],
        }


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
    progress: Progress | None = None,
) -> EvalRun:
    """Build the memories of ``evalset`` and score every strategy on every question.

    ``rule`` decides when a gold item counts as in the context (metrics.contains):
    "coverage" for paragraphs and turns that can straddle chunks, "substring" for a
    needle, whose one informative token is the number. With an ``answerer`` (an LLM),
    each strategy's context cut to ``answer_budget`` tokens is also answered and scored.
    """
    evalset.validate()
    notify = progress or (lambda stage, done, total: None)
    scopes = scope_of(evalset)
    chosen = settings_for(evalset, scopes, settings or Settings(embed_model=embedder.name))
    workdir.mkdir(parents=True, exist_ok=True)
    db = workdir / "eval-memories.db"
    if db.exists():  # a fresh build every run: results must not depend on leftovers
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
    texts = {d.id: d.text for d in evalset.documents}
    ablation = any(s in NEEDS_ABLATION for s in strategies)

    build: dict[str, Any] = {
        "memories": len(scopes),
        "settings": chosen.to_dict(),
        "top_k": top_k,
    }
    started = time.perf_counter()
    built: dict[str, Scope] = {}
    llm_calls = 0
    documents_done, documents_total = 0, sum(len(ids) for ids in scopes.values())
    for name, doc_ids in scopes.items():
        memory = Memory.open(db, name, settings=chosen, embedder=embedder)
        flat = None
        if ablation:
            flat_settings = replace(chosen, ego_split=False)
            flat = Memory.open(db, f"{name}-flat", settings=flat_settings, embedder=embedder)
        # Short documents share batches: one batch per paragraph would run the whole
        # hierarchy update 2,000 times for pooled HotpotQA.
        pairs = [(doc_id, texts[doc_id]) for doc_id in doc_ids]
        reports = [memory.ingest_documents(pairs, batch_size=BATCH_SIZE)]
        if flat is not None:
            reports.append(flat.ingest_documents(pairs, batch_size=BATCH_SIZE))
        llm_calls += sum(b.usage.calls for r in reports for b in r.batches)
        for view in sorted({NEEDS_VIEW[s] for s in strategies if s in NEEDS_VIEW}):
            from cam_engine.adapters.registry import VIEW_BUILDERS

            view_report = VIEW_BUILDERS[view](memory, None, None)  # extractive views
            llm_calls += view_report.log.usage.calls
        documents_done += len(doc_ids)
        notify("build", documents_done, documents_total)
        built[name] = Scope(memory, flat, top_k=top_k)
    build["seconds"] = round(time.perf_counter() - started, 2)
    stats = [s.memory.stats() for s in built.values()]
    build["chunks"] = sum(s["levels"][0]["nodes"] for s in stats if s["levels"])
    build["summaries"] = sum(lv["nodes"] for s in stats for lv in s["levels"] if lv["level"] > 0)
    build["summarizer"] = next(iter(built.values())).memory.summarizer.backend
    build["llm_calls"] = llm_calls  # 0 with the extractive summarizer and views

    by_doc = {doc: name for name, ids in scopes.items() for doc in ids}
    run = EvalRun(evalset.name, list(strategies), list(budgets), len(evalset.questions), build)
    try:
        total = len(evalset.questions)
        for done, question in enumerate(evalset.questions, start=1):
            # One memory per document, or one pooled memory ("pool") for them all.
            scope = built["pool"] if "pool" in built else built[by_doc[question.doc_ids[0]]]
            vector = embedder.embed([question.question])[0]
            for strategy in strategies:
                result, ranked = _score(scope, question, vector, strategy, budgets, rule)
                if answerer is not None:
                    _answer(result, answerer, question, ranked, answer_budget)
                run.results.append(result)
            notify("questions", done, total)
    finally:
        for scope in built.values():
            scope.memory.close()
            if scope.ablation is not None:
                scope.ablation.close()
    return run


def _score(
    scope: Scope,
    question: EvalQuestion,
    vector: np.ndarray,
    strategy: str,
    budgets: Sequence[int],
    rule: Rule,
) -> tuple[QuestionResult, RankedContext]:
    start = time.perf_counter()
    ranked: RankedContext = STRATEGIES[strategy](scope, question.question, vector)
    seconds = time.perf_counter() - start
    gold = [g.text for g in question.gold]
    recall, mrr, tokens = {}, {}, {}
    for budget in budgets:
        context = truncate_to_budget(ranked.passages, budget)
        recall[budget] = evidence_recall(context, gold, rule=rule)
        mrr[budget] = reciprocal_rank(context, gold, rule=rule)
        tokens[budget] = sum(approx_tokens(p) for p in context)
    result = QuestionResult(
        question.id,
        strategy,
        recall,
        mrr,
        tokens,
        round(seconds, 4),
        ranked.usage.calls,
        len(ranked.passages),
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


def paired_table(run: EvalRun) -> str:
    """cam-prune-grow minus each other strategy, per budget: mean [95% CI] (wins/losses)."""
    if PAIRED_WITH not in run.strategies or len(run.strategies) < 2:
        return ""
    others = [s for s in run.strategies if s != PAIRED_WITH]
    lines = [
        f"| {PAIRED_WITH} minus | " + " | ".join(f"@{b}" for b in run.budgets) + " |",
        "|---" * (1 + len(run.budgets)) + "|",
    ]
    rows = {(r["other"], r["budget"]): r for b in run.budgets for r in run.paired(PAIRED_WITH, b)}
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


def markdown_table(run: EvalRun) -> str:
    """Recall (95% CI) and MRR per strategy (rows) and budget (columns)."""
    head = "| strategy | " + " | ".join(f"recall@{b}" for b in run.budgets)
    head += " | " + " | ".join(f"MRR@{b}" for b in run.budgets) + " |"
    lines = [head, "|---" * (1 + 2 * len(run.budgets)) + "|"]
    rows = run.summary()
    for strategy in run.strategies:
        mine = {r["budget"]: r for r in rows if r["strategy"] == strategy}
        if not mine:
            continue
        recalls = [
            f"{mine[b]['recall']:.3f} [{mine[b]['recall_low']:.3f}, {mine[b]['recall_high']:.3f}]"
            for b in run.budgets
        ]
        mrrs = [f"{mine[b]['mrr']:.3f}" for b in run.budgets]
        lines.append(f"| {strategy} | " + " | ".join(recalls + mrrs) + " |")
    return "\n".join(lines)


def write_outputs(run: EvalRun, out: Path) -> list[Path]:
    """results.json (everything, per question), table.md and recall.png in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "results.json", out / "table.md"]
    written[0].write_text(json.dumps(run.to_dict(), indent=1, sort_keys=True))
    parts = [markdown_table(run), paired_table(run), answer_table(run)]
    written[1].write_text("\n\n".join(p for p in parts if p) + "\n")
    from cam_engine.eval.plots import recall_plot

    written.append(recall_plot(run, out / "recall.png"))
    return written
