"""ReadAgent (papers/readagent.txt) over the memory store: pages with gists, and a
look-up that reads again the pages a question needs.

Building the view (``build_view``) reads each document's level-0 chunks in order, splits
them into paragraphs, groups the paragraphs into *pages* (episode pagination) and
shortens every page into a *gist* (memory gisting). Each page is a ``page`` view node
``readagent/{doc_id}/p{page_no}`` (``page_no`` from 1) whose text is the page, whose
props hold its gist and word counts, whose embedding is the gist's, and which covers
the chunks it was cut from, so one memory serves CAM and ReadAgent alike.

Asking: the *gist memory* is ``"<Page i>\\n{gist}"`` for every page, one blank line
apart. ``lookup`` (ReadAgent-P) lets the model name up to ``max_pages`` pages at once;
``lookup_sequential`` (ReadAgent-S) one page per turn, or STOP. The gists of the pages
read are replaced in place by the pages, and the answer call sees that text.

Mechanics and defaults are the paper's and its demo code's (notes/reference.md):
- A pagination step shows the paragraphs from the last pause point until ``max_words``
  (600) are reached (so the last paragraph may overshoot), with the previous page before
  it as context and the next paragraph after it. Label ``<j>`` (a pause before paragraph
  ``j``) is offered once the paragraphs before it hold ``min_words`` (280) words, and the
  label after the last paragraph always is. A reply without an offered label falls back
  to that last label. When fewer than ``remainder_words`` words remain they are the last
  page without a call; the demo uses 350 with 600, so the default scales it:
  ``round(max_words * 350 / 600)``.
- Chosen where the paper leaves it open: the demo offers ``<j>`` once the words up to
  and *including* paragraph ``j`` reach 280; we count the words *before* ``j``, which is
  the paper's stated guarantee that each page holds at least ``min_words`` words (bar the
  last). A step that offers a single label needs no call: a paragraph longer than
  ``max_words`` is a page of its own, never split. A label outside those offered counts
  as invalid (the demo also took unlabelled paragraph indices inside the window).
- A paragraph the chunker split across two chunks stays two paragraphs, so every
  paragraph comes from one chunk and a page's text is exactly its chunks' paragraphs.
- Look-up replies are asked for in a JSON shape (``LOOKUP_SCHEMA``: ``{"pages": [7, 12]}``;
  ``CHOICE_SCHEMA``: ``{"choice": "Page 7"}`` or ``{"choice": "STOP"}``) that endpoints
  with structured outputs enforce; the demo's free-text forms parse too. An unusable
  reply gets one repair call (llm/structured.py).
- A malformed look-up reply (no bracketed list, after the repair call) reads no page, as
  in the demo: the answer comes from the gists alone. Numbers out of range or repeated
  are dropped, and a list longer than ``max_pages`` is cut to its first ``max_pages``.
- ReadAgent-S: ``Page 7`` reads page 7, ``STOP`` ends the look-up; a reply that is
  neither, or names a page out of range or already read, ends it too (with a warning,
  after the repair call), and at most ``max_pages`` turns are taken. The paper gives no
  fallback.
- Compression rate (paper Section 4): ``CR = 100 * (1 - W / N)`` with ``W`` the words of
  the longest in-context text sent (gists and pages read; prompt wording and page labels
  not counted) and ``N`` the words of the pages of the documents asked about.

Offline (``chat=None``), every step is extractive and says ``backend="extractive"``:
- pagination pauses at the offered label whose two neighbouring paragraphs are least
  alike (cosine of the memory embedder's vectors; ties go to the later label). The
  document's end is the strongest pause, so a rest that fits in one step is one page;
- a gist is the page's most central sentences (``ExtractiveSummarizer``) within
  ``gist_ratio`` (1/5) of the page's words, near the paper's QuALITY gists (650 of 4,122
  words, about 1/6); a single sentence longer than that is cut and ends with " …";
- look-up ranks pages by the cosine of the question to their stored gist embeddings.
  ReadAgent-P reads the top ``max_pages``; ReadAgent-S reads them one per turn, the best
  first, and stops before a page whose cosine falls more than ``SEQUENTIAL_MARGIN`` (0.1,
  the margin of ``ExtractiveSelector``) below the best page's;
- the answer quotes the best-matching sentences of the expanded gist memory
  (``ExtractiveAnswerer``).
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from cam_engine.adapters.base import (
    AdapterAnswer,
    CallLog,
    Source,
    ViewReport,
    backend_of,
    count_tokens,
    document_ids,
)
from cam_engine.errors import ConfigError, InputError
from cam_engine.llm.base import EXTRACTIVE, ChatModel
from cam_engine.llm.extractive import ExtractiveAnswerer, ExtractiveSummarizer
from cam_engine.llm.parsers import (
    parse_break_point,
    parse_json_object,
    parse_number_list,
    strip_thinking,
)
from cam_engine.llm.prompts import load_prompt
from cam_engine.llm.structured import (
    INTEGER_LIST,
    ReplyFormat,
    StructuredReply,
    object_schema,
)
from cam_engine.memory import Memory
from cam_engine.progress import Progress, ProgressCallback
from cam_engine.types import PAGE, Node, ViewNode

logger = logging.getLogger(__name__)
T = TypeVar("T")

VIEW = "readagent"
PAGINATE_PROMPT = "readagent_paginate"
GIST_PROMPT = "readagent_gist"
LOOKUP_PROMPT = "readagent_lookup"
LOOKUP_SEQ_PROMPT = "readagent_lookup_seq"
ANSWER_PROMPT = "readagent_answer"

# The demo code's QuALITY setting: a rest under 350 words, with 600-word steps, is the
# last page without a call.
REFERENCE_MAX_WORDS = 600
REFERENCE_REMAINDER_WORDS = 350
GIST_RATIO = 0.2  # extractive gist budget, a share of the page's words
SEQUENTIAL_MARGIN = 0.1  # extractive ReadAgent-S: cosine drop from the best page that stops
BREAK_MAX_TOKENS = 256  # "Break point: <j>" and a sentence of why
LOOKUP_MAX_TOKENS = 256
ANSWER_MAX_TOKENS = 512
MIN_GIST_TOKENS = 64  # a gist may take as many tokens as its page, and at least this

PageCallback = Callable[[int], None]
_PARAGRAPH_BREAK = re.compile(r"\r?\n[ \t\r]*\n\s*")  # the chunker's paragraph break
_STOP_FIRST = re.compile(r"^\W*stop\b", re.IGNORECASE)
_STOP = re.compile(r"\bSTOP\b")
_PAGE = re.compile(r"\bpage\s*\[?\s*#?\s*([0-9]{1,9})\b", re.IGNORECASE)
STOP = 0  # what ``parse_page_choice`` returns for a STOP reply (pages count from 1)
LOOKUP_SCHEMA = object_schema("readagent_lookup", {"pages": INTEGER_LIST})
LOOKUP_SHAPE = 'a JSON object like {"pages": [7, 12]}: the numbers of the pages to read'
CHOICE_SCHEMA = object_schema(
    "readagent_choice", {"choice": {"type": "string", "pattern": "^(Page [1-9][0-9]*|STOP)$"}}
)
CHOICE_SHAPE = (
    'a JSON object like {"choice": "Page 7"} to read one page not read yet (here page 7), '
    'or {"choice": "STOP"} to stop'
)


# --- pagination: pure functions over paragraphs ------------------------------------------


@dataclass(frozen=True)
class Paragraph:
    """A paragraph of a document and the chunk it came from."""

    text: str
    chunk_id: str
    words: int


@dataclass(frozen=True)
class Window:
    """One pagination step: paragraphs ``start..end-1`` are shown and ``labels`` are the
    pauses offered; label ``j`` is a pause before paragraph ``j``, ``end`` the last."""

    start: int
    end: int
    labels: tuple[int, ...]


# (the step, the previous page as (start, end) or None) -> the label chosen
BreakChooser = Callable[[Window, tuple[int, int] | None], int]


def document_paragraphs(chunks: Sequence[Node]) -> list[Paragraph]:
    """The paragraphs of a document's chunks in reading order, each with its chunk."""
    return [
        Paragraph(text, chunk.id, len(text.split()))
        for chunk in chunks
        for piece in _PARAGRAPH_BREAK.split(chunk.text)
        if (text := piece.strip())
    ]


