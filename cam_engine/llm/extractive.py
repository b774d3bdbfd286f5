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
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from cam_engine.errors import ConfigError
from cam_engine.llm.answer_types import (
    THING,
    answer_candidates,
    answer_kind,
    question_words,
    vocabulary,
)
from cam_engine.llm.base import (
    EXTRACTIVE,
    AnswerText,
    Candidate,
    QuotedSpan,
    Selection,
    SummaryResult,
    Usage,
)
from cam_engine.stopwords import STOPWORDS

_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"'”’)\]]))\s+(?=[\"'“‘(\[]?[A-Z0-9])")
# A title or an initial ends in a period but not a sentence ("To Mrs. Saville",
# "J. Smith"); a piece ending in one is joined to the next. "I." is left out: it ends
# sentences ("... than I. Then").
_ABBREVIATION = re.compile(
    r"(?<![A-Za-z])(?:Mr|Mrs|Ms|Dr|St|Mt|Prof|Capt|Col|Gen|Lt|Sr|Jr|[A-HJ-Z])\.$"
)
_WORD = re.compile(r"[a-z0-9']+")


_PARAGRAPH = re.compile(r"\n\s*\n")
# A line of its own in a transcript: a bracketed header ("[Session 3 · 8 May 2023]") or
# a turn ("Caroline: I went ..."). A turn without final punctuation must not run into
# the next one, nor the header into the first turn; hard-wrapped prose lines rarely
# open with a capitalized word and a colon.
_TURN = r"[A-Z][\w .'’-]{0,40}:\s"  # "Caroline: ", a transcript's turn
_LINE_OF_ITS_OWN = re.compile(rf"\n(?=[ \t]*(?:\[[^\]\n]*\][ \t]*(?:\n|$)|{_TURN}))")


_STARTS_TURN = re.compile(_TURN)


def split_sentences(text: str) -> list[str]:
    """Sentences of each paragraph, with their white space folded to single spaces;
    transcript lines (see ``_LINE_OF_ITS_OWN``) are paragraphs of their own."""
    sentences: list[str] = []
    paragraphs = [line for part in _PARAGRAPH.split(text) for line in _LINE_OF_ITS_OWN.split(part)]
    for paragraph in paragraphs:
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


@dataclass(frozen=True, slots=True)
class _Parsed:
    key: str  # see _key
    text: str
    bag: dict[str, int]  # content word counts
    norm: float  # of the counts
    words: int  # all words


@lru_cache(maxsize=16384)
def _sentences(text: str) -> tuple[_Parsed, ...]:
    """A text's sentences with their word counts. Cached: a chunk is a member of
    several clusters, and each is summarized again when its membership changes."""
    result = []
    for sentence in split_sentences(text):
        bag = dict(Counter(content_words(sentence)))
        norm = math.sqrt(sum(v * v for v in bag.values()))
        result.append(_Parsed(_key(sentence), sentence, bag, norm, len(sentence.split())))
    return tuple(result)


# What a book's layout puts between sentences: an illustration marker ("[Illustration]",
# "[Illustration: Mr. and Mrs. Bennet]"), a heading ("CHAPTER V.", "Letter 4"), a line of
# a table of contents ("Heading to Chapter IV.      18"), or several such lines run
# together ("CONTENTS Letter 1 Letter 2 Chapter 1 ..."). A summary quoting them reads
# "CHAPTER V. [Illustration] Pardon me ...". A transcript's session header
# ("[Session 3 · 8 May 2023 · ...]") is layout too.
_MARKER = re.compile(
    r"\[\s*(?:Illustration|Decoration|Frontispiece|Session)\b[^\]]*\]?", re.IGNORECASE
)
# "Chapter 12", "CHAPTER V", "Letter 4", "BOOK I": a heading word and its number (roman
# numerals in capitals only: "Book did well" is prose).
_HEADING = re.compile(
    r"\b(?i:chapter|chap|letter|book|volume|vol|part|section|act|scene|canto|stave)\.?"
    r"\s+(?:[0-9]+|[IVXLCDM]+)\b"
)
# A contents line ends in its page number (arabic, or a preface's roman "xxv") or in
# the heading it points to; prose ends in punctuation.
_PAGE_NUMBER = re.compile(r"\s(?:[0-9]+|x{0,3}(?:ix|iv|v?i{1,3}|v))$")
_ENDS_IN_HEADING = re.compile(_HEADING.pattern + r"\.?$")
_SENTENCE_ENDS = (".", "!", "?", "…", '"', "'", "”", "’", ")")
_HEADING_MAX_WORDS = 8


