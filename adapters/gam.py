"""GAM (general agentic memory, papers/gam.txt) as a view over the same memory store.

Memorizer (``build_view``): each document is cut into sessions of whole level-0 chunks
(at most ``session_tokens``); per session one call writes a concise abstract (memo)
with the document's earlier abstracts in view, and the session is stored as a page
``"[ABSTRACT] {memo}"`` + raw text. Researcher (``research``): up to ``max_iters``
rounds of PLAN (which keyword / vector / page-index searches, from the request and all
abstracts), SEARCH, INTEGRATE (the found pages and the result so far into one
standalone factual result) and REFLECT (enough? else follow-up requests that drive
the next round). Plan, integrate and reflect replies are asked for with their JSON
Schemas (``PLAN_SCHEMA``, ``INTEGRATE_SCHEMA``, ``REFLECT_SCHEMA``: the JSON objects the
prompts describe), which endpoints with structured outputs enforce. An unusable reply
gets one repair call (llm/structured.py); then it falls back as the reference code
does (empty plan, previous result, ``enough=false``), with a warning; transport errors
propagate.

Offline (``chat=None``) nothing is written by a model: memos are extractive summaries,
the plan is the question itself, the result is the best-matching sentences of the
found pages, and the loop stops when a round finds no page it had not found before.
Everything says ``backend="extractive"`` then.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

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
from cam_engine.errors import ConfigError
from cam_engine.llm.base import EXTRACTIVE, ChatModel
from cam_engine.llm.extractive import ExtractiveSummarizer, content_words, split_sentences
from cam_engine.llm.parsers import parse_json_object, strip_thinking
from cam_engine.llm.prompts import load_prompt
from cam_engine.llm.structured import INTEGER_LIST, STRING_LIST, ReplyFormat, object_schema
from cam_engine.memory import Memory
from cam_engine.progress import Progress, ProgressCallback
from cam_engine.types import MEMO, PAGE, Node, ViewNode

logger = logging.getLogger(__name__)

VIEW = "gam"
STRATEGY = "research"
OUTPUTS = ("integration", "sources", "extracts")  # GAM Table 4: what the client receives
TOOLS = ("keyword", "vector", "page_index")
ABSTRACT = "[ABSTRACT]"  # the page header's prefix, as in the reference code
SESSION_TOKENS = 2048  # GAM Section 3: the input is read in 2,048-token sessions
MAX_PAGE_INDEX = 5  # pages one plan may read directly (reference prompt: max 5)
MAX_NEW_REQUESTS = 5  # follow-up requests of one reflection (reference prompt: 0 to 5)
MEMO_WORDS = 60  # length of an extractive memo
RESULT_SENTENCES = 3  # sentences of an extractive integration (as ExtractiveAnswerer)
EXTRACT_SENTENCES = 3  # sentences quoted per source page with output="extracts"
# Reply budgets: room for a short <think> before the JSON of reasoning models.
MEMO_MAX_TOKENS = 512
PLAN_MAX_TOKENS = 1024
INTEGRATE_MAX_TOKENS = 1536
REFLECT_MAX_TOKENS = 512
NO_MEMORY = "(none yet: this is the first session of the document)"
NO_RESULT = "(empty: nothing has been gathered yet)"
PLAN_SCHEMA = object_schema(
    "gam_plan",
    {
        "info_needs": STRING_LIST,
        "tools": {"type": "array", "items": {"type": "string", "enum": list(TOOLS)}},
        "keyword_collection": STRING_LIST,
        "vector_queries": STRING_LIST,
        "page_index": INTEGER_LIST,
    },
)
INTEGRATE_SCHEMA = object_schema(
    "gam_integrate", {"content": {"type": "string"}, "sources": INTEGER_LIST}
)
REFLECT_SCHEMA = object_schema(
    "gam_reflect", {"enough": {"type": "boolean"}, "new_requests": STRING_LIST}
)

SessionCallback = Callable[[str, int, int], None]  # (document, session index, sessions)


# --- memorizer ----------------------------------------------------------------------------
def sessions_of(chunks: Sequence[Node], session_tokens: int) -> list[list[Node]]:
    """Consecutive runs of whole chunks, each at most ``session_tokens`` when joined
    (``count_tokens``); a chunk longer than that forms a session of its own, since a
    chunk is never split."""
    sessions: list[list[Node]] = []
    current: list[Node] = []
    for chunk in chunks:
        if current and count_tokens(_joined([*current, chunk])) > session_tokens:
            sessions.append(current)
            current = []
        current.append(chunk)
    if current:
        sessions.append(current)
    return sessions


def build_view(
    memory: Memory,
    doc_ids: Sequence[str] | None,
    chat: ChatModel | None,
    *,
    session_tokens: int = SESSION_TOKENS,
    on_session: SessionCallback | None = None,
) -> ViewReport:
    """Write the ``gam`` view (memos and pages) of ``doc_ids`` (all documents if None),
    replacing each document's earlier one; one transaction per document. Each document
    is its own history: a memo sees the earlier abstracts of its document only, so a
    document's view does not depend on which others were built before it."""
    if isinstance(session_tokens, bool) or not isinstance(session_tokens, int):
        raise ConfigError(f"session_tokens must be an integer, got {session_tokens!r}")
    if session_tokens < 1:
        raise ConfigError(f"session_tokens must be >= 1, got {session_tokens}")
    report = ViewReport(view=VIEW, backend=backend_of(chat))
    sessions = fallbacks = 0
    for doc in document_ids(memory, doc_ids):
        nodes, doc_fallbacks = _memorize(memory, doc, chat, session_tokens, report.log, on_session)
        memory.write_view(nodes, replace_group=True)
        report.documents += 1
        report.nodes_written += len(nodes)
        sessions += sum(node.kind == PAGE for node in nodes)
        fallbacks += doc_fallbacks
    report.details = {
        "sessions": sessions,
        "session_tokens": session_tokens,
        "memo_fallbacks": fallbacks,
    }
    return report