def pagination_window(
    paragraphs: Sequence[Paragraph], start: int, *, min_words: int, max_words: int
) -> Window:
    """The paragraphs shown from ``start`` (until ``max_words`` are reached) and the
    labels offered: after ``min_words`` words, and always after the last paragraph."""
    words = paragraphs[start].words
    end = start + 1
    labels: list[int] = []
    while words < max_words and end < len(paragraphs):
        if words >= min_words:
            labels.append(end)
        words += paragraphs[end].words
        end += 1
    labels.append(end)
    return Window(start, end, tuple(labels))


def paginate(
    paragraphs: Sequence[Paragraph],
    choose_break: BreakChooser,
    *,
    min_words: int,
    max_words: int,
    remainder_words: int,
) -> list[tuple[int, int]]:
    """Pages as ``(start, end)`` paragraph ranges that cover ``paragraphs`` in order.

    ``choose_break`` is asked only when a step offers more than one label; an answer
    that is not one of them counts as the last label."""
    remaining = np.cumsum([p.words for p in reversed(paragraphs)])[::-1].tolist()
    pages: list[tuple[int, int]] = []
    start = 0
    while start < len(paragraphs):
        if remaining[start] < remainder_words:
            pages.append((start, len(paragraphs)))
            break
        window = pagination_window(paragraphs, start, min_words=min_words, max_words=max_words)
        end = window.labels[-1]
        if len(window.labels) > 1:
            chosen = choose_break(window, pages[-1] if pages else None)
            end = chosen if chosen in window.labels else end
        pages.append((start, end))
        start = end
    return pages


