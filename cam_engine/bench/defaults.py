"""Measure the composite-score defaults (alpha, sigma, theta, k, chunk_tokens) on real data.

Run from the repository root:

    python -m cam_engine.bench.defaults [--data DIR] [--out DIR] [--cache DIR]

It prints markdown tables (docs/defaults.md pastes them):

1. chunk size against MiniLM's 256 word-piece window (Frankenstein, Moby Dick);
2. single-book networks over an (alpha, sigma, theta) grid, k=10, chunk_tokens=200;
3. a pooled multi-document network (the paragraphs of hotpotqa_dev_200), with how often
   the two gold paragraphs of a question are linked;
4. cosine quantiles, for thresholds set relative to the embedder's distribution.

Networks are built with ``cam_engine.graph.similarity.expand`` over all chunks at once,
the code the engine uses. Embeddings are cached as .npy files under ``--cache``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import re
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import igraph as ig
import numpy as np

from cam_engine.chunking import chunk_document, count_tokens
from cam_engine.graph.similarity import Located, expand

MODEL = "all-MiniLM-L6-v2"
MAX_SEQ_LENGTH = 256  # MiniLM's window in word pieces; longer inputs are truncated
BOOKS = {"Frankenstein": "pg84.txt", "Moby Dick": "pg2701.txt"}
CHUNK_SIZES = (150, 200, 256)
CHUNK_TOKENS = 200
ALPHAS = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
SIGMAS = (1.0, 2.0)
THETAS = (0.4, 0.45, 0.5, 0.55, 0.6, 0.65)
MULTI_ALPHAS = (0.6, 0.8, 0.9, 1.0)
MULTI_THETAS = (0.35, 0.4, 0.45, 0.5, 0.6)
K = 10
RELEASE = (0.6, 1.0, 0.6)  # the public CAM release: alpha, sigma, theta
LONG_RANGE = 3  # an edge is long-range when its chunks are this many positions apart or more
QUANTILES = (50, 90, 95, 99)
# A grid row is printed when both books are usable under it (the full grid goes to --out).
USEFUL_MAX_ISOLATED = 0.10
USEFUL_DEGREE = (2.0, 8.0)

_GUTENBERG_START = re.compile(r"^\*\*\* START OF TH(?:E|IS) PROJECT GUTENBERG.*$", re.M)
_GUTENBERG_END = re.compile(r"^\*\*\* END OF TH(?:E|IS) PROJECT GUTENBERG", re.M)


# ----------------------------------------------------------------------------- data


def book_text(path: Path) -> str:
    """The book without the Project Gutenberg header and licence (kept if markers are absent)."""
    text = path.read_text(encoding="utf-8-sig")
    start = _GUTENBERG_START.search(text)
    end = _GUTENBERG_END.search(text)
    return text[start.end() if start else 0 : end.start() if end else len(text)].strip()


@dataclass(frozen=True)
class Paragraph:
    title: str
    text: str


@dataclass(frozen=True)
class Question:
    id: str
    gold: tuple[str, ...]  # titles of the supporting paragraphs


def hotpot_paragraphs(path: Path) -> tuple[list[Paragraph], list[Question]]:
    """All context paragraphs, deduplicated by title (first seen wins), and the gold titles."""
    paragraphs: dict[str, Paragraph] = {}
    questions: list[Question] = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            row = json.loads(line)
            for title, sentences in row["context"]:
                body = " ".join(s.strip() for s in sentences if s.strip())
                paragraphs.setdefault(title, Paragraph(title, f"{title}: {body}"))
            gold = tuple(dict.fromkeys(title for title, _ in row["supporting_facts"]))
            questions.append(Question(row["_id"], gold))
    return list(paragraphs.values()), questions


# ----------------------------------------------------------------------------- embedding


class CachedEmbedder:
    """MiniLM embeddings and word-piece counts; embeddings cached as .npy per text list."""

    def __init__(self, cache_dir: Path, model: str = MODEL) -> None:
        from cam_engine.embed.sentence_transformers import SentenceTransformerEmbedder

        self.cache_dir = cache_dir
        self.model = model
        self._embedder = SentenceTransformerEmbedder(model)

    def embed(self, name: str, texts: Sequence[str]) -> np.ndarray:
        digest = hashlib.sha1(self.model.encode())
        for text in texts:
            digest.update(hashlib.sha1(text.encode()).digest())
        slug = re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower()
        path = self.cache_dir / f"{slug}-{digest.hexdigest()[:16]}.npy"
        if path.exists():
            vectors = np.load(path)
            if vectors.shape[0] == len(texts):
                return vectors
        vectors = self._embedder.embed(texts)
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        np.save(path, vectors)
        return vectors

    def word_pieces(self, texts: Iterable[str]) -> np.ndarray:
        return np.array([self._embedder.count_word_pieces(t) for t in texts], dtype=np.int64)


# ----------------------------------------------------------------------------- measurements


@dataclass(frozen=True)
class ChunkRow:
    book: str
    chunk_tokens: int
    chunks: int
    mean_tokens: float
    mean_pieces: float
    p99_pieces: float
    over_window: float  # share of chunks longer than MAX_SEQ_LENGTH word pieces


def chunk_row(book: str, budget: int, texts: Sequence[str], pieces: np.ndarray) -> ChunkRow:
    tokens = np.array([count_tokens(t) for t in texts], dtype=np.float64)
    return ChunkRow(
        book=book,
        chunk_tokens=budget,
        chunks=len(texts),
        mean_tokens=float(tokens.mean()),
        mean_pieces=float(pieces.mean()),
        p99_pieces=float(np.percentile(pieces, 99)),
        over_window=float(np.mean(pieces > MAX_SEQ_LENGTH)),
    )


@dataclass(frozen=True)
class NetworkRow:
    alpha: float
    sigma: float
    theta: float
    isolated: float  # share of nodes without an edge
    mean_degree: float
    long_range: float  # share of edges joining chunks LONG_RANGE+ positions apart
    largest: float  # largest connected component, share of nodes
    gold_linked: float | None = None  # multi-document only: gold pair joined by an edge
    gold_2hops: float | None = None  # ... or by a path of at most two edges


def build_graph(nodes: Sequence[Located], alpha: float, sigma: float, theta: float) -> ig.Graph:
    edges = expand(list(nodes), [], alpha=alpha, sigma=sigma, theta=theta, k=K)
    index = {n.id: i for i, n in enumerate(nodes)}
    return ig.Graph(n=len(nodes), edges=[(index[e.src], index[e.dst]) for e in edges])


def network_row(
    nodes: Sequence[Located],
    graph: ig.Graph,
    alpha: float,
    sigma: float,
    theta: float,
    gold_pairs: Sequence[tuple[int, int]] = (),
) -> NetworkRow:
    n = graph.vcount()
    degrees = np.array(graph.degree(), dtype=np.float64)
    positions = np.array([node.position for node in nodes])
    docs = [node.doc_id for node in nodes]
    pairs = graph.get_edgelist()
    long_edges = sum(
        1 for a, b in pairs if docs[a] == docs[b] and abs(positions[a] - positions[b]) >= LONG_RANGE
    )
    largest = max(graph.connected_components().sizes()) if n else 0
    row = NetworkRow(
        alpha=alpha,
        sigma=sigma,
        theta=theta,
        isolated=float(np.mean(degrees == 0)),
        mean_degree=float(degrees.mean()),
        long_range=long_edges / len(pairs) if pairs else 0.0,
        largest=largest / n if n else 0.0,
    )
    if not gold_pairs:
        return row
    neighbours = [set(graph.neighbors(v)) for v in range(n)]
    linked = [b in neighbours[a] for a, b in gold_pairs]
    near = [b in neighbours[a] or bool(neighbours[a] & neighbours[b]) for a, b in gold_pairs]
    return NetworkRow(
        **{**asdict(row), "gold_linked": float(np.mean(linked)), "gold_2hops": float(np.mean(near))}
    )


@dataclass(frozen=True)
class QuantileRow:
    corpus: str
    pairs: str
    count: int
    quantiles: tuple[float, ...]


def quantile_row(corpus: str, pairs: str, cosines: np.ndarray) -> QuantileRow:
    values = np.percentile(cosines, QUANTILES) if cosines.size else [float("nan")] * len(QUANTILES)
    return QuantileRow(corpus, pairs, int(cosines.size), tuple(float(v) for v in values))


def book_cosines(vectors: np.ndarray) -> dict[str, np.ndarray]:
    """Cosines of all chunk pairs, adjacent pairs and pairs LONG_RANGE+ positions apart."""
    cosine = vectors @ vectors.T
    upper = np.triu_indices(len(vectors), k=1)
    apart = upper[1] - upper[0]
    values = cosine[upper]
    return {
        "all pairs": values,
        "adjacent (1 apart)": values[apart == 1],
        f"{LONG_RANGE}+ apart": values[apart >= LONG_RANGE],
    }


# ----------------------------------------------------------------------------- markdown


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def chunk_table(rows: Sequence[ChunkRow]) -> str:
    return markdown_table(
        ["book", "chunk_tokens", "chunks", "mean tokens", "mean pieces", "p99 pieces",
         f"> {MAX_SEQ_LENGTH} pieces"],
        [
            (r.book, r.chunk_tokens, r.chunks, f"{r.mean_tokens:.0f}", f"{r.mean_pieces:.0f}",
             f"{r.p99_pieces:.0f}", f"{100 * r.over_window:.1f}%")
            for r in rows
        ],
    )


def _is_release(row: NetworkRow) -> bool:
    return (row.alpha, row.sigma, row.theta) == RELEASE


def _useful(row: NetworkRow) -> bool:
    low, high = USEFUL_DEGREE
    return row.isolated <= USEFUL_MAX_ISOLATED and low <= row.mean_degree <= high


def books_table(grids: dict[str, list[NetworkRow]], only_useful: bool) -> str:
    """One row per (alpha, sigma, theta), the books side by side."""
    books = list(grids)
    header = ["alpha", "sigma", "theta"]
    for book in books:
        header += [f"{book}: isolated", "mean deg", "long-range", "largest CC"]
    rows = []
    for cells in zip(*(grids[b] for b in books), strict=True):
        if only_useful and not (all(_useful(c) for c in cells) or _is_release(cells[0])):
            continue
        first = cells[0]
        label = f"**{first.alpha}**" if _is_release(first) else str(first.alpha)
        row: list[object] = [label, first.sigma, first.theta]
        for c in cells:
            row += [_pct(c.isolated), f"{c.mean_degree:.1f}", _pct(c.long_range), _pct(c.largest)]
        rows.append(row)
    return markdown_table(header, rows)


def multi_table(rows: Sequence[NetworkRow]) -> str:
    return markdown_table(
        ["alpha", "theta", "cos needed", "isolated", "mean deg", "largest CC", "gold linked",
         "gold <= 2 hops"],
        [
            (r.alpha, r.theta, f"{r.theta / r.alpha:.2f}", _pct(r.isolated),
             f"{r.mean_degree:.1f}", _pct(r.largest), _pct(r.gold_linked), _pct(r.gold_2hops))
            for r in rows
        ],
    )


def quantile_table(rows: Sequence[QuantileRow]) -> str:
    return markdown_table(
        ["corpus", "pairs", "count", *(f"p{q}" for q in QUANTILES)],
        [(r.corpus, r.pairs, r.count, *(f"{v:.3f}" for v in r.quantiles)) for r in rows],
    )


# ----------------------------------------------------------------------------- driver


def run(data_dir: Path, cache_dir: Path) -> tuple[str, str, dict[str, object]]:
    """Run every measurement; returns (printed report, full report, raw results)."""
    embedder = CachedEmbedder(cache_dir)
    chunk_rows: list[ChunkRow] = []
    quantile_rows: list[QuantileRow] = []
    grids: dict[str, list[NetworkRow]] = {}
    timings: dict[str, float] = {}

    for book, file_name in BOOKS.items():
        started = time.perf_counter()
        text = book_text(data_dir / "haystacks" / "gutenberg" / file_name)
        for budget in CHUNK_SIZES:
            chunks = chunk_document(book, text, budget)
            texts = [c.text for c in chunks]
            chunk_rows.append(chunk_row(book, budget, texts, embedder.word_pieces(texts)))
        chunks = chunk_document(book, text, CHUNK_TOKENS)
        vectors = embedder.embed(f"{book}-{CHUNK_TOKENS}", [c.text for c in chunks])
        nodes = [
            Located(c.id, c.doc_id, c.position, v) for c, v in zip(chunks, vectors, strict=True)
        ]
        for pairs, cosines in book_cosines(vectors).items():
            quantile_rows.append(quantile_row(book, pairs, cosines))
        grid = []
        for alpha in ALPHAS:
            for sigma in SIGMAS:
                for theta in THETAS:
                    graph = build_graph(nodes, alpha, sigma, theta)
                    grid.append(network_row(nodes, graph, alpha, sigma, theta))
        grids[book] = grid
        timings[book] = time.perf_counter() - started

    started = time.perf_counter()
    paragraphs, questions = hotpot_paragraphs(data_dir / "hotpotqa" / "hotpotqa_dev_200.jsonl")
    vectors = embedder.embed("hotpotqa-dev-200", [p.text for p in paragraphs])
    # each paragraph is its own document at position 0: proximity is always 0 across them
    nodes = [
        Located(f"p{i}", p.title, 0, v) for i, (p, v) in enumerate(zip(paragraphs, vectors, strict=True))
    ]
    index = {p.title: i for i, p in enumerate(paragraphs)}
    gold_pairs = [
        (index[q.gold[0]], index[q.gold[1]])
        for q in questions
        if len(q.gold) == 2 and all(t in index for t in q.gold)
    ]
    multi_rows = []
    for alpha in MULTI_ALPHAS:
        for theta in MULTI_THETAS:
            graph = build_graph(nodes, alpha, 1.0, theta)
            multi_rows.append(network_row(nodes, graph, alpha, 1.0, theta, gold_pairs))
    cosine = vectors @ vectors.T
    quantile_rows.append(
        quantile_row("HotpotQA pool", "all pairs", cosine[np.triu_indices(len(nodes), k=1)])
    )
    quantile_rows.append(
        quantile_row("HotpotQA pool", "gold pairs", np.array([cosine[a, b] for a, b in gold_pairs]))
    )
    timings["HotpotQA"] = time.perf_counter() - started

    intro = (
        f"Embedder {MODEL} (normalized), k={K}, long-range = {LONG_RANGE}+ positions apart, "
        f"chunk_tokens={CHUNK_TOKENS} for the networks.\n"
    )
    hotpot_intro = (
        f"{len(paragraphs)} paragraphs pooled from {len(questions)} questions, each its own "
        f"document at position 0 (proximity 0, sigma irrelevant), {len(gold_pairs)} gold pairs.\n"
    )
    low, high = USEFUL_DEGREE
    parts = {
        "chunks": "## 1. Chunk size vs MiniLM's 256 word-piece window\n\n" + chunk_table(chunk_rows),
        "multi": "## 3. Multi-document network (HotpotQA dev 200, pooled)\n\n"
        + hotpot_intro
        + "\n"
        + multi_table(multi_rows),
        "quantiles": "## 4. Cosine distribution (for an embedder-relative threshold)\n\n"
        + quantile_table(quantile_rows),
    }
    books_title = "## 2. Single-book networks (chunk_tokens=200, k=10)\n\n"
    useful_note = (
        f"Rows where both books have <= {100 * USEFUL_MAX_ISOLATED:.0f}% isolated chunks and a "
        f"mean degree in [{low:g}, {high:g}], plus the release default (bold); the full grid "
        "is in the --out report.\n"
    )
    printed = "\n\n".join(
        [
            "# CAM defaults with MiniLM\n\n" + intro,
            parts["chunks"],
            books_title + useful_note + "\n" + books_table(grids, only_useful=True),
            parts["multi"],
            parts["quantiles"],
        ]
    )
    full = "\n\n".join(
        [
            "# CAM defaults with MiniLM (full grid)\n\n" + intro,
            parts["chunks"],
            books_title + books_table(grids, only_useful=False),
            parts["multi"],
            parts["quantiles"],
        ]
    )
    raw: dict[str, object] = {
        "model": MODEL,
        "k": K,
        "chunks": [asdict(r) for r in chunk_rows],
        "books": {book: [asdict(r) for r in rows] for book, rows in grids.items()},
        "hotpotqa": [asdict(r) for r in multi_rows],
        "quantiles": [asdict(r) for r in quantile_rows],
        "seconds": timings,
    }
    return printed + "\n", full + "\n", raw


def default_data_dir() -> Path:
    """../shared/data beside the checkout (the layout of this project and of CI)."""
    return Path(__file__).resolve().parents[3] / "shared" / "data"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cam_engine.bench.defaults",
        description="Measure alpha/sigma/theta/chunk size for the MiniLM embedder on real data.",
    )
    parser.add_argument("--data", type=Path, default=default_data_dir(),
                        help="the shared data folder (default: ../shared/data)")
    parser.add_argument("--out", type=Path, default=None,
                        help="also write report.md (full grid) and results.json here")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/cam-defaults-cache"),
                        help="embedding cache folder (default: /tmp/cam-defaults-cache)")
    args = parser.parse_args(argv)
    if not (args.data / "hotpotqa").is_dir():
        parser.error(f"no data at {args.data}: pass --data PATH/TO/shared/data")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # the tokenizer warns for every text over 512 pieces; counting them is the point here
    logging.getLogger("transformers.tokenization_utils_base").setLevel(logging.ERROR)
    printed, full, raw = run(args.data, args.cache)
    sys.stdout.write(printed)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "report.md").write_text(full, encoding="utf-8")
        (args.out / "results.json").write_text(json.dumps(raw, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