def _memorize(
    memory: Memory,
    doc: str,
    chat: ChatModel | None,
    session_tokens: int,
    log: CallLog,
    on_session: SessionCallback | None,
) -> tuple[list[ViewNode], int]:
    """The memos and pages of one document, in order; and how many memos fell back."""
    sessions = sessions_of(memory.document_chunks(doc), session_tokens)
    content = [_joined(session) for session in sessions]
    embeddings: np.ndarray | list[np.ndarray] = memory.embedder.embed(content) if content else []
    memos: list[str] = []
    nodes: list[ViewNode] = []
    fallbacks = 0
    for i, session in enumerate(sessions):
        memo, backend = _write_memo(chat, log, memos, content[i])
        fallbacks += chat is not None and backend == EXTRACTIVE
        memos.append(memo)
        nodes.extend(_session_nodes(doc, i, session, memo, backend, content[i], embeddings[i]))
        if on_session is not None:
            on_session(doc, i, len(sessions))
    return nodes, fallbacks


def _session_nodes(
    doc: str,
    i: int,
    session: Sequence[Node],
    memo: str,
    backend: str,
    content: str,
    embedding: np.ndarray,
) -> list[ViewNode]:
    """The memo and the page of session ``i``. The page embeds its raw content only, as
    the reference's dense retriever does: the header is a summary of the same text."""
    chunk_ids = tuple(chunk.id for chunk in session)
    header = f"{ABSTRACT} {memo}"
    return [
        ViewNode(
            id=f"{VIEW}/{doc}/m{i}",
            view=VIEW,
            kind=MEMO,
            group=doc,
            seq=i,
            text=memo,
            doc_id=doc,
            props={"backend": backend},
            chunk_ids=chunk_ids,
        ),
        ViewNode(
            id=f"{VIEW}/{doc}/p{i}",
            view=VIEW,
            kind=PAGE,
            group=doc,
            seq=i,
            text=f"{header}\n\n{content}",
            doc_id=doc,
            props={"header": header, "content": content, "page_no": i, "backend": backend},
            embedding=embedding,
            chunk_ids=chunk_ids,
        ),
    ]


def _write_memo(
    chat: ChatModel | None, log: CallLog, memos: Sequence[str], content: str
) -> tuple[str, str]:
    """The memo of one session and who wrote it; an empty reply falls back to the
    extractive memo (the reference falls back to the session's first 200 characters)."""
    if chat is not None:
        messages = load_prompt("gam_memo").render(
            memory_context=_numbered(memos) if memos else NO_MEMORY, session=content
        )
        reply = log.complete(chat, messages, max_tokens=MEMO_MAX_TOKENS).text
        memo = " ".join(strip_thinking(reply).split())
        if memo:
            return memo, chat.name
        logger.warning("%s wrote an empty memo; using an extractive one", chat.name)
    return ExtractiveSummarizer().summarize([content], max_words=MEMO_WORDS).text, EXTRACTIVE