def labelled_passage(paragraphs: Sequence[Paragraph], window: Window) -> str:
    """The window's paragraphs with ``<j>`` between them where a pause is offered."""
    parts: list[str] = []
    for index in range(window.start, window.end):
        if index in window.labels:
            parts.append(f"<{index}>")
        parts.append(paragraphs[index].text)
    parts.append(f"<{window.end}>")
    return "\n\n".join(parts)


@dataclass
class _ChatBreaks:
    """Asks the model where to pause (``readagent_paginate``), as the demo does."""

    chat: ChatModel
    paragraphs: Sequence[Paragraph]
    log: CallLog
    calls: int = 0
    fallbacks: int = 0

    def __call__(self, window: Window, previous: tuple[int, int] | None) -> int:
        messages = load_prompt(PAGINATE_PROMPT).render(
            preceding=_preceding(self.paragraphs, previous),
            passage=labelled_passage(self.paragraphs, window),
            following=_following(self.paragraphs, window.end),
        )
        reply = self.log.complete(self.chat, messages, max_tokens=BREAK_MAX_TOKENS)
        self.calls += 1
        label = parse_break_point(reply.text, valid=window.labels)
        if label is None:
            self.fallbacks += 1
            logger.warning(
                "%s: no offered break point (%s) in the reply %r; pausing at the last label",
                self.chat.name,
                ", ".join(f"<{j}>" for j in window.labels),
                reply.text[:200],
            )
            return window.labels[-1]
        return label


def _preceding(paragraphs: Sequence[Paragraph], previous: tuple[int, int] | None) -> str:
    if previous is None:
        return ""
    return "...\n" + _join(paragraphs[previous[0] : previous[1]])


