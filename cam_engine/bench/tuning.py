"""How prune-and-grow's growth settings were chosen (not a test).

    cam bench tuning [--set hotpotqa:PATH] [--set qmsum:PATH] [--out DIR]

Builds the memories of each tuning set once (the 100 hard HotpotQA questions, pooled,
and QMSum's validation meetings, a memory each, by default: not the sets
docs/evaluation.md reports on), then asks every question with the flat baselines,
prune-and-grow without the hierarchy, and prune-and-grow with each variant of
``GrowSettings`` below, and prints one markdown table of gold-evidence recall at 500,
1,000, 2,000 and 4,000 tokens per set. Every variant runs through the same code as
``cam eval`` (``eval.contexts.ranked_context``). ``--out`` keeps the built memories (and
an embedding cache) so a second run skips the build.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from cam_engine.config import DEFAULT_EMBED_MODEL
from cam_engine.embed import load_embedder
from cam_engine.embed.caching import CachingEmbedder
from cam_engine.eval.contexts import Scope, ranked_context
from cam_engine.eval.loaders import load
from cam_engine.eval.metrics import evidence_recall, truncate_to_budget
from cam_engine.eval.runner import run_eval, scope_of
from cam_engine.memory import Memory
from cam_engine.retrieval.fill import FillSettings
from cam_engine.retrieval.prune_grow import DEFAULT_GROW, GrowSettings

BUDGETS = (500, 1000, 2000, 4000)
VARIANTS: dict[str, GrowSettings] = {
    "defaults (name bridges, 3 seeds, bridge rank 2, member decay 0.8)": DEFAULT_GROW,
    "lexical links instead": replace(DEFAULT_GROW, bridges="lexical"),
    "names and lexical links": replace(DEFAULT_GROW, bridges="both"),
    "no bridges": replace(DEFAULT_GROW, bridges="lexical", linked=0),
    "names, bridge rank 3": replace(DEFAULT_GROW, bridge_rank=3),
    "names, bridge rank 5": replace(DEFAULT_GROW, bridge_rank=5),
    "names, bridge rank 8": replace(DEFAULT_GROW, bridge_rank=8),
    "member decay 0.95": replace(DEFAULT_GROW, member_decay=0.95),
    "member decay 0.7": replace(DEFAULT_GROW, member_decay=0.7),
    "no member flow": replace(DEFAULT_GROW, member_decay=0.0),
    "names, 1 seed": replace(DEFAULT_GROW, ppr_seeds=1),
    "names, 5 seeds": replace(DEFAULT_GROW, ppr_seeds=5),
    "names, 2 raised": replace(DEFAULT_GROW, ppr_raised=2),
    "names, damping 0.85": replace(DEFAULT_GROW, ppr_damping=0.85),
    "names, max 30 chunks": replace(DEFAULT_GROW, ppr_max_chunks=30),
    "names, max 300 chunks": replace(DEFAULT_GROW, ppr_max_chunks=300),
    "no cluster fill": replace(DEFAULT_GROW, fill=FillSettings(decay=0.0)),
    "fill decay 0.5, no density": replace(DEFAULT_GROW, fill=FillSettings(decay=0.5, density=0.0)),
    "fill decay 0.9, density 0.5": replace(DEFAULT_GROW, fill=FillSettings(decay=0.9, density=0.5)),
    "fill after 500 tokens": replace(DEFAULT_GROW, fill=FillSettings(lead_tokens=500)),
    "fill after 1,500 tokens": replace(DEFAULT_GROW, fill=FillSettings(lead_tokens=1500)),
}


def default_sets(data: Path) -> list[tuple[str, Path]]:
    """The tuning sets in the shared data folder ``data``."""
    return [
        ("hotpotqa", data / "hotpotqa" / "hotpotqa_dev_100_hard.jsonl"),
        ("qmsum", data / "qmsum" / "val.jsonl"),
    ]


def tune(kind: str, path: Path, workdir: Path) -> dict[str, list[float]]:
    """Recall per budget for the baseline, the ablation and every variant."""
    evalset = load(kind, path)
    cache = CachingEmbedder(load_embedder(DEFAULT_EMBED_MODEL), workdir / "vectors.npz")
    if not (workdir / "eval-memories.db").exists():
        run_eval(evalset, embedder=cache, workdir=workdir, strategies=["hybrid"])
        cache.save()
    # label -> (registry strategy, growth settings)
    strategies: dict[str, tuple[str, GrowSettings]] = {
        "bm25": ("bm25", DEFAULT_GROW),
        "dense": ("dense", DEFAULT_GROW),
        "hybrid": ("hybrid", DEFAULT_GROW),
        "prune-grow-no-hierarchy": ("prune-grow-no-hierarchy", DEFAULT_GROW),
        **{f"prune-grow, {n}": ("prune-grow", g) for n, g in VARIANTS.items()},
    }
    scopes = scope_of(evalset)
    by_doc = {doc: name for name, ids in scopes.items() for doc in ids}
    opened: dict[str, Scope] = {}
    recalls: dict[str, list[list[float]]] = {name: [] for name in strategies}
    try:
        for question in evalset.questions:
            if not question.gold:
                continue
            name = "pool" if "pool" in scopes else by_doc[question.doc_ids[0]]
            if name not in opened:
                opened[name] = Scope(
                    Memory.open(workdir / "eval-memories.db", name, embedder=cache)
                )
            gold = [g.text for g in question.gold]
            for label, (strategy, grow) in strategies.items():
                context = ranked_context(opened[name], strategy, question.question, grow=grow)
                passages = context.passages
                recalls[label].append(
                    [evidence_recall(truncate_to_budget(passages, b), gold) for b in BUDGETS]
                )
    finally:
        for scope in opened.values():
            scope.memory.close()
    return {label: list(np.mean(rows, axis=0)) for label, rows in recalls.items()}


def run(sets: list[tuple[str, Path]], keep: Path | None = None) -> None:
    """Tune on each (loader kind, path) set and print its table; ``keep``: the folder
    that keeps the built memories and vectors (default: a temporary one)."""
    with tempfile.TemporaryDirectory(prefix="cam-tuning-") as scratch:
        root = keep or Path(scratch)
        for kind, path in sets:
            workdir = root / f"{kind}-{path.stem}"
            workdir.mkdir(parents=True, exist_ok=True)
            results = tune(kind, path, workdir)
            print(f"\n{kind} {path.name}\n")
            print("| strategy | " + " | ".join(f"recall@{b}" for b in BUDGETS) + " |")
            print("|---" * (1 + len(BUDGETS)) + "|")
            for label, values in results.items():
                print(f"| {label} | " + " | ".join(f"{v:.3f}" for v in values) + " |")