def _is_layout(sentence: str) -> bool:
    """Whether a "sentence" is a heading, a contents line or a marker, not prose."""
    words = sentence.split()
    if not words:
        return True
    if not any(c.isalpha() for c in sentence):
        return True  # "18", "* * *"
    short = len(words) <= 2 * _HEADING_MAX_WORDS
    if short and any(c.isupper() for c in sentence) and not any(c.islower() for c in sentence):
        return True  # "PREFACE.", "PRIDE AND PREJUDICE", "CHAPTER V."
    heading = _HEADING.match(sentence)
    if heading and len(words) <= _HEADING_MAX_WORDS:
        rest = sentence[heading.end() :].strip()
        if rest in ("", ".", ":") or not rest.endswith(_SENTENCE_ENDS):
            return True  # "Chapter 5.", "Letter 4", "Chapter 12 The Storm"
    if short and _PAGE_NUMBER.search(sentence):
        return True  # "Tailpiece to Chapter V. 26", "“She is tolerable” 15"
    if len(words) <= _HEADING_MAX_WORDS and _ENDS_IN_HEADING.search(sentence):
        return True  # "Heading to Chapter IV."
    # Contents run together: "CONTENTS Letter 1 Letter 2 Chapter 1 Chapter 2 ..."
    headings = len(_HEADING.findall(sentence))
    return headings >= 2 and len(words) <= 4 * headings


@lru_cache(maxsize=16384)
def _prose(text: str) -> tuple[_Parsed, ...]:
    """The sentences of a text a summary may quote: illustration markers taken out,
    headings and contents lines left out. Cached as ``_sentences`` is."""
    kept: list[_Parsed] = []
    for sentence in _sentences(text):
        plain = sentence.text
        if _MARKER.search(plain):
            plain = " ".join(_MARKER.sub(" ", plain).split())
        if _is_layout(plain):
            continue
        kept.extend(_sentences(plain) if plain != sentence.text else (sentence,))
    return tuple(kept)


