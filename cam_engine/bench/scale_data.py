"""Documents and vectors for growing a memory to a million chunks (``cam bench scale``).

We have about 16,000 distinct chunks of real text (five books, 48 essays, the HotpotQA
paragraphs and the QMSum meetings of ../shared/data). A million-chunk memory is made of
copies of them:

- **Texts.** Each copy is a seeded shuffle of every unit (a chunk of a source, as the
  engine's chunker cuts it), cut into documents of ``UNITS_PER_DOCUMENT`` units. In every
  copy but the first, each unit loses one of its sentences (chosen by the copy's seed),
  so copies are distinct texts, made of real sentences only.
- **Vectors.** Embedding a million texts with MiniLM on a CPU takes hours, so the
  embedder here (``PerturbedEmbedder``) gives a text the mean of the real MiniLM vectors
  of the units its sentences come from, plus seeded Gaussian noise (a fixed function of
  the text, so an update or a second run gives the same vector), normalized. Real
  vectors are computed once per unit and kept in an .npz cache. A chunk lands near its
  unit's other copies and a summary (extractive: sentences of its members) near its
  members: the structure a real memory has, which the approximate index and the
  hierarchy see. Questions (HotpotQA's and QMSum's) get their real vectors.

The noise's ``sigma`` of 0.03 per dimension puts a copy at a cosine of about 0.74 to
0.86 from its unit, so copies are near each other but not duplicates.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cam_engine.chunking import chunk_document
from cam_engine.embed.base import Embedder, normalize_rows
from cam_engine.embed.caching import CachingEmbedder
from cam_engine.embed.hashing import HashingEmbedder
from cam_engine.eval.dataset import EvalSet
from cam_engine.eval.loaders import load_hotpotqa, load_qmsum
from cam_engine.llm.extractive import split_sentences
from cam_engine.sources import read_text

UNITS_PER_DOCUMENT = 40
SIGMA = 0.03
KEY_WORDS = 8  # a sentence is recognized by its first words (a summary may cut its end)


@dataclass
class Pool:
    units: list[str]  # distinct chunk texts of the sources
    questions: list[str]


def _sources(shared_data: Path) -> Iterator[tuple[str, str]]:
    haystacks = shared_data / "haystacks"
    for path in sorted((haystacks / "gutenberg").glob("*.txt")):
        yield path.stem, read_text(path)[0]
    for path in sorted((haystacks / "paul_graham").glob("*.txt")):
        yield f"pg-{path.stem}", read_text(path)[0]
    for eval_set in _eval_sets(shared_data):
        for doc in eval_set.documents:
            yield doc.id, doc.text


def _eval_sets(shared_data: Path) -> list[EvalSet]:
    return [
        load_hotpotqa(shared_data / "hotpotqa" / "hotpotqa_dev_200.jsonl"),
        load_hotpotqa(shared_data / "hotpotqa" / "hotpotqa_dev_100_hard.jsonl"),
        load_qmsum(shared_data / "qmsum" / "val.jsonl"),
    ]


def read_pool(shared_data: Path, chunk_tokens: int) -> Pool:
    """The distinct chunks of every source, and 100 questions (HotpotQA's and QMSum's,
    alternating)."""
    units: dict[str, None] = {}
    for doc_id, text in _sources(shared_data):
        for chunk in chunk_document(doc_id, text, chunk_tokens):
            units[chunk.text] = None
    hotpot, _hard, qmsum = _eval_sets(shared_data)
    pairs = zip(hotpot.questions, qmsum.questions, strict=False)
    questions = [q.question for pair in pairs for q in pair][:100]
    return Pool(list(units), questions)


def real_vectors(pool: Pool, model: Embedder, cache_file: Path | None) -> np.ndarray:
    """MiniLM vectors of the units then the questions, computed once into ``cache_file``."""
    embedder = CachingEmbedder(model, cache_file)
    texts = pool.units + pool.questions
    vectors = np.concatenate(
        [embedder.embed(texts[i : i + 512]) for i in range(0, len(texts), 512)]
    )
    embedder.save()
    return vectors


def sentence_key(sentence: str) -> str:
    return " ".join(sentence.casefold().split()[:KEY_WORDS])


class PerturbedEmbedder:
    """Texts made of the pool's sentences get their units' real vectors, perturbed (see
    the module docstring); questions of the pool get theirs exactly. It takes the real
    model's name, so the memory it builds can be asked with the real model."""

    def __init__(self, pool: Pool, vectors: np.ndarray, name: str, seed: int = 0) -> None:
        self._name = name
        self._seed = seed
        self._units = vectors[: len(pool.units)]
        self._questions = {q: vectors[len(pool.units) + i] for i, q in enumerate(pool.questions)}
        self._unit_of: dict[str, int] = {}
        for index, unit in enumerate(pool.units):
            for sentence in split_sentences(unit):
                self._unit_of.setdefault(sentence_key(sentence), index)
        self._fallback = HashingEmbedder(vectors.shape[1])
        self.unmatched = 0  # texts none of whose sentences is the pool's

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return int(self._units.shape[1])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return normalize_rows(np.stack([self._embed_one(t) for t in texts]))

    def _embed_one(self, text: str) -> np.ndarray:
        question = self._questions.get(text)
        if question is not None:
            return question
        units = [self._unit_of.get(sentence_key(s)) for s in split_sentences(text)]
        found = [u for u in units if u is not None]
        if not found:
            self.unmatched += 1
            return self._fallback.embed([text])[0]
        digest = hashlib.blake2b(f"{self._seed}\0{text}".encode(), digest_size=8).digest()
        noise = np.random.default_rng(int.from_bytes(digest, "little")).standard_normal(self.dim)
        return self._units[found].mean(axis=0) + SIGMA * noise.astype(np.float32)


def copy_documents(pool: Pool, seed: int, start_copy: int = 0) -> Iterator[tuple[str, str]]:
    """(document id, text) of copy after copy of the pool, without end (module docstring)."""
    copy = start_copy
    while True:
        rng = random.Random(seed * 1_000_003 + copy)
        order = list(range(len(pool.units)))
        rng.shuffle(order)
        texts = [_varied(pool.units[u], rng) if copy else pool.units[u] for u in order]
        for start in range(0, len(texts), UNITS_PER_DOCUMENT):
            doc = start // UNITS_PER_DOCUMENT
            yield (
                f"copy{copy:03d}/doc{doc:04d}",
                "\n\n".join(texts[start : start + UNITS_PER_DOCUMENT]),
            )
        copy += 1


def _varied(unit: str, rng: random.Random) -> str:
    """The unit less one of its sentences (itself when it has only one)."""
    sentences = split_sentences(unit)
    if len(sentences) < 2:
        return unit
    dropped = rng.randrange(len(sentences))
    return " ".join(s for i, s in enumerate(sentences) if i != dropped)


def describe(pool: Pool) -> str:
    return json.dumps({"units": len(pool.units), "questions": len(pool.questions)})
