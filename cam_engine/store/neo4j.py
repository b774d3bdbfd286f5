"""The Neo4j store: the same ``GraphStore`` verbs, answered by the Cypher files in
``cypher/`` (one parameterized query per verb, sets of ids passed as lists).

Graph model (docs/graph-model.md): ``(:Chunk:MemoryNode)`` and ``(:Summary:MemoryNode)``
with ``level``, ``text`` and ``embedding``; ``[:SIMILAR]`` edges at level 0 and
``[:LINKED]`` above; ``[:SUMMARIZES]`` from a summary to each member; ``(:Replica)``
nodes ``[:REPLICA_OF]`` a memory node, carrying the cluster ``label``; ``[:NEXT]``
between consecutive chunks and ``(:Document)-[:HAS_CHUNK]->`` for browsing. Every
node carries ``memory``, so one database holds several memories.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from cam_engine.config import (
    Environment,
    has_credentials,
    redact_credentials,
    validate_memory_name,
)
from cam_engine.errors import ConfigError, StoreError, StoreUnavailableError
from cam_engine.extras import NEO4J, require_extra
from cam_engine.names import chunk_names
from cam_engine.store.ann import expansion_for
from cam_engine.store.base import DocumentRecord, T, cluster_shape
from cam_engine.store.change import AppliesChanges
from cam_engine.store.cypher import check_identifier, is_read_only, load_query, statements
from cam_engine.store.keywords import keyword_terms, search_terms
from cam_engine.store.structure import GENERATION, StructureRows, text_hash
from cam_engine.types import CHUNK, MEMO, MEMORY_STATE, PAGE, Edge, Node, Replica, ViewNode

logger = logging.getLogger(__name__)


def vector_index(dimensions: int) -> str:
    return check_identifier(f"cam_embedding_{dimensions}", "index name")


def vector_label(dimensions: int) -> str:
    return check_identifier(f"Vec{dimensions}", "label")


# The vector index is shared by every memory in the database, so a top-k query asks it
# for more hits than k and filters them; this many per requested hit, at least.
_OVERSAMPLE = 4
# Chunk vectors a batch holds in memory to search exactly (read_structure); past this
# many, each batch asks the vector index instead (one query per batch).
HELD_VECTORS_MAX = 100_000

# View kinds as Browser sees them: a label per kind and the type of its chunk links.
_VIEW_LABELS = {PAGE: "Page", MEMO: "Memo", MEMORY_STATE: "MemoryState"}
_VIEW_LINKS = {PAGE: "COVERS", MEMO: "COVERS", MEMORY_STATE: "READ"}
_VIEW_RESERVED = {"id", "memory", "view", "kind", "grp", "seq", "doc_id", "text", "props"}
_MIN_CANDIDATES = 100
# A read beside a writer can fail with a transient error (Transaction.Outdated) and a
# server restart drops connections: the driver runs reads again for up to this long.
# Its default, 30 s, left `cam ask` silent for half a minute before saying a server was
# gone.
READ_RETRY_SECONDS = 10.0
# read_snapshot: how many times reads are run again while writers keep committing.
SNAPSHOT_ATTEMPTS = 20
# Nodes given their text_hash per transaction when a memory written before nodes had
# one is filled in.
TEXT_HASH_BATCH = 5000


# What to do when no server answers (the repository's scripts; README, "Neo4j").
START_A_SERVER = (
    "is a server running there? Start one with docker/neo4j-local start, or "
    "docker compose -f docker/docker-compose.yml up"
)


class Neo4jStore(AppliesChanges):
    # READ COMMITTED, statement by statement: the reads of one question may straddle a
    # writer's commit (docs/reliability.md, "Concurrent ingests").
    isolated_snapshots = False

    def __init__(self, driver: Any, uri: str, memory: str, database: str | None) -> None:
        self._driver = driver
        self._uri = uri
        self._memory = validate_memory_name(memory)
        self._database = database
        self._tx: Any = None
        self._session: Any = None
        self._prepared: set[int] = set()  # embedding sizes whose schema was ensured
        self._indexes: set[str] = set()  # vector indexes known to exist
        self._text_hashes_filled = False  # every node of the memory has its text_hash
        # Queries sent, per Cypher file: calls and seconds (for benchmarks and profiling).
        self.query_calls: Counter[str] = Counter()
        # typeshed types Counter values as int; these are float seconds, which Counter
        # handles at runtime (bench/stores.py subtracts two of them).
        self.query_seconds: Counter[str] = Counter()

    @classmethod
    def open_location(
        cls, location: str, memory: str, environment: Environment | None, *, create: bool
    ) -> Neo4jStore:
        """The store at a bolt:// or neo4j:// URI; the user, password and database come
        from ``environment`` (CAM_NEO4J_USER, CAM_NEO4J_PASSWORD, CAM_NEO4J_DATABASE).
        ``create`` changes nothing: a server holds many memories, made when written."""
        env = environment or Environment.from_env()
        return cls.connect(
            location,
            memory,
            user=env.neo4j_user,
            password=env.neo4j_password,
            database=env.neo4j_database,
        )

    @classmethod
    def connect(
        cls,
        uri: str,
        memory: str,
        *,
        user: str = "neo4j",
        password: str | None = None,
        database: str | None = None,
    ) -> Neo4jStore:
        """Connect and check that the server answers (no password: auth disabled).

        A URI holding a user name or password is refused without showing them (the
        driver refuses it too, printing it whole): they go in ``user`` and ``password``."""
        require_extra("neo4j", NEO4J, "the Neo4j store")
        import neo4j

        if has_credentials(uri):
            raise ConfigError(
                f"Neo4j URI {redact_credentials(uri)} holds a user name or password, which "
                "a URI cannot carry: give them in CAM_NEO4J_USER and CAM_NEO4J_PASSWORD "
                "and the URI without them (bolt://HOST:PORT)"
            )

        auth = (user, password) if password else None
        try:
            # Server notifications (deprecations, "label does not exist yet" on an empty
            # database) would flood stderr; errors still raise.
            driver = neo4j.GraphDatabase.driver(
                uri,
                auth=auth,
                notifications_min_severity="OFF",
                max_transaction_retry_time=READ_RETRY_SECONDS,
            )
            driver.verify_connectivity()
            if database is not None:  # a mistyped name would fail later, far less clearly
                driver.execute_query("RETURN 1", database_=database)
        except neo4j.exceptions.AuthError as exc:
            raise StoreError(f"Neo4j at {uri} refused the credentials (user {user!r})") from exc
        except neo4j.exceptions.ClientError as exc:
            if exc.code != "Neo.ClientError.Database.DatabaseNotFound":
                raise StoreError(f"cannot use Neo4j at {uri}: {_first_line(exc)}") from exc
            raise StoreError(
                f"Neo4j at {uri} has no database {database!r} (CAM_NEO4J_DATABASE); Community "
                "edition serves only 'neo4j'"
            ) from exc
        except neo4j.exceptions.ServiceUnavailable as exc:
            raise StoreError(
                f"cannot reach Neo4j at {uri}: {_first_line(exc)}; {START_A_SERVER}"
            ) from exc
        except (neo4j.exceptions.DriverError, neo4j.exceptions.Neo4jError, ValueError) as exc:
            raise StoreError(f"cannot reach Neo4j at {uri}: {_first_line(exc)}") from exc
        return cls(driver, uri, memory, database)

    # --- plumbing ------------------------------------------------------------------------
    @property
    def location(self) -> str:
        return self._uri + (f" (database {self._database})" if self._database else "")

    @property
    def memory(self) -> str:
        return self._memory

    @property
    def in_transaction(self) -> bool:
        return self._tx is not None

    def close(self) -> None:
        self._driver.close()

    def _run(self, query_name: str, **params: Any) -> list[dict[str, Any]]:
        import neo4j

        params.setdefault("memory", self._memory)
        query = load_query(query_name)
        self.query_calls[query_name] += 1
        start = time.perf_counter()
        try:
            if self._tx is not None:
                return _records(self._tx, query, params)
            with self._driver.session(database=self._database) as session:
                if is_read_only(query_name):
                    # A managed read transaction: the driver retries transient errors
                    # such as an outdated read beside a writer's commit.
                    records: list[dict[str, Any]] = session.execute_read(_records, query, params)
                    return records
                # Writes outside a batch run once: retrying one whose commit was sent
                # but not acknowledged could apply it twice.
                return _records(session, query, params)
        except _unavailable() as exc:
            raise StoreUnavailableError(f"lost Neo4j at {self._uri}: {_first_line(exc)}") from exc
        except (neo4j.exceptions.DriverError, neo4j.exceptions.Neo4jError) as exc:
            raise StoreError(f"Neo4j at {self._uri}: {query_name}: {_first_line(exc)}") from exc
        finally:
            elapsed = time.perf_counter() - start
            # float seconds in a Counter: see __init__
            self.query_seconds[query_name] += elapsed  # type: ignore[assignment]

    def _rows(self, query_name: str, **params: Any) -> list[Any]:
        """The rows of a query that packs them into one record (``collect([...]) AS
        rows``, or ``collect(value) AS rows`` where no value can be null). The driver's
        cost is per record (about 20 µs), so thousands of rows read as one record take a
        fraction of the time; a list keeps nulls, which ``collect`` of a bare value would
        drop."""
        records = self._run(query_name, **params)
        return records[0]["rows"] if records else []

    @contextmanager
    def transaction(self) -> Iterator[None]:
        import neo4j

        if self._tx is not None:
            raise StoreError("nested transactions are not supported")
        try:
            self._session = self._driver.session(database=self._database)
            self._tx = self._session.begin_transaction()
        except (neo4j.exceptions.DriverError, neo4j.exceptions.Neo4jError) as exc:
            self._close_session()
            error = StoreUnavailableError if isinstance(exc, _unavailable()) else StoreError
            raise error(f"cannot reach Neo4j at {self._uri}: {_first_line(exc)}") from exc
        try:
            yield
        except BaseException:
            try:
                self._tx.rollback()
            except (neo4j.exceptions.DriverError, neo4j.exceptions.Neo4jError):
                logger.warning("rollback failed; the server discards the open transaction")
            raise
        else:
            try:
                self._tx.commit()
            except _unavailable() as exc:
                # The commit may or may not have reached the server: stored chunks are
                # skipped when the work is run again, so either way it resumes.
                raise StoreUnavailableError(
                    f"lost Neo4j at {self._uri} while committing a batch, which may or may "
                    f"not have been applied (the resume finds out): {_first_line(exc)}"
                ) from exc
            except (neo4j.exceptions.DriverError, neo4j.exceptions.Neo4jError) as exc:
                raise StoreError(
                    f"Neo4j at {self._uri} did not commit the batch: {_first_line(exc)}"
                ) from exc
        finally:
            self._close_session()

    def read_snapshot(self, read: Callable[[], T]) -> T:
        """``read()`` as of one commit, optimistically: Neo4j reads are READ COMMITTED
        statement by statement, and no multi-statement snapshot exists.

        Every committed batch raises the memory's generation, but a commit becomes
        visible in steps: Neo4j applies a transaction's store updates (the counter's
        new value, a document's chunk count) before its index updates (the new nodes a
        ``MATCH`` finds), so one read between two equal generations can still see half
        a batch. ``read()`` therefore runs until two runs in a row return the same with
        the generation unchanged around them. Measured beside an ingest committing a
        batch every few ms: 0 of 374 ``cam stats`` reads mixed two batches, against 52
        of 550 with the generation check alone (docs/reliability.md)."""
        if self._tx is not None:
            return read()  # our own transaction holds the generation's write lock
        before, result = self._generation(), read()
        for _ in range(SNAPSHOT_ATTEMPTS):
            again = read()
            after = self._generation()
            if after == before and again == result:
                return result
            before, result = after, again
        raise StoreError(
            f"Neo4j at {self._uri}: memory {self._memory!r} changed during each of "
            f"{SNAPSHOT_ATTEMPTS} reads; try again"
        )

    def _generation(self) -> int:
        return int(dict(self._rows("counters")).get(GENERATION, 0))

    def _close_session(self) -> None:
        if self._session is not None:
            self._session.close()
        self._session, self._tx = None, None

    def prepare(self, dimensions: int) -> None:
        """Constraints and indexes, created if missing. Schema changes cannot share a
        transaction with data, so this runs before a batch's transaction opens."""
        if dimensions in self._prepared:
            return
        if self._tx is not None:
            raise StoreError("the schema must be prepared before a transaction")
        import neo4j

        params = {"vector_index": vector_index(dimensions), "dimensions": dimensions}
        try:
            with self._driver.session(database=self._database) as session:
                for statement in statements("schema"):
                    # The one identifier that cannot be a parameter, checked by vector_label().
                    statement = statement.replace("{vector_label}", vector_label(dimensions))
                    session.run(statement, params).consume()
                session.run(load_query("await_indexes")).consume()
        except _unavailable() as exc:
            raise StoreUnavailableError(f"lost Neo4j at {self._uri}: {_first_line(exc)}") from exc
        except (neo4j.exceptions.DriverError, neo4j.exceptions.Neo4jError) as exc:
            raise StoreError(f"Neo4j at {self._uri}: schema: {_first_line(exc)}") from exc
        self._prepared.add(dimensions)

    # --- memory-wide state --------------------------------------------------------------
    def load_settings(self) -> dict[str, Any] | None:
        rows = self._run("load_settings")
        return json.loads(rows[0]["settings"]) if rows and rows[0]["settings"] else None

    def memories(self) -> list[str]:
        return [row["name"] for row in self._run("memories")]

    def save_settings(self, settings: Mapping[str, Any]) -> None:
        self._run("save_settings", settings=json.dumps(dict(settings), sort_keys=True))

    def clear(self, keep_chunks: bool) -> None:
        self._run("clear_derived_tx" if keep_chunks else "clear_all")

    # --- batches ---------------------------------------------------------------------------
    def lock_generation(self) -> int:
        if self._tx is None:
            raise StoreError("lock_generation() needs an open transaction")
        return int(self._run("lock_generation")[0]["value"])

    def read_structure(self) -> StructureRows:
        # The chunk vectors are held for an exact search per batch with no round trip,
        # until they would cost more memory than a vector-index query per batch costs
        # time (HELD_VECTORS_MAX: 1.5 KB each at 384 dimensions).
        held = self.count_nodes(0) <= HELD_VECTORS_MAX
        return StructureRows(
            nodes=[_node(row) for row in self._rows("structure_nodes")],
            edges=[(a, b, float(score)) for a, b, score in self._rows("structure_edges")],
            replicas=[_replica(row) for row in self._rows("structure_replicas")],
            members=[(s, m) for s, m in self._rows("structure_members")],
            counters={name: int(value) for name, value in self._rows("counters")},
            chunk_vectors={
                node_id: np.frombuffer(blob, dtype=np.float32)
                for node_id, blob in self._rows("structure_vectors")
                if blob is not None
            }
            if held
            else None,
            documents=self.documents(),
            settings=self.load_settings(),
        )

    def set_counters(self, counters: Mapping[str, int]) -> None:
        rows = [{"name": name, "value": value} for name, value in sorted(counters.items())]
        if rows:
            self._run("set_counters", rows=rows)

    # --- documents -------------------------------------------------------------------------
    def get_document(self, doc_id: str) -> DocumentRecord | None:
        rows = self._run("get_document", id=doc_id)
        return DocumentRecord(**rows[0]) if rows else None

    def upsert_document(self, document: DocumentRecord) -> None:
        self._run(
            "upsert_document",
            id=document.id,
            source=document.source,
            sha256=document.sha256,
            chunks=document.chunks,
            total=document.total,
            text_sha256=document.text_sha256,
            version=document.version,
            updated_at=document.updated_at,
        )

    def documents(self) -> list[DocumentRecord]:
        return [DocumentRecord(**row) for row in self._run("documents")]

    def delete_documents(self, ids: Iterable[str]) -> None:
        self._run("delete_documents", ids=sorted(set(ids)))

    def delete_document_views(self, ids: Iterable[str]) -> None:
        self._run("delete_document_views", ids=sorted(set(ids)))

    # --- nodes ---------------------------------------------------------------------------
    def existing_ids(self, ids: Iterable[str]) -> set[str]:
        return set(self._rows("existing_ids", ids=sorted(set(ids))))

    def upsert_nodes(self, nodes: Sequence[Node]) -> None:
        rows: list[dict[str, Any]] = [
            {
                "id": n.id,
                "level": n.level,
                "kind": n.kind,
                "doc_id": n.doc_id,
                "position": n.position,
                "text": n.text,
                "text_hash": text_hash(n.text).hex(),
                # tolist(): Python floats in one C call, about 4x faster than a comprehension
                "embedding": None if n.embedding is None else n.embedding.tolist(),
                "vector_f32": None
                if n.embedding is None
                else np.asarray(n.embedding, dtype=np.float32).tobytes(),
                "props": json.dumps(n.props, sort_keys=True),
                "backend": n.props.get("backend"),
            }
            for n in nodes
        ]
        sizes = {len(r["embedding"]) for r in rows if r["embedding"] is not None}
        if len(sizes) > 1 or (not sizes and rows):
            raise StoreError("memory nodes need embeddings, all of one size")
        label = vector_label(sizes.pop()) if sizes else None
        chunks = [r for r in rows if r["kind"] == CHUNK]
        summaries = [r for r in rows if r["kind"] != CHUNK]
        if chunks:
            self._run("upsert_chunks", rows=chunks, vector_label=label)
            self._write_mentions([n for n in nodes if n.kind == CHUNK])
        if summaries:
            self._run("upsert_summaries", rows=summaries, vector_label=label)

    def place_chunks(self, chunks: Sequence[Node]) -> None:
        rows = [
            {
                "id": c.id,
                "position": c.position,
                "text": c.text,
                "text_hash": text_hash(c.text).hex(),
                "props": json.dumps(c.props, sort_keys=True),
            }
            for c in chunks
        ]
        if not rows:
            return
        stored = self.get_nodes(c.id for c in chunks)
        self._run("place_chunks", rows=rows)
        # A paragraph break in a new place may change a name (a sentence opens there).
        self._write_mentions([c for c in chunks if c.id in stored and stored[c.id].text != c.text])

    def _write_mentions(self, chunks: Sequence[Node]) -> None:
        """Replace the names these chunks mention with those of their text."""
        rows = [{"id": c.id, "names": list(chunk_names(c))} for c in chunks]
        if rows:
            self._run("write_mentions", rows=rows)

    def delete_nodes(self, ids: Iterable[str]) -> None:
        self._run("delete_nodes", ids=sorted(set(ids)))

    def get_nodes(self, ids: Iterable[str], *, embeddings: bool = False) -> dict[str, Node]:
        rows = self._rows("get_nodes", ids=sorted(set(ids)), embeddings=embeddings)
        # A node another process's batch deleted while this read ran (READ COMMITTED)
        # comes back without its properties: it is gone, as if not found.
        return {row[0]: _node(row) for row in rows if row[1] is not None}

    def nodes_at_level(self, level: int, *, embeddings: bool = False) -> Iterator[Node]:
        for row in self._rows("nodes_at_level", level=level, embeddings=embeddings):
            yield _node(row)

    def chunks_near(self, doc_id: str, positions: Iterable[int]) -> list[Node]:
        rows = self._rows("chunks_near", doc_id=doc_id, positions=sorted(set(positions)))
        return [_node(row) for row in rows]

    def roots_within(self, documents: Sequence[str], *, embeddings: bool = False) -> list[Node]:
        rows = self._rows("roots_within", documents=sorted(set(documents)), embeddings=embeddings)
        return [_node(row) for row in rows]

    def nearest(
        self,
        level: int | None,
        vectors: np.ndarray,
        k: int,
        *,
        documents: Sequence[str] | None = None,
    ) -> list[list[tuple[str, float]]]:
        queries = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
        if documents is not None:
            return self._nearest_within(level, queries, k, documents)
        hits: list[list[tuple[str, float]]] = [[] for _ in range(len(queries))]
        index = vector_index(queries.shape[1])
        if not len(queries) or not self._has_index(index):
            return hits
        # The index holds every memory's nodes of this size: ask for more than k and
        # filter; rows left short are asked again with a wider pool, up to all nodes.
        found: list[list[str]] = [[] for _ in range(len(queries))]
        node_vectors: dict[str, np.ndarray] = {}
        pending = list(range(len(queries)))
        # The index's search considers as many candidates as it is asked for (Lucene's
        # HNSW: its ef is k), so it is asked for at least what the embedded store's own
        # index weighs at this size: at 10^5 chunks of `cam bench scale` recall@10 was
        # 0.893 with 100 candidates, 0.969 with 256 and 0.981 with 512
        # (docs/benchmarks.md, "Scale").
        indexed = self._count_vectors(queries.shape[1])
        candidates = max(_MIN_CANDIDATES, _OVERSAMPLE * k, expansion_for(indexed))
        # Only the best of them are read back and scored again: what the pool was
        # before it grew with the index's expansion, so a batch's reads stay as they were.
        keep = max(_MIN_CANDIDATES, _OVERSAMPLE * k)
        level_size: int | None = None  # counted only if a row comes back short
        while pending:
            record = self._run(
                "nearest",
                vector_index=index,
                level=level,
                vectors=queries[pending].tolist(),
                candidates=candidates,
                keep=keep,
            )[0]
            for row, ids in record["rows"]:
                found[pending[row]] = ids
            # The float32 vectors, for exact scores (``_rescored``).
            node_vectors.update(
                (node_id, np.frombuffer(blob, dtype=np.float32))
                for node_id, blob in record["vectors"]
                if blob is not None
            )
            pending = [i for i in pending if len(found[i]) < k]
            if pending and level is not None:  # short only if the level holds more
                if level_size is None:
                    level_size = self.count_nodes(level)
                pending = [i for i in pending if len(found[i]) < level_size]
            if not pending or candidates >= indexed:
                break
            candidates *= _OVERSAMPLE
        return _rescored(found, node_vectors, queries, k)

    def _nearest_within(
        self, level: int | None, queries: np.ndarray, k: int, documents: Sequence[str]
    ) -> list[list[tuple[str, float]]]:
        """Exact top-k among a scope's nodes: the shared vector index cannot be
        filtered before its cut, and a scope (a document or a few) is small."""
        if not len(queries) or k < 1:
            return [[] for _ in range(len(queries))]
        record = self._run(
            "nearest_within",
            documents=sorted(set(documents)),
            level=level,
            vectors=queries.tolist(),
            k=k,
        )
        found: list[list[str]] = [[] for _ in range(len(queries))]
        if not record:
            return [[] for _ in found]
        for row, ids in record[0]["rows"]:
            found[row] = ids
        node_vectors = {
            node_id: np.frombuffer(blob, dtype=np.float32)
            for node_id, blob in record[0]["vectors"]
            if blob is not None
        }
        return _rescored(found, node_vectors, queries, k)

    def _count_vectors(self, dimensions: int) -> int:
        """The nodes of every memory in the vector index of this size (count_vectors)."""
        import neo4j

        query = load_query("count_vectors").replace("{vector_label}", vector_label(dimensions))
        self.query_calls["count_vectors"] += 1
        runner = self._tx
        try:
            if runner is not None:
                return int(runner.run(query).single()["count"])
            with self._driver.session(database=self._database) as session:
                return int(session.run(query).single()["count"])
        except _unavailable() as exc:
            raise StoreUnavailableError(f"lost Neo4j at {self._uri}: {_first_line(exc)}") from exc
        except (neo4j.exceptions.DriverError, neo4j.exceptions.Neo4jError) as exc:
            raise StoreError(f"Neo4j at {self._uri}: count_vectors: {_first_line(exc)}") from exc

    def _has_index(self, name: str) -> bool:
        if name in self._indexes:
            return True
        with self._driver.session(database=self._database) as session:
            found = session.run(load_query("index_exists"), name=name).data()
        if found:
            self._indexes.add(name)
        return bool(found)

    def levels(self) -> list[int]:
        return [row["level"] for row in self._run("levels")]

    def count_nodes(self, level: int) -> int:
        return int(self._run("count_nodes", level=level)[0]["count"])

    # --- edges -------------------------------------------------------------------------------
    def upsert_edges(self, edges: Sequence[Edge]) -> None:
        if edges:
            # vars(), not dataclasses.asdict(): asdict deep-copies every field
            self._run("upsert_edges", rows=[vars(e) for e in edges])

    def delete_edges(self, keys: Iterable[tuple[str, str]]) -> None:
        pairs = [[a, b] if a < b else [b, a] for a, b in keys]
        if pairs:
            self._run("delete_edges", pairs=pairs)

    def neighbours(self, ids: Iterable[str]) -> dict[str, dict[str, float]]:
        wanted = sorted(set(ids))
        result: dict[str, dict[str, float]] = {i: {} for i in wanted}
        for node_id, other, score in self._rows("neighbours", ids=wanted):
            result[node_id][other] = score
        return result

    def edges_of(self, ids: Iterable[str]) -> list[Edge]:
        return [Edge(*row) for row in self._rows("edges_of", ids=sorted(set(ids)))]

    # --- replicas ------------------------------------------------------------------------------
    def replicas_of(self, node_ids: Iterable[str]) -> dict[str, list[Replica]]:
        result: dict[str, list[Replica]] = {}
        for row in self._rows("replicas_of", ids=sorted(set(node_ids))):
            replica = _replica(row)
            result.setdefault(replica.node_id, []).append(replica)
        return result

    def upsert_replicas(self, replicas: Sequence[Replica]) -> None:
        if replicas:
            self._run(
                "upsert_replicas",
                rows=[
                    {
                        "id": r.id,
                        "node_id": r.node_id,
                        "level": r.level,
                        "label": r.label,
                        "members": sorted(r.members),
                    }
                    for r in replicas
                ],
            )

    def delete_replicas(self, ids: Iterable[str]) -> None:
        wanted = sorted(set(ids))
        if wanted:
            self._run("delete_replicas", ids=wanted)

    # --- hierarchy ------------------------------------------------------------------------------
    def replace_members(self, members: Mapping[str, tuple[int, Iterable[str]]]) -> None:
        # The level is the summary's own: the graph needs no copy of it on the links.
        rows = [{"summary_id": sid, "members": sorted(set(ms))} for sid, (_, ms) in members.items()]
        if rows:
            self._run("set_members", rows=rows)

    def members_of(self, summary_ids: Iterable[str]) -> dict[str, set[str]]:
        result: dict[str, set[str]] = {}
        for summary, member in self._rows("members_of", ids=sorted(set(summary_ids))):
            result.setdefault(summary, set()).add(member)
        return result

    def parents_of(self, node_ids: Iterable[str]) -> dict[str, set[str]]:
        result: dict[str, set[str]] = {}
        for member, summary in self._rows("parents_of", ids=sorted(set(node_ids))):
            result.setdefault(member, set()).add(summary)
        return result

    # --- names (the name graph) -------------------------------------------------------------
    def names_of(self, chunk_ids: Iterable[str]) -> dict[str, list[str]]:
        names: dict[str, list[str]] = {}
        for chunk_id, name in self._rows("names_of", ids=sorted(set(chunk_ids))):
            names.setdefault(chunk_id, []).append(name)
        return {chunk_id: sorted(keys) for chunk_id, keys in names.items()}

    def chunks_naming(
        self, names: Iterable[str], *, max_chunks: int, documents: Sequence[str] | None = None
    ) -> dict[str, list[str]]:
        rows = self._rows(
            "chunks_naming",
            names=sorted(set(names)),
            max_chunks=max_chunks,
            documents=None if documents is None else sorted(set(documents)),
        )
        return {name: list(chunk_ids) for name, chunk_ids in rows}

    # --- adapter views ----------------------------------------------------------------------
    def upsert_view_nodes(self, nodes: Sequence[ViewNode]) -> None:
        rows = [
            {
                "id": n.id,
                "view": n.view,
                "kind": n.kind,
                "grp": n.group,
                "seq": n.seq,
                "doc_id": n.doc_id,
                "text": n.text,
                "props": json.dumps(n.props, sort_keys=True),
                "fields": {k: v for k, v in n.props.items() if k not in _VIEW_RESERVED},
                "vector_f32": None
                if n.embedding is None
                else np.asarray(n.embedding, dtype=np.float32).tobytes(),
                "label": _VIEW_LABELS[n.kind],
                "link": _VIEW_LINKS[n.kind],
                "chunk_ids": list(n.chunk_ids),
            }
            for n in nodes
        ]
        if not rows:
            return
        self._run("upsert_view_nodes", rows=rows)
        groups = sorted({(n.view, n.kind, n.group) for n in nodes})
        self._run(
            "link_view_sequence",
            groups=[{"view": v, "kind": k, "grp": g} for v, k, g in groups],
        )

    def view_nodes(
        self, view: str, kind: str, group: str | None = None, *, embeddings: bool = False
    ) -> list[ViewNode]:
        rows = self._run("view_nodes", view=view, kind=kind, grp=group, embeddings=embeddings)
        return [
            ViewNode(
                id=r["id"],
                view=r["view"],
                kind=r["kind"],
                group=r["grp"],
                seq=r["seq"],
                doc_id=r["doc_id"],
                text=r["text"],
                props=json.loads(r["props"]),
                embedding=None
                if r["vector_f32"] is None
                else np.frombuffer(r["vector_f32"], dtype=np.float32),
                chunk_ids=tuple(r["chunk_ids"]),
            )
            for r in rows
        ]

    def delete_view_nodes(
        self, view: str, kind: str | None = None, group: str | None = None
    ) -> int:
        rows = self._run("delete_view_nodes", view=view, kind=kind, grp=group)
        return int(rows[0]["deleted"]) if rows else 0

    def _view_counts(self) -> dict[str, dict[str, int]]:
        counts: dict[str, dict[str, int]] = {}
        for row in self._run("view_counts"):
            counts.setdefault(row["view"], {})[row["kind"]] = row["nodes"]
        return counts

    def search_text(
        self, level: int | None, query: str, k: int, *, documents: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        terms = search_terms(query)
        if not terms or k < 1:
            return []
        if documents is not None:
            rows = self._run(
                "search_node_text_within",
                documents=sorted(set(documents)),
                level=level,
                query=" ".join(terms),
                k=k,
            )
            return [(r["id"], float(r["score"])) for r in rows]
        rows = self._run(
            "search_node_text",
            level=level,
            query=" ".join(terms),
            candidates=max(_MIN_CANDIDATES, _OVERSAMPLE * k),
            k=k,
        )
        return [(r["id"], float(r["score"])) for r in rows]

    def keyword_search(
        self, view: str, kind: str, query: str, k: int, groups: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """Neo4j's full-text (Lucene) index; the query is reduced to its words (joined
        by spaces: Lucene's OR), so no character of it is read as query syntax."""
        terms = keyword_terms(query)
        if not terms or k < 1:
            return []
        rows = self._run(
            "keyword_search_view",
            view=view,
            kind=kind,
            query=" ".join(terms),
            candidates=max(_MIN_CANDIDATES, _OVERSAMPLE * k),
            k=k,
            groups=None if groups is None else sorted(set(groups)),
        )
        return [(r["id"], float(r["score"])) for r in rows]

    # --- moving a memory (cam export / import) ---------------------------------------------
    def nodes_page(self, after: str, limit: int, *, embeddings: bool = False) -> list[Node]:
        # In the server's order, not re-sorted here: the next page starts after the last.
        rows = self._rows("nodes_page", after=after, limit=limit, embeddings=embeddings)
        return [_node(row) for row in rows]

    def view_nodes_page(self, after: str, limit: int) -> list[ViewNode]:
        return [
            ViewNode(
                id=node_id,
                view=view,
                kind=kind,
                group=grp,
                seq=int(seq),
                doc_id=doc_id,
                text=text,
                props=json.loads(props),
                embedding=None if blob is None else np.frombuffer(blob, dtype=np.float32),
                chunk_ids=tuple(chunk_ids),
            )
            for node_id, view, kind, grp, seq, doc_id, text, props, blob, chunk_ids in self._rows(
                "view_nodes_page", after=after, limit=limit
            )
        ]

    def counters(self) -> dict[str, int]:
        return {name: int(value) for name, value in self._rows("counters")}

    def drop_memory(self) -> None:
        if self._tx is not None:
            raise StoreError("drop_memory() deletes in transactions of its own: none may be open")
        import neo4j

        self.query_calls["drop_memory"] += 1
        try:
            with self._driver.session(database=self._database) as session:
                for statement in statements("drop_memory"):
                    session.run(statement, {"memory": self._memory}).consume()
        except _unavailable() as exc:
            raise StoreUnavailableError(f"lost Neo4j at {self._uri}: {_first_line(exc)}") from exc
        except (neo4j.exceptions.DriverError, neo4j.exceptions.Neo4jError) as exc:
            raise StoreError(f"Neo4j at {self._uri}: drop_memory: {_first_line(exc)}") from exc

    # --- reporting ------------------------------------------------------------------------------
    def _fill_text_hashes(self) -> None:
        """Give every node of a memory written before nodes had a ``text_hash`` its hash,
        once (the memory's :Memory node records it), a batch per transaction: stopped
        halfway, the next call goes on from the nodes still without one."""
        if self._text_hashes_filled or self._tx is not None:
            return
        filled = self._run("text_hashes_filled")
        if not (filled and filled[0]["filled"]):
            while rows := self._rows("nodes_without_text_hash", limit=TEXT_HASH_BATCH):
                hashes = [{"id": i, "text_hash": text_hash(text).hex()} for i, text in rows]
                self._run("fill_text_hashes", rows=hashes)
            self._run("mark_text_hashes_filled")
        self._text_hashes_filled = True

    def stats(self) -> dict[str, Any]:
        self._fill_text_hashes()
        sizes = [
            (int(r["level"]), int(r["size"]), int(r["clusters"]))
            for r in self._run("stats_cluster_sizes")
        ]
        levels = [
            {k: int(row[k]) for k in ("level", "nodes", "edges", "replicas", "clusters")}
            for row in self._run("stats")
        ]
        for row in levels:
            row.update(cluster_shape([(s, n) for lv, s, n in sizes if lv == row["level"]]))
        memory_wide = self._run("stats_memory")[0]
        shape = self._run("stats_shape")[0]
        backends = {row["backend"]: int(row["summaries"]) for row in self._run("stats_backends")}
        chunks = levels[0]["nodes"] if levels and levels[0]["level"] == 0 else 0
        in_two = int(memory_wide["in_two"])
        return {
            "documents": int(memory_wide["documents"]),
            "levels": levels,
            "overlap": in_two / chunks if chunks else 0.0,
            "nodes_in_two_or_more_clusters": in_two,
            "summaries_by_backend": backends,
            "roots": int(shape["roots"]),
            "repeated_texts": int(shape["repeated"]),
            "repeated_summary_texts": int(shape["repeated_summaries"]),
            "names": int(memory_wide["names"]),
            "mentions": int(memory_wide["mentions"] or 0),
            "views": self._view_counts(),
        }


def _node(row: Sequence[Any]) -> Node:
    """A node from a packed row: [id, level, kind, doc_id, position, text, props, vector_f32]."""
    node_id, level, kind, doc_id, position, text, props, blob = row
    return Node(
        id=node_id,
        level=int(level),
        kind=kind,
        text=text,
        doc_id=doc_id,
        position=position,
        embedding=None if blob is None else np.frombuffer(blob, dtype=np.float32),
        props=json.loads(props) if props else {},
    )


def _rescored(
    found: Sequence[Sequence[str]],
    node_vectors: Mapping[str, np.ndarray],
    queries: np.ndarray,
    k: int,
) -> list[list[tuple[str, float]]]:
    """Exact float32 scores, ranked like the embedded store (ties by id): the
    index's own scores are approximate and would order near-ties differently."""
    hits: list[list[tuple[str, float]]] = [[] for _ in range(len(queries))]
    for q, ids in enumerate(found):
        row = [i for i in ids if i in node_vectors]
        if not row:
            continue
        scores = np.stack([node_vectors[i] for i in row]) @ queries[q]
        order = sorted(range(len(row)), key=lambda j: (-scores[j], row[j]))[:k]
        hits[q] = [(row[j], float(scores[j])) for j in order]
    return hits


def _records(runner: Any, query: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every record of a query, in a transaction or a session. dict(record), not
    Result.data(): data() walks every value in Python and made reading a hundred
    vectors 50x slower."""
    return [dict(record) for record in runner.run(query, params)]


def _replica(row: Sequence[Any]) -> Replica:
    """A replica from a packed row: [id, node_id, level, label, members]."""
    replica_id, node_id, level, label, members = row
    return Replica(replica_id, node_id, int(level), label, frozenset(members))


def _unavailable() -> tuple[type[Exception], ...]:
    """Driver errors that mean the server could not be reached or went away (stopped,
    restarted, network cut), as opposed to a query or data problem."""
    import neo4j

    errors = neo4j.exceptions
    return (errors.ServiceUnavailable, errors.SessionExpired, errors.DatabaseUnavailable)


def _first_line(exc: BaseException) -> str:
    """The driver's message on one line (its reason is often on the second line)."""
    text = " ".join(str(exc).split())
    if len(text) > 300:
        text = text[:299] + "…"
    return text or type(exc).__name__