def _following(paragraphs: Sequence[Paragraph], end: int) -> str:
    return paragraphs[end].text + "\n..." if end < len(paragraphs) else ""


def least_similar_break(vectors: np.ndarray) -> BreakChooser:
    """The extractive chooser: the offered label whose neighbouring paragraphs (rows of
    ``vectors``, unit length) are least alike; the document's end beats any; ties go to
    the later label."""

    def similarity(label: int) -> float:
        if label >= len(vectors):
            return -math.inf
        return float(vectors[label - 1] @ vectors[label])

    def choose(window: Window, previous: tuple[int, int] | None) -> int:
        return min(reversed(window.labels), key=similarity)

    return choose


# --- gisting and the view ----------------------------------------------------------------


def extractive_gist(text: str, ratio: float = GIST_RATIO) -> str:
    """The page's most central sentences within ``ratio`` of its words."""
    budget = max(1, round(len(text.split()) * ratio))
    return ExtractiveSummarizer().summarize([text], max_words=budget).text


def _chat_gist(chat: ChatModel, log: CallLog, text: str, ratio: float) -> tuple[str, str]:
    """``(gist, backend)``: the model's shortened page; an empty reply falls back to the
    extractive gist, labelled as such."""
    messages = load_prompt(GIST_PROMPT).render(passage=text)
    max_tokens = max(MIN_GIST_TOKENS, count_tokens(text))
    gist = strip_thinking(log.complete(chat, messages, max_tokens=max_tokens).text).strip()
    if gist:
        return gist, chat.name
    logger.warning("%s returned an empty gist; using the extractive gist", chat.name)
    return extractive_gist(text, ratio), EXTRACTIVE


