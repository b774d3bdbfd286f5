"""Loaders that turn public benchmark files into an :class:`EvalSet`.

Multi-hop QA sets (HotpotQA, 2WikiMultiHopQA, MuSiQue) are POOLED as the CAM paper
does: every candidate paragraph of the selected questions becomes one document of a
single memory, shared paragraphs only once, and each question's ``doc_ids`` lists its
own candidate paragraphs (enough to build a per-question haystack instead). Meeting
and dialogue sets (QMSum, LoCoMo) give one document per meeting or conversation and
ask each question against its own document only.

Every loader takes ``limit`` (the first N questions, after any filter) and keeps only
the documents those questions need, so a small limit gives a small memory. Files may
be a JSON list, one JSON object, or JSONL: the shared HotpotQA files are JSONL although
the public release is a JSON list. A record that does not have the expected shape
raises InputError naming the file, the record (its line in JSONL) and the format.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from cam_engine.conversation import Conversation, locomo_sessions, locomo_turn
from cam_engine.errors import InputError
from cam_engine.eval.dataset import (
    KIND_LONG,
    SCORING_SUMMARY,
    EvalDocument,
    EvalQuestion,
    EvalSet,
    GoldItem,
    load_jsonl,
)

T = TypeVar("T")
Record = tuple[int, dict[str, Any]]  # (line in JSONL or position in a JSON list, record)

HOTPOT_EXPECTED = "HotpotQA questions {_id, question, answer, context, supporting_facts}"
TWOWIKI_EXPECTED = "2WikiMultiHopQA questions {_id, question, answer, context, supporting_facts}"
MUSIQUE_EXPECTED = "MuSiQue questions {id, question, answer, paragraphs}"
QMSUM_EXPECTED = "QMSum meetings {meeting_transcripts, specific_query_list}"
QMSUM_GENERAL_EXPECTED = "QMSum meetings {meeting_transcripts, general_query_list}"
QMSUM_QUERIES = ("specific", "general")
LOCOMO_EXPECTED = (
    "LoCoMo samples {sample_id, conversation, qa} (locomo10.json) or conversations "
    "{speaker_a, speaker_b, session_N, qa} (locomo10.zip's one file each)"
)

# What malformed records raise while being converted; turned into one-line InputErrors.
_SHAPE_ERRORS = (KeyError, TypeError, ValueError, IndexError, AttributeError)


# ----------------------------------------------------------------------------- reading


def read_records(path: Path, expected: str) -> list[Record]:
    """The JSON objects of a JSON-list, single-object or JSONL file, numbered."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read ({exc}); expected {expected}") from exc
    return parse_records(text, path, expected)


def parse_records(text: str, path: Path, expected: str) -> list[Record]:
    """``read_records`` for text already read; ``path`` names it in errors."""
    stripped = text.lstrip()
    if not stripped:
        raise InputError(f"{path}: file is empty; expected {expected}")
    if stripped.startswith("["):
        try:
            rows = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: invalid JSON ({exc.msg}); expected {expected}") from exc
        records = list(enumerate(rows, start=1))
    else:
        records = _jsonl_records(path, text, expected)
    for number, row in records:
        if not isinstance(row, dict):
            raise InputError(f"{path}: record {number} is not a JSON object; expected {expected}")
    return records