class ExtractiveSummarizer:
    """A centroid summary of the members' sentences. Headings, contents lines and
    illustration markers are not sentences and are not quoted."""

    @property
    def backend(self) -> str:
        return EXTRACTIVE

    def summarize(self, texts: Sequence[str], *, max_words: int) -> SummaryResult:
        # Overlapping clusters share members, so the summaries one level up quote the
        # same sentences: each is counted and quoted once.
        # Headings and the like are left out, unless the members hold nothing else.
        prose = [sentence for text in texts for sentence in _prose(text)]
        every = prose or [sentence for text in texts for sentence in _sentences(text)]
        unique: dict[str, _Parsed] = {}
        for sentence in every:
            unique.setdefault(sentence.key, sentence)
        keys = list(unique)
        parsed = list(unique.values())
        sentences = [u.text for u in parsed]
        if not sentences:
            return SummaryResult("", EXTRACTIVE, Usage())
        centroid: dict[str, int] = {}
        count = centroid.get
        for u in parsed:
            for word, n in u.bag.items():
                centroid[word] = count(word, 0) + n
        centroid_norm = math.sqrt(sum(v * v for v in centroid.values())) or 1.0

        def centrality(i: int) -> float:
            u = parsed[i]
            if u.norm == 0:
                return 0.0
            return sum(n * centroid[w] for w, n in u.bag.items()) / (u.norm * centroid_norm)

        # Best first; ties go to the earlier sentence so the result is deterministic.
        ranked = sorted(range(len(sentences)), key=lambda i: (-centrality(i), i))
        chosen: list[int] = []
        words = 0
        for i in ranked:
            length = parsed[i].words
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
    them at most. Prune-and-grow's offline default is now
    ``cam_engine.retrieval.RelevanceSelector`` (hybrid relevance, which also sees what
    only the question's words find; docs/evaluation.md); this one remains for callers
    who want selection by meaning alone.

    An absolute threshold alone does not work with MiniLM: on 60 HotpotQA questions the
    gold paragraphs' cosine to the question has median 0.53, but the distractors' p75 is
    0.50. The margin (0.3), the cap (8 per turn) and the floor (0.2) were tuned on the
    100 hard HotpotQA questions and Frankenstein: without a cap a wide margin lets a
    book's similar-looking chunks through turn after turn, and a floor of 0.3 lost
    needle-in-a-haystack chunks that were the best candidate by far.
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


# Words that point back to the sentence before: a sentence opening with one is quoted
# together with the sentence before it ("He approached; ..." says nothing on its own).
_LEADS_BACK = frozenset(
    [
        *("he", "she", "it", "they", "him", "her", "them", "his", "its", "their"),
        *("this", "that", "these", "those", "there", "then", "here", "such"),
        *("but", "yet", "so", "and", "or", "nor", "thus", "hence"),
    ]
)
_ENDS_SENTENCE = re.compile(r"[.!?…][\"'”’)\]]*$")
_ELLIPSIS = " …"  # how an extractive summary marks a sentence cut at its word budget


def _stem(word: str) -> str:
    """A light suffix stripper, so that "murdered" and "murder" (or "glaciers" and
    "glacier") match; "-ing" stays, or "meeting" (a noun) would answer "meet". It
    only has to be consistent, not a lemma."""
    for suffix, keep in (("'s", ""), ("ies", "y"), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            return word[: -len(suffix)] + keep
    return word


def _terms(text: str) -> list[str]:
    return [_stem(w) for w in content_words(text)]


@dataclass(frozen=True)
class _Sentence:
    text: str
    key: str
    passage: int  # the passage its first copy is in
    index: int  # its place in that passage's sentences


def _evidence_sentences(passages: Sequence[str]) -> list[_Sentence]:
    """Each sentence of the passages once, as its first copy (the engine gives chunks
    before the summaries that quote them), in the order they came.

    A sentence a summary cut short (it ends in " …") is left out when the whole
    sentence is in the evidence too.
    """
    first: dict[str, _Sentence] = {}
    for p, text in enumerate(passages):
        for i, s in enumerate(split_sentences(text)):
            key = _key(s.removesuffix(_ELLIPSIS.strip()).rstrip())
            first.setdefault(key, _Sentence(s, key, p, i))
    whole = [s.key for s in first.values() if not s.text.endswith(_ELLIPSIS.strip())]
    kept = [
        s
        for s in first.values()
        if not s.text.endswith(_ELLIPSIS.strip()) or not any(s.key in other for other in whole)
    ]
    return kept


SUPPORT_EXPONENT = 2.0
KIND_FLOOR = 0.3  # the share of its match a sentence without the kind of answer keeps
_RANK_HALF = 2  # passages: the prior of the passage at this rank (from 0) is half the first's
_FULL = 12  # words: a shorter sentence's own score is scaled by sqrt(words / _FULL)
_WINDOW = 3  # sentences read together when a sentence is scored in its place


def _windows(units: Sequence[_Sentence]) -> list[list[int]]:
    """Runs of ``_WINDOW`` consecutive sentences of each passage (indices into units;
    a passage with fewer sentences is one run)."""
    by_passage: dict[int, list[int]] = {}
    for n, u in enumerate(units):
        by_passage.setdefault(u.passage, []).append(n)
    runs: list[list[int]] = []
    for members in by_passage.values():
        last = max(len(members) - _WINDOW, 0)
        runs.extend(members[i : i + _WINDOW] for i in range(last + 1))
    return runs


_BM25_K1 = 1.5
_BM25_B = 0.25  # full length normalisation favours short sentences


def bm25_scores(query: Sequence[str], documents: Sequence[Sequence[str]]) -> np.ndarray:
    """BM25 of each tokenized document for the query, with Lucene's idf
    (log(1 + (N - n + 0.5) / (n + 0.5)), positive however few the documents: rank-bm25's
    Okapi idf is 0 for a word in one of two sentences, which left a short evidence
    without any match)."""
    if not documents:
        return np.zeros(0)
    lengths = np.asarray([len(d) for d in documents], dtype=np.float64)
    average = float(lengths.mean()) or 1.0
    counts = [Counter(d) for d in documents]
    scores = np.zeros(len(documents))
    for term in set(query):
        tf = np.asarray([c.get(term, 0) for c in counts], dtype=np.float64)
        n = int((tf > 0).sum())
        if n == 0:
            continue
        idf = math.log(1.0 + (len(documents) - n + 0.5) / (n + 0.5))
        norm = _BM25_K1 * (1.0 - _BM25_B + _BM25_B * lengths / average)
        scores += query.count(term) * idf * tf * (_BM25_K1 + 1.0) / (tf + norm)
    return scores


def _unit_scale(scores: np.ndarray) -> np.ndarray:
    """Scores divided by the best one (all zero when none is positive)."""
    top = float(scores.max()) if scores.size else 0.0
    return np.clip(scores / top, 0.0, None) if top > 0 else np.zeros_like(scores)


def rank_passages(question_vector: np.ndarray, passage_vectors: Sequence[np.ndarray]) -> list[int]:
    """Indices of the passages, most relevant to the question first.

    Each entry of ``passage_vectors`` is one vector (shape ``(dim,)``) or the vectors
    of the passage's nodes (shape ``(n, dim)``; a passage of adjacent chunks has
    several): a passage scores its best node's cosine. Vectors are unit length, as
    the embedders return them. Ties keep the given order; a passage without vectors
    goes last.
    """
    q = np.asarray(question_vector, dtype=np.float64).ravel()
    scores = []
    for vectors in passage_vectors:
        matrix = np.asarray(vectors, dtype=np.float64).reshape(-1, q.size)
        scores.append(float((matrix @ q).max()) if len(matrix) else -np.inf)
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))


