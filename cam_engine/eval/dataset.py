"""The evaluation format every loader produces, and its JSONL form for bringing your own data.

Gold evidence is stored as exact text that occurs verbatim in a document, not as
offsets or chunk ids: the engine is free to chunk documents however it likes, and a
metric can still tell whether the evidence reached the context it returned.

A set is scored in one of two ways (``EvalSet.scoring``): ``"evidence"``, the share
of each question's gold items in the context, or ``"summary"``, for summary questions
without evidence spans: ROUGE recall of the reference answer by the context.

JSONL, one JSON object per line (blank lines are skipped)::

    {"type": "set", "name": "my-eval", "scoring": "evidence"}   (optional, first)
    {"type": "document", "id": "d1", "text": "...", "title": "..."}
    {"type": "document", "id": "c1", "turns": [{"speaker": "Ann", "text": "...",
     "time": "2023-05-08", "session": "1"}, ...]}     (a conversation, in place of text)
    {"type": "question", "id": "q1", "question": "...", "answers": ["..."],
     "gold": [{"doc_id": "d1", "text": "..."}], "doc_ids": ["d1"], "kind": "short"}
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cam_engine.conversation import Conversation, conversation_of_turns
from cam_engine.errors import InputError

KIND_SHORT = "short"  # span answers, scored by exact match and token F1
KIND_LONG = "long"  # free-form answers (summaries), scored by ROUGE
QUESTION_KINDS = (KIND_SHORT, KIND_LONG)
SCORING_EVIDENCE = "evidence"  # share of the gold items inside the context
SCORING_SUMMARY = "summary"  # ROUGE recall of the reference answer by the context
SCORINGS = (SCORING_EVIDENCE, SCORING_SUMMARY)


@dataclass(frozen=True)
class EvalDocument:
    """One document to ingest; paragraphs (or turns) are separated by blank lines.

    The blank lines matter: the engine's chunker splits at them first, so a paragraph
    or a transcript turn is not glued to its neighbour inside one chunk.
    """

    id: str
    text: str
    title: str | None = None
    # A conversation's turns and sessions: the memory is built from them as `cam ingest`
    # builds it from a transcript (whole turns per chunk, dated sessions); ``text`` is
    # their plain rendering, where gold turns are looked up.
    conversation: Conversation | None = None


@dataclass(frozen=True)
class GoldItem:
    """One unit of gold evidence (paragraph, sentence or turn), verbatim from ``doc_id``."""

    doc_id: str
    text: str


@dataclass(frozen=True)
class EvalQuestion:
    """A question with its reference answers and the evidence that supports them."""

    id: str
    question: str
    answers: tuple[str, ...]
    gold: tuple[GoldItem, ...]
    doc_ids: tuple[str, ...]  # documents the question is asked against (per-meeting memories)
    kind: str = KIND_SHORT

    @property
    def gold_doc_ids(self) -> tuple[str, ...]:
        """Documents holding gold evidence, in order: paragraph-level gold for pooled sets."""
        return tuple(dict.fromkeys(g.doc_id for g in self.gold))


@dataclass
class EvalSet:
    """Documents and the questions asked about them."""

    name: str
    documents: list[EvalDocument]
    questions: list[EvalQuestion]
    scoring: str = SCORING_EVIDENCE

    def scorable(self, question: EvalQuestion) -> bool:
        """Whether the question has what its scoring needs: a gold item (evidence) or a
        non-blank reference answer (summary). One without would score 0 for every
        strategy whatever it retrieved, so the runner leaves it out and counts it."""
        if self.scoring == SCORING_SUMMARY:
            return any(a.strip() for a in question.answers)
        return bool(question.gold)

    @property
    def unscorable_reason(self) -> str:
        """Why ``scorable`` is False, for the run's report."""
        return "no reference answer" if self.scoring == SCORING_SUMMARY else "no gold evidence"

    def validate(self) -> None:
        """Raise InputError (naming the document or question) when the set is inconsistent.

        Checks unique ids, known document ids, valid kinds, and that every gold text is
        non-empty and occurs verbatim in its document: the evidence metrics rely on it.
        """
        if self.scoring not in SCORINGS:
            raise InputError(
                f"eval set {self.name!r}: scoring {self.scoring!r} is not 'evidence' or 'summary'"
            )
        by_id: dict[str, EvalDocument] = {}
        for doc in self.documents:
            if doc.id in by_id:
                raise InputError(f"document {doc.id!r} appears twice in eval set {self.name!r}")
            by_id[doc.id] = doc
        seen: set[str] = set()
        for q in self.questions:
            if q.id in seen:
                raise InputError(f"question {q.id!r} appears twice in eval set {self.name!r}")
            seen.add(q.id)
            if q.kind not in QUESTION_KINDS:
                raise InputError(f"question {q.id!r}: kind {q.kind!r} is not 'short' or 'long'")
            for doc_id in q.doc_ids:
                if doc_id not in by_id:
                    raise InputError(f"question {q.id!r}: asked about unknown document {doc_id!r}")
            for item in q.gold:
                gold_doc = by_id.get(item.doc_id)
                if gold_doc is None:
                    raise InputError(f"question {q.id!r}: gold in unknown document {item.doc_id!r}")
                if not item.text.strip():
                    raise InputError(f"question {q.id!r}: empty gold text in {item.doc_id!r}")
                if item.text not in gold_doc.text:
                    raise InputError(
                        f"question {q.id!r}: gold text {_preview(item.text)} "
                        f"is not in document {item.doc_id!r}"
                    )


