"""Measure the composite-score defaults (alpha, sigma, theta, k, chunk_tokens) on real data.

Run from the repository root:

    cam bench graph-parameters [--data DIR] [--out DIR] [--cache DIR]

It prints markdown tables (docs/defaults.md pastes them):

1. chunk size against MiniLM's 256 word-piece window (Frankenstein, Moby Dick);
2. single-book networks over an (alpha, sigma, theta) grid, k=10, chunk_tokens=200;
3. a pooled multi-document network (the paragraphs of hotpotqa_dev_200), with how often
   the two gold paragraphs of a question are linked;
4. cosine quantiles, for thresholds set relative to the embedder's distribution;
5. one absolute cosine bar for books and pooled paragraphs at once (the conflict);
6. an embedder-relative threshold: the cosine each node's expected m-th best partner reaches.

Networks are built with ``cam_engine.graph.similarity.expand`` over all chunks at once,
the code the engine uses. Embeddings are cached as .npy files under ``--cache``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import re
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
MULTI_ALPHAS = (0.6, 0.7, 0.8, 0.9, 1.0)
MULTI_THETAS = (0.35, 0.4, 0.45, 0.5, 0.6)
K = 10
RELEASE = (0.6, 1.0, 0.6)  # the public CAM release: alpha, sigma, theta
RECOMMENDED = (0.7, 2.0, 0.5)  # docs/defaults.md: the measured default for MiniLM
# Section 5: the cosine a far or cross-document pair needs (theta / alpha), at RECOMMENDED's
# alpha and sigma; section 6: expected partners per node for the relative threshold.
COSINE_BARS = (0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75)
PARTNERS = (3, 4, 5)
LP_SEEDS = 5  # plain label propagation is random: the median largest cluster over these seeds
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
class Corpus:
    """Embedded chunks of one benchmark memory."""

    name: str
    nodes: list[Located]
    vectors: np.ndarray
    gold_pairs: list[tuple[int, int]]  # node indexes of the two gold paragraphs (HotpotQA)

    def pair_cosines(self) -> np.ndarray:
        cosine = self.vectors @ self.vectors.T
        return cosine[np.triu_indices(len(self.nodes), k=1)]


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
    lp_largest: float | None = None  # largest plain label-propagation cluster, share of nodes


def build_graph(nodes: Sequence[Located], alpha: float, sigma: float, theta: float) -> ig.Graph:
    edges = expand(list(nodes), [], alpha=alpha, sigma=sigma, theta=theta, k=K)
    index = {n.id: i for i, n in enumerate(nodes)}
    return ig.Graph(n=len(nodes), edges=[(index[e.src], index[e.dst]) for e in edges])


def largest_lp_cluster(graph: ig.Graph, seeds: int = LP_SEEDS) -> float:
    """Median over seeds of the largest cluster of igraph's plain label propagation.

    A proxy for "does clustering collapse": the engine's own propagation runs on
    ego-split replicas and cuts big clusters, but it suffers from density the same way.
    """
    sizes = []
    try:
        for seed in range(seeds):
            ig.set_random_number_generator(random.Random(seed))
            sizes.append(max(graph.community_label_propagation().sizes()))
    finally:
        ig.set_random_number_generator(random)
    return float(np.median(sizes)) / graph.vcount()


def network_row(
    corpus: Corpus,
    alpha: float,
    sigma: float,
    theta: float,
    *,
    with_lp: bool = False,
) -> NetworkRow:
    nodes = corpus.nodes
    graph = build_graph(nodes, alpha, sigma, theta)
    n = graph.vcount()
    degrees = np.array(graph.degree(), dtype=np.float64)
    positions = [node.position for node in nodes]
    docs = [node.doc_id for node in nodes]
    pairs = graph.get_edgelist()
    long_edges = sum(
        1 for a, b in pairs if docs[a] == docs[b] and abs(positions[a] - positions[b]) >= LONG_RANGE
    )
    gold_linked = gold_2hops = None
    if corpus.gold_pairs:
        neighbours = [set(graph.neighbors(v)) for v in range(n)]
        gold = corpus.gold_pairs
        gold_linked = float(np.mean([b in neighbours[a] for a, b in gold]))
        gold_2hops = float(
            np.mean([b in neighbours[a] or bool(neighbours[a] & neighbours[b]) for a, b in gold])
        )
    return NetworkRow(
        alpha=alpha,
        sigma=sigma,
        theta=theta,
        isolated=float(np.mean(degrees == 0)),
        mean_degree=float(degrees.mean()),
        long_range=long_edges / len(pairs) if pairs else 0.0,
        largest=max(graph.connected_components().sizes()) / n,
        gold_linked=gold_linked,
        gold_2hops=gold_2hops,
        lp_largest=largest_lp_cluster(graph) if with_lp else None,
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


def cosine_quantiles(corpus: Corpus) -> list[QuantileRow]:
    """All pairs; for a book also adjacent pairs and pairs LONG_RANGE+ apart; gold pairs."""
    cosine = corpus.vectors @ corpus.vectors.T
    upper = np.triu_indices(len(corpus.nodes), k=1)
    values = cosine[upper]
    rows = [quantile_row(corpus.name, "all pairs", values)]
    if corpus.gold_pairs:
        gold = np.array([cosine[a, b] for a, b in corpus.gold_pairs])
        return [*rows, quantile_row(corpus.name, "gold pairs", gold)]
    positions = np.array([n.position for n in corpus.nodes])
    apart = np.abs(positions[upper[1]] - positions[upper[0]])
    return [
        *rows,
        quantile_row(corpus.name, "adjacent (1 apart)", values[apart == 1]),
        quantile_row(corpus.name, f"{LONG_RANGE}+ apart", values[apart >= LONG_RANGE]),
    ]


def relative_cosine(corpus: Corpus, partners: int) -> float:
    """The cosine that a node's ``partners``-th best partner reaches on average.

    That is the (1 - partners / (n - 1)) quantile of all pair cosines: a node has n - 1
    partners, so on average ``partners`` of them lie above it.
    """
    n = len(corpus.nodes)
    share = min(1.0, partners / max(1, n - 1))
    return float(np.percentile(corpus.pair_cosines(), 100.0 * (1.0 - share)))


@dataclass(frozen=True)
class RelativeRow:
    partners: int
    corpus: str
    cosine: float  # the corpus's own cosine bar
    row: NetworkRow


# ----------------------------------------------------------------------------- markdown


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def chunk_table(rows: Sequence[ChunkRow]) -> str:
    header = ["book", "chunk_tokens", "chunks", "mean tokens", "mean pieces", "p99 pieces"]
    header.append(f"> {MAX_SEQ_LENGTH} pieces")
    return markdown_table(
        header,
        [
            (
                r.book,
                r.chunk_tokens,
                r.chunks,
                f"{r.mean_tokens:.0f}",
                f"{r.mean_pieces:.0f}",
                f"{r.p99_pieces:.0f}",
                f"{100 * r.over_window:.1f}%",
            )
            for r in rows
        ],
    )


def _setting(row: NetworkRow) -> str:
    key = (row.alpha, row.sigma, row.theta)
    return "release" if key == RELEASE else "**recommended**" if key == RECOMMENDED else ""


def _useful(row: NetworkRow) -> bool:
    low, high = USEFUL_DEGREE
    return row.isolated <= USEFUL_MAX_ISOLATED and low <= row.mean_degree <= high


def _network_cells(row: NetworkRow) -> list[object]:
    return [_pct(row.isolated), f"{row.mean_degree:.1f}", _pct(row.long_range), _pct(row.largest)]


def books_table(grids: dict[str, list[NetworkRow]], only_useful: bool) -> str:
    """One row per (alpha, sigma, theta), the books side by side."""
    header = ["alpha", "sigma", "theta", "setting"]
    for book in grids:
        header += [f"{book}: isolated", "mean deg", "long-range", "largest CC"]
    rows = []
    for cells in zip(*grids.values(), strict=True):
        first = cells[0]
        if only_useful and not (all(_useful(c) for c in cells) or _setting(first)):
            continue
        row: list[object] = [first.alpha, first.sigma, first.theta, _setting(first)]
        for c in cells:
            row += _network_cells(c)
        rows.append(row)
    return markdown_table(header, rows)


def multi_table(rows: Sequence[NetworkRow]) -> str:
    header = ["alpha", "theta", "cos needed", "isolated", "mean deg", "largest CC"]
    header += ["gold linked", "gold <= 2 hops"]
    return markdown_table(
        header,
        [
            [
                r.alpha,
                r.theta,
                f"{r.theta / r.alpha:.2f}",
                _pct(r.isolated),
                f"{r.mean_degree:.1f}",
                _pct(r.largest),
                _pct(r.gold_linked),
                _pct(r.gold_2hops),
            ]
            for r in rows
        ],
    )


def quantile_table(rows: Sequence[QuantileRow]) -> str:
    return markdown_table(
        ["corpus", "pairs", "count", *(f"p{q}" for q in QUANTILES)],
        [(r.corpus, r.pairs, r.count, *(f"{v:.3f}" for v in r.quantiles)) for r in rows],
    )


def sweep_table(sweep: list[tuple[float, dict[str, NetworkRow]]]) -> str:
    """Books and the pooled paragraphs side by side along one cosine bar."""
    names = list(sweep[0][1])
    header = ["cos bar", "theta"]
    for name in names:
        header += [f"{name}: isolated", "mean deg"]
        if sweep[0][1][name].gold_linked is None:
            header += ["long-range", "largest LP cluster"]
        else:
            header += ["gold linked", "gold <= 2 hops"]
    rows = []
    for bar, by_corpus in sweep:
        first = by_corpus[names[0]]
        row: list[object] = [f"{bar:.3g}", f"{first.theta:.3f}"]
        for name in names:
            r = by_corpus[name]
            row += [_pct(r.isolated), f"{r.mean_degree:.1f}"]
            if r.gold_linked is None:
                row += [_pct(r.long_range), _pct(r.lp_largest)]
            else:
                row += [_pct(r.gold_linked), _pct(r.gold_2hops)]
        rows.append(row)
    return markdown_table(header, rows)


def relative_table(rows: Sequence[RelativeRow]) -> str:
    header = ["partners m", "corpus", "cos bar", "theta", "isolated", "mean deg", "long-range"]
    header += ["largest CC", "gold linked", "gold <= 2 hops"]
    return markdown_table(
        header,
        [
            [
                r.partners,
                r.corpus,
                f"{r.cosine:.3f}",
                f"{r.row.theta:.3f}",
                *_network_cells(r.row),
                _pct(r.row.gold_linked),
                _pct(r.row.gold_2hops),
            ]
            for r in rows
        ],
    )


# ----------------------------------------------------------------------------- driver


def load_books(data_dir: Path, embedder: CachedEmbedder) -> tuple[list[Corpus], list[ChunkRow]]:
    corpora, chunk_rows = [], []
    for book, file_name in BOOKS.items():
        text = book_text(data_dir / "haystacks" / "gutenberg" / file_name)
        for budget in CHUNK_SIZES:
            texts = [c.text for c in chunk_document(book, text, budget)]
            chunk_rows.append(chunk_row(book, budget, texts, embedder.word_pieces(texts)))
        chunks = chunk_document(book, text, CHUNK_TOKENS)
        vectors = embedder.embed(f"{book}-{CHUNK_TOKENS}", [c.text for c in chunks])
        nodes = [
            Located(c.id, c.doc_id, c.position, v) for c, v in zip(chunks, vectors, strict=True)
        ]
        corpora.append(Corpus(book, nodes, vectors, []))
    return corpora, chunk_rows


def load_hotpot(data_dir: Path, embedder: CachedEmbedder) -> tuple[Corpus, int]:
    """The pooled paragraphs, each its own document at position 0; and the question count."""
    paragraphs, questions = hotpot_paragraphs(data_dir / "hotpotqa" / "hotpotqa_dev_200.jsonl")
    vectors = embedder.embed("hotpotqa-dev-200", [p.text for p in paragraphs])
    nodes = [
        Located(f"p{i}", p.title, 0, v)
        for i, (p, v) in enumerate(zip(paragraphs, vectors, strict=True))
    ]
    index = {p.title: i for i, p in enumerate(paragraphs)}
    gold_pairs = [
        (index[q.gold[0]], index[q.gold[1]])
        for q in questions
        if len(q.gold) == 2 and all(t in index for t in q.gold)
    ]
    return Corpus("HotpotQA", nodes, vectors, gold_pairs), len(questions)


def run(data_dir: Path, cache_dir: Path, out: Path | None = None) -> str:
    """Run every measurement; return the printed report. With ``out``, also write the
    full report (report.md, with the whole grid) and the raw results (results.json)
    into that folder."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # the tokenizer warns about every text over 512 pieces; counting them is the point here
    logging.getLogger("transformers.tokenization_utils_base").setLevel(logging.ERROR)
    printed, full, raw = measure(data_dir, cache_dir)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "report.md").write_text(full, encoding="utf-8")
        (out / "results.json").write_text(json.dumps(raw, indent=2) + "\n", encoding="utf-8")
    return printed


