"""The work of ``cam mcp``'s tools on one memory, on plain values and without the MCP SDK.

``MemoryTools`` holds one memory of one store open, with its embedder warm, and does
what each tool asks through the public ``Memory`` API only, as the CLI does. Every
method returns JSON-ready data or raises ``CamError`` with a one-line message;
``cam_engine.serve.mcp`` publishes the methods as MCP tools.

The memory and its embedding model are loaded in a background thread (``start``), so
a server answers its client's handshake at once; the model embeds a warm-up text (and a
memory with chunks answers a warm-up question) so that the first real question is as
fast as the next.

An MCP server runs each call in a worker thread of its own. Ingests and deletions run
one at a time, on one memory, under one lock. Reads (ask, search, show_node, stats, the
top level) do not wait for them where the store isolates snapshots (SQLite): each runs
on a memory of its own from a ``ReaderPool``, inside one read transaction, and sees the
batches committed before it began, none of the one being written. On Neo4j, whose reads are
statement by statement, every reading call still takes the lock, so that a question
never mixes two states of the memory. A strategy that writes (memagent) takes it too.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from cam_engine.config import DEFAULT_EMBED_MODEL, Environment, validate_memory_name
from cam_engine.embed import Embedder, load_embedder
from cam_engine.engine.reports import BatchReport, IngestReport
from cam_engine.errors import CamError, ConfigError, InputError, NotFoundError
from cam_engine.llm.base import Answerer, ChatModel, Selector, Summarizer
from cam_engine.llm.extractive import ExtractiveSummarizer
from cam_engine.memory import Memory, check_text, memories_in
from cam_engine.retrieval.strategies import DEFAULT, strategy_named
from cam_engine.serve.readers import ReaderPool, SerialEmbedder
from cam_engine.sources import AllowedRoots, check_document_id, folder_files

logger = logging.getLogger(__name__)

T = TypeVar("T")
WARM_UP_TEXT = "warm-up"
READERS = 4  # memories open for reading at once (each one SQLite connection)


class MemoryTools:
    """One memory of one store, held open with its embedder, and the work of each tool.

    Every method returns JSON-ready data or raises ``CamError`` with a one-line message.
    A memory that does not exist yet is created by the first ingest with the default
    settings (and ``CAM_EMBED_MODEL``), as ``cam ingest`` does; until then the reading
    tools say so. ``allow`` lists the files and folders ``ingest_file`` may read (with
    every symlink resolved); none by default. ``readers``: reading calls served at once
    beside an ingest (module docstring).
    """

    def __init__(
        self,
        store: str | None,
        memory: str | None,
        *,
        environment: Environment,
        summarizer: Summarizer | None = None,
        chat: ChatModel | None = None,
        selector: Selector | None = None,
        answerer: Answerer | None = None,
        allow: Sequence[str | Path] = (),
        llm_concurrency: int = 4,
        readers: int = READERS,
    ) -> None:
        self.env = environment
        self.store = str(store if store is not None else environment.store)
        self.name = validate_memory_name(memory or environment.memory)
        self.allow = AllowedRoots(tuple(_root(path) for path in allow))
        self.summarizer = summarizer or ExtractiveSummarizer()
        self.chat, self.selector, self.answerer = chat, selector, answerer
        self.llm_concurrency = llm_concurrency
        self._memory: Memory | None = None  # the writer: ingests, and reads on Neo4j
        self._embedder: Embedder | None = None  # the writer's
        self._reading_embedder: Embedder | None = None  # the readers'
        self._readers = ReaderPool(self._open_reader, readers)
        self._failure: CamError | None = None
        self._ready = threading.Event()
        self._lock = threading.Lock()  # one ingest at a time (on Neo4j: one call)

    # --- life cycle ------------------------------------------------------------------------
    def start(self) -> None:
        """Load the memory and warm its embedder in a background thread."""
        threading.Thread(target=self.load, name="cam-mcp-load", daemon=True).start()

    def load(self) -> None:
        """Open the memory (if it exists) and warm up; tools wait until this is done."""
        started = time.perf_counter()
        try:
            try:
                self._memory = self._open(create=False)
                self._embedder = self._memory.embedder
            except NotFoundError:
                model = self.env.embed_model or DEFAULT_EMBED_MODEL
                self._embedder = self._load_embedder(model)
            self._embedder.embed([WARM_UP_TEXT])
            if self._memory is None or self._memory.isolated_snapshots:
                reading = SerialEmbedder(self._load_embedder(self._embedder.name))
                reading.embed([WARM_UP_TEXT])
                self._reading_embedder = reading
            if self._memory is not None and self._memory.count_chunks():
                self._warm_up()
            logger.info(
                "cam mcp: memory %r ready in %.1f s", self.name, time.perf_counter() - started
            )
        except CamError as exc:
            self._failure = exc
            logger.error("cam mcp: %s", exc)
        except Exception as exc:
            self._failure = CamError(f"the memory could not be loaded: {describe(exc)}")
            logger.exception("cam mcp: loading memory %r failed", self.name)
        finally:
            self._ready.set()

    def _warm_up(self) -> None:
        """Ask once, offline, untimed: a reading memory is opened and its store loads
        its vectors and caches now."""
        try:
            self._read_now(lambda memory: memory.ask(WARM_UP_TEXT))
        except Exception:  # a failed warm-up costs the first ask its speed, nothing else
            logger.warning("cam mcp: the warm-up question failed", exc_info=True)

    def close(self, *, timeout: float | None = None) -> bool:
        """Close the memory; False, leaving it open, if an ingest still holds it after
        ``timeout`` seconds (the process is ending: serve/stopping.py)."""
        self._readers.close()
        if not self._lock.acquire(timeout=-1 if timeout is None else timeout):
            return False
        try:
            if self._memory is not None:
                self._memory.close()
                self._memory = None
        finally:
            self._lock.release()
        return True

    def _load_embedder(self, model: str) -> Embedder:
        dim = self._memory.settings.embed_dim if self._memory is not None else None
        env = self.env
        return load_embedder(
            model,
            device=env.embed_device,
            batch_size=env.embed_batch_size,
            environment=env,
            dim=dim,
        )

    def _open(self, *, create: bool) -> Memory:
        return Memory.open(
            self.store,
            self.name,
            embedder=self._embedder,
            summarizer=self.summarizer,
            environment=self.env,
            llm_concurrency=self.llm_concurrency,
            create=create,
        )

    def _open_reader(self) -> Memory:
        try:
            return Memory.open(
                self.store,
                self.name,
                embedder=self._reading_embedder,
                summarizer=self.summarizer,
                environment=self.env,
                create=False,
            )
        except NotFoundError:  # the first ingest has not committed a batch yet
            raise self._not_yet() from None

    def _loaded(self) -> None:
        self._ready.wait()
        if self._failure is not None:
            raise self._failure.with_traceback(None)  # the same error for every call

    def _locked(self, work: Callable[[], T]) -> T:
        self._loaded()
        with self._lock:
            return work()

    def _read(self, work: Callable[[Memory], T]) -> T:
        self._loaded()
        return self._read_now(work)

    def _read_now(self, work: Callable[[Memory], T]) -> T:
        """``work`` on one of the pool's memories, in one read snapshot, where the
        store isolates snapshots; on the writer's memory under the lock otherwise."""
        writer = self._existing()
        if not writer.isolated_snapshots or self._reading_embedder is None:
            with self._lock:
                return work(self._existing())  # closed meanwhile: the error says so
        with self._readers.lease() as memory:
            return memory.read_snapshot(lambda: work(memory))

    def _not_yet(self) -> NotFoundError:
        return NotFoundError(
            f"memory {self.name!r} does not exist yet in {self.store}: the first "
            "ingest_text or ingest_file creates it"
        )

    def _existing(self) -> Memory:
        if self._memory is None:
            raise self._not_yet()
        return self._memory

    def _with_chunks(self, memory: Memory) -> Memory:
        if memory.count_chunks() == 0:
            raise NotFoundError(
                f"memory {self.name!r} holds no documents yet: add some with ingest_text "
                "or ingest_file"
            )
        return memory

    def _writable(self) -> Memory:
        if self._memory is None:
            self._memory = self._open(create=True)
        return self._memory

    # --- tools -----------------------------------------------------------------------------
    def ingest_text(self, text: str, document: str, *, batch_size: int = 64) -> dict[str, Any]:
        check_document_id(document)  # these before waiting for the ingest lock
        check_text(text, document, self.env.limits)

        def work() -> dict[str, Any]:
            memory = self._writable()
            started = time.perf_counter()
            report = memory.ingest_text(text, document, batch_size=batch_size)
            return _ingest_report(memory, report, time.perf_counter() - started)

        return self._locked(work)

    def ingest_file(
        self,
        path: str,
        *,
        document: str | None = None,
        document_prefix: str | None = None,
        batch_size: int = 64,
        encoding: str = "utf-8",
    ) -> dict[str, Any]:
        target = self.allowed_path(path)
        if not target.exists():
            raise InputError(f"{path}: no such file or folder")
        if document is not None and target.is_dir():
            raise InputError(
                f"{path}: a folder holds several documents; give no document id (a "
                "document_prefix names them all)"
            )

        def work() -> dict[str, Any]:
            memory = self._writable()
            started = time.perf_counter()
            # The resolved path, never the raw one: "-" would read the server's stdin.
            # The check above was on names, before the wait for the lock; each file is
            # checked again as it is opened, on what was opened (sources.open_document).
            report = memory.ingest(
                [target],
                batch_size=batch_size,
                document=document,
                document_prefix=document_prefix,
                encoding=encoding,
                allow=self.allow,
            )
            if report.errors and not report.batches:
                raise InputError("; ".join(e.message for e in report.errors))
            return _ingest_report(memory, report, time.perf_counter() - started)

        return self._locked(work)

    def delete_document(self, document: str) -> dict[str, Any]:
        """Delete one document (``Memory.delete_documents``), under the ingest lock."""
        if not document.strip():
            raise InputError("the document id is empty: name the document")

        def work() -> dict[str, Any]:
            memory = self._existing()
            started = time.perf_counter()
            (report,) = memory.delete_documents([document])
            return _delete_report(memory, report, time.perf_counter() - started)

        return self._locked(work)

    def allowed_path(self, path: str) -> Path:
        """``path`` with its symlinks resolved, if it lies under an allowed root (for a
        folder: every file ingest would read from it); ``InputError`` otherwise."""
        if not self.allow.roots:
            raise InputError(
                "ingest_file may read no files: start the server with `cam mcp --allow "
                "FOLDER` to let it read files under FOLDER, or send the text with ingest_text"
            )
        if not path.strip():
            raise InputError("the path is empty: give a file or a folder")
        if "\x00" in path:
            raise InputError(f"{path!r}: a path cannot hold a NUL character")
        try:
            target = Path(path).expanduser().resolve()
        except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (3.11, 3.12)
            raise InputError(f"{path}: cannot resolve its links ({exc})") from exc
        roots = str(self.allow)
        if not self.allow.permits(target):
            raise InputError(
                f"{path}: outside the folders this server may read ({roots}); use a path "
                "under one of them, or restart the server with another --allow"
            )
        try:
            if target.is_dir():
                for file in folder_files(target, self.env.limits.folder_files):
                    if not self.allow.permits(file.resolve()):
                        raise InputError(
                            f"{path}: {file.relative_to(target)} links outside the folders "
                            f"this server may read ({roots})"
                        )
        except OSError as exc:  # a name too long, a folder that cannot be listed
            raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from exc
        except RecursionError:  # pathlib walks a tree recursively
            raise InputError(f"{path}: the folder is nested too deep to walk") from None
        return target

    def ask(
        self,
        question: str,
        *,
        strategy: str = DEFAULT,
        top_k: int = 10,
        max_turns: int = 5,
        documents: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        spec = strategy_named(strategy)
        self.env.limits.check_query(question)

        def work(memory: Memory) -> dict[str, Any]:
            self._with_chunks(memory)
            if spec.view is not None and spec.view not in memory.stats().get("views", {}):
                raise NotFoundError(
                    f"memory {self.name!r} has no {spec.view} view: build it with "
                    f"`cam ingest --view {spec.view}`, or ask with another strategy"
                )
            result = memory.ask(
                question,
                strategy=strategy,
                top_k=top_k,
                max_turns=max_turns,
                selector=self.selector,
                answerer=self.answerer,
                chat=self.chat,
                documents=documents,
            )
            return _plain(result.to_dict())

        if spec.writes:  # it writes as it reads: with the writer, never beside it
            return self._locked(lambda: work(self._existing()))
        return self._read(work)

    def search(self, query: str, *, top_k: int = 10) -> dict[str, Any]:
        if not query.strip():
            raise InputError("the query is empty")
        self.env.limits.check_query(query, "the query")

        def work(memory: Memory) -> dict[str, Any]:
            hits = self._with_chunks(memory).locate(query, top_k)
            nodes = [
                {
                    "id": node.id,
                    "level": node.level,
                    "kind": node.kind,
                    "document": node.doc_id,
                    "position": node.position,
                    "score": round(score, 4),
                    "text": node.text,
                }
                for node, score in hits
            ]
            return _plain({"query": query, "nodes": nodes})

        return self._read(work)

    def show_node(self, node_id: str) -> dict[str, Any]:
        def work(memory: Memory) -> dict[str, Any]:
            view = memory.node(node_id)
            if view is None:
                like = memory.ids_like(node_id)
                hint = f"; ids like it: {', '.join(like)}" if like else ""
                raise NotFoundError(f"no node {node_id!r} in memory {self.name!r}{hint}")
            return _plain(view.to_dict())

        return self._read(work)

    def stats(self) -> dict[str, Any]:
        return self._read(lambda memory: _plain(memory.stats()))

    def memories(self) -> dict[str, Any]:
        try:
            names = memories_in(self.store, self.env)
        except NotFoundError:  # no store yet: the first ingest creates it
            names = []
        return {"store": self.store, "memories": names, "serving": self.name}

    def top(self, name: str) -> dict[str, Any]:
        """The top level of the memory served: ids and texts of its nodes."""
        if name != self.name:
            raise NotFoundError(
                f"this server holds memory {self.name!r}, not {name!r}: start another "
                f"`cam mcp --memory {name}` to serve it"
            )

        def work(memory: Memory) -> dict[str, Any]:
            level, nodes = self._with_chunks(memory).top_level()
            return _plain(
                {
                    "memory": self.name,
                    "level": level,
                    "nodes": [
                        {"id": n.id, "document": n.doc_id, "position": n.position, "text": n.text}
                        for n in nodes
                    ],
                }
            )

        return self._read(work)


def _root(path: str | Path) -> Path:
    resolved = Path(path).expanduser().resolve()
    if not resolved.exists():
        raise ConfigError(f"--allow {path}: no such file or folder")
    return resolved


def _ingest_report(memory: Memory, report: IngestReport, seconds: float) -> dict[str, Any]:
    """The run's figures (chunks added, kept and removed, summaries written; per
    document too, with its version now) and each batch's report."""
    versions = {d.id: d.version for d in memory.documents()}
    return _plain(
        {
            "memory": memory.name,
            "store": memory.location,
            **report.summary(versions),
            "summarizer": memory.summarizer.backend,
            "seconds": round(seconds, 3),
            "batches": [b.to_dict() for b in report.batches],
        }
    )


def _delete_report(memory: Memory, report: BatchReport, seconds: float) -> dict[str, Any]:
    return _plain(
        {
            "memory": memory.name,
            "store": memory.location,
            "document": report.document,
            "chunks_removed": report.chunks_removed,
            "summaries_written": report.summaries_written,
            "summaries_removed": report.summaries_removed,
            "llm_calls": report.usage.calls,
            "summarizer": memory.summarizer.backend,
            "seconds": round(seconds, 3),
            "report": report.to_dict(),
        }
    )


def _plain(data: Any) -> Any:
    """JSON-ready data: numpy scalars become numbers, anything else unknown text."""
    return json.loads(json.dumps(data, default=_jsonable))


def _jsonable(value: Any) -> Any:
    item = getattr(value, "item", None)  # numpy scalars
    return item() if callable(item) else str(value)


def describe(exc: BaseException) -> str:
    """An unexpected exception in one line: its type and (the start of) its message."""
    text = one_line(str(exc))
    if len(text) > 300:
        text = text[:299] + "…"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def one_line(message: str) -> str:
    return " ".join(line.strip() for line in message.splitlines() if line.strip())
