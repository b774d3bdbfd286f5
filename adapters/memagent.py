"""MemAgent (papers/memagent.txt) over the memory store: read the text in pieces and
keep one overwritten memory, then answer from that memory alone.

The documents' level-0 chunks are read in order, document after document, in pieces of
at most ``chunk_tokens`` (5000) tokens that end at chunk boundaries. The memory starts as
"No previous memory"; each step sends the question, the current memory and the next
piece (prompt ``memagent_update``) and the reply, capped at ``memory_tokens`` (1024)
through ``max_tokens``, REPLACES the memory. The reply is asked for as
``{"memory": "..."}`` (``UPDATE_SCHEMA``, which endpoints with structured outputs
enforce; the prompt keeps MemAgent's trained wording); a plain reply, or one that puts
the memory in ``\\boxed{...}``, is the memory as before (``parse_memory_update``). An
unusable reply (empty, or broken JSON) gets one repair call, then the previous memory
is kept. A last call (prompt ``memagent_answer``)
sees only the question and the memory and puts the answer in ``\\boxed{...}``.

Every state is a ``memory_state`` view node, ``memagent/{run_id}/{step}``: step ``k``
(1..K) is the memory after reading piece ``k``, linked to the chunks that step read;
step ``K + 1`` holds the final reply, with ``final=True`` and the parsed ``answer`` in its
props. Each step is its own transaction, so an interrupted run keeps its finished steps
and running the same question again resumes after the last of them.

RL-trained MemAgent checkpoints (RL-MemAgent-7B/14B): serve the checkpoint with any
OpenAI-compatible server (e.g. vLLM) and pass ``OpenAICompatibleChat(base_url, model)``
as ``chat``. Nothing else changes: the endpoint and the model name are the only settings,
the prompts are MemAgent's templates as the paper gives them (Table 5; the checkpoints
were trained on them: one user message, no system message), and the defaults
(5000-token pieces, 1024-token memory) are the paper's. Tokens are counted with the
shared approximation (``count_tokens``), not the checkpoint's tokenizer, so a piece may
be a few percent off 5000 real tokens; the paper's 8K window leaves room for that.

With ``chat=None`` the offline extractive backend runs the same loop without a model: its
memory is the sentences most relevant to the question seen so far (cosine to the question
with the memory's embedder), re-ranked at each step from the old memory's sentences and
the new piece's, and kept within ``memory_tokens``; the answer quotes the memory's
best-matching sentences (``ExtractiveAnswerer``). Embedding every sentence read would cost
minutes per question on a CPU (two books hold about 10,000): a reading of more than
``EMBED_BUDGET`` sentences embeds only each piece's shortlist (its share of the budget,
at least ``SHORTLIST``): the sentences that share the question's rarest words, in the
chunks whose stored vectors are closest to it. Everything it writes says
``backend="extractive"``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from cam_engine.adapters.base import (
    AdapterAnswer,
    CallLog,
    Source,
    backend_of,
    count_tokens,
    document_ids,
)
from cam_engine.errors import ConfigError, InputError
from cam_engine.llm.base import EXTRACTIVE, ChatModel
from cam_engine.llm.extractive import ExtractiveAnswerer, content_words, split_sentences
from cam_engine.llm.parsers import parse_boxed, parse_json_object, strip_thinking
from cam_engine.llm.prompts import load_prompt
from cam_engine.llm.structured import ReplyFormat, object_schema
from cam_engine.memory import Memory
from cam_engine.progress import Progress, ProgressCallback
from cam_engine.types import MEMORY_STATE, Node, ViewNode

logger = logging.getLogger(__name__)

VIEW = "memagent"
STRATEGY = "memagent"
NO_MEMORY = "No previous memory"  # the first step's memory, as in MemAgent's code
DEFAULT_CHUNK_TOKENS = 5000
DEFAULT_MEMORY_TOKENS = 1024
EMBED_BUDGET = 600  # the extractive backend: sentences it embeds per question, at most
SHORTLIST = 8  # ... and per piece at least, when the budget does not cover every sentence
UPDATE_PROMPT = "memagent_update"
ANSWER_PROMPT = "memagent_answer"
UPDATE_SCHEMA = object_schema("memagent_update", {"memory": {"type": "string"}})
UPDATE_FORMAT = ReplyFormat(
    "memagent memory update",
    UPDATE_SCHEMA,
    lambda text: parse_memory_update(text),
    'a JSON object like {"memory": "the updated memory"}',
    "the previous memory is kept",
)

StepCallback = Callable[[int, int], None]


@dataclass(frozen=True)
class Piece:
    """What one step reads: consecutive chunks, their text and its token count."""

    text: str
    chunk_ids: tuple[str, ...]
    tokens: int
    # The chunks themselves, with their stored vectors (the extractive backend's shortlist).
    chunks: tuple[Node, ...] = field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class FinalReply:
    text: str  # what is stored as the final state: the reply (or the extractive quote)
    answer: str
    boxed: bool | None  # None: the extractive backend has no boxed answer to look for


def plan_pieces(chunks: Sequence[Node], chunk_tokens: int) -> list[Piece]:
    """Pack chunks in order into pieces of at most ``chunk_tokens`` tokens.

    A piece ends at a chunk boundary and a chunk is never split: a chunk longer than the
    budget on its own (chunks are ~200 tokens, so only with tiny budgets) is a piece by
    itself. Chunk texts are joined with a blank line, which restores the paragraphs.
    """
    pieces: list[Piece] = []
    taken: list[Node] = []
    words = 0  # of the taken chunks: count_tokens of their joined text, kept as a sum
    for chunk in chunks:
        size = len(chunk.text.split())
        if taken and math.ceil((words + size) * 4 / 3) > chunk_tokens:
            pieces.append(_piece(taken))
            taken, words = [], 0
        taken.append(chunk)
        words += size
    if taken:
        pieces.append(_piece(taken))
    return pieces


def _piece(chunks: list[Node]) -> Piece:
    text = "\n\n".join(c.text for c in chunks)
    return Piece(text, tuple(c.id for c in chunks), count_tokens(text), tuple(chunks))


def default_run_id(
    question: str, doc_ids: Sequence[str], chunk_tokens: int, memory_tokens: int, backend: str
) -> str:
    """A stable id for one reading of the documents for one question: the same call
    gets the same id, so it finds (and resumes) the states an earlier call stored."""
    key = json.dumps([question, list(doc_ids), chunk_tokens, memory_tokens, backend])
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


# --- the two backends ----------------------------------------------------------------------
class _Reader(Protocol):
    """Writes the next memory from the old one and a piece, and the final answer."""

    backend: str

    def prepare(self, question: str, pieces: Sequence[Piece], start: int) -> None: ...

    def update(self, question: str, memory: str, piece: Piece) -> str: ...

    def final(self, question: str, memory: str) -> FinalReply: ...


class _ChatReader:
    """MemAgent proper: one chat call per step with MemAgent's prompt templates."""

    def __init__(self, chat: ChatModel, log: CallLog, memory_tokens: int) -> None:
        self.chat = chat
        self.log = log
        self.memory_tokens = memory_tokens
        self.backend = backend_of(chat)

    def prepare(self, question: str, pieces: Sequence[Piece], start: int) -> None:
        pass  # each step is one call on its own

    def update(self, question: str, memory: str, piece: Piece) -> str:
        messages = load_prompt(UPDATE_PROMPT).render(
            problem=question, memory=memory, chunk=piece.text
        )
        reply = self.log.ask(self.chat, messages, UPDATE_FORMAT, max_tokens=self.memory_tokens)
        # An unusable reply (empty, cut off while still thinking, broken JSON) would wipe
        # everything remembered so far; keeping the old memory loses only this piece.
        return memory if reply.value is None else reply.value

    def final(self, question: str, memory: str) -> FinalReply:
        messages = load_prompt(ANSWER_PROMPT).render(problem=question, memory=memory)
        # MemAgent's code caps the final reply like a memory update.
        reply = self.log.complete(self.chat, messages, max_tokens=self.memory_tokens)
        text = strip_thinking(reply.text).strip()
        boxed = parse_boxed(text)
        if boxed is None:
            logger.warning("memagent: no \\boxed{...} in the final reply; using the whole reply")
            return FinalReply(text, text, False)
        return FinalReply(text, boxed.strip(), True)


