"""``cam eval books``: do the answers (and the evidence) contain the fact asked for?

A check set of plain questions on whole books, each with short accepted answers
(aliases), one JSON object per line::

    {"id": "pg84-14", "doc": "pg84", "question": "Where does Victor go to build a
     female companion?", "answers": ["Orkney", "Orkneys"], "type": "where"}

``doc`` names a book file of the books folder (``pg84`` is ``pg84.txt``). Every book
the set names goes into ONE memory, so the other books compete for the evidence as
they would in a user's memory; each strategy then answers through ``Memory.ask``
(offline: the extractive answerer, the adapters' extractive rules). A strategy is
scored by two shares: the answer contains an accepted answer (case-insensitive, as a
whole word or phrase), and the evidence handed to the answerer contains one.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cam_engine.errors import InputError
from cam_engine.memory import Memory
from cam_engine.retrieval.strategies import BASELINE, CAM, STRATEGIES, strategy_named
from cam_engine.types import PAGE

QUESTION_TYPES = ("who", "where", "when", "which", "what", "how many")
BATCH_SIZE = 64


def default_strategies() -> list[str]:
    """The CAM strategies and the baselines of the registry: they run offline in seconds
    per question on five books (the adapters build views, memagent reads every chunk
    per question, the ablations need their own build). Any other is asked for by name."""
    return [s.name for s in STRATEGIES.values() if s.family in (CAM, BASELINE)]


@dataclass(frozen=True)
class BookQuestion:
    id: str
    doc: str  # the book's file name without extension
    question: str
    answers: tuple[str, ...]
    type: str


@dataclass
class BookResult:
    question_id: str
    strategy: str
    answer: str
    answer_hit: bool
    evidence_hit: bool
    seconds: float


@dataclass
class BookRun:
    strategies: list[str]
    questions: list[BookQuestion]
    results: list[BookResult] = field(default_factory=list)
    build: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> list[dict[str, Any]]:
        """Per strategy: questions, answers and evidence holding the fact (counts and
        shares), mean seconds per question."""
        rows = []
        for name in self.strategies:
            mine = [r for r in self.results if r.strategy == name]
            n = len(mine) or 1
            answered = sum(r.answer_hit for r in mine)
            found = sum(r.evidence_hit for r in mine)
            rows.append(
                {
                    "strategy": name,
                    "questions": len(mine),
                    "answer_contains": answered,
                    "answer_rate": round(answered / n, 3),
                    "evidence_contains": found,
                    "evidence_rate": round(found / n, 3),
                    "seconds_per_question": round(sum(r.seconds for r in mine) / n, 3),
                }
            )
        return rows

    def by_type(self, strategy: str) -> dict[str, tuple[int, int, int]]:
        """Question type -> (questions, answers holding the fact, evidence holding it)."""
        types = {q.id: q.type for q in self.questions}
        counts: dict[str, tuple[int, int, int]] = {}
        for r in self.results:
            if r.strategy != strategy:
                continue
            n, a, e = counts.get(types[r.question_id], (0, 0, 0))
            counts[types[r.question_id]] = (n + 1, a + r.answer_hit, e + r.evidence_hit)
        return counts

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategies": self.strategies,
            "questions": len(self.questions),
            "build": self.build,
            "summary": self.summary(),
            "results": [r.__dict__ for r in self.results],
        }


def load_book_questions(path: Path) -> list[BookQuestion]:
    """The check set at ``path``; an ``InputError`` naming the line for a bad one."""
    questions: list[BookQuestion] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not readable as UTF-8 text ({exc})") from exc
    for number, line in enumerate(lines, 1):
        if line.strip():
            questions.append(_question(line, f"{path}:{number}"))
    if not questions:
        raise InputError(f"{path}: no questions")
    return questions


def _question(line: str, where: str) -> BookQuestion:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: not JSON ({exc.msg})") from None
    if not isinstance(row, dict):
        raise InputError(f"{where}: expected a JSON object")
    for key in ("id", "doc", "question", "type"):
        if not isinstance(row.get(key), str) or not row[key].strip():
            raise InputError(f"{where}: {key!r} must be a non-empty string")
    answers = row.get("answers")
    if (
        not isinstance(answers, list)
        or not answers
        or not all(isinstance(a, str) and a.strip() for a in answers)
    ):
        raise InputError(f"{where}: 'answers' must be a list of non-empty strings")
    if row["type"] not in QUESTION_TYPES:
        raise InputError(f"{where}: 'type' must be one of {', '.join(QUESTION_TYPES)}")
    return BookQuestion(row["id"], row["doc"], row["question"], tuple(answers), row["type"])


def book_paths(questions: Sequence[BookQuestion], books_dir: Path) -> list[Path]:
    """The book file of every ``doc`` the questions name (``<doc>.txt`` in
    ``books_dir``), in name order."""
    paths = []
    for doc in sorted({q.doc for q in questions}):
        path = books_dir / f"{doc}.txt"
        if not path.is_file():
            raise InputError(f"--books-dir {books_dir}: no {path.name} for doc {doc!r}")
        paths.append(path)
    return paths


def book_document(question: BookQuestion) -> str:
    """The document id of the question's book in the memory (its file name)."""
    return f"{question.doc}.txt"