def _joined(chunks: Sequence[Node]) -> str:
    return "\n\n".join(chunk.text for chunk in chunks)


def _numbered(abstracts: Sequence[str]) -> str:
    return "\n".join(f"Page {i}: {text}" for i, text in enumerate(abstracts))


# --- the page-store as the researcher sees it ---------------------------------------------
@dataclass(frozen=True)
class Page:
    number: int  # index in the page-store of this research (the plan's page_index)
    id: str
    document: str
    memo: str
    content: str
    embedding: np.ndarray | None


@dataclass
class PageStore:
    """The ``gam`` pages of the documents in scope, numbered 0.. in document order."""

    pages: list[Page]
    pages_in_view: int  # of every document: how many hits a scoped keyword search needs
    by_id: dict[str, Page] = field(init=False)

    @classmethod
    def load(cls, memory: Memory, doc_ids: Sequence[str] | None) -> PageStore:
        nodes = memory.view_nodes(VIEW, PAGE, embeddings=True)
        docs = document_ids(memory, doc_ids)
        rank = {doc: i for i, doc in enumerate(docs)}
        memos = {(m.group, m.seq): m.text for m in memory.view_nodes(VIEW, MEMO)}
        scoped = sorted((n for n in nodes if n.group in rank), key=lambda n: (rank[n.group], n.seq))
        if not scoped:
            raise ConfigError(
                f"no {VIEW} pages for {', '.join(docs) or 'this memory'}: build the view first"
            )
        pages = [_page(number, node, memos) for number, node in enumerate(scoped)]
        return cls(pages, len(nodes))

    def __post_init__(self) -> None:
        self.by_id = {page.id: page for page in self.pages}

    def memory_context(self) -> str:
        """Every abstract as ``Page n: ...``; the document is named when there are several."""
        several = len({page.document for page in self.pages}) > 1
        return "\n".join(
            f"Page {p.number}" + (f" ({p.document})" if several else "") + f": {p.memo}"
            for p in self.pages
        )


def _page(number: int, node: ViewNode, memos: dict[tuple[str, int], str]) -> Page:
    header = str(node.props.get("header", ""))
    memo = memos.get((node.group, node.seq), header.removeprefix(ABSTRACT).strip())
    content = node.props.get("content")
    if not isinstance(content, str):  # written without props: the text after the header
        content = node.text.removeprefix(header).strip()
    return Page(number, node.id, node.group, memo, content, node.embedding)


# --- researcher steps ------------------------------------------------------------------------
@dataclass
class Plan:
    info_needs: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    keyword_collection: list[str] = field(default_factory=list)
    vector_queries: list[str] = field(default_factory=list)
    page_index: list[int] = field(default_factory=list)


@dataclass
class Result:
    """The integrated result so far and the pages (ids) it was drawn from."""

    content: str = ""
    sources: list[str] = field(default_factory=list)


@dataclass
class Reflection:
    enough: bool
    new_requests: list[str]
    fallback: bool = False


def _plan(
    chat: ChatModel | None, log: CallLog, request: str, store: PageStore
) -> tuple[Plan, bool]:
    """The search plan for ``request`` and whether it is the fallback (empty) plan.
    Offline the request itself is the keyword and the vector query."""
    if chat is None:
        return Plan([request], ["keyword", "vector"], [request], [request], []), False
    messages = load_prompt("gam_plan").render(
        request=request, memory=store.memory_context(), max_pages=MAX_PAGE_INDEX
    )
    data = log.ask(chat, messages, PLAN_FORMAT, max_tokens=PLAN_MAX_TOKENS).value
    if data is None:
        return Plan(), True
    tools = [t.lower() for t in _strings(data.get("tools"))]
    unknown = [t for t in tools if t not in TOOLS]
    if unknown:
        logger.warning("%s: plan names unknown tools %s; ignored", chat.name, unknown)
    return (
        Plan(
            info_needs=_strings(data.get("info_needs")),
            tools=[t for t in dict.fromkeys(tools) if t in TOOLS],
            keyword_collection=_strings(data.get("keyword_collection")),
            vector_queries=_strings(data.get("vector_queries")),
            page_index=_page_numbers(data.get("page_index"), store)[:MAX_PAGE_INDEX],
        ),
        False,
    )