def parse_memory_update(text: str) -> str | None:
    """The new memory in a MemAgent update reply, or None when there is none.

    ``{"memory": "..."}`` gives its string; else the content of a last ``\\boxed{...}``;
    else the whole reply (MemAgent's own form). Empty text, an empty memory, and a reply
    that starts a JSON object with a "memory" key that does not parse (cut off at
    ``max_tokens``) give None. Pure; never raises.
    """
    body = strip_thinking(text).strip()
    data = parse_json_object(body)
    if data is not None and isinstance(data.get("memory"), str):
        return data["memory"].strip() or None
    if body.startswith("{") and '"memory"' in body:
        return None
    boxed = parse_boxed(body)
    if boxed is not None and boxed.strip():
        return boxed.strip()
    return body or None


class _ExtractiveReader:
    """No model: the memory is the sentences closest to the question seen so far.

    At each step the old memory's sentences and the piece's shortlist are ranked by
    cosine to the question (ties: reading order) and taken best first while they fit in
    ``memory_tokens``; the memory lists them in reading order, one per paragraph, so that
    ``split_sentences`` gives them back unchanged when a run is resumed.
    """

    backend = EXTRACTIVE

    def __init__(
        self,
        embed: Callable[[Sequence[str]], np.ndarray],
        memory_tokens: int,
        budget: int = EMBED_BUDGET,
    ):
        self.embed = embed
        self.memory_tokens = memory_tokens
        self.budget = budget
        self.shortlist: int | None = None  # sentences per piece; None: every sentence
        self._question: tuple[str, np.ndarray] | None = None
        self._scores: dict[str, float] = {}
        self._shortlists: dict[tuple[str, ...], list[str]] = {}

    def prepare(self, question: str, pieces: Sequence[Piece], start: int) -> None:
        """Shortlist the pieces still to read (from ``start``) and embed the shortlists in
        one call (a call per step costs the model's overhead each time). The budget is
        shared by all the pieces, read or not, so a resumed run reads as an uninterrupted
        one; a shortlist depends on its piece and the question only."""
        sentences = sum(len(split_sentences(p.text)) for p in pieces)
        share = max(SHORTLIST, self.budget // max(1, len(pieces)))
        self.shortlist = None if sentences <= self.budget else share
        self._shortlists = {p.chunk_ids: self._shortlist(question, p) for p in pieces[start:]}
        self._score(question, [s for chosen in self._shortlists.values() for s in chosen])

    def update(self, question: str, memory: str, piece: Piece) -> str:
        read = self._shortlists.get(piece.chunk_ids) or self._shortlist(question, piece)
        sentences = list(dict.fromkeys(memory_sentences(memory) + read))
        scores = self._score(question, sentences)
        ranked = sorted(range(len(sentences)), key=lambda i: (-scores[i], i))
        kept: list[int] = []
        tokens = 0
        for i in ranked:
            size = count_tokens(sentences[i])
            if tokens + size > self.memory_tokens:
                continue  # a smaller, less relevant sentence may still fit
            kept.append(i)
            tokens += size
        return "\n\n".join(sentences[i] for i in sorted(kept)) or memory

    def final(self, question: str, memory: str) -> FinalReply:
        sentences = memory_sentences(memory)
        scores = self._score(question, sentences)
        # The answerer takes its passages best first (a later one needs a better match):
        # the memory's sentences go in by relevance, not in the reading order they are kept in.
        best_first = [sentences[i] for i in sorted(range(len(sentences)), key=lambda i: -scores[i])]
        answer = ExtractiveAnswerer().answer(question, best_first).text
        if not answer and sentences:  # no word in common: quote the closest sentence
            answer = best_first[0]
        return FinalReply(answer, answer, None)

    def _shortlist(self, question: str, piece: Piece) -> list[str]:
        """The piece's sentences worth embedding, in reading order: the ``shortlist``
        that share the question's words, each weighed by how rare it is in the piece (a
        name on every page counts less than a word of one passage), ties going to the
        chunk whose stored vector is closest to the question. A piece without its chunks
        (or their vectors) is read whole."""
        if self.shortlist is None or not piece.chunks:
            return split_sentences(piece.text)
        if any(c.embedding is None for c in piece.chunks):
            return split_sentences(piece.text)
        wanted = set(content_words(question))
        vector = self._question_vector(question)
        units = [
            (
                float(np.dot(np.asarray(chunk.embedding), vector)),
                sentence,
                set(content_words(sentence)),
            )
            for chunk in piece.chunks
            for sentence in split_sentences(chunk.text)
        ]
        rarity = {
            word: math.log(1 + len(units) / (1 + sum(word in words for *_, words in units)))
            for word in wanted
        }
        ranked = sorted(
            range(len(units)),
            key=lambda i: (-sum(rarity[w] for w in wanted & units[i][2]), -units[i][0], i),
        )
        return [units[i][1] for i in sorted(ranked[: self.shortlist])]

    def _question_vector(self, question: str) -> np.ndarray:
        if self._question is None or self._question[0] != question:
            self._question = (question, self.embed([question])[0])
            self._scores = {}
        return self._question[1]

    def _score(self, question: str, sentences: list[str]) -> list[float]:
        self._question_vector(question)
        assert self._question is not None
        new = list(dict.fromkeys(s for s in sentences if s not in self._scores))
        if new:
            vectors = self.embed(new)
            for sentence, score in zip(new, vectors @ self._question[1], strict=True):
                self._scores[sentence] = float(score)
        return [self._scores[s] for s in sentences]


def memory_sentences(memory: str) -> list[str]:
    return [] if memory == NO_MEMORY else split_sentences(memory)


# --- the run -------------------------------------------------------------------------------
def answer(
    memory: Memory,
    question: str,
    chat: ChatModel | None,
    *,
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
    memory_tokens: int = DEFAULT_MEMORY_TOKENS,
    doc_ids: Sequence[str] | None = None,
    run_id: str | None = None,
    resume: bool = True,
    on_step: StepCallback | None = None,
    on_progress: ProgressCallback | None = None,
    embed_budget: int = EMBED_BUDGET,
) -> AdapterAnswer:
    """Answer ``question`` by reading the documents (all of them, or ``doc_ids`` in the
    order given) MemAgent's way, storing every memory state.

    ``run_id`` defaults to ``default_run_id`` of the question, documents, budgets and
    backend. With ``resume`` (the default) the states already stored for the run are
    reused and reading goes on after the last one (a finished run is answered from its
    stored final state without any call); ``resume=False`` deletes them and starts over.
    ``on_step(step, steps)`` is called after each step that ran and was stored, and
    ``on_progress`` with the step and the tokens read so far. ``embed_budget``: the
    extractive backend's sentences embedded per question (see the module's doc).
    """
    _check_arguments(question, chunk_tokens, memory_tokens)
    documents = document_ids(memory, doc_ids)
    pieces = plan_pieces(_chunks(memory, documents), chunk_tokens)
    if not pieces:
        raise InputError("the memory holds no text to read")
    log = CallLog()
    reader: _Reader = (
        _ExtractiveReader(memory.embedder.embed, memory_tokens, embed_budget)
        if chat is None
        else _ChatReader(chat, log, memory_tokens)
    )
    run = run_id or default_run_id(question, documents, chunk_tokens, memory_tokens, reader.backend)
    if not resume:
        _delete_run(memory, run)
    done = _resumable_states(memory, run, question, reader.backend, pieces)
    resumed_from = done[-1].seq if done else None
    states = done[: len(pieces)]
    final = done[len(pieces)] if len(done) > len(pieces) else None
    if final is None:
        reader.prepare(question, pieces, len(states))
    steps = len(pieces) + 1
    current = states[-1].text if states else NO_MEMORY
    total = sum(p.tokens for p in pieces)
    read = sum(p.tokens for p in pieces[: len(states)])
    for number in range(len(states) + 1, len(pieces) + 1):
        piece = pieces[number - 1]
        current = reader.update(question, current, piece)
        state = _state_node(run, number, current, question, reader.backend, piece)
        memory.write_view([state])
        states.append(state)
        read += piece.tokens
        if on_step is not None:
            on_step(number, steps)
        if on_progress is not None:
            detail = f"read {read:,} of {total:,} tokens"
            on_progress(Progress(STRATEGY, "step", number, steps, detail))
    if final is None:
        reply = reader.final(question, current)
        final = _final_node(run, steps, reply, question, reader.backend)
        memory.write_view([final])
        if on_step is not None:
            on_step(steps, steps)
        if on_progress is not None:
            on_progress(Progress(STRATEGY, "step", steps, steps, "answered"))
    return _result(question, reader.backend, log, run, pieces, states[-1], final, resumed_from)


def _result(
    question: str,
    backend: str,
    log: CallLog,
    run: str,
    pieces: Sequence[Piece],
    last: ViewNode,
    final: ViewNode,
    resumed_from: int | None,
) -> AdapterAnswer:
    """The answer from the final state; the source is the memory it was given."""
    return AdapterAnswer(
        question=question,
        answer=str(final.props["answer"]),
        backend=backend,
        strategy=STRATEGY,
        sources=[Source(last.id, MEMORY_STATE, last.doc_id, last.text)],
        log=log,
        details={
            "run_id": run,
            "steps": len(pieces) + 1,
            "pieces_total": len(pieces),
            "resumed_from": resumed_from,
            "boxed": final.props["boxed"],
            "memory_tokens_final": count_tokens(last.text),
        },
    )


def _check_arguments(question: str, chunk_tokens: int, memory_tokens: int) -> None:
    if not question.strip():
        raise InputError("the question is empty")
    for name, value in (("chunk_tokens", chunk_tokens), ("memory_tokens", memory_tokens)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{name} must be a positive integer, got {value!r}")


def _chunks(memory: Memory, doc_ids: Sequence[str]) -> list[Node]:
    return [chunk for doc_id in doc_ids for chunk in memory.document_chunks(doc_id)]


def _state_node(
    run: str, step: int, text: str, question: str, backend: str, piece: Piece
) -> ViewNode:
    props: dict[str, Any] = {
        "question": question,
        "tokens": count_tokens(text),
        "backend": backend,
        "piece_tokens": piece.tokens,
        "final": False,
    }
    return _node(run, step, text, props, piece.chunk_ids)


def _final_node(run: str, step: int, reply: FinalReply, question: str, backend: str) -> ViewNode:
    props: dict[str, Any] = {
        "question": question,
        "tokens": count_tokens(reply.text),
        "backend": backend,
        "piece_tokens": 0,
        "final": True,
        "answer": reply.answer,
        "boxed": reply.boxed,
    }
    return _node(run, step, reply.text, props, ())


def _node(
    run: str, step: int, text: str, props: dict[str, Any], chunk_ids: tuple[str, ...]
) -> ViewNode:
    return ViewNode(
        id=f"{VIEW}/{run}/{step}",
        view=VIEW,
        kind=MEMORY_STATE,
        group=run,
        seq=step,
        text=text,
        # question_id and step repeat group and seq under the names Browser users read.
        props={"question_id": run, "step": step, **props},
        chunk_ids=chunk_ids,
    )


# --- resuming ------------------------------------------------------------------------------
def _resumable_states(
    memory: Memory, run: str, question: str, backend: str, pieces: Sequence[Piece]
) -> list[ViewNode]:
    """The run's stored states that this reading can go on from: steps 1, 2, ... that read
    the same pieces for the same question and backend, then the final state if every
    piece was read. Anything stored after the first mismatch (the documents changed, or
    an explicit ``run_id`` was reused for another reading) is deleted, with a warning."""
    stored = memory.view_nodes(VIEW, MEMORY_STATE, run)
    valid: list[ViewNode] = []
    for node in stored:
        if not _continues(node, len(valid) + 1, question, backend, pieces):
            break
        valid.append(node)
    if len(valid) < len(stored):
        logger.warning(
            "memagent run %s: %d stored state(s) do not match this reading; "
            "reading again from step %d",
            run,
            len(stored) - len(valid),
            len(valid) + 1,
        )
        _delete_run(memory, run)
        if valid:
            memory.write_view(valid)
    return valid


def _continues(
    node: ViewNode, step: int, question: str, backend: str, pieces: Sequence[Piece]
) -> bool:
    props = node.props
    if node.seq != step or props.get("question") != question or props.get("backend") != backend:
        return False
    if step <= len(pieces):
        return not props.get("final") and node.chunk_ids == pieces[step - 1].chunk_ids
    return step == len(pieces) + 1 and bool(props.get("final")) and "answer" in props


def _delete_run(memory: Memory, run: str) -> None:
    memory.delete_view(VIEW, MEMORY_STATE, run)


STRATEGIES = {STRATEGY: answer}
