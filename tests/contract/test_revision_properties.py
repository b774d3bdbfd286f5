"""Random sequences of ingests, updates and deletions, on every store: after each step
the memory keeps its invariants and holds exactly the documents' latest texts.

Each paragraph of the generated texts is one chunk and carries a word no other
paragraph has, so a deleted chunk's text can be searched for by that word.
"""

from __future__ import annotations

import io
import os
import random
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cam_engine import Memory, Settings
from cam_engine.chunking import chunk_document, chunk_stream
from cam_engine.embed import HashingEmbedder
from cam_engine.errors import NotFoundError
from cam_engine.names import names_in
from cam_engine.store.keywords import query_terms
from tests.invariants import (
    Placed,
    check_documents,
    check_memory,
    check_no_repeated_offers,
    check_removed,
    check_structure_is_stored,
    check_summary_documents,
    check_written_from,
)

EMBEDDER = HashingEmbedder(32)
# Low theta: the hashing embedder's cosines are low; 16 tokens: one paragraph a chunk;
# clusters of at most 4 nodes: a few chunks already make several levels (and with the
# default resummarize_drift, a cluster of 4 that gained its 4th member keeps its summary).
SETTINGS = Settings(embed_model=EMBEDDER.name, theta=0.25, chunk_tokens=16, max_cluster_size=4)
# CAM_REVISION_EXAMPLES=400 for a longer run than CI's (docs/reliability.md)
EXAMPLES = int(os.environ.get("CAM_REVISION_EXAMPLES", "25"))
DOCUMENTS = ("a", "b", "c")
METHODS = ("text", "documents", "stdin")


def _paragraphs(count: int) -> list[str]:
    """Paragraphs of 12 words from a small shared vocabulary (so chunks find partners)
    and one word of their own, capitalized: a name (the name graph; the hashing
    embedder lower-cases words, so the capital changes no vector)."""
    rng = random.Random(11)
    vocabulary = "river stone harbour lantern winter orchard copper signal meadow engine "
    vocabulary += "letter bridge window garden market thunder silver forest candle valley"
    words = vocabulary.split()
    own = ["".join(rng.choices("bcdfghjklmnpqrstvwxz", k=7)) for _ in range(count)]
    texts = [" ".join([*rng.choices(words, k=12), own[i].capitalize()]) for i in range(count)]
    return [text[0].upper() + text[1:] + "." for text in texts]


PARAGRAPHS = _paragraphs(16)


@dataclass(frozen=True)
class Edit:
    """Bring document ``doc`` to a new text: ``kind`` applied at ``at`` (modulo its
    length) with paragraph ``paragraph``; ingested by ``method`` in batches of ``batch``."""

    doc: str
    kind: str  # insert, remove, replace, append, rewrite
    at: int
    paragraph: int
    method: str
    batch: int


@dataclass(frozen=True)
class Delete:
    doc: str


@dataclass(frozen=True)
class Together:
    """Two edits in one ``ingest_documents`` call (their chunks share batches)."""

    first: Edit
    second: Edit


EDITS = st.builds(
    Edit,
    doc=st.sampled_from(DOCUMENTS),
    kind=st.sampled_from(["insert", "remove", "replace", "append", "rewrite"]),
    at=st.integers(0, 9),
    paragraph=st.integers(0, len(PARAGRAPHS) - 1),
    method=st.sampled_from(METHODS),
    batch=st.sampled_from([1, 2, 3, 64]),
)
STEPS = st.one_of(
    EDITS,
    st.builds(Delete, doc=st.sampled_from(DOCUMENTS)),
    st.builds(Together, first=EDITS, second=EDITS),
)


def edited(current: list[int], edit: Edit) -> list[int]:
    """The paragraphs (indexes into PARAGRAPHS) of a document after an edit."""
    at = edit.at % (len(current) + 1)
    p = edit.paragraph
    if edit.kind == "insert":
        return [*current[:at], p, *current[at:]]
    if edit.kind == "remove" and len(current) > 1:
        del current[at % len(current)]
        return current
    if edit.kind == "replace" and current:
        current[at % len(current)] = p
        return current
    if edit.kind == "rewrite":  # a text of its own, repeats allowed
        return [(p + i * 3) % len(PARAGRAPHS) for i in range(1 + at % 4)]
    return [*current, p]


def expected_chunks(doc: str, text: str, method: str) -> list[Placed]:
    if method == "stdin":
        chunks = list(chunk_stream(doc, io.StringIO(text), SETTINGS.chunk_tokens))
    else:
        chunks = chunk_document(doc, text, SETTINGS.chunk_tokens)
    return [(c.position, c.text, c.start_char, c.end_char) for c in chunks]


