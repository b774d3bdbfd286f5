"""``Memory``: the public Python API; the CLI and the adapters are built on it.

from cam_engine import Memory
with Memory.open("book.db") as memory:
    memory.ingest(["mobydick.txt"], batch_size=64)
    print(memory.stats())
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import IO, Any, TypeVar

from cam_engine.citations import Citation, cite
from cam_engine.config import (
    DEFAULT_EMBED_MODEL,
    DEFAULT_MEMORY,
    Environment,
    Settings,
    validate_memory_name,
)
from cam_engine.conversation import Conversation
from cam_engine.embed import Embedder, embedding_device, load_embedder, model_name
from cam_engine.engine.ingest import BatchCallback, IngestPipeline
from cam_engine.engine.reports import BatchReport, IngestError, IngestReport
from cam_engine.errors import ConfigError, EmbeddingError, InputError, NotFoundError
from cam_engine.limits import Limits, refusal
from cam_engine.llm import ExtractiveSummarizer, Summarizer
from cam_engine.llm.base import Answerer, ChatModel, QuotedSpan, Selector, Usage
from cam_engine.llm.extractive import ExtractiveAnswerer
from cam_engine.progress import ProgressCallback
from cam_engine.retrieval import Retrieval, context_passages
from cam_engine.retrieval.strategies import ADAPTER, AskOptions, strategy_named
from cam_engine.retrieval.strategies import DEFAULT as DEFAULT_STRATEGY
from cam_engine.sources import API_OPTIONS, AllowedRoots, OptionNames
from cam_engine.store.base import DocumentRecord, GraphStore, is_neo4j_uri, open_store
from cam_engine.store.cypher import load_query
from cam_engine.transfer import ExportFile, TransferReport, export_memory, import_memory
from cam_engine.types import CHUNK, SUMMARY, Node, ViewNode

logger = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass
class Evidence:
    """One node an answer was drawn from, and where it is in the documents."""

    node_id: str
    level: int
    document: str | None
    position: float | None
    text: str
    # Chunks: text == the document's text[start_char:end_char] (as the memory read it:
    # a PDF's page texts, a book without its Gutenberg header).
    start_char: int | None = None
    end_char: int | None = None
    pages: list[int] | None = None  # PDF: the pages the text is on
    covers: dict[str, list[int]] = field(default_factory=dict)  # summaries: doc -> span
    citation: str = "-"  # pg84.txt:12345-13020, paper.pdf:80-950 p.3, summary of ...


@dataclass(frozen=True)
class AnswerCitation:
    """Where a quoted sentence of an extractive answer is."""

    evidence: int  # index into AskResult.evidence
    start: int  # character span in that evidence node's text
    end: int
    # A chunk's sentence in its document: text[start_char:end_char] is the sentence.
    document: str | None = None
    start_char: int | None = None
    end_char: int | None = None
    citation: str = "-"  # pg84.txt:12400-12466 (p.3 for a PDF), or the node's citation


@dataclass
class AskResult:
    """An answer, the evidence it was drawn from, and how retrieval got there."""

    question: str
    answer: str
    backend: str  # who wrote the answer: "extractive" quotes the evidence
    evidence: list[Evidence]
    retrieval: Retrieval
    usage: Usage
    # Where each quoted sentence of an extractive answer is: the index of its evidence
    # node and the character span in that node's text.
    answer_citations: list[AnswerCitation] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "answer": self.answer,
            "backend": self.backend,
            "answer_citations": [asdict(c) for c in self.answer_citations],
            "strategy": self.retrieval.strategy,
            "stop": self.retrieval.stop,
            "evidence": [asdict(e) for e in self.evidence],
            "turns": self.retrieval.turns,
            "candidates_per_turn": [len(c) for c in self.retrieval.candidates],
            "llm_calls": self.usage.calls,
            "prompt_tokens": self.usage.prompt_tokens,
            "completion_tokens": self.usage.completion_tokens,
            "llm_seconds": round(self.usage.seconds, 3),
            **self.usage.reply_counts(),
            **self.retrieval.details,
        }


@dataclass
class NodeView:
    node: Node
    parents: list[Node]
    children: list[Node]
    neighbours: list[tuple[Node, float]]
    clusters: list[str]  # labels of the clusters this node's replicas belong to

    def to_dict(self) -> dict[str, Any]:
        """The node and the ids around it (what ``cam show --json`` prints)."""
        node = self.node
        return {
            "id": node.id,
            "level": node.level,
            "kind": node.kind,
            "document": node.doc_id,
            "position": node.position,
            "text": node.text,
            "props": node.props,
            "clusters": self.clusters,
            "parents": [p.id for p in self.parents],
            "children": [c.id for c in self.children],
            "neighbours": [{"id": n.id, "weight": w} for n, w in self.neighbours],
        }


class Memory:
    """One named memory in one store, with the embedder and summarizer that build it."""

    def __init__(
        self,
        store: GraphStore,
        *,
        settings: Settings,
        embedder: Embedder,
        summarizer: Summarizer,
        llm_concurrency: int = 4,
        limits: Limits | None = None,
    ) -> None:
        if llm_concurrency < 1:
            raise ConfigError(f"llm_concurrency must be >= 1, got {llm_concurrency}")
        if embedder.name != settings.embed_model:
            raise ConfigError(
                f"memory {store.memory!r} uses embedder {settings.embed_model!r}, "
                f"got {embedder.name!r}: vectors of two models cannot be mixed"
            )
        self.store = store
        self.settings = settings
        self.embedder = embedder
        self.summarizer = summarizer
        self.llm_concurrency = llm_concurrency  # LLM calls in flight at once (summaries)
        # What one text or question may cost (CAM_MAX_*): longer ones are refused.
        self.limits = limits or Limits()
        # How ingest errors name an option: `document` (this API, MCP tools) or
        # --document (the CLI sets CLI_OPTIONS).
        self.options: OptionNames = API_OPTIONS
        # What one input may cost (CAM_MAX_* variables, read by Memory.open).
        self.limits = limits or Limits()
        self._ingest: IngestPipeline | None = None

    @classmethod
    def open(
        cls,
        store: str | Path | GraphStore | None = None,
        name: str | None = None,
        *,
        settings: Settings | None = None,
        embedder: Embedder | None = None,
        summarizer: Summarizer | None = None,
        environment: Environment | None = None,
        llm_concurrency: int = 4,
        create: bool = True,
    ) -> Memory:
        """Open (or prepare to create) memory ``name`` in ``store``.

        An existing memory keeps the settings it was built with; passing different
        ones is an error rather than a silent mix of two algorithms in one memory.
        With ``create=False`` (for reading) a store or memory that does not exist is a
        ``NotFoundError`` naming the memories the store does hold, and nothing is created.
        """
        env = environment or Environment.from_env()
        name = validate_memory_name(env.memory if name is None else name)
        if store is None or isinstance(store, str | Path):
            graph = open_store(store if store is not None else env.store, name, env, create=create)
        else:
            graph = store
        # Settings that leave the model at its default take it from the embedder given,
        # else from CAM_EMBED_MODEL, for a new memory and when compared with a stored one.
        # A model named as load_embedder will name it (``hashing`` is ``hashing:384``).
        model = embedder.name if embedder is not None else env.embed_model
        model = model_name(model) if model else model
        if settings is not None:
            settings = replace(settings, embed_model=model_name(settings.embed_model))
        if settings is not None and model and settings.embed_model == DEFAULT_EMBED_MODEL:
            settings = replace(settings, embed_model=model)
        stored = graph.load_settings()
        if stored is None and not create:
            others = graph.memories()
            where = graph.location
            graph.close()
            held = f"memories there: {', '.join(others)}" if others else "it holds none yet"
            raise NotFoundError(f"no memory {name!r} in {where} ({held})")
        if stored is not None:
            existing = Settings.from_dict(stored)
            if settings is not None and settings != existing:
                diff = "; ".join(settings.differences(existing))
                graph.close()
                raise ConfigError(
                    f"memory {name!r} was built with {diff}: leave those options out to "
                    "use its settings, or pick another --memory"
                )
            settings = existing
        elif settings is None:
            settings = Settings(embed_model=model) if model else Settings()
        try:
            return cls(
                graph,
                settings=settings,
                embedder=embedder
                or load_embedder(
                    settings.embed_model,
                    device=env.embed_device,
                    batch_size=env.embed_batch_size,
                    environment=env,
                    dim=settings.embed_dim,
                ),
                summarizer=summarizer or ExtractiveSummarizer(),
                llm_concurrency=llm_concurrency,
                limits=env.limits,
            )
        except BaseException:
            if graph is not store:  # opened here: do not leave it open
                graph.close()
            raise

    @property
    def name(self) -> str:
        return self.store.memory

    @property
    def location(self) -> str:
        """The store: a SQLite file's absolute path or a Neo4j URI."""
        return self.store.location

    @staticmethod
    def is_neo4j_location(location: str | Path) -> bool:
        """Whether a store location (as ``Memory.open`` takes it) names a Neo4j server
        (a bolt:// or neo4j:// URI, with or without +s / +ssc) rather than a SQLite file."""
        return is_neo4j_uri(location)

    @staticmethod
    def browser_query(name: str) -> str:
        """The Cypher of the package's query ``name`` (cypher/<name>.cypher), as shipped,
        for a person to run in Neo4j Browser (``cam browse`` prints the browse_* ones);
        a name with no such file is a ``StoreError``."""
        return load_query(name)

    def count_chunks(self) -> int:
        return self.store.count_nodes(0)

    def chunks(self) -> list[Node]:
        """Every chunk of the memory (level 0), without vectors."""
        return list(self.store.nodes_at_level(0))

    def close(self) -> None:
        self.store.close()

    def delete(self) -> None:
        """Delete this memory from its store: every level, view and document, and its
        settings. The memory is closed afterwards. SQLite deletes in one transaction;
        Neo4j in transactions of bounded size (one holding a large memory exceeds the
        server's transaction memory), its settings last, so a delete cut short leaves
        the memory listed, and deleting it again finishes the job."""
        self.store.drop_memory()
        self.close()

    # --- moving a memory to another store (cam_engine/transfer.py) ----------------------
    def export(
        self, path: str | Path, *, on_progress: ProgressCallback | None = None
    ) -> TransferReport:
        """Write this memory to a portable file (JSON Lines; gzip when ``path`` ends in
        ``.gz``) that ``Memory.import_from`` reads into any store. Streams: memory use
        does not grow with the memory. An existing file is not overwritten."""
        return export_memory(self.store, Path(path), on_progress=on_progress)

    @staticmethod
    def import_from(
        path: str | Path,
        store: str | Path | None = None,
        name: str | None = None,
        *,
        environment: Environment | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> TransferReport:
        """Read an export file into ``store`` (default: as ``Memory.open``'s) as memory
        ``name`` (default: the name it was exported under), which must not exist there.
        The result answers questions as the exported memory did and takes further
        ingests; a failed import (a malformed record, Ctrl-C) leaves nothing. No
        embedder is loaded: the vectors come from the file."""
        env = environment or Environment.from_env()
        with ExportFile(Path(path)) as source:
            target = validate_memory_name(name if name is not None else source.header.memory)
            graph = open_store(store if store is not None else env.store, target, env)
            try:
                return import_memory(source, graph, on_progress=on_progress)
            finally:
                graph.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def prepare_writes(self) -> None:
        """Fail now, naming the store, when it cannot be written (a read-only file), and
        make what writes need. Ingest does this before it reads a document; a command
        that writes otherwise (building views) calls it before its work."""
        self.store.prepare(self.embedder.dim)

    # --- ingest (engine/ingest.py does the work) ---------------------------------------------
    def _pipeline(self) -> IngestPipeline:
        # One pipeline per memory: it keeps the memory's structure between ingests.
        if self._ingest is None or self._ingest.summarizer is not self.summarizer:
            self._check_dimension()
            self._ingest = IngestPipeline(
                self.store,
                settings=self.settings,
                embedder=self.embedder,
                summarizer=self.summarizer,
            )
        self._ingest.llm_concurrency = self.llm_concurrency
        self._ingest.options = self.options
        self._ingest.limits = self.limits
        return self._ingest

    def _check_dimension(self) -> None:
        """Before anything is written: the embedder's vectors must have the size the
        memory recorded (an API model can change under one name). A memory not written
        yet records it, and its first batch saves it with the settings."""
        dim = self.embedder.dim  # an API embedder may ask its API here
        recorded = self.settings.embed_dim
        if recorded is None:
            if self.store.load_settings() is None:
                self.settings = replace(self.settings, embed_dim=dim)
        elif dim != recorded:
            raise EmbeddingError(
                f"memory {self.name!r} holds {recorded}-dimensional vectors (embed_dim), but "
                f"embedder {self.embedder.name!r} makes {dim}-dimensional ones: vectors of two "
                "sizes cannot be mixed"
            )

    def ingest(
        self,
        paths: str | Path | Sequence[str | Path],
        *,
        batch_size: int = 64,
        document: str | None = None,
        document_prefix: str | None = None,
        stdin: IO[str] | None = None,
        on_batch: BatchCallback | None = None,
        on_error: Callable[[IngestError], None] | None = None,
        encoding: str = "utf-8",
        allow: AllowedRoots | Iterable[str | Path] | None = None,
        file_format: str | None = None,
    ) -> IngestReport:
        """Ingest files, folders or ``"-"`` (stdin), each document in batches.

        A document's id is ``document``, else its file's name, or for a folder's file
        its path inside the folder; ``document_prefix`` goes before those, joined by
        "/" (``"notes"``: ``notes/a.md``). A document the memory holds is updated to
        the text read. Two paths that would be the same document are an ``InputError``
        before anything is read. A document that cannot be read is reported in
        ``errors`` and skipped; the memory is not touched for it. ``encoding``: of text
        files and stdin (PDF, EPUB and HTML say their own); an unknown one is a
        ``ConfigError``. ``allow``: the folders (or files) reads are kept to, with their
        symlinks resolved; None reads any file. A file is checked as it is opened, on
        the file opened, not its name: one swapped for a link out of them after it was
        named is an error, never read; stdin is refused (``sources.open_document``).
        ``file_format``: read every file as that format (a name in
        ``formats.format_names()``; another is a ``ConfigError``), not as
        ``formats.detect`` says; a ``conversation`` is chunked by its turns.
        """
        if allow is not None and not isinstance(allow, AllowedRoots):
            allow = AllowedRoots.of(allow)
        return self._pipeline().ingest(
            paths,
            batch_size=batch_size,
            document=document,
            document_prefix=document_prefix,
            stdin=stdin,
            on_batch=on_batch,
            on_error=on_error,
            encoding=encoding,
            allow=allow,
            file_format=file_format,
        )

    def ingest_text(
        self,
        text: str,
        document: str,
        *,
        batch_size: int = 64,
        on_batch: BatchCallback | None = None,
    ) -> IngestReport:
        """Ingest one document given as text, cleaned as a file's is (no byte order
        mark, no Project Gutenberg header and licence: ``sources.clean_text``) and
        refused as a file's is: a NUL makes it binary, and it may hold at most
        ``limits.text_chars`` characters (``check_text``)."""
        check_text(text, document, self.limits)
        return self._pipeline().ingest_text(
            text, document, batch_size=batch_size, on_batch=on_batch
        )

    def ingest_documents(
        self,
        documents: Iterable[tuple[str, str | Conversation]],
        *,
        batch_size: int = 64,
        on_batch: BatchCallback | None = None,
    ) -> IngestReport:
        """Ingest many (document id, text) pairs, their chunks packed into shared batches.
        A ``Conversation`` in place of a text is chunked by its turns, each session from
        a new chunk (``turn_chunking``).

        For collections of short documents (pooled QA paragraphs, notes): one batch per
        document would run the whole hierarchy update once per paragraph. A document
        the memory holds is updated to the text given, as in ``ingest``.
        """
        limits = self.limits

        def checked() -> Iterator[tuple[str, str | Conversation]]:
            for doc_id, text in documents:  # each refused as ingest_text's is
                check_text(text if isinstance(text, str) else text.plain_text(), doc_id, limits)
                yield doc_id, text

        return self._pipeline().ingest_documents(
            checked(), batch_size=batch_size, on_batch=on_batch
        )

    def delete_document(self, doc_id: str) -> BatchReport:
        """Delete one document, in one transaction: its chunks with their edges,
        replicas and memberships, its record, and the adapter views of it (pages,
        memos). Only the clusters that lose members are re-clustered and summarized
        again, level by level; a cluster left with one member is dissolved. A document
        the memory does not hold is a ``NotFoundError``. Returns what the batch did
        (``chunks_removed``, summaries written and removed per level)."""
        return self._pipeline().delete_document(doc_id)

    def delete_documents(
        self, doc_ids: Sequence[str], on_deleted: BatchCallback | None = None
    ) -> list[BatchReport]:
        """Delete these documents, each in a transaction of its own (``delete_document``),
        once the memory is known to hold every one of them: an id it does not hold is a
        ``NotFoundError`` suggesting ids like it, and nothing is deleted. ``on_deleted``
        hears of each document as its deletion commits."""
        if isinstance(doc_ids, str):
            doc_ids = [doc_ids]  # one id, not its letters
        asked = list(dict.fromkeys(doc_ids))
        self.require_documents(asked)
        reports = []
        for doc_id in asked:
            report = self.delete_document(doc_id)
            reports.append(report)
            if on_deleted is not None:
                on_deleted(report)
        return reports

    def require_documents(self, doc_ids: Iterable[str]) -> list[str]:
        """The memory's document ids, once it is known to hold each of ``doc_ids``: a
        ``NotFoundError`` for the first it does not hold, naming its documents (or those
        like the id, when it holds many)."""
        known = [d.id for d in self.store.documents()]
        held = set(known)
        missing = [d for d in doc_ids if d not in held]
        if missing:
            raise NotFoundError(
                f"no document {missing[0]!r} in memory {self.name!r}: "
                f"{_documents_like(missing[0], known)}"
            )
        return known

    def rebuild(self, on_batch: BatchCallback | None = None) -> BatchReport:
        """Rebuild every level from the stored chunks in one pass (the offline mode).

        Same code as ingest, with all chunks as one batch: useful to compare an
        incrementally grown memory with one built at once.
        """
        return self._pipeline().rebuild(on_batch)

    # --- reading ---------------------------------------------------------------------------
    def read_snapshot(self, read: Callable[[], T]) -> T:
        """``read()``, whose reads all see one committed state of the memory: a
        question asked beside another ``Memory``'s ingest sees whole batches only, and
        none of a batch still being written. Where ``isolated_snapshots`` is True
        (SQLite) that is one read transaction; on Neo4j ``read()`` runs until two runs
        agree (store.base), so give it only deterministic reads there."""
        return self.store.read_snapshot(read)

    @property
    def isolated_snapshots(self) -> bool:
        """Whether one read transaction holds all reads to one commit (see
        ``read_snapshot``)."""
        return self.store.isolated_snapshots

    def stats(self) -> dict[str, Any]:
        # The counts and the documents of one commit.
        data, documents = self.store.read_snapshot(
            lambda: (self.store.stats(), self.store.documents())
        )
        # A document whose ingest was interrupted: running the same ingest completes it.
        partial = [
            {"id": d.id, "chunks": d.chunks, "total": d.total}
            for d in documents
            if d.total is not None and d.chunks < d.total
        ]
        data.update(
            # total: the chunks the whole document makes (None for stdin, not known ahead)
            # version: raised each time an ingest changed its text; updated_at: ISO UTC
            # time of the last change to its chunks (None in records older than both)
            document_list=[
                {
                    "id": d.id,
                    "source": d.source,
                    "chunks": d.chunks,
                    "total": d.total,
                    "version": d.version,
                    "sha256": d.sha256,
                    "updated_at": d.updated_at,
                }
                for d in documents
            ],
            embedder={"model": self.embedder.name, "device": embedding_device(self.embedder)},
            partial_documents=partial,
            memory=self.store.memory,
            store=self.store.location,
            settings=self.settings.to_dict(),
        )
        return data

    def ask(
        self,
        question: str,
        *,
        strategy: str = DEFAULT_STRATEGY,
        top_k: int = 10,
        max_turns: int = 5,
        selector: Selector | None = None,
        answerer: Answerer | None = None,
        chat: ChatModel | None = None,
        options: Mapping[str, Any] | None = None,
        documents: Sequence[str] | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> AskResult:
        """Answer a question from the memory (CAM Section 4.2) with any strategy of
        ``cam_engine.retrieval.strategies.STRATEGIES``.

        Without a selector / answerer the offline ones are used: selection by retrieval
        relevance, and an answer that quotes the evidence sentences that best match the
        question. Adapter strategies (lookup, lookup-seq, memagent, research) answer
        themselves, with ``chat`` or their offline rules, and take their own ``options``.
        A strategy that needs a memory built otherwise (``Strategy.needs_build``, e.g.
        prune-grow-no-flexibility) is a ``ConfigError`` naming the setting.

        ``documents`` keeps the question to those documents (ids as ``documents()``
        names them): only their nodes are searched and only they are evidence
        (cam_engine/retrieval/scope.py says how summaries are treated). An id the
        memory does not hold is a ``NotFoundError`` naming the ones it does.

        ``on_progress`` hears of long work: MemAgent's steps, research's iterations,
        lookup-seq's and prune-grow's turns.
        """
        spec = strategy_named(strategy)
        if not isinstance(question, str):
            raise InputError(f"the question must be text, got {type(question).__name__}")
        if not question.strip():
            raise InputError("the question is empty")
        self.limits.check_query(question)
        if options and spec.family != ADAPTER:
            raise ConfigError(
                f"options are for the adapter strategies; {strategy!r} takes top_k, "
                "max_turns and selector"
            )
        ask_options = AskOptions(
            top_k=top_k,
            max_turns=max_turns,
            selector=selector,
            chat=chat,
            adapter=dict(options or {}),
            documents=self._scope(documents),
            progress=on_progress,
        )
        found = spec.retrieve(self, question, ask_options)
        passages = context_passages(found.evidence())
        reply = found.answer
        if reply is None:
            writer = answerer or ExtractiveAnswerer()
            texts = [text for _, text in passages]
            reply = writer.answer(question, texts)
            usage = found.usage + reply.usage
            if not reply.usable:  # the model gave no answer: quote the evidence instead
                reply = ExtractiveAnswerer().answer(question, texts)
        else:
            usage = found.usage
        nodes = [n for group, _ in passages for n in group]
        evidence = self._evidence(nodes)
        cited = _answer_citations(reply.citations, [group for group, _ in passages], evidence)
        return AskResult(question, reply.text, reply.backend, evidence, found, usage, cited)

    def _scope(self, documents: Sequence[str] | None) -> tuple[str, ...] | None:
        """The documents a question is kept to, checked; None (no scope) for none
        given or every document of the memory (then summaries spanning several
        documents stay in reach)."""
        if isinstance(documents, str):
            documents = [documents]  # one id, not its letters
        asked = tuple(dict.fromkeys(documents or ()))
        if not asked:
            return None
        known = self.require_documents(asked)
        return None if set(asked) == set(known) else asked

    def _evidence(self, nodes: Sequence[Node]) -> list[Evidence]:
        citations = cite(self.store, [n for n in nodes if n.kind in (CHUNK, SUMMARY)])
        evidence = []
        for n in nodes:
            where = citations.get(n.id, Citation(n.doc_id))
            evidence.append(
                Evidence(
                    n.id,
                    n.level,
                    n.doc_id,
                    n.position,
                    n.text,
                    where.start_char,
                    where.end_char,
                    where.pages,
                    where.covers,
                    where.label(),
                )
            )
        return evidence

    # --- what the adapters build on ---------------------------------------------------------
    def documents(self) -> list[DocumentRecord]:
        return self.store.documents()

    def document_chunks(self, doc_id: str) -> list[Node]:
        """A document's level-0 chunks in reading order (empty for an unknown id)."""
        record = self.store.get_document(doc_id)
        if record is None:
            return []
        chunks = self.store.chunks_near(doc_id, range(record.chunks))
        return sorted(chunks, key=_document_order)

    def write_view(self, nodes: Sequence[ViewNode], *, replace_group: bool = False) -> None:
        """Store an adapter's view nodes in one transaction; with ``replace_group`` the
        sequences they belong to are emptied first (a view rebuilt from scratch)."""
        with self.store.transaction():
            if replace_group:
                for view, kind, group in sorted({(n.view, n.kind, n.group) for n in nodes}):
                    self.store.delete_view_nodes(view, kind, group)
            self.store.upsert_view_nodes(nodes)

    def delete_view(self, view: str, kind: str | None = None, group: str | None = None) -> int:
        """Delete a view's nodes (of one kind, one group) in one transaction; returns how many."""
        with self.store.transaction():
            return self.store.delete_view_nodes(view, kind, group)

    def view_nodes(
        self, view: str, kind: str, group: str | None = None, *, embeddings: bool = False
    ) -> list[ViewNode]:
        return self.store.view_nodes(view, kind, group, embeddings=embeddings)

    def keyword_search(
        self, view: str, kind: str, query: str, k: int, groups: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        return self.store.keyword_search(view, kind, query, k, groups)

    def locate(self, question: str, top_k: int = 10) -> list[tuple[Node, float]]:
        """Fast localization (CAM Section 4.2): the ``top_k`` nodes of all levels closest
        to the question by cosine."""
        self.limits.check_query(question, "the query")
        vector = self.embedder.embed([question])
        hits = self.store.nearest(None, vector, top_k)[0]
        nodes = self.store.get_nodes(node_id for node_id, _ in hits)
        return [(nodes[node_id], score) for node_id, score in hits if node_id in nodes]

    def node(self, node_id: str) -> NodeView | None:
        store = self.store
        found = store.get_nodes([node_id]).get(node_id)
        if found is None:
            return None
        parent_ids = store.parents_of([node_id]).get(node_id, set())
        child_ids = store.members_of([node_id]).get(node_id, set())
        weights = store.neighbours([node_id]).get(node_id, {})
        related = store.get_nodes(parent_ids | child_ids | weights.keys())
        order = _document_order
        return NodeView(
            node=found,
            parents=sorted((related[i] for i in parent_ids if i in related), key=order),
            children=sorted((related[i] for i in child_ids if i in related), key=order),
            neighbours=sorted(
                ((related[i], w) for i, w in weights.items() if i in related),
                key=lambda pair: (-pair[1], pair[0].id),
            ),
            clusters=sorted({r.label for r in store.replicas_of([node_id]).get(node_id, [])}),
        )

    def top_level(self) -> tuple[int, list[Node]]:
        """The highest level and its nodes in document order: the covering top level
        of summaries, from which every chunk is reachable (the chunks while there are no
        summaries yet; level 0 and no nodes for an empty memory)."""
        level = max(self.store.levels(), default=0)
        return level, sorted(self.store.nodes_at_level(level), key=_document_order)

    def ids_like(self, node_id: str, limit: int = 5) -> list[str]:
        """Ids to suggest for a node id that is not in the memory: those it begins,
        else a few of the same level (summary ids have gaps, chunk ids carry a hash)."""
        summary = re.match(r"^s(\d{1,4})-", node_id)  # no level has more digits
        level = int(summary.group(1)) if summary else 0
        ids = sorted(n.id for n in self.store.nodes_at_level(level))
        starting = [i for i in ids if i.startswith(node_id)]
        return (starting or ids)[:limit]


def memories_in(
    store: str | Path | None = None, environment: Environment | None = None
) -> list[str]:
    """The names of the memories a store holds (an error if the store does not exist)."""
    env = environment or Environment.from_env()
    graph = open_store(store if store is not None else env.store, DEFAULT_MEMORY, env, create=False)
    try:
        return graph.memories()
    finally:
        graph.close()


def check_text(text: str, document: str, limits: Limits) -> None:
    """Text given directly, refused as a text file would be: past ``limits.text_chars``
    characters, or with a NUL (binary, not a document)."""
    if len(text) > limits.text_chars:
        raise refusal(
            f"document {document!r}: {len(text):,} characters", "text_chars", limits.text_chars
        )
    if "\x00" in text:
        raise InputError(f"document {document!r}: looks binary (NUL bytes), not a text document")
    surrogate = _SURROGATE.search(text)
    if surrogate is not None:  # no UTF-8 for it: the store could not hold the text
        raise InputError(
            f"document {document!r}: not valid Unicode (a lone surrogate at character "
            f"{surrogate.start():,})"
        )


_SURROGATE = re.compile("[\ud800-\udfff]")


def _documents_like(doc_id: str, known: Sequence[str], limit: int = 10) -> str:
    """The memory's documents, for an id it does not hold: all of them when few, else
    those like it (the closest spellings, or those sharing its start)."""
    if not known:
        return "it holds no documents"
    if len(known) <= limit:
        return f"its documents are {', '.join(known)}"
    like = [d for d in known if d.startswith(doc_id) or doc_id in d][:limit]
    like = like or difflib.get_close_matches(doc_id, known, n=limit, cutoff=0.5)
    if not like:
        return f"it holds {len(known)} documents (cam stats lists them)"
    return f"documents like it: {', '.join(like)} (of {len(known)}; cam stats lists them)"


def _answer_citations(
    spans: Sequence[QuotedSpan], passages: Sequence[Sequence[Node]], evidence: Sequence[Evidence]
) -> list[AnswerCitation]:
    """The answerer's (passage, span) quotes as (evidence node, span in its text) and,
    for a chunk, the span in its document: a passage of adjacent chunks is their texts
    joined by a blank line, and evidence lists the passages' nodes in order."""
    cited = []
    for passage, start, end in spans:
        first = sum(len(nodes) for nodes in passages[:passage])
        offset = 0
        for i, node in enumerate(passages[passage]):
            if start < offset + len(node.text):
                local = max(start - offset, 0)
                local_end = min(end - offset, len(node.text))
                cited.append(_answer_citation(first + i, local, local_end, evidence[first + i]))
                break
            offset += len(node.text) + len("\n\n")
    return cited


def _answer_citation(index: int, start: int, end: int, where: Evidence) -> AnswerCitation:
    if where.start_char is None:  # a summary or an adapter's page: the node is the place
        return AnswerCitation(index, start, end, citation=where.citation)
    # A PDF chunk's pages: the sentence is on one of them.
    place = Citation(where.document, where.start_char + start, where.start_char + end, where.pages)
    return AnswerCitation(
        index, start, end, where.document, place.start_char, place.end_char, place.label()
    )


def _document_order(node: Node) -> tuple[str, float, str]:
    return (node.doc_id or "", node.position or 0.0, node.id)
