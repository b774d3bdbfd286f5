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
from collections.abc import Sequence

from cam_engine.llm.base import EXTRACTIVE, SummaryResult, Usage

_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"'”’)\]]))\s+(?=[\"'“‘(\[]?[A-Z0-9])")
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


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS and len(w) > 1]


class ExtractiveSummarizer:
    @property
    def backend(self) -> str:
        return EXTRACTIVE

    def summarize(self, texts: Sequence[str], *, max_words: int) -> SummaryResult:
        sentences = [s for text in texts for s in split_sentences(text)]
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
            chosen.append(i)
            words += length
            if words >= max_words:
                break
        text = " ".join(sentences[i] for i in sorted(chosen))
        tokens = text.split()
        if len(tokens) > max_words:  # a single over-long sentence
            text = " ".join(tokens[:max_words]) + " …"
        return SummaryResult(text, EXTRACTIVE, Usage())