def lacks_data(data_dir: Path) -> bool:
    """The folder lacks what the measurements read (HotpotQA and the books)."""
    return not (data_dir / "hotpotqa").is_dir() or not (data_dir / "haystacks").is_dir()


def measure(data_dir: Path, cache_dir: Path) -> tuple[str, str, dict[str, object]]:
    """Every measurement: (printed report, full report, raw results)."""
    timings: dict[str, float] = {}
    started = time.perf_counter()
    embedder = CachedEmbedder(cache_dir)
    books, chunk_rows = load_books(data_dir, embedder)
    hotpot, n_questions = load_hotpot(data_dir, embedder)
    timings["load, chunk, embed"] = time.perf_counter() - started

    started = time.perf_counter()
    grids = {
        book.name: [
            network_row(book, alpha, sigma, theta)
            for alpha in ALPHAS
            for sigma in SIGMAS
            for theta in THETAS
        ]
        for book in books
    }
    multi_rows = [
        network_row(hotpot, alpha, 1.0, theta) for alpha in MULTI_ALPHAS for theta in MULTI_THETAS
    ]
    timings["grids"] = time.perf_counter() - started

    started = time.perf_counter()
    quantile_rows = [row for corpus in [*books, hotpot] for row in cosine_quantiles(corpus)]
    alpha, sigma, _ = RECOMMENDED
    sweep = []
    recommended_bar = RECOMMENDED[2] / alpha
    for bar in sorted({*COSINE_BARS, recommended_bar}):
        theta = round(alpha * bar, 4)
        by_corpus = {
            c.name: network_row(c, alpha, sigma, theta, with_lp=not c.gold_pairs)
            for c in [*books, hotpot]
        }
        sweep.append((bar, by_corpus))
    relative_rows = []
    for partners in PARTNERS:
        for corpus in [*books, hotpot]:
            bar = relative_cosine(corpus, partners)
            row = network_row(corpus, alpha, sigma, round(alpha * bar, 4))
            relative_rows.append(RelativeRow(partners, corpus.name, bar, row))
    timings["quantiles, sweep, relative"] = time.perf_counter() - started

    low, high = USEFUL_DEGREE
    intro = (
        f"Embedder {MODEL} (normalized), k={K}, long-range = {LONG_RANGE}+ positions apart, "
        f"chunk_tokens={CHUNK_TOKENS} for the networks; books without the Project Gutenberg "
        "header and licence. Release = CAM's public defaults "
        f"(alpha, sigma, theta) = {RELEASE}; recommended = {RECOMMENDED}.\n"
    )
    chunks_part = "## 1. Chunk size vs MiniLM's 256 word-piece window\n\n" + chunk_table(chunk_rows)
    books_title = f"## 2. Single-book networks (chunk_tokens={CHUNK_TOKENS}, k={K})\n\n"
    useful_note = (
        f"Only rows where both books have <= {100 * USEFUL_MAX_ISOLATED:.0f}% isolated chunks "
        f"and a mean degree in [{low:g}, {high:g}], plus the release and recommended settings; "
        "the full grid is in report.md under --out.\n\n"
    )
    multi_part = (
        "## 3. Multi-document network (HotpotQA dev 200, pooled)\n\n"
        f"{len(hotpot.nodes)} paragraphs pooled from {n_questions} questions, each its own "
        f"document at position 0 (proximity 0, so sigma is irrelevant and an edge needs "
        f"cos >= theta / alpha = 'cos needed'); {len(hotpot.gold_pairs)} gold pairs.\n\n"
        + multi_table(multi_rows)
    )
    quantiles_part = (
        "## 4. Cosine distribution (for an embedder-relative threshold)\n\n"
        + quantile_table(quantile_rows)
    )
    sweep_part = (
        "## 5. One absolute cosine bar for books and pooled paragraphs?\n\n"
        f"alpha={alpha}, sigma={sigma}, theta = alpha * bar: a chunk pair 3+ apart or a pair "
        "of different documents needs cos >= bar. Largest LP cluster: median over "
        f"{LP_SEEDS} seeds of igraph's plain label propagation (a noisy proxy for clustering "
        f"collapse). The bar {recommended_bar:.3f} is the recommended setting.\n\n"
        + sweep_table(sweep)
    )
    relative_part = (
        "## 6. Embedder-relative threshold\n\n"
        f"alpha={alpha}, sigma={sigma}; each memory's own bar = the (1 - m / (n - 1)) quantile "
        "of its pair cosines (on average m partners per node above it); theta = alpha * bar.\n\n"
        + relative_table(relative_rows)
    )
    title = "# CAM defaults with MiniLM\n\n" + intro
    printed = "\n\n".join(
        [
            title,
            chunks_part,
            books_title + useful_note + books_table(grids, only_useful=True),
            multi_part,
            quantiles_part,
            sweep_part,
            relative_part,
        ]
    )
    full = "\n\n".join(
        [
            title,
            chunks_part,
            books_title + books_table(grids, only_useful=False),
            multi_part,
            quantiles_part,
            sweep_part,
            relative_part,
        ]
    )
    raw: dict[str, object] = {
        "model": MODEL,
        "k": K,
        "release": RELEASE,
        "recommended": RECOMMENDED,
        "chunks": [asdict(r) for r in chunk_rows],
        "books": {name: [asdict(r) for r in rows] for name, rows in grids.items()},
        "hotpotqa": [asdict(r) for r in multi_rows],
        "quantiles": [asdict(r) for r in quantile_rows],
        "sweep": [{"bar": bar, **{name: asdict(r) for name, r in by.items()}} for bar, by in sweep],
        "relative": [asdict(r) for r in relative_rows],
        "seconds": timings,
    }
    return printed + "\n", full + "\n", raw
