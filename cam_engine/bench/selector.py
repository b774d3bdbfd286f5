"""How the offline selector's margin and the context order were chosen (not a test).

    python -m cam_engine.bench.selector [--data PATH] [--store DIR]

Builds the pooled memory of the 100 hard HotpotQA questions (a different set from
the 200 that docs/evaluation.md reports on, so the report is not tuned on itself) and
a memory of Frankenstein (the ask benchmark's book and its 20 questions), and prints,
for prune-and-grow with the extractive selector, gold-evidence recall at 500, 1,000 and
2,000 tokens on HotpotQA and the nodes activated on both (mean, and the max on the
book, which is what ask latency follows) for each margin, minimum similarity, cap per
turn, localization top-k and context order ("all": activated nodes by cosine;
"chunks-first": chunks by cosine, then summaries), next to BM25 and dense top-k on the
same chunks. One markdown table.
"""

from __future__ import annotations

import argparse
import itertools
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from cam_engine.bench import shared_data_dir
from cam_engine.bench.ask import book_corpus, default_book
from cam_engine.bench.stores import CachingEmbedder
from cam_engine.config import Settings
from cam_engine.embed import load_embedder
from cam_engine.eval.contexts import RankedContext, Scope, bm25, dense
from cam_engine.eval.loaders import load
from cam_engine.eval.metrics import evidence_recall, truncate_to_budget
from cam_engine.eval.runner import POOLED_THETA
from cam_engine.llm.extractive import ExtractiveSelector
from cam_engine.memory import Memory
from cam_engine.retrieval import prune_and_grow
from cam_engine.types import Node

BUDGETS = (500, 1000, 2000)
MARGINS = (0.1, 0.2, 0.3)
MIN_SIMILARITIES = (0.2, 0.3)
CAPS = (5, 8, None)  # candidates chosen per turn at most
TOP_KS = (10, 20)
ORDERS = ("all", "chunks-first")


def default_data() -> Path:
    return shared_data_dir() / "hotpotqa" / "hotpotqa_dev_100_hard.jsonl"


def order(nodes: Sequence[Node], vector: np.ndarray, how: str) -> list[str]:
    scored = [(n, float(n.embedding @ vector)) for n in nodes if n.embedding is not None]
    if how == "chunks-first":
        scored.sort(key=lambda pair: (pair[0].level > 0, -pair[1], pair[0].id))
    else:
        scored.sort(key=lambda pair: (-pair[1], pair[0].id))
    return [n.text for n, _ in scored]


def prune_grow_passages(
    memory: Memory, selector: ExtractiveSelector, top_k: int, how: str, activated: list[int]
) -> Callable[[str, np.ndarray], list[str]]:
    def passages(question: str, vector: np.ndarray) -> list[str]:
        found = prune_and_grow(memory.store, question, vector, selector, top_k=top_k, max_turns=5)
        activated.append(len(found.activated))
        return order(found.activated, vector, how)

    return passages


def run(data: Path, store_dir: Path) -> str:
    evalset = load("hotpotqa", data)
    embedder = CachingEmbedder(load_embedder("all-MiniLM-L6-v2"))
    memory = Memory.open(
        store_dir / "selector.db", "pool", settings=Settings(theta=POOLED_THETA), embedder=embedder
    )
    start = time.perf_counter()
    memory.ingest_documents([(d.id, d.text) for d in evalset.documents], batch_size=64)
    built = time.perf_counter() - start
    questions = evalset.questions
    vectors = embedder.embed([q.question for q in questions])
    scope = Scope(memory)
    book_path = default_book()
    corpus = book_corpus(book_path)
    book = Memory.open(store_dir / "selector.db", "book", embedder=embedder)
    book.ingest([book_path], batch_size=64)
    book_vectors = embedder.embed(corpus.questions)

    def recall(passages_of: Callable[[str, np.ndarray], list[str]]) -> list[float]:
        per_budget: dict[int, list[float]] = {b: [] for b in BUDGETS}
        for question, vector in zip(questions, vectors, strict=True):
            passages = passages_of(question.question, vector)
            gold = [g.text for g in question.gold]
            for b in BUDGETS:
                per_budget[b].append(evidence_recall(truncate_to_budget(passages, b), gold))
        return [float(np.mean(per_budget[b])) for b in BUDGETS]

    def baseline(fn: Callable[[Scope, str, np.ndarray], RankedContext]) -> list[float]:
        return recall(lambda q, v: fn(scope, q, v).passages)

    head = "| strategy | top-k | min sim | margin | cap | order | " + " | ".join(
        f"recall@{b}" for b in BUDGETS
    )
    head += " | activated (HotpotQA) | activated (book, mean / max) |"
    lines = [
        f"HotpotQA: {len(questions)} questions, {len(evalset.documents)} documents, built in "
        f"{built:.0f} s; book: {book_path.name}, {len(corpus.questions)} questions",
        "",
        head,
        "|---" * (8 + len(BUDGETS)) + "|",
    ]
    for name, fn in (("bm25", bm25), ("dense", dense)):
        cells = " | ".join(f"{r:.3f}" for r in baseline(fn))
        lines.append(f"| {name} | | | | | | {cells} | | |")
    grid = itertools.product(TOP_KS, MIN_SIMILARITIES, MARGINS, CAPS, ORDERS)
    for top_k, min_sim, margin, cap, how in grid:
        selector = ExtractiveSelector(
            embedder.embed, min_similarity=min_sim, margin=margin, max_chosen=cap
        )
        activated: list[int] = []
        cells = " | ".join(
            f"{r:.3f}" for r in recall(prune_grow_passages(memory, selector, top_k, how, activated))
        )
        on_book = [
            len(prune_and_grow(book.store, q, v, selector, top_k=top_k, max_turns=5).activated)
            for q, v in zip(corpus.questions, book_vectors, strict=True)
        ]
        lines.append(
            f"| prune-grow | {top_k} | {min_sim} | {margin} | {cap or '-'} | {how} | {cells} | "
            f"{np.mean(activated):.1f} | {np.mean(on_book):.1f} / {max(on_book)} |"
        )
    memory.close()
    book.close()
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cam_engine.bench.selector")
    parser.add_argument("--data", type=Path, default=default_data(), help="HotpotQA file")
    parser.add_argument("--store", type=Path, help="folder for the memory (default: temp)")
    args = parser.parse_args(argv)
    if args.store:
        args.store.mkdir(parents=True, exist_ok=True)
        print(run(args.data, args.store))
    else:
        with tempfile.TemporaryDirectory() as folder:
            print(run(args.data, Path(folder)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