class Run:
    """One memory, the texts it should hold, and the checks after each step."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self.paragraphs: dict[str, list[int]] = {}
        self.chunks: dict[str, list[Placed]] = {}
        self.versions: dict[str, int] = {}

    def step(self, step: Edit | Delete | Together) -> None:
        store = self.memory.store
        before = {n.id: n.text for n in store.nodes_at_level(0)}
        refused = False
        if isinstance(step, Delete):
            refused = not self.delete(step.doc)
        elif isinstance(step, Together):
            self.edit_together(step.first, step.second)
        else:
            self.edit(step)
        self.check(before, refused=refused)

    def check(self, before: dict[str, str], *, refused: bool = False) -> None:
        """Every invariant, ``before`` being the chunks' texts before the step."""
        store = self.memory.store
        after = {n.id: n.text for n in store.nodes_at_level(0)}
        gone = set(before) - set(after)
        left = {w for t in after.values() for w in query_terms(t)}
        words = {w for i in gone for w in query_terms(before[i])} - left
        names = {k for i in gone for k in names_in(before[i])}
        names -= {k for t in after.values() for k in names_in(t)}
        check_memory(store, max_cluster_size=SETTINGS.max_cluster_size)
        held = self.memory._pipeline().writer.structure
        if held is not None or not refused:  # a refused step drops it, to be read again
            check_structure_is_stored(held, store)
        check_removed(store, gone, words, names)
        check_written_from(store, drift=SETTINGS.resummarize_drift)
        check_summary_documents(store)
        check_no_repeated_offers(store)
        check_documents(store, self.chunks)
        records = store.documents()
        assert {d.id: d.version for d in records} == self.versions, "document versions"
        assert all(d.updated_at for d in records), "a document without its time of change"

    def delete(self, doc: str) -> bool:
        """Delete a document; one the memory does not hold is refused (False)."""
        if doc not in self.chunks:
            with pytest.raises(NotFoundError, match=f"no document '{doc}'"):
                self.memory.delete_document(doc)
            return False
        report = self.memory.delete_document(doc)
        assert report.chunks_removed == len(self.chunks.pop(doc))
        del self.paragraphs[doc], self.versions[doc]
        return True

    def start(self, documents: dict[str, list[int]]) -> None:
        """Documents ingested together before the sequence (checked like a step)."""
        texts = {d: "\n\n".join(PARAGRAPHS[i] for i in ps) for d, ps in documents.items()}
        if not texts:
            return
        self.memory.ingest_documents(list(texts.items()), batch_size=5)
        for doc, paragraphs in documents.items():
            self.holds(doc, paragraphs, "documents")
        self.check({})

    def edit_together(self, first: Edit, second: Edit) -> None:
        new = {first.doc: edited(list(self.paragraphs.get(first.doc, [])), first)}
        new[second.doc] = edited(
            list(new.get(second.doc, self.paragraphs.get(second.doc, []))), second
        )
        texts = [(doc, "\n\n".join(PARAGRAPHS[i] for i in ps)) for doc, ps in new.items()]
        self.memory.ingest_documents(texts, batch_size=first.batch)
        for doc, paragraphs in new.items():
            self.holds(doc, paragraphs, "documents")

    def edit(self, edit: Edit) -> None:
        paragraphs = edited(list(self.paragraphs.get(edit.doc, [])), edit)
        text = "\n\n".join(PARAGRAPHS[i] for i in paragraphs)
        if edit.method == "text":
            self.memory.ingest_text(text, edit.doc, batch_size=edit.batch)
        elif edit.method == "documents":
            self.memory.ingest_documents([(edit.doc, text)], batch_size=edit.batch)
        else:
            report = self.memory.ingest(
                "-", document=edit.doc, stdin=io.StringIO(text), batch_size=edit.batch
            )
            assert not report.errors
        self.holds(edit.doc, paragraphs, edit.method)

    def holds(self, doc: str, paragraphs: list[int], method: str) -> None:
        """Note what the memory now holds of ``doc``: its chunks, and its version (one
        more when its text changed)."""
        before = self.paragraphs.get(doc)
        self.versions[doc] = 1 if before is None else self.versions[doc] + (before != paragraphs)
        self.paragraphs[doc] = paragraphs
        text = "\n\n".join(PARAGRAPHS[i] for i in paragraphs)
        self.chunks[doc] = expected_chunks(doc, text, method)


@contextmanager
def fresh_memory(location: str) -> Iterator[Memory]:
    """A new memory for one example: on SQLite in a file of its own (its FTS table then
    holds only this memory's text), on Neo4j under a new name, cleared afterwards."""
    name = f"p{uuid.uuid4().hex[:12]}"
    if not location.startswith("bolt"):
        location = location.removesuffix(".db") + f"-{name}.db"
    memory = Memory.open(location, name, settings=SETTINGS, embedder=EMBEDDER)
    try:
        yield memory
    finally:
        if location.startswith("bolt"):
            memory.delete()
        memory.close()


def _cut(order: list[int], sizes: list[int]) -> list[list[int]]:
    """Consecutive pieces of ``order`` of these sizes (none empty)."""
    pieces, at = [], 0
    for size in sizes:
        if order[at : at + size]:
            pieces.append(order[at : at + size])
        at += size
    return pieces


# The documents a sequence starts from, ingested together: no paragraph in two of them
# (documents repeating each other are a case of their own, docs/reliability.md).
STARTS = st.builds(
    _cut,
    st.permutations(range(len(PARAGRAPHS))),
    st.lists(st.integers(1, 7), max_size=len(DOCUMENTS)),
)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,  # the same examples on every run: CI is deterministic
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(start=STARTS, steps=st.lists(STEPS, min_size=1, max_size=6))
def test_any_sequence_of_updates_and_deletions_keeps_the_invariants(
    store_location: str, start: list[list[int]], steps: list[Edit | Delete | Together]
) -> None:
    with fresh_memory(store_location) as memory:
        run = Run(memory)
        run.start(dict(zip(DOCUMENTS, start, strict=False)))
        for step in steps:
            run.step(step)
