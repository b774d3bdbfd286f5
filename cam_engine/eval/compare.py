"""One run against an earlier one, question by question (``cam eval --paired-with``).

Two runs of the same questions (a memory built once, and one churned; two settings)
are compared strategy by strategy: this run minus the earlier, per budget, with a
paired bootstrap interval. The earlier run is read from its ``results.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cam_engine.errors import InputError
from cam_engine.eval.contexts import RENAMED
from cam_engine.eval.metrics import paired_difference
from cam_engine.eval.runner import EvalRun

Scores = dict[tuple[str, str], dict[int, float]]  # (strategy, question id) -> budget -> value


def load_results(path: Path) -> dict[str, Any]:
    """An earlier run's results.json (``path`` itself, or the --out folder holding it)."""
    file = path / "results.json" if path.is_dir() else path
    try:
        data = json.loads(file.read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"{file}: not a cam eval results.json ({exc})") from exc
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise InputError(f"{file}: not a cam eval results.json (no per-question results)")
    if old := next((s for s in data.get("strategies", []) if s in RENAMED), None):
        raise InputError(
            f"{file}: written with the old strategy names ({old} is now {RENAMED[old]}): "
            "run it again to compare"
        )
    return data


def _earlier_scores(earlier: dict[str, Any], metric: str) -> Scores:
    # JSON keys are strings: budgets come back as "500".
    return {
        (row["strategy"], row["question_id"]): {int(b): v for b, v in row[metric].items()}
        for row in earlier["results"]
        if metric in row
    }


def paired_runs(run: EvalRun, earlier: dict[str, Any]) -> list[dict[str, Any]]:
    """Per strategy both runs have, compared metric and budget both scored: ``run``
    minus ``earlier`` on the questions both asked (``paired_difference``)."""
    if earlier.get("scoring", run.scoring) != run.scoring:
        raise InputError(
            f"the earlier run is scored by {earlier['scoring']}, this one by {run.scoring}"
        )
    rows = []
    for metric in run.compared:
        theirs = _earlier_scores(earlier, metric.key)
        for strategy in run.strategies:
            mine = [r for r in run.results if r.strategy == strategy]
            for budget in run.budgets:
                now = {r.question_id: r.scores[metric.key][budget] for r in mine}
                before = {
                    q: scores[budget]
                    for (s, q), scores in theirs.items()
                    if s == strategy and budget in scores
                }
                if now.keys() & before.keys():
                    head = {"strategy": strategy, "metric": metric.key, "budget": budget}
                    rows.append(head | paired_difference(now, before))
    if not rows:
        raise InputError("the earlier run shares no strategy, budget and question with this one")
    return rows


def paired_runs_table(rows: list[dict[str, Any]], metric: str) -> str:
    """This run minus the earlier, per strategy (rows) and budget (columns):
    mean [95% CI] (wins/losses)."""
    mine = [r for r in rows if r["metric"] == metric]
    budgets = sorted({r["budget"] for r in mine})
    lines = [
        "| this run minus the earlier | " + " | ".join(f"@{b}" for b in budgets) + " |",
        "|---" * (1 + len(budgets)) + "|",
    ]
    for strategy in dict.fromkeys(r["strategy"] for r in mine):
        cells = {r["budget"]: r for r in mine if r["strategy"] == strategy}
        lines.append(
            f"| {strategy} | "
            + " | ".join(_cell(cells[b]) if b in cells else "-" for b in budgets)
            + " |"
        )
    return "\n".join(lines)


def _cell(row: dict[str, Any]) -> str:
    return (
        f"{row['difference']:+.3f} [{row['low']:+.3f}, {row['high']:+.3f}] "
        f"({row['wins']}/{row['losses']})"
    )