def _search(
    memory: Memory, store: PageStore, plan: Plan, top_k: int
) -> tuple[list[Page], dict[str, list[str]]]:
    """The pages the plan's tools find (each page once, with its best score, best first)
    and the page ids each tool found. Only the tools the plan lists run."""
    hits: dict[str, list[tuple[str, float]]] = {}
    if "keyword" in plan.tools and plan.keyword_collection:
        hits["keyword"] = _keyword_hits(memory, store, " ".join(plan.keyword_collection), top_k)
    if "vector" in plan.tools and plan.vector_queries:
        hits["vector"] = _vector_hits(memory, store, plan.vector_queries, top_k)
    if "page_index" in plan.tools and plan.page_index:
        hits["page_index"] = [(store.pages[n].id, 0.0) for n in plan.page_index]
    best: dict[str, float] = {}
    for tool_hits in hits.values():
        for page_id, score in tool_hits:
            best[page_id] = max(score, best.get(page_id, score))
    ranked = sorted(best, key=lambda i: (-best[i], store.by_id[i].number))
    return [store.by_id[i] for i in ranked], {t: [i for i, _ in h] for t, h in hits.items()}


def _keyword_hits(
    memory: Memory, store: PageStore, query: str, top_k: int
) -> list[tuple[str, float]]:
    """BM25 (or the store's full-text search) over the page texts of the documents in
    scope (the store filters, so BM25's statistics are those of the scope)."""
    scoped = len(store.pages) < store.pages_in_view
    groups = sorted({page.document for page in store.pages}) if scoped else None
    found = memory.keyword_search(VIEW, PAGE, query, top_k, groups)
    return [(i, score) for i, score in found if i in store.by_id][:top_k]


def _vector_hits(
    memory: Memory, store: PageStore, queries: Sequence[str], top_k: int
) -> list[tuple[str, float]]:
    """Top ``top_k`` pages by cosine for each query, scores summed per page over the
    queries, then the ``top_k`` best sums (the reference's dense retriever)."""
    pages = [p for p in store.pages if p.embedding is not None]
    if not pages:
        return []
    # The same filter again (it keeps every page): it tells mypy no embedding is None.
    matrix = np.stack([p.embedding for p in pages if p.embedding is not None])
    totals: dict[int, float] = {}
    for scores in memory.embedder.embed(list(queries)) @ matrix.T:
        for j in sorted(range(len(pages)), key=lambda j: (-scores[j], j))[:top_k]:
            totals[j] = totals.get(j, 0.0) + float(scores[j])
    ranked = sorted(totals, key=lambda j: (-totals[j], j))[:top_k]
    return [(pages[j].id, totals[j]) for j in ranked]


def _integrate(
    chat: ChatModel | None,
    log: CallLog,
    question: str,
    found: Sequence[Page],
    result: Result,
    store: PageStore,
) -> tuple[Result, bool]:
    """The found pages merged into the result; and whether the reply fell back (then
    the previous result is kept). Offline: the best sentences of all pages so far."""
    if chat is None:
        pages = _unique([*(store.by_id[i] for i in result.sources), *found])
        return _extractive_result(question, pages), False
    evidence = "\n\n".join(f"[Page {p.number}]\n{p.content}" for p in found)
    messages = load_prompt("gam_integrate").render(
        question=question, evidence=evidence, result=_result_text(result, store)
    )
    data = log.ask(chat, messages, INTEGRATE_FORMAT, max_tokens=INTEGRATE_MAX_TOKENS).value
    if data is None:
        return result, True
    content = str(data["content"]).strip()
    cited = [store.pages[n].id for n in _page_numbers(data.get("sources"), store)]
    if not cited and content:
        cited = [*result.sources, *(p.id for p in found)]
    return Result(content, list(dict.fromkeys(cited))), False


def _reflect(chat: ChatModel, log: CallLog, question: str, result: Result) -> Reflection:
    """Enough to answer? If not, up to MAX_NEW_REQUESTS follow-up requests. A reply
    without a usable ``enough`` is ``enough=false`` with no requests."""
    messages = load_prompt("gam_reflect").render(
        question=question,
        result=result.content or NO_RESULT,
        max_requests=MAX_NEW_REQUESTS,
    )
    data = log.ask(chat, messages, REFLECT_FORMAT, max_tokens=REFLECT_MAX_TOKENS).value
    if data is None:
        return Reflection(False, [], fallback=True)
    enough = data["enough"] is True
    requests = [] if enough else _strings(data.get("new_requests"))[:MAX_NEW_REQUESTS]
    return Reflection(enough, requests)


# --- reply parsers (pure, never raising) -------------------------------------------------------
def parse_plan(text: str) -> dict[str, Any] | None:
    """A plan reply's JSON object, or None without one."""
    return parse_json_object(text)


