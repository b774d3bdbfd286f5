"""Needle-in-a-haystack eval sets (RULER's niah_single_2 shape): essay text cut to a
length, one "special magic number" sentence inserted at a depth, a question asking
for the number. Each (length, depth) is its own document, so it gets its own memory.

The needle goes in at the paragraph boundary nearest to ``depth`` percent of the
haystack, as its own paragraph: the chunker keeps it whole, and a retriever is
scored on finding it (gold = the needle sentence), not on a sentence cut in two.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from pathlib import Path

from cam_engine.errors import InputError
from cam_engine.eval.dataset import EvalDocument, EvalQuestion, EvalSet, GoldItem
from cam_engine.eval.metrics import approx_tokens

DEPTHS = (0, 25, 50, 75, 100)
PARAGRAPH_WORDS = 100
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
LENGTHS = (32_000, 128_000)
# Keys as in RULER: a plain word the question names; the value is a 7-digit number.
KEYS = (
    "amber", "lantern", "harbor", "quartz", "meadow", "falcon", "violet", "compass",
    "ember", "glacier", "orchid", "saffron", "timber", "willow", "cobalt", "juniper",
)  # fmt: skip


def needle_sentence(key: str, value: str) -> str:
    return f"One of the special magic numbers for {key} is: {value}."


def needle_question(key: str) -> str:
    return f"What is the special magic number for {key} mentioned in the provided text?"


def haystack_paragraphs(folder: Path, tokens: int) -> list[str]:
    """The essays (sorted by file name, repeated if need be) as paragraphs of about
    ``PARAGRAPH_WORDS`` words cut at sentence ends, until ``tokens`` (approximate).

    The essay files are hard-wrapped with no blank lines, so paragraphs are rebuilt:
    they are the places a needle can go, and a depth needs fine-grained places.
    """
    files = sorted(folder.glob("*.txt"))
    if not files:
        raise InputError(f"{folder}: no .txt essays to build a haystack from")
    paragraphs: list[str] = []
    total = 0
    while True:
        before = len(paragraphs)
        for path in files:
            sentences = _SENTENCE_END.split(" ".join(path.read_text(encoding="utf-8").split()))
            current: list[str] = []
            for sentence in sentences:
                current.append(sentence)
                if sum(len(s.split()) for s in current) >= PARAGRAPH_WORDS:
                    paragraphs.append(" ".join(current))
                    total += approx_tokens(paragraphs[-1])
                    current = []
                    if total >= tokens:
                        return paragraphs
        if len(paragraphs) == before:  # every essay shorter than one paragraph: no progress
            raise InputError(
                f"{folder}: the essays are too short to build a haystack (each needs at "
                f"least {PARAGRAPH_WORDS} words)"
            )


def niah_set(
    folder: Path,
    *,
    lengths: Sequence[int] = LENGTHS,
    depths: Sequence[int] = DEPTHS,
    seed: int = 0,
) -> EvalSet:
    rng = random.Random(seed)
    documents: list[EvalDocument] = []
    questions: list[EvalQuestion] = []
    for length in lengths:
        base = haystack_paragraphs(folder, length)
        for depth in depths:
            if not 0 <= depth <= 100:
                raise InputError(f"NIAH depth must be in [0, 100], got {depth}")
            key = rng.choice(KEYS)
            value = str(rng.randrange(1_000_000, 10_000_000))
            needle = needle_sentence(key, value)
            at = round(len(base) * depth / 100)
            text = "\n\n".join([*base[:at], needle, *base[at:]])
            doc_id = f"niah-{length}-{depth}"
            documents.append(EvalDocument(doc_id, text, f"{length} tokens, depth {depth}%"))
            questions.append(
                EvalQuestion(
                    id=doc_id,
                    question=needle_question(key),
                    answers=(value,),
                    gold=(GoldItem(doc_id, needle),),
                    doc_ids=(doc_id,),
                )
            )
    return EvalSet("niah", documents, questions)


def length_and_depth(question_id: str) -> tuple[int, int]:
    _, length, depth = question_id.split("-")
    return int(length), int(depth)