def _preview(text: str, width: int = 40) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= width else flat[: width - 3] + "...")


# ----------------------------------------------------------------------------- JSONL


def write_jsonl(evalset: EvalSet, path: str | Path) -> None:
    """Write the set as JSONL: a ``set`` line, the documents, then the questions. A
    conversation is written as its text (its sessions' dates may not be ISO times)."""
    with Path(path).open("w", encoding="utf-8") as out:
        head = {"type": "set", "name": evalset.name, "scoring": evalset.scoring}
        out.write(json.dumps(head, ensure_ascii=False) + "\n")
        for doc in evalset.documents:
            row: dict[str, Any] = {"type": "document", "id": doc.id, "text": doc.text}
            if doc.title is not None:
                row["title"] = doc.title
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
        for q in evalset.questions:
            row = {
                "type": "question",
                "id": q.id,
                "question": q.question,
                "answers": list(q.answers),
                "gold": [{"doc_id": g.doc_id, "text": g.text} for g in q.gold],
                "doc_ids": list(q.doc_ids),
                "kind": q.kind,
            }
            out.write(json.dumps(row, ensure_ascii=False) + "\n")


def load_jsonl(path: str | Path) -> EvalSet:
    """Read and validate a JSONL eval set; InputError naming the file (and line) if bad.

    The set is named by its ``set`` line, or by the file name without extension; its
    ``scoring`` is ``"evidence"`` unless the ``set`` line says ``"summary"``.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read eval set ({exc})") from exc
    name = path.stem
    scoring = SCORING_EVIDENCE
    documents: list[EvalDocument] = []
    questions: list[EvalQuestion] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{where}: not valid JSON ({exc.msg})") from exc
        if not isinstance(row, dict):
            raise InputError(f"{where}: expected a JSON object, got {type(row).__name__}")
        kind = row.get("type")
        if kind == "document":
            documents.append(_document(row, where))
        elif kind == "question":
            questions.append(_question(row, where))
        elif kind == "set":
            name = _string(row, "name", where)
            scoring = row.get("scoring", SCORING_EVIDENCE)
            if scoring not in SCORINGS:
                raise InputError(f"{where}: 'scoring' must be 'evidence' or 'summary'")
        else:
            raise InputError(f"{where}: 'type' must be document, question or set, not {kind!r}")
    if not documents and not questions:
        raise InputError(f"{path}: no documents or questions (expected JSONL eval set)")
    evalset = EvalSet(name, documents, questions, scoring)
    try:
        evalset.validate()
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from exc
    return evalset


def _document(row: dict[str, Any], where: str) -> EvalDocument:
    title = row.get("title")
    if title is not None and not isinstance(title, str):
        raise InputError(f"{where}: 'title' must be a string")
    if "turns" in row:  # a conversation, ingested as one: gold turns as "Speaker: text"
        turns = row["turns"]
        if not isinstance(turns, list) or not turns:
            raise InputError(f"{where}: 'turns' must be a non-empty list of turn objects")
        talk = conversation_of_turns((f"{where}: turn {i}", t) for i, t in enumerate(turns, 1))
        return EvalDocument(_string(row, "id", where), talk.plain_text(), title, talk)
    return EvalDocument(_string(row, "id", where), _string(row, "text", where), title)


def _question(row: dict[str, Any], where: str) -> EvalQuestion:
    gold_rows = row.get("gold", [])
    if not isinstance(gold_rows, list) or not all(isinstance(g, dict) for g in gold_rows):
        raise InputError(f"{where}: 'gold' must be a list of {{doc_id, text}} objects")
    gold = tuple(
        GoldItem(_string(g, "doc_id", where), _string(g, "text", where)) for g in gold_rows
    )
    kind = row.get("kind", KIND_SHORT)
    if kind not in QUESTION_KINDS:
        raise InputError(f"{where}: 'kind' must be 'short' or 'long', not {kind!r}")
    return EvalQuestion(
        id=_string(row, "id", where),
        question=_string(row, "question", where),
        answers=_strings(row, "answers", where),
        gold=gold,
        doc_ids=_strings(row, "doc_ids", where),
        kind=kind,
    )


def _string(row: dict[str, Any], key: str, where: str) -> str:
    value = row.get(key)
    if not isinstance(value, str):
        raise InputError(f"{where}: {key!r} must be a string")
    return value


def _strings(row: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = row.get(key)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{where}: {key!r} must be a list of strings")
    return tuple(value)