class ExtractiveAnswerer:
    """Answers with the sentences of the evidence that best match the question, each
    once, in the order they came. No model writes anything: it quotes. Passages are
    taken as given best first, and a sentence's match is weighed by its passage's rank.

    A sentence scores its BM25 match to the question (IDF from the evidence's own
    sentences, words lightly stemmed) and, given ``embed``, its cosine to the question
    too, each scaled to the best sentence's and mixed by ``lexical_weight``. BM25
    alone favours short sentences that repeat a name of the question ("Victor, he is
    murdered!" for "Where does Victor meet the creature on the glacier?"); the
    embedding finds the sentences about the question's subject even in other words
    ("I descended upon the glacier"), and each sentence is also scored in its place
    (the run of sentences around it). A chosen sentence that opens by pointing back
    ("He", "This", "But") is quoted with the sentence before it in its passage.
    """

    def __init__(
        self,
        sentences: int = 2,
        *,
        embed: Callable[[Sequence[str]], np.ndarray] | None = None,
        lexical_weight: float = 0.3,
        context_weight: float = 0.5,
        kind_floor: float = KIND_FLOOR,
        margin: float = 0.0,
        support_power: float = 0.5,
    ) -> None:
        if not 0.0 <= lexical_weight <= 1.0:
            raise ConfigError(f"lexical_weight must be in [0, 1], got {lexical_weight}")
        if not 0.0 <= kind_floor <= 1.0:
            raise ConfigError(f"kind_floor must be in [0, 1], got {kind_floor}")
        self.sentences = sentences
        self.kind_floor = kind_floor
        self.margin = margin
        self.support_power = support_power
        self.lexical_weight = lexical_weight
        self.context_weight = context_weight
        self._embed = embed

    @property
    def backend(self) -> str:
        return EXTRACTIVE

    def sentence_scores(
        self, question: str, passages: Sequence[str]
    ) -> tuple[list[_Sentence], np.ndarray]:
        """The evidence's distinct sentences and their relevance to the question: half
        their own match, half that of the best run of ``_WINDOW`` sentences of their
        passage they are in (a sentence is read in its place, not on its own)."""
        units = _evidence_sentences(passages)
        query = _terms(question)
        if not units or not (query or self._embed):
            return units, np.zeros(len(units))
        windows = _windows(units)
        texts = [u.text for u in units]
        window_texts = [" ".join(units[m].text for m in w) for w in windows]
        # An exclamation that repeats a name of the question ("Victor, he is
        # murdered!") matches it well and answers nothing: short sentences count less.
        brevity = np.asarray([min(1.0, len(t.split()) / _FULL) ** 0.5 for t in texts])
        own = self._match(question, query, texts) * brevity
        around = self._match(question, query, window_texts)
        context = np.zeros(len(units))
        for w, score in zip(windows, around, strict=True):
            for m in w:
                context[m] = max(context[m], score)
        match = (1.0 - self.context_weight) * own + self.context_weight * context
        # Passages come best first (Memory.ask orders its evidence by relevance): a
        # sentence of the third passage needs twice the match of one of the first.
        prior = np.asarray([1.0 / (1.0 + u.passage / _RANK_HALF) for u in units])
        return units, match * prior

    def _match(self, question: str, query: list[str], texts: list[str]) -> np.ndarray:
        """BM25 (IDF from these texts, scaled to the best text) mixed with the cosine
        to the question."""
        lexical = np.zeros(len(texts))
        if query:
            lexical = _unit_scale(bm25_scores(query, [_terms(t) for t in texts]))
        if self._embed is None:
            return lexical
        vectors = self._embed([question, *texts])
        semantic = np.clip(vectors[1:] @ vectors[0], 0.0, None)
        w = self.lexical_weight if query else 0.0
        return w * lexical + (1.0 - w) * semantic

    def rank_passages(self, question: str, passages: Sequence[str]) -> list[int]:
        """Indices of the passages, the one holding the best sentence first (by each
        passage's best sentence; a passage of copies only goes last, in given order)."""
        units, scores = self.sentence_scores(question, passages)
        best = [-1.0] * len(passages)
        for u, score in zip(units, scores, strict=True):
            best[u.passage] = max(best[u.passage], float(score))
        return sorted(range(len(passages)), key=lambda i: (-best[i], i))

    def answer(self, question: str, passages: Sequence[str]) -> AnswerText:
        units, scores = self.sentence_scores(question, passages)
        weights = self._kind_weights(question, units, scores)
        scores = scores * weights
        place = {(u.passage, u.index): n for n, u in enumerate(units)}
        chosen: list[int] = []  # into units
        quoted: list[str] = []  # keys
        best = 0.0
        # Best first, ties to the earlier sentence; one inside a quoted one is skipped.
        for n in sorted(range(len(units)), key=lambda n: (-scores[n], n)):
            if len(chosen) == self.sentences or scores[n] <= 0:
                break
            if chosen and scores[n] < self.margin * best:
                break
            # A heading ("Chapter 10"), a table of contents or an illustration's
            # caption is no answer, however near its chapter is.
            if _repeats(units[n].key, quoted) or not _quotable(units[n].text):
                continue
            best = best or float(scores[n])
            chosen.append(n)
            quoted.append(units[n].key)
        # A sentence that needs the one before it brings it along (when it is
        # in the evidence once, as itself, and not quoted already).
        with_context: list[int] = []
        for n in chosen:
            u = units[n]
            words = u.text.split()
            lead = _WORD.findall(words[0].lower())[:1] if words else []
            before = place.get((u.passage, u.index - 1))
            if (
                before is not None
                and lead
                and lead[0] in _LEADS_BACK
                and before not in chosen
                and before not in with_context
                and not _repeats(units[before].key, quoted)
                and _quotable(units[before].text)
            ):
                with_context.append(before)
                quoted.append(units[before].key)
        # The first line of a speech brings its speaker's name (a play's "BALTHASAR.",
        # a transcript's "ALICE:"): who said it is often what was asked.
        for n in chosen:
            u = units[n]
            label = place.get((u.passage, u.index - 1))
            if (
                label is not None
                and label not in with_context
                and _SPEAKER.match(units[label].text)
            ):
                with_context.append(label)
        # A sentence that matches the question but holds no answer of the kind asked
        # for brings its neighbour that does ("... the remotest of the Orkneys" after
        # the sentence about the work).
        for n in chosen:
            if weights[n] > self.kind_floor:
                continue
            u = units[n]
            near = [
                m
                for m in (place.get((u.passage, u.index + d)) for d in (-1, 1))
                if m is not None and weights[m] > self.kind_floor and _quotable(units[m].text)
            ]
            near = [m for m in near if m not in chosen and m not in with_context]
            if near:
                with_context.append(max(near, key=lambda m: (weights[m], -m)))
        order = sorted(chosen + with_context)
        text = " ".join(_without_debris(units[n].text) for n in order)
        citations = tuple(c for n in order if (c := _citation(units[n], passages)) is not None)
        return AnswerText(text, EXTRACTIVE, Usage(), citations)

    def _kind_weights(
        self, question: str, units: Sequence[_Sentence], scores: np.ndarray
    ) -> np.ndarray:
        """Per sentence, how much of its match counts given the kind of answer the
        question asks for (a name for who, a place after "in" / "to" for where, a date
        for when, a number for how many): ``kind_floor`` of it when it holds none, all
        of it when it holds the evidence's likeliest answer, in between for others.

        An answer is likelier the more (and the better) matching sentences name it: the
        evidence repeats the answer around the question's subject ("Professor Waldman"
        in three sentences about the lectures), while a name in one stray sentence that
        matches the question's words is as often a distractor."""
        kind = answer_kind(question)
        if kind == THING or not units:
            return np.ones(len(units))
        vocab = vocabulary(u.text for u in units)
        asked = question_words(question)
        found = [answer_candidates(u.text, kind, vocab, asked) for u in units]
        support: dict[str, float] = {}
        for candidates, score in zip(found, scores, strict=True):
            for candidate, sureness in candidates.items():
                gain = sureness * float(score) ** SUPPORT_EXPONENT
                support[candidate] = support.get(candidate, 0.0) + gain
        top = max(support.values(), default=0.0)
        weights = np.full(len(units), self.kind_floor)
        if top <= 0:
            return weights
        for n, candidates in enumerate(found):
            if candidates:
                likeliest = max(
                    c * (support[name] / top) ** self.support_power
                    for name, c in candidates.items()
                )
                weights[n] += (1.0 - self.kind_floor) * likeliest
        return weights