@dataclass(frozen=True)
class PageSizes:
    """How pages are cut and gisted (checked on creation)."""

    min_words: int = 280
    max_words: int = 600
    remainder_words: int = REFERENCE_REMAINDER_WORDS
    gist_ratio: float = GIST_RATIO

    @staticmethod
    def make(
        min_words: int, max_words: int, remainder_words: int | None, gist_ratio: float
    ) -> PageSizes:
        for name, value in (("min_words", min_words), ("max_words", max_words)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be an integer >= 1, got {value!r}")
        if min_words > max_words:
            raise ConfigError(f"min_words ({min_words}) must not exceed max_words ({max_words})")
        if remainder_words is None:
            remainder_words = round(max_words * REFERENCE_REMAINDER_WORDS / REFERENCE_MAX_WORDS)
        if not 0 <= remainder_words <= max_words:
            raise ConfigError(f"remainder_words must be in 0..max_words, got {remainder_words}")
        if not 0 < gist_ratio <= 1:
            raise ConfigError(f"gist_ratio must be in (0, 1], got {gist_ratio}")
        return PageSizes(min_words, max_words, remainder_words, gist_ratio)


@dataclass
class _BuildTotals:
    pages: int = 0
    words: int = 0
    gist_words: int = 0
    break_calls: int = 0
    break_fallbacks: int = 0
    gist_fallbacks: int = 0
    pages_by_document: dict[str, int] = field(default_factory=dict)

    def details(self, sizes: PageSizes) -> dict[str, Any]:
        return {
            "pages": self.pages,
            "words": self.words,
            "gist_words": self.gist_words,
            "compression_rate": _compression_rate(self.gist_words, self.words),
            "pages_by_document": self.pages_by_document,
            "break_calls": self.break_calls,
            "break_fallbacks": self.break_fallbacks,
            "gist_fallbacks": self.gist_fallbacks,
            "min_words": sizes.min_words,
            "max_words": sizes.max_words,
            "remainder_words": sizes.remainder_words,
        }


def build_view(
    memory: Memory,
    doc_ids: Sequence[str] | None,
    chat: ChatModel | None,
    *,
    min_words: int = 280,
    max_words: int = 600,
    remainder_words: int | None = None,
    gist_ratio: float = GIST_RATIO,
    on_page: PageCallback | None = None,
) -> ViewReport:
    """Paginate and gist each document (all of them when ``doc_ids`` is None), replacing
    its earlier pages in one transaction per document.

    ``remainder_words`` defaults to ``round(max_words * 350 / 600)`` (the demo's 350 for
    600); ``gist_ratio`` is the extractive gist's share of the page's words. ``on_page``
    is called after each page with the number of pages gisted so far (all documents).
    """
    sizes = PageSizes.make(min_words, max_words, remainder_words, gist_ratio)
    ids = document_ids(memory, doc_ids)
    report = ViewReport(VIEW, backend_of(chat))
    totals = _BuildTotals()
    for doc_id in ids:
        nodes = _document_pages(memory, doc_id, chat, sizes, report.log, totals, on_page)
        if not nodes:
            logger.warning("document %r has no text; no pages", doc_id)
            continue
        memory.write_view(nodes, replace_group=True)
        report.documents += 1
        report.nodes_written += len(nodes)
        totals.pages_by_document[doc_id] = len(nodes)
        logger.info("readagent: %s -> %d pages", doc_id, len(nodes))
    report.details = totals.details(sizes)
    return report


def _document_pages(
    memory: Memory,
    doc_id: str,
    chat: ChatModel | None,
    sizes: PageSizes,
    log: CallLog,
    totals: _BuildTotals,
    on_page: PageCallback | None,
) -> list[ViewNode]:
    """The page nodes of one document, gists embedded (pagination first, as the demo)."""
    paragraphs = document_paragraphs(memory.document_chunks(doc_id))
    if not paragraphs:
        return []
    spans = _page_spans(memory, paragraphs, chat, sizes, log, totals)
    nodes = []
    for page_no, (start, end) in enumerate(spans, start=1):
        text = _join(paragraphs[start:end])
        if chat is None:
            gist, backend = extractive_gist(text, sizes.gist_ratio), EXTRACTIVE
        else:
            gist, backend = _chat_gist(chat, log, text, sizes.gist_ratio)
            totals.gist_fallbacks += backend == EXTRACTIVE
        nodes.append(_page_node(doc_id, page_no, text, gist, backend, paragraphs[start:end]))
        totals.pages += 1
        totals.words += int(nodes[-1].props["words"])
        totals.gist_words += int(nodes[-1].props["gist_words"])
        if on_page is not None:
            on_page(totals.pages)
    vectors = memory.embedder.embed([str(n.props["gist"]) for n in nodes])
    for node, vector in zip(nodes, vectors, strict=True):
        node.embedding = vector
    return nodes


def _page_spans(
    memory: Memory,
    paragraphs: Sequence[Paragraph],
    chat: ChatModel | None,
    sizes: PageSizes,
    log: CallLog,
    totals: _BuildTotals,
) -> list[tuple[int, int]]:
    """One document's pagination: the model's pauses, or where neighbours differ most."""
    sizing = {
        "min_words": sizes.min_words,
        "max_words": sizes.max_words,
        "remainder_words": sizes.remainder_words,
    }
    if chat is None:
        vectors = memory.embedder.embed([p.text for p in paragraphs])
        return paginate(paragraphs, least_similar_break(vectors), **sizing)
    breaks = _ChatBreaks(chat, paragraphs, log)
    spans = paginate(paragraphs, breaks, **sizing)
    totals.break_calls += breaks.calls
    totals.break_fallbacks += breaks.fallbacks
    return spans


def _page_node(
    doc_id: str,
    page_no: int,
    text: str,
    gist: str,
    backend: str,
    paragraphs: Sequence[Paragraph],
) -> ViewNode:
    return ViewNode(
        id=f"{VIEW}/{doc_id}/p{page_no}",
        view=VIEW,
        kind=PAGE,
        group=doc_id,
        seq=page_no,
        text=text,
        doc_id=doc_id,
        props={
            "page_no": page_no,
            "gist": gist,
            "words": len(text.split()),
            "gist_words": len(gist.split()),
            "backend": backend,
        },
        chunk_ids=_chunk_ids(paragraphs),
    )


def _chunk_ids(paragraphs: Sequence[Paragraph]) -> tuple[str, ...]:
    """The chunks the paragraphs come from, in order, each once."""
    return tuple(dict.fromkeys(p.chunk_id for p in paragraphs))


def _join(paragraphs: Sequence[Paragraph]) -> str:
    return "\n\n".join(p.text for p in paragraphs)


def _compression_rate(words: int, full_words: int) -> float:
    return round(100.0 * (1.0 - words / full_words), 2) if full_words else 0.0


# --- look-up and answer --------------------------------------------------------------------


@dataclass(frozen=True)
class GistPage:
    """A stored page as look-up sees it: ``number`` counts from 1 across the documents
    asked about, in document order, and is what the model names."""

    number: int
    node: ViewNode
    label: str

    @property
    def gist(self) -> str:
        return str(self.node.props.get("gist", ""))


def load_pages(
    memory: Memory, doc_ids: Sequence[str] | None, *, embeddings: bool = False
) -> list[GistPage]:
    """The pages of the documents (those with pages, when ``doc_ids`` is None), numbered
    across them; with several documents each label names its document."""
    if doc_ids is None:
        nodes = memory.view_nodes(VIEW, PAGE, embeddings=embeddings)
        built = {n.group for n in nodes}
        missing = [d.id for d in memory.documents() if d.id not in built]
        if missing:
            logger.warning("documents without ReadAgent pages, left out: %s", ", ".join(missing))
    else:
        ids = document_ids(memory, doc_ids)
        nodes = [n for d in ids for n in memory.view_nodes(VIEW, PAGE, d, embeddings=embeddings)]
        missing = sorted(set(ids) - {n.group for n in nodes})
        if missing:
            raise InputError(f"no ReadAgent pages for {', '.join(missing)}: build the view first")
    if not nodes:
        raise InputError("this memory has no ReadAgent pages: build the view first")
    order = {doc: i for i, doc in enumerate(dict.fromkeys(n.group for n in nodes))}
    nodes.sort(key=lambda n: (order[n.group], n.seq))
    several = len(order) > 1
    return [
        GistPage(i, n, f"<Page {i}> (document {n.group})" if several else f"<Page {i}>")
        for i, n in enumerate(nodes, start=1)
    ]


def gist_memory(pages: Sequence[GistPage], read: Collection[int] = ()) -> str:
    """``<Page i>\\n{gist}`` for every page, the pages numbered in ``read`` in full."""
    return "\n\n".join(f"{p.label}\n{_content(p, read)}" for p in pages)


def _content(page: GistPage, read: Collection[int]) -> str:
    return page.node.text if page.number in read else page.gist


def _context_words(pages: Sequence[GistPage], read: Collection[int]) -> int:
    """Words of the in-context text (gists and pages read, not their labels)."""
    return sum(len(_content(p, read).split()) for p in pages)


def parse_page_choice(text: str, *, count: int) -> int | None:
    """A ReadAgent-S reply: the page number named (``Page 7``), ``STOP`` (0), or None when
    it is neither or the page is not in ``1..count``. A reply that starts with STOP
    stops; otherwise the first page named wins over a STOP later in the reply. The JSON
    form ``{"choice": "Page 7"}`` is read by the same rules from its ``choice``; a bare
    number there (``{"choice": 7}``) names that page."""
    body = strip_thinking(text).strip()
    data = parse_json_object(body)
    choice = data.get("choice") if data is not None else None
    if isinstance(choice, int) and not isinstance(choice, bool):
        return choice if 1 <= choice <= count else None
    if isinstance(choice, str):
        body = choice.strip()
    if _STOP_FIRST.match(body):
        return STOP
    named = _PAGE.search(body)
    if named is not None:
        number = int(named.group(1))
        return number if 1 <= number <= count else None
    return STOP if _STOP.search(body) else None


@dataclass
class _Lookup:
    """One question's look-up: the pages, the pages read in order, the cost."""

    question: str
    pages: list[GistPage]
    chat: ChatModel | None
    log: CallLog = field(default_factory=CallLog)
    read: list[int] = field(default_factory=list)
    longest_context_words: int = 0

    def complete(self, prompt: str, max_tokens: int, **inputs: object) -> str:
        """One call whose in-context text is the gist memory with the pages read."""
        assert self.chat is not None
        self._note_context()
        memory_text = gist_memory(self.pages, self.read)
        messages = load_prompt(prompt).render(memory=memory_text, question=self.question, **inputs)
        return self.log.complete(self.chat, messages, max_tokens=max_tokens).text

    def ask(
        self, prompt: str, reply: ReplyFormat[T], max_tokens: int, **inputs: object
    ) -> StructuredReply[T]:
        """``complete``, for a reply in ``reply``'s format (one repair call at most)."""
        assert self.chat is not None
        self._note_context()
        memory_text = gist_memory(self.pages, self.read)
        messages = load_prompt(prompt).render(memory=memory_text, question=self.question, **inputs)
        return self.log.ask(self.chat, messages, reply, max_tokens=max_tokens)

    def _note_context(self) -> None:
        words = _context_words(self.pages, self.read)
        self.longest_context_words = max(self.longest_context_words, words)

    def ranked_by_gist(self, memory: Memory) -> list[tuple[int, float]]:
        """Page numbers with their gist's cosine to the question, best first (ties: earlier)."""
        question = memory.embedder.embed([self.question])[0]
        stored = [p.node.embedding for p in self.pages]
        missing = [i for i, v in enumerate(stored) if v is None]
        fresh: dict[int, np.ndarray] = {}
        if missing:  # a store that lost them: embed the gists again
            embedded = memory.embedder.embed([self.pages[i].gist for i in missing])
            fresh = dict(zip(missing, embedded, strict=True))
        vectors = [fresh[i] if v is None else v for i, v in enumerate(stored)]
        scores = np.stack(vectors) @ question
        order = sorted(range(len(self.pages)), key=lambda i: (-float(scores[i]), i))
        return [(self.pages[i].number, float(scores[i])) for i in order]

    def _passages_read_first(self) -> list[str]:
        """The pages read, in the order they were chosen, then the other pages' gists in
        page order: the offline answerer weighs passages by their rank, and the gist of
        the first page (a title, a table of contents) must not outrank the pages read."""
        by_number = {p.number: p for p in self.pages}
        read = [by_number[n].node.text for n in self.read if n in by_number]
        return read + [p.gist for p in self.pages if p.number not in self.read]

    def answer(self, strategy: str, details: dict[str, Any]) -> AdapterAnswer:
        """The answer from the gist memory with the pages read in place, and the result."""
        if self.chat is None:
            self._note_context()
            text = ExtractiveAnswerer().answer(self.question, self._passages_read_first()).text
        else:
            text = strip_thinking(self.complete(ANSWER_PROMPT, ANSWER_MAX_TOKENS)).strip()
            if not text:
                logger.warning("%s returned an empty answer (more max tokens?)", self.chat.name)
        full_words = sum(len(p.node.text.split()) for p in self.pages)
        read = [p.node for number in self.read for p in self.pages if p.number == number]
        sources = [Source(n.id, PAGE, n.doc_id, n.text) for n in read]
        details = {
            **details,
            "compression_rate": _compression_rate(self.longest_context_words, full_words),
            "pages_read": list(self.read),
            "pages_total": len(self.pages),
            "context_words": self.longest_context_words,
            "document_words": full_words,
        }
        return AdapterAnswer(
            self.question, text, backend_of(self.chat), strategy, sources, self.log, details
        )


def lookup(
    memory: Memory,
    question: str,
    chat: ChatModel | None,
    *,
    max_pages: int = 5,
    doc_ids: Sequence[str] | None = None,
) -> AdapterAnswer:
    """ReadAgent-P: name up to ``max_pages`` pages at once from the gist memory, read them
    in place of their gists, answer."""
    _check_max_pages(max_pages)
    run = _Lookup(question, load_pages(memory, doc_ids, embeddings=chat is None), chat)
    details: dict[str, Any] = {"max_pages": max_pages}
    if chat is None:
        run.read = [number for number, _ in run.ranked_by_gist(memory)[:max_pages]]
        return run.answer("lookup", details)
    count = len(run.pages)
    reply = run.ask(
        LOOKUP_PROMPT,
        ReplyFormat(
            "readagent lookup",
            LOOKUP_SCHEMA,
            lambda text: parse_number_list(text, count=count),
            LOOKUP_SHAPE,
            "reading none",
        ),
        LOOKUP_MAX_TOKENS,
        max_pages=max_pages,
    )
    details["lookup_reply_parsed"] = reply.usable
    numbers = reply.value or []
    if len(numbers) > max_pages:
        logger.warning("%s named %d pages, reading %d", chat.name, len(numbers), max_pages)
    run.read = numbers[:max_pages]
    return run.answer("lookup", details)


def lookup_sequential(
    memory: Memory,
    question: str,
    chat: ChatModel | None,
    *,
    max_pages: int = 5,
    doc_ids: Sequence[str] | None = None,
    on_progress: ProgressCallback | None = None,
) -> AdapterAnswer:
    """ReadAgent-S: one page per turn (seeing the pages already read in full) until STOP
    or ``max_pages`` turns, then answer. ``on_progress`` hears of each turn's call."""
    _check_max_pages(max_pages)
    run = _Lookup(question, load_pages(memory, doc_ids, embeddings=chat is None), chat)
    if chat is None:
        ranked = run.ranked_by_gist(memory)
        best = ranked[0][1]
        run.read = [n for n, score in ranked[:max_pages] if score >= best - SEQUENTIAL_MARGIN]
        stop = "cap" if len(run.read) == max_pages else "margin"
        return run.answer("lookup-seq", {"max_pages": max_pages, "stop_reason": stop})
    stop = "cap"
    for turn in range(max_pages):
        if on_progress is not None:
            read = f"{len(run.read)} of {len(run.pages)} pages read"
            on_progress(Progress("lookup-seq", "turn", turn + 1, max_pages, read))
        pages_read = ", ".join(map(str, run.read)) or "none"
        reply = run.ask(
            LOOKUP_SEQ_PROMPT,
            ReplyFormat(
                "readagent page choice",
                CHOICE_SCHEMA,
                lambda text: _new_page_choice(text, len(run.pages), run.read),
                CHOICE_SHAPE,
                f"no new page of 1..{len(run.pages)} named; stopping",
            ),
            LOOKUP_MAX_TOKENS,
            pages_read=pages_read,
        )
        choice = reply.value
        if choice == STOP:
            stop = "stop"
            break
        if choice is None:
            stop = "malformed"
            break
        run.read.append(choice)
    return run.answer("lookup-seq", {"max_pages": max_pages, "stop_reason": stop})


def _new_page_choice(text: str, count: int, read: Collection[int]) -> int | None:
    """``parse_page_choice``, with a page already read counted as unusable too."""
    choice = parse_page_choice(text, count=count)
    return None if choice in read else choice


def _check_max_pages(max_pages: int) -> None:
    if isinstance(max_pages, bool) or not isinstance(max_pages, int) or max_pages < 1:
        raise ConfigError(f"max_pages must be an integer >= 1, got {max_pages!r}")


STRATEGIES = {"lookup": lookup, "lookup-seq": lookup_sequential}