def _jsonl_records(path: Path, text: str, expected: str) -> list[tuple[int, Any]]:
    records: list[tuple[int, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            if records:
                raise InputError(
                    f"{path}:{number}: invalid JSON ({exc.msg}); expected {expected}"
                ) from exc
            try:  # one pretty-printed object is not JSONL, but is fine
                return [(1, json.loads(text))]
            except json.JSONDecodeError:
                raise InputError(
                    f"{path}: neither JSON nor JSONL ({exc.msg}); expected {expected}"
                ) from exc
    return records


def _convert(path: Path, number: int, expected: str, convert: Callable[..., T], *args: Any) -> T:
    """``convert(*args)`` for one record, a shape error becoming a one-line InputError."""
    try:
        return convert(*args)
    except _SHAPE_ERRORS as exc:
        detail = f"no {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)
        raise InputError(
            f"{path}: record {number} is malformed ({detail}); expected {expected}"
        ) from exc


def _check_limit(limit: int | None) -> None:
    if limit is not None and limit < 0:
        raise InputError(f"limit must be >= 0, not {limit}")


def _answers(*values: Any) -> tuple[str, ...]:
    """Answers as strings (LoCoMo has integer years); empty and repeated ones dropped."""
    texts = (str(v).strip() for v in values if v is not None)
    return tuple(dict.fromkeys(t for t in texts if t))


class _Pool:
    """Documents shared by several questions: one per distinct (title, text).

    The id is the title itself, so runs over the same file name documents the same way;
    a second, different paragraph under a known title gets ``"title #<sha1 of text>"``.
    """

    def __init__(self) -> None:
        self._docs: dict[str, EvalDocument] = {}
        self._ids: dict[tuple[str, str], str] = {}

    def add(self, title: str, text: str) -> str:
        key = (title, text)
        if key not in self._ids:
            doc_id = title or "untitled"
            if doc_id in self._docs:
                doc_id = f"{doc_id} #{hashlib.sha1(text.encode()).hexdigest()[:8]}"
            self._ids[key] = doc_id
            self._docs[doc_id] = EvalDocument(doc_id, text, title or None)
        return self._ids[key]

    def documents(self) -> list[EvalDocument]:
        return list(self._docs.values())


# ----------------------------------------------------------------------------- multi-hop QA


def join_exact(sentences: Sequence[str]) -> str:
    """HotpotQA paragraph text: its sentences already carry their separating spaces."""
    return "".join(sentences)


def join_spaced(sentences: Sequence[str]) -> str:
    """Sentences joined with one space where neither side brings whitespace (2Wiki)."""
    text = ""
    for sentence in sentences:
        if text and sentence and not text[-1].isspace() and not sentence[0].isspace():
            text += " "
        text += sentence
    return text


def load_hotpotqa(
    path: str | Path, limit: int | None = None, *, level: str | None = None
) -> EvalSet:
    """HotpotQA distractor questions, pooled; gold = each supporting sentence.

    ``level="hard"`` keeps only hard questions. Document text is ``"".join(sentences)``
    as in HotpotQA (its sentences keep their leading space; where one does not, the
    split fell inside a quotation) and the title goes in ``title``. Gold sentences are
    stripped. Supporting facts may be ``[title, sent_id]`` or the
    ``[title, [sent_ids], ...]`` variant; ones pointing outside the context (a known
    HotpotQA quirk) are skipped. Paragraph-level gold is ``EvalQuestion.gold_doc_ids``.
    """
    return _load_hotpot_like(Path(path), limit, level, "hotpotqa", join_exact, HOTPOT_EXPECTED)


def load_2wiki(path: str | Path, limit: int | None = None) -> EvalSet:
    """2WikiMultiHopQA, read like HotpotQA; its sentences carry no spaces, so one is added."""
    return _load_hotpot_like(Path(path), limit, None, "2wiki", join_spaced, TWOWIKI_EXPECTED)


def _load_hotpot_like(
    path: Path,
    limit: int | None,
    level: str | None,
    name: str,
    join: Callable[[Sequence[str]], str],
    expected: str,
) -> EvalSet:
    _check_limit(limit)
    records = read_records(path, expected)
    if level is not None:
        records = [(n, row) for n, row in records if row.get("level") == level]
    pool = _Pool()
    questions = [
        _convert(path, number, expected, _hotpot_question, row, pool, join)
        for number, row in records[:limit]
    ]
    return EvalSet(f"{name}/{path.stem}", pool.documents(), questions)


def _hotpot_question(
    row: dict[str, Any], pool: _Pool, join: Callable[[Sequence[str]], str]
) -> EvalQuestion:
    paragraphs: dict[str, tuple[str, list[str]]] = {}
    for title, sentences in row["context"]:
        text = join(sentences)
        if text.strip() and title not in paragraphs:
            paragraphs[title] = (pool.add(title, text), list(sentences))
    gold: list[GoldItem] = []
    for fact in row["supporting_facts"]:
        doc_id, sentences = paragraphs.get(fact[0], ("", []))
        for i in fact[1] if isinstance(fact[1], list) else [fact[1]]:
            if 0 <= i < len(sentences) and sentences[i].strip():
                gold.append(GoldItem(doc_id, sentences[i].strip()))
    return EvalQuestion(
        id=str(row["_id"]),
        question=str(row["question"]),
        answers=_answers(row["answer"]),
        gold=tuple(dict.fromkeys(gold)),
        doc_ids=tuple(dict.fromkeys(doc_id for doc_id, _ in paragraphs.values())),
    )


def load_musique(path: str | Path, limit: int | None = None) -> EvalSet:
    """MuSiQue, pooled; gold = the whole text of each ``is_supporting`` paragraph.

    Answers are ``answer`` plus ``answer_aliases``. Questions marked
    ``answerable: false`` (MuSiQue-Full) are skipped: they have no gold evidence.
    """
    _check_limit(limit)
    path = Path(path)
    records = read_records(path, MUSIQUE_EXPECTED)
    records = [(n, row) for n, row in records if row.get("answerable", True) is not False]
    pool = _Pool()
    questions = [
        _convert(path, number, MUSIQUE_EXPECTED, _musique_question, row, pool)
        for number, row in records[:limit]
    ]
    return EvalSet(f"musique/{path.stem}", pool.documents(), questions)


def _musique_question(row: dict[str, Any], pool: _Pool) -> EvalQuestion:
    doc_ids: list[str] = []
    gold: list[GoldItem] = []
    for paragraph in row["paragraphs"]:
        text = paragraph["paragraph_text"]
        if not text.strip():
            continue
        doc_id = pool.add(str(paragraph.get("title") or ""), text)
        doc_ids.append(doc_id)
        if paragraph.get("is_supporting"):
            gold.append(GoldItem(doc_id, text.strip()))
    return EvalQuestion(
        id=str(row["id"]),
        question=str(row["question"]),
        answers=_answers(row["answer"], *(row.get("answer_aliases") or [])),
        gold=tuple(dict.fromkeys(gold)),
        doc_ids=tuple(dict.fromkeys(doc_ids)),
    )


# ----------------------------------------------------------------------------- meetings, dialogue


def load_qmsum(path: str | Path, limit: int | None = None, *, queries: str = "specific") -> EvalSet:
    """QMSum: one document per meeting, its queries as long-answer questions.

    Document text is the turns as ``"Speaker: content"`` joined by blank lines (turns
    with empty content are left out). ``queries="specific"`` (the default) loads the
    specific queries, gold = each turn inside the query's inclusive
    ``relevant_text_span`` ranges. ``queries="general"`` loads the general queries
    ("Summarize the whole meeting.", one per meeting), which have no evidence spans: the
    set's scoring is then "summary", the ROUGE recall of the reference answer by each
    strategy's context. The meeting id is ``meeting_id``/``id`` when present, else
    ``<file stem>-<line number>``.
    """
    _check_limit(limit)
    if queries not in QMSUM_QUERIES:
        raise InputError(f"QMSum queries must be 'specific' or 'general', not {queries!r}")
    general = queries == "general"
    expected = QMSUM_GENERAL_EXPECTED if general else QMSUM_EXPECTED
    path = Path(path)
    documents: list[EvalDocument] = []
    questions: list[EvalQuestion] = []
    for number, row in read_records(path, expected):
        room = None if limit is None else limit - len(questions)
        if room == 0:
            break
        meeting = str(row.get("meeting_id", row.get("id", f"{path.stem}-{number}")))
        document, asked = _convert(path, number, expected, _meeting, row, meeting, room, general)
        if asked:
            documents.append(document)
            questions.extend(asked)
    if general:
        return EvalSet(f"qmsum-general/{path.stem}", documents, questions, SCORING_SUMMARY)
    return EvalSet(f"qmsum/{path.stem}", documents, questions)


def _meeting(
    row: dict[str, Any], meeting: str, room: int | None, general: bool = False
) -> tuple[EvalDocument, list[EvalQuestion]]:
    turns = [_turn(t["speaker"], t["content"]) for t in row["meeting_transcripts"]]
    document = EvalDocument(meeting, "\n\n".join(t for t in turns if t))
    if general:
        asked = [
            EvalQuestion(
                id=f"{meeting}/g{j}",
                question=str(query["query"]),
                answers=_answers(query.get("answer")),
                gold=(),
                doc_ids=(meeting,),
                kind=KIND_LONG,
            )
            for j, query in enumerate(row["general_query_list"][:room])
        ]
        return document, asked
    questions: list[EvalQuestion] = []
    for j, query in enumerate(row["specific_query_list"][:room]):
        indexes = _span_indexes(query.get("relevant_text_span") or [], len(turns))
        gold = [GoldItem(meeting, turns[i]) for i in indexes if turns[i]]
        questions.append(
            EvalQuestion(
                id=f"{meeting}/q{j}",
                question=str(query["query"]),
                answers=_answers(query.get("answer")),
                gold=tuple(dict.fromkeys(gold)),
                doc_ids=(meeting,),
                kind=KIND_LONG,
            )
        )
    return document, questions


def _turn(speaker: str, content: str) -> str:
    """A transcript turn as one paragraph; "" for a turn that says nothing."""
    return f"{speaker.strip()}: {content.strip()}" if content.strip() else ""


def _span_indexes(spans: list[Any], n_turns: int) -> list[int]:
    """Turn indexes inside inclusive ``[from, to]`` ranges (strings or ints), clipped."""
    indexes: list[int] = []
    for span in spans:
        start, end = int(span[0]), int(span[-1])
        indexes.extend(range(max(start, 0), min(end, n_turns - 1) + 1))
    return list(dict.fromkeys(indexes))


_SESSION = re.compile(r"session_(\d+)")
_DIA_ID = re.compile(r"D\d+:\d+")


def load_locomo(path: str | Path, limit: int | None = None) -> EvalSet:
    """LoCoMo: one document per conversation, its QA pairs as short-answer questions.

    Reads both layouts the data has been published in: ``locomo10.json``, a list of
    ``{sample_id, conversation, qa}`` samples, and what snap-research/locomo ships today,
    ``data/locomo10.zip`` holding ``data/multimodal_dialog/locomo10_v2/<n>.json``: one
    file per conversation whose top level is the conversation itself (``speaker_a``,
    ``session_N`` ...) with ``qa`` beside it and no ``sample_id``; there the file name
    (``26``) is the conversation id. PATH may be either file, that zip as shipped, or a
    folder of the per-conversation files (read in numeric order).

    The document is its conversation (``EvalDocument.conversation``), ingested as `cam
    ingest` reads a transcript (``turn_chunking``: whole turns per chunk, each session
    from a new chunk under its dated header); its text is the sessions in order, each a
    header line then its turns as ``"Speaker: text"`` (a shared image adds ``[shared
    image: caption]``). Gold = the lines of the turns named in ``evidence`` (ids that
    name no turn, a known LoCoMo annotation slip, are skipped). Questions without an
    ``answer`` (adversarial category 5) are skipped; integer answers become strings.
    """
    _check_limit(limit)
    path = Path(path)
    documents: list[EvalDocument] = []
    questions: list[EvalQuestion] = []
    for where, name, text in _locomo_files(path):
        records = parse_records(text, where, LOCOMO_EXPECTED)
        for number, row in records:
            room = None if limit is None else limit - len(questions)
            if room == 0:
                break
            # One conversation per file has no sample_id: the file name is its id.
            default_id = name if len(records) == 1 else f"{name}-{number}"
            document, asked = _convert(
                where, number, LOCOMO_EXPECTED, _dialogue, row, default_id, room
            )
            if asked:
                documents.append(document)
                questions.extend(asked)
    return EvalSet(f"locomo/{path.stem}", documents, questions)


def _locomo_files(path: Path) -> list[tuple[Path, str, str]]:
    """(where, name, text) of each JSON file: ``path`` itself, the .json files of a
    folder, or the .json members of a zip archive, in numeric-then-name order."""
    if path.is_dir():
        files = sorted(path.glob("*.json"), key=lambda f: _numeric_first(f.stem))
        if not files:
            raise InputError(f"{path}: no .json files in this folder; expected {LOCOMO_EXPECTED}")
        return [(f, f.stem, _read_text(f)) for f in files]
    if path.suffix.lower() != ".zip":
        return [(path, path.stem, _read_text(path))]
    try:
        with zipfile.ZipFile(path) as archive:
            members = [
                m for m in archive.namelist() if m.lower().endswith(".json") and "__MACOSX" not in m
            ]
            members.sort(key=lambda m: _numeric_first(Path(m).stem))
            texts = [(m, archive.read(m).decode("utf-8-sig")) for m in members]
    except (OSError, zipfile.BadZipFile, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the zip archive ({exc})") from exc
    if not texts:
        raise InputError(f"{path}: no .json files in this archive; expected {LOCOMO_EXPECTED}")
    return [(path / member, Path(member).stem, text) for member, text in texts]


def _numeric_first(stem: str) -> tuple[int, str]:
    """Sort key putting 2.json before 10.json."""
    return (int(stem), "") if stem.isdigit() else (1 << 62, stem)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read ({exc}); expected {LOCOMO_EXPECTED}") from exc


def _dialogue(
    row: dict[str, Any], default_id: str, room: int | None
) -> tuple[EvalDocument, list[EvalQuestion]]:
    doc_id = str(row.get("sample_id", default_id))
    # locomo10.json wraps the sessions in "conversation"; the per-conversation files
    # of locomo10.zip have them at the top level.
    conversation = row.get("conversation", row)
    if not any(_SESSION.fullmatch(key) for key in conversation):
        raise ValueError("no session_N turns")
    talk = Conversation(tuple(s for s in locomo_sessions(doc_id, conversation) if s.turns))
    by_dia_id = _dia_ids(conversation)
    answerable = [qa for qa in row["qa"] if _answers(qa.get("answer"))]
    questions: list[EvalQuestion] = []
    for j, qa in enumerate(answerable[:room]):
        evidence = _DIA_ID.findall(" ".join(str(e) for e in qa.get("evidence") or []))
        gold = [GoldItem(doc_id, by_dia_id[e]) for e in evidence if e in by_dia_id]
        questions.append(
            EvalQuestion(
                id=f"{doc_id}/q{j}",
                question=str(qa["question"]),
                answers=_answers(qa["answer"]),
                gold=tuple(dict.fromkeys(gold)),
                doc_ids=(doc_id,),
            )
        )
    speakers = [conversation.get("speaker_a"), conversation.get("speaker_b")]
    title = " and ".join(str(s) for s in speakers if s) or None
    return EvalDocument(doc_id, talk.plain_text(), title, talk), questions


def _dia_ids(conversation: dict[str, Any]) -> dict[str, str]:
    """Each turn's line (``Speaker: text``, as its chunk shows it) by its dia_id."""
    by_dia_id: dict[str, str] = {}
    numbered = ((m, k) for k in conversation if (m := _SESSION.fullmatch(k)))
    for _, session in sorted(numbered, key=lambda found: int(found[0].group(1))):
        for turn in conversation[session] if isinstance(conversation[session], list) else []:
            if isinstance(turn, dict) and "dia_id" in turn:
                line = locomo_turn(session, turn).line
                by_dia_id.setdefault(str(turn["dia_id"]), line)
    return by_dia_id


# ----------------------------------------------------------------------------- dispatcher


def load_own_jsonl(path: str | Path, limit: int | None = None) -> EvalSet:
    """The internal JSONL format; ``limit`` keeps the first N questions and their documents."""
    _check_limit(limit)
    evalset = load_jsonl(path)
    if limit is None:
        return evalset
    questions = evalset.questions[:limit]
    needed = {d for q in questions for d in (*q.doc_ids, *q.gold_doc_ids)}
    documents = [d for d in evalset.documents if d.id in needed]
    return EvalSet(evalset.name, documents, questions, evalset.scoring)


LOADERS: dict[str, Callable[..., EvalSet]] = {
    "hotpotqa": load_hotpotqa,
    "musique": load_musique,
    "2wiki": load_2wiki,
    "qmsum": load_qmsum,
    "locomo": load_locomo,
    "jsonl": load_own_jsonl,
}
KINDS = tuple(LOADERS)
FOLDER_KINDS = {"locomo"}  # loaders that also read a folder of files


def load(kind: str, path: str | Path, limit: int | None = None, **options: Any) -> EvalSet:
    """Load an eval set of the given kind (one of KINDS); options go to that loader."""
    loader = LOADERS.get(kind)
    if loader is None:
        raise InputError(f"unknown eval data kind {kind!r}; expected one of: {', '.join(KINDS)}")
    accepted = inspect.signature(loader).parameters
    for option in options:
        if option in ("path", "limit") or option not in accepted:
            raise InputError(f"eval data kind {kind!r} takes no option {option!r}")
    if not (Path(path).is_file() or (kind in FOLDER_KINDS and Path(path).is_dir())):
        raise InputError(f"{path}: no such file (expected {kind} eval data)")
    return loader(path, limit, **options)
