"""The offline summarizer: no model, it picks the most central sentences.

Centrality is the cosine between a sentence's word counts and the word counts of
all member texts (a centroid summary, in the spirit of LexRank). Chosen sentences
keep their original order and are cut to the word budget. Deterministic: equal
inputs give equal summaries. Output is labelled "extractive" by the engine.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

from cam_engine.errors import ConfigError
from cam_engine.llm.base import (
    EXTRACTIVE,
    AnswerText,
    Candidate,
    Selection,
    SummaryResult,
    Usage,
)

_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"'”’)\]]))\s+(?=[\"'“‘(\[]?[A-Z0-9])")
# A title or an initial ends in a period but not a sentence ("To Mrs. Saville",
# "J. Smith"); a piece ending in one is joined to the next. "I." is left out: it ends
# sentences ("... than I. Then").
_ABBREVIATION = re.compile(
    r"(?<![A-Za-z])(?:Mr|Mrs|Ms|Dr|St|Mt|Prof|Capt|Col|Gen|Lt|Sr|Jr|[A-HJ-Z])\.$"
)
_WORD = re.compile(r"[a-z0-9']+")
# Function words say nothing about what a passage is about; they would make every
# long sentence look central.
STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "upon",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "said",
        "one",
    ]
)


_PARAGRAPH = re.compile(r"\n\s*\n")


def split_sentences(text: str) -> list[str]:
    """Sentences of each paragraph, with their white space folded to single spaces."""
    sentences: list[str] = []
    for paragraph in _PARAGRAPH.split(text):
        pieces: list[str] = []
        for piece in _SENTENCE_END.split(paragraph.strip()):
            if pieces and _ABBREVIATION.search(pieces[-1]):
                pieces[-1] += " " + piece
            else:
                pieces.append(piece)
        sentences.extend(" ".join(p.split()) for p in pieces if p.strip())
    return sentences


def _key(sentence: str) -> str:
    """A sentence compared without case or white space, padded so that ``in`` only
    matches whole words."""
    return " " + " ".join(sentence.casefold().split()) + " "


def _repeats(key: str, chosen: Sequence[str]) -> bool:
    """Whether the sentence with ``key`` is contained in a chosen one, or the other way
    round: the answer would then quote the same words twice."""
    return any(key in other or other in key for other in chosen)


def content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS and len(w) > 1]


class ExtractiveSummarizer:
    @property
    def backend(self) -> str:
        return EXTRACTIVE

    def summarize(self, texts: Sequence[str], *, max_words: int) -> SummaryResult:
        # Overlapping clusters share members, so the summaries one level up quote the
        # same sentences: each is counted and quoted once.
        unique: dict[str, str] = {}
        for text in texts:
            for sentence in split_sentences(text):
                unique.setdefault(_key(sentence), sentence)
        keys, sentences = list(unique), list(unique.values())
        if not sentences:
            return SummaryResult("", EXTRACTIVE, Usage())
        bags = [Counter(content_words(s)) for s in sentences]
        centroid: Counter[str] = Counter()
        for bag in bags:
            centroid.update(bag)
        centroid_norm = math.sqrt(sum(v * v for v in centroid.values())) or 1.0

        def centrality(i: int) -> float:
            bag = bags[i]
            norm = math.sqrt(sum(v * v for v in bag.values()))
            if norm == 0:
                return 0.0
            return sum(n * centroid[w] for w, n in bag.items()) / (norm * centroid_norm)

        # Best first; ties go to the earlier sentence so the result is deterministic.
        ranked = sorted(range(len(sentences)), key=lambda i: (-centrality(i), i))
        chosen: list[int] = []
        words = 0
        for i in ranked:
            length = len(sentences[i].split())
            if words + length > max_words and chosen:
                continue
            if _repeats(keys[i], [keys[j] for j in chosen]):
                continue
            chosen.append(i)
            words += length
            if words >= max_words:
                break
        text = " ".join(sentences[i] for i in sorted(chosen))
        tokens = text.split()
        if len(tokens) > max_words:  # a single over-long sentence
            text = " ".join(tokens[:max_words]) + " …"
        return SummaryResult(text, EXTRACTIVE, Usage())


class ExtractiveSelector:
    """Selects candidates by cosine to the question: those within ``margin`` of the best
    candidate of the turn and at least ``min_similarity``, the best ``max_chosen`` of
    them at most (an LLM selector also names a handful, not everything plausible).

    An absolute threshold alone does not work with MiniLM: on 60 HotpotQA questions the
    gold paragraphs' cosine to the question has median 0.53, but the distractors' p75 is
    0.50. Tuned with ``python -m cam_engine.bench.selector`` on the 100 hard HotpotQA
    questions (not the 200 we report on) and the Frankenstein questions of the ask
    benchmark (docs/evaluation.md): margin 0.3 finds more gold than 0.1 (recall at 1,000
    tokens 0.802 with the cap below, against 0.717 for margin 0.1), but without a cap it
    lets a book's similar-looking chunks through turn after turn (276 nodes activated
    on average, up to 558), which is why at most 8 are chosen per turn (40 over 5). The
    floor matters when every candidate is weak: a needle-in-a-haystack chunk (one
    sentence in a paragraph of essay) scores 0.28-0.59 against its question, and 0.3
    lost two of ten needles that were the best candidate by far.
    """

    def __init__(
        self,
        embed: Callable[[Sequence[str]], np.ndarray],
        *,
        min_similarity: float = 0.2,
        margin: float = 0.3,
        max_chosen: int | None = 8,
    ) -> None:
        if max_chosen is not None and max_chosen < 1:
            raise ConfigError(f"max_chosen must be >= 1 or None, got {max_chosen}")
        self._embed = embed
        self.min_similarity = min_similarity
        self.margin = margin
        self.max_chosen = max_chosen
        self._question: tuple[str, np.ndarray] | None = None

    @property
    def backend(self) -> str:
        return EXTRACTIVE

    def _question_vector(self, question: str) -> np.ndarray:
        if self._question is None or self._question[0] != question:
            self._question = (question, self._embed([question])[0])
        return self._question[1]

    def select(self, question: str, candidates: Sequence[Candidate]) -> Selection:
        if not candidates:
            return Selection([], EXTRACTIVE, Usage())
        q = self._question_vector(question)
        missing = [i for i, c in enumerate(candidates) if c.vector is None]
        vectors = [c.vector for c in candidates]
        if missing:
            for i, v in zip(
                missing, self._embed([candidates[i].text for i in missing]), strict=True
            ):
                vectors[i] = v
        scores = np.stack(vectors) @ q
        bar = max(self.min_similarity, float(scores.max()) - self.margin)
        chosen = [i for i in np.argsort(-scores, kind="stable") if scores[i] >= bar]
        return Selection([int(i) for i in chosen[: self.max_chosen]], EXTRACTIVE, Usage())


class ExtractiveAnswerer:
    """Answers with the sentences of the context that best match the question (BM25 over
    the context's sentences), each once, in their original order. No model: it quotes."""

    def __init__(self, sentences: int = 3) -> None:
        self.sentences = sentences

    @property
    def backend(self) -> str:
        return EXTRACTIVE

    def answer(self, question: str, passages: Sequence[str]) -> AnswerText:
        from rank_bm25 import BM25Okapi

        # Extractive summaries quote their chunks, so the same sentence often arrives
        # several times: keep its first copy, or the copies would fill the answer and
        # lower its words' IDF (to zero when half the sentences are copies).
        unique: dict[str, str] = {}
        for p in passages:
            for s in split_sentences(p):
                unique.setdefault(_key(s), s)
        keys, sentences = list(unique), list(unique.values())
        tokens = [content_words(s) or ["_"] for s in sentences]
        query = content_words(question)
        if not sentences or not query:
            return AnswerText("", EXTRACTIVE, Usage())
        scores = BM25Okapi(tokens).get_scores(query)
        # Best first, ties to the earlier sentence; one inside a chosen one is skipped.
        chosen: list[int] = []
        for i in sorted(range(len(sentences)), key=lambda i: (-scores[i], i)):
            if len(chosen) == self.sentences or scores[i] <= 0:
                break
            if not _repeats(keys[i], [keys[j] for j in chosen]):
                chosen.append(i)
        return AnswerText(" ".join(sentences[i] for i in sorted(chosen)), EXTRACTIVE, Usage())