def parse_integration(text: str) -> dict[str, Any] | None:
    """An integrate reply's JSON object, or None when it has no string ``content``."""
    data = parse_json_object(text)
    return data if data is not None and isinstance(data.get("content"), str) else None


def parse_reflection(text: str) -> dict[str, Any] | None:
    """A reflect reply's JSON object with ``enough`` made a bool (``"true"`` and
    ``"false"`` count), or None when it has no such ``enough``."""
    data = parse_json_object(text)
    enough = data.get("enough") if data is not None else None
    if isinstance(enough, str) and enough.strip().lower() in ("true", "false"):
        enough = enough.strip().lower() == "true"
    if data is None or not isinstance(enough, bool):
        return None
    return {**data, "enough": enough}


PLAN_FORMAT = ReplyFormat(
    "gam plan",
    PLAN_SCHEMA,
    parse_plan,
    'one JSON object with exactly the keys "info_needs", "tools", "keyword_collection", '
    '"vector_queries" and "page_index" (each a list; [] when unused)',
    "empty plan",
)
INTEGRATE_FORMAT = ReplyFormat(
    "gam integrate",
    INTEGRATE_SCHEMA,
    parse_integration,
    'one JSON object like {"content": "the updated result", "sources": [0]}',
    "keeping the last result",
)
REFLECT_FORMAT = ReplyFormat(
    "gam reflect",
    REFLECT_SCHEMA,
    parse_reflection,
    'one JSON object like {"enough": false, "new_requests": ["..."]}',
    "not enough, no new requests",
)