def contains_answer(text: str, answers: Sequence[str]) -> bool:
    """Whether an accepted answer occurs in ``text``, case-insensitively, as whole
    words ("Pip" is not found in "pipe"; Gutenberg's italics, "_Paradise Lost_", count
    as a word's edge)."""
    return any(
        re.search(rf"(?<![^\W_]){re.escape(a.strip())}(?![^\W_])", text, re.IGNORECASE)
        for a in answers
    )


def build_memory(memory: Memory, paths: Sequence[Path], strategies: Sequence[str]) -> None:
    """Ingest the books (a no-op for those already in the memory) and build the views
    the adapter strategies read, extractively. A strategy that needs a memory built
    otherwise (``needs_build``) is refused first, not after the books are embedded."""
    for name in strategies:
        strategy_named(name).check_build(memory.name, memory.settings)
    memory.ingest([str(p) for p in paths], batch_size=BATCH_SIZE)
    for view in sorted({v for s in strategies if (v := strategy_named(s).view) is not None}):
        from cam_engine.adapters.registry import VIEW_BUILDERS

        if not memory.view_nodes(view, PAGE):  # both views keep pages
            VIEW_BUILDERS[view](memory, None, None)


def ask_books(
    memory: Memory,
    questions: Sequence[BookQuestion],
    strategies: Sequence[str],
    progress: Callable[[int, int], None] | None = None,
    *,
    scoped: bool = False,
) -> list[BookResult]:
    """Each question of each strategy, asked of ``memory`` with the offline answerers;
    ``scoped``: each kept to its own book (``documents=``, as ``cam ask --document``)."""
    results = []
    total = len(questions) * len(strategies)
    for name in strategies:
        for q in questions:
            started = time.perf_counter()
            reply = memory.ask(
                q.question,
                strategy=name,
                # As cam eval asks it (research: its evidence is its source pages).
                options=strategy_named(name).evaluation.options or None,
                documents=[book_document(q)] if scoped else None,
            )
            seconds = time.perf_counter() - started
            evidence = "\n\n".join(e.text for e in reply.evidence)
            results.append(
                BookResult(
                    q.id,
                    name,
                    reply.answer,
                    contains_answer(reply.answer, q.answers),
                    contains_answer(evidence, q.answers),
                    round(seconds, 3),
                )
            )
            if progress is not None:
                progress(len(results), total)
    return results


def markdown_table(run: BookRun) -> str:
    lines = [
        "| strategy | answer contains the fact | evidence contains the fact | s/question |",
        "|---|---|---|---|",
    ]
    for row in run.summary():
        n = row["questions"]
        lines.append(
            f"| {row['strategy']} | {row['answer_contains']}/{n} ({row['answer_rate']:.0%}) "
            f"| {row['evidence_contains']}/{n} ({row['evidence_rate']:.0%}) "
            f"| {row['seconds_per_question']:.2f} |"
        )
    return "\n".join(lines)