_DEBRIS = re.compile(r"\[(?:Illustration|_?Copyright)[^\]]*\]?|\[Illustration", re.IGNORECASE)


_SPEAKER = re.compile(r"^[A-Z][A-Z'’. -]*[A-Z][.:]$")  # "FRIAR LAWRENCE." on its own


def _without_debris(sentence: str) -> str:
    """The sentence without illustration markers ("[Illustration: ...]")."""
    return " ".join(_DEBRIS.sub(" ", sentence).split())


def _quotable(sentence: str) -> bool:
    """Whether a sentence can be quoted as an answer: it ends like a sentence and is
    not a heading, a line of a table of contents or an illustration's caption."""
    text = _without_debris(sentence)
    words = text.split()
    # A transcript's turn is one, ended or not ("Caroline: I went to the group").
    if len(words) < 3 or not (_ENDS_SENTENCE.search(text) or _STARTS_TURN.match(text)):
        return False
    if _is_layout(text):
        return False  # a heading, a line of a table of contents, several in a row
    # A title page: many capitalized words, few others.
    capitalized = sum(1 for w in words if w[:1].isupper())
    return capitalized / len(words) < 0.6


def _citation(unit: _Sentence, passages: Sequence[str]) -> QuotedSpan | None:
    """Where the sentence is in its passage (white space folded in the quote, so the
    words are looked for with any white space between them)."""
    pattern = r"\s+".join(re.escape(w) for w in unit.text.split())
    found = re.search(pattern, passages[unit.passage]) if pattern else None
    return QuotedSpan(unit.passage, found.start(), found.end()) if found else None