# --- the research loop ---------------------------------------------------------------------
def research(
    memory: Memory,
    question: str,
    chat: ChatModel | None,
    *,
    max_iters: int = 3,
    top_k: int = 5,
    output: str = "integration",
    doc_ids: Sequence[str] | None = None,
    on_progress: ProgressCallback | None = None,
) -> AdapterAnswer:
    """Deep research over the ``gam`` page-store; ``answer`` is the integrated result and
    ``output`` says what goes with it: nothing ("integration"), the source pages
    ("sources") or quoted extracts of them ("extracts"). ``on_progress`` hears of each
    iteration."""
    if output not in OUTPUTS:
        raise ConfigError(f"unknown output {output!r}: use one of {', '.join(OUTPUTS)}")
    for name, value in (("max_iters", max_iters), ("top_k", top_k)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{name} must be an integer >= 1, got {value!r}")
    store = PageStore.load(memory, doc_ids)
    log = CallLog()
    result = Result()
    request, stop = question, "max_iters"
    seen: set[str] = set()
    plans: list[dict[str, Any]] = []
    pages_found: list[list[str]] = []
    rounds: list[dict[str, Any]] = []  # what else each iteration did
    for step in range(max_iters):
        plan, plan_fallback = _plan(chat, log, request, store)
        found, tool_hits = _search(memory, store, plan, top_k)
        new = [p.id for p in found if p.id not in seen]
        seen.update(new)
        integrate_fallback = False
        if found and (chat is not None or new):
            result, integrate_fallback = _integrate(chat, log, question, found, result, store)
        plans.append({"request": request, **asdict(plan), "fallback": plan_fallback})
        pages_found.append([p.id for p in found])
        round_ = {"hits": tool_hits, "new_pages": new, "integrate_fallback": integrate_fallback}
        rounds.append(round_)
        if on_progress is not None:
            found_so_far = f"{len(seen)} pages found"
            on_progress(Progress(STRATEGY, "iteration", step + 1, max_iters, found_so_far))
        if chat is None:  # offline: the same plan again would find nothing new
            round_["reflection"] = asdict(Reflection(enough=not new, new_requests=[]))
            if not new:
                stop = "no_new_pages"
                break
            continue
        if step == max_iters - 1:
            break  # a last reflection could not change the result: not asked for
        reflection = _reflect(chat, log, question, result)
        round_["reflection"] = asdict(reflection)
        if reflection.enough:
            stop = "enough"
            break
        request = "\n".join(reflection.new_requests) or question
    sources = _output_sources(output, question, result, store)
    details = {
        "output": output,
        "iterations": len(plans),
        "stop_reason": stop,
        "plans": plans,
        "pages_found": pages_found,
        "rounds": rounds,
        "source_pages": result.sources,
        "pages_in_scope": len(store.pages),
        "max_iters": max_iters,
        "top_k": top_k,
    }
    if output == "extracts":
        details["extracts_backend"] = EXTRACTIVE  # quotes, whoever wrote the result
    return AdapterAnswer(
        question, result.content, backend_of(chat), STRATEGY, sources, log, details
    )


def _output_sources(output: str, question: str, result: Result, store: PageStore) -> list[Source]:
    pages = [store.by_id[i] for i in result.sources]
    if output == "sources":
        return [Source(p.id, PAGE, p.document, p.content) for p in pages]
    if output == "extracts":
        extracts = _extracts(f"{question} {result.content}", pages)
        return [
            Source(p.id, "extract", p.document, text)
            for p, text in zip(pages, extracts, strict=True)
            if text
        ]
    return []


# --- extractive pieces: quotes, never generated text ---------------------------------------
def _sentence_scores(query: str, texts: Sequence[str]) -> list[tuple[int, int, str, float]]:
    """(text index, sentence index, sentence, BM25 score) of every sentence of ``texts``
    against the content words of ``query``."""
    from rank_bm25 import BM25Okapi

    sentences = [
        (t, s, sentence)
        for t, text in enumerate(texts)
        for s, sentence in enumerate(split_sentences(text))
    ]
    terms = content_words(query)
    if not sentences or not terms:
        return []
    bm25 = BM25Okapi([content_words(sentence) or ["_"] for _, _, sentence in sentences])
    scores = bm25.get_scores(terms)
    return [
        (t, s, sentence, float(score))
        for (t, s, sentence), score in zip(sentences, scores, strict=True)
    ]


def _best(
    scored: Sequence[tuple[int, int, str, float]], n: int
) -> list[tuple[int, int, str, float]]:
    """The ``n`` best positive-scored sentences, back in text order."""
    ranked = sorted((x for x in scored if x[3] > 0), key=lambda x: (-x[3], x[0], x[1]))[:n]
    return sorted(ranked, key=lambda x: (x[0], x[1]))


def _extractive_result(question: str, pages: Sequence[Page]) -> Result:
    """The RESULT_SENTENCES sentences of the pages that best match the question, in
    page-store order; the pages they come from are the sources."""
    ordered = sorted(pages, key=lambda p: p.number)
    chosen = _best(_sentence_scores(question, [p.content for p in ordered]), RESULT_SENTENCES)
    sources = list(dict.fromkeys(ordered[t].id for t, _, _, _ in chosen))
    return Result(" ".join(sentence for _, _, sentence, _ in chosen), sources)


def _extracts(query: str, pages: Sequence[Page]) -> list[str]:
    """Per page, its EXTRACT_SENTENCES sentences that best match the query ("" if none)."""
    scored = _sentence_scores(query, [p.content for p in pages])
    return [
        " ".join(x[2] for x in _best([x for x in scored if x[0] == t], EXTRACT_SENTENCES))
        for t in range(len(pages))
    ]


# --- small helpers ----------------------------------------------------------------------------
def _strings(value: object) -> list[str]:
    """A JSON list of strings (a lone string counts as one), stripped, empties dropped."""
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    return [str(x).strip() for x in items if isinstance(x, str | int | float) and str(x).strip()]


_PAGE_REF = re.compile(r"^\s*(?:page\s*)?(\d{1,9})\s*$", re.IGNORECASE)


def _page_numbers(value: object, store: PageStore) -> list[int]:
    """Page numbers named in a JSON list (integers, "3", "Page 3" or page ids), each
    once; numbers outside the page-store are dropped with a warning (never guessed)."""
    numbers: list[int] = []
    items = value if isinstance(value, list) else [value] if value is not None else []
    for item in items:
        number: int | None = None
        if isinstance(item, int) and not isinstance(item, bool):
            number = item
        elif isinstance(item, str) and item in store.by_id:
            number = store.by_id[item].number
        elif isinstance(item, str) and (match := _PAGE_REF.match(item)):
            number = int(match.group(1))
        if number is not None and 0 <= number < len(store.pages):
            numbers.append(number)
        else:
            logger.warning("no page %r in the page-store; ignored", item)
    return list(dict.fromkeys(numbers))


def _unique(pages: Sequence[Page]) -> list[Page]:
    return list({p.id: p for p in pages}.values())


def _result_text(result: Result, store: PageStore) -> str:
    if not result.content:
        return NO_RESULT
    numbers = ", ".join(str(store.by_id[i].number) for i in result.sources if i in store.by_id)
    return f"{result.content}\n(drawn from pages: {numbers})" if numbers else result.content


STRATEGIES = {STRATEGY: research}
