"""PNG plots of an eval run (matplotlib, headless Agg backend)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from cam_engine.extras import EVAL, require_extra

require_extra("matplotlib", EVAL, "plotting")  # one line, not a traceback, without it
import matplotlib  # noqa: E402

matplotlib.use("Agg")  # no display: files only
import matplotlib.pyplot as plt  # noqa: E402

if TYPE_CHECKING:
    from cam_engine.eval.runner import EvalRun


def recall_plot(run: EvalRun, path: Path) -> Path:
    """Each compared metric (evidence recall; or ROUGE-L and ROUGE-2 recall of the
    reference) against the token budget, one panel per metric, one line per strategy,
    with the 95% bootstrap interval as a band."""
    rows = run.summary()
    metrics = run.compared
    figure, panels = plt.subplots(1, len(metrics), figsize=(7 * len(metrics), 4.5), squeeze=False)
    for metric, axes in zip(metrics, panels[0], strict=True):
        for strategy in run.strategies:
            mine = sorted((r for r in rows if r["strategy"] == strategy), key=lambda r: r["budget"])
            if not mine:
                continue
            budgets = [r["budget"] for r in mine]
            axes.plot(budgets, [r[metric.key] for r in mine], marker="o", label=strategy)
            axes.fill_between(
                budgets,
                [r[f"{metric.key}_low"] for r in mine],
                [r[f"{metric.key}_high"] for r in mine],
                alpha=0.12,
            )
        axes.set_xscale("log", base=2)
        axes.set_xticks(run.budgets, [str(b) for b in run.budgets])
        axes.set_xlabel("context budget (tokens)")
        axes.set_ylabel(metric.axis)
        axes.set_ylim(0, 1)
        axes.set_title(f"{run.name}: {run.questions} questions")
        axes.grid(alpha=0.3)
        axes.legend(fontsize=8, loc="lower right")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def heatmap(
    values: dict[tuple[int, int], float], path: Path, *, title: str, row_label: str, col_label: str
) -> Path:
    """A (row, column) -> value grid in [0, 1], e.g. NIAH length x depth -> recall."""
    rows = sorted({r for r, _ in values})
    cols = sorted({c for _, c in values})
    grid = [[values.get((r, c), float("nan")) for c in cols] for r in rows]
    figure, axes = plt.subplots(figsize=(1.2 * len(cols) + 2, 0.8 * len(rows) + 1.6))
    image = axes.imshow(grid, vmin=0, vmax=1, cmap="RdYlGn", aspect="auto")
    axes.set_xticks(range(len(cols)), [str(c) for c in cols])
    axes.set_yticks(range(len(rows)), [str(r) for r in rows])
    axes.set_xlabel(col_label)
    axes.set_ylabel(row_label)
    for i, row in enumerate(grid):
        for j, value in enumerate(row):
            axes.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=8)
    axes.set_title(title)
    figure.colorbar(image, ax=axes)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def scale_plot(lines: list[dict[str, Any]], path: Path) -> Path:
    """``cam bench scale``'s cost curve: the engine's milliseconds per chunk and the
    process's RSS against the memory's chunks, one line per store: its progress points
    (every 100 batches) as the curve, its decade lines (last 10 batches) as dots."""
    figure, (cost, memory) = plt.subplots(1, 2, figsize=(11, 4.2))
    for store in sorted({str(line["store"]) for line in lines}):
        mine = sorted((ln for ln in lines if ln["store"] == store), key=lambda ln: ln["chunks"])
        curve = [ln for ln in mine if ln.get("kind") == "progress"]
        decades = [ln for ln in mine if ln.get("kind") != "progress"]
        if curve:
            chunks = [ln["chunks"] for ln in curve]
            ms = [ln["engine_ms_per_chunk_last100"] for ln in curve]
            cost.plot(chunks, ms, label=f"{store}, last 100 batches")
            memory.plot(chunks, [ln["rss_mb"] for ln in curve], label=store)
        if decades:
            chunks = [ln["chunks"] for ln in decades]
            ms = [ln["engine_ms_per_chunk_last10"] for ln in decades]
            cost.plot(chunks, ms, "o", label=f"{store}, last 10 batches at a decade")
            memory.plot(chunks, [ln["rss_mb"] for ln in decades], "o", label=f"{store}, decade")
    for axes, label in ((cost, "engine ms per chunk"), (memory, "RSS (MB)")):
        axes.set_xlabel("chunks in the memory")
        axes.set_ylabel(label)
        axes.set_ylim(bottom=0)
        axes.grid(alpha=0.3)
        axes.legend(fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
