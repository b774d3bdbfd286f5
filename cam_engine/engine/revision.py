"""How a stored document becomes its new text, chunk by chunk.

An ingest of a document id the memory already holds does not start over: the stored
chunks are matched with the new text's chunks by their text (``structure.text_key``:
whitespace does not count), in order. A matched chunk is *kept*: its node, vector,
edges and cluster places stay, and only its position and offsets follow the new text.
The stored chunks left unmatched are *removed*, and the new chunks left unmatched are
*added*, as a batch of a new document is.

The match is a longest-common-subsequence diff (``difflib.SequenceMatcher``) of the
two key sequences, after the common head and tail are taken off in linear time: a log
that grew, or a paragraph edited in the middle, leaves a small middle to diff. A
middle too large to diff in bounded time (``MAX_DIFF_CELLS``) is replaced whole.

The same plan serves a first ingest (nothing stored: everything is added) and the
resume of an ingest that was cut short (the stored chunks are a prefix: kept).
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from cam_engine.store.structure import NodeInfo, text_key
from cam_engine.types import Chunk

# The diff of the unmatched middle costs up to (stored x new) steps; above this many,
# the middle is removed and added whole instead (same result, more embedding).
MAX_DIFF_CELLS = 4_000_000


@dataclass
class Revision:
    """What an ingest does to one document's chunks."""

    doc_id: str
    kept: dict[str, Chunk] = field(default_factory=dict)  # stored id -> its new place
    moved: dict[str, Chunk] = field(default_factory=dict)  # kept, at a new position
    removed: list[str] = field(default_factory=list)  # stored ids that go
    added: list[Chunk] = field(default_factory=list)  # new chunks, ids fresh

    @property
    def changed(self) -> bool:
        return bool(self.removed or self.added or self.moved)


def plan_revision(doc_id: str, stored: Sequence[NodeInfo], new: Sequence[Chunk]) -> Revision:
    """The plan that turns ``stored`` (the document's chunks by position) into ``new``.

    A kept chunk whose position or offsets differ is in ``moved`` (its node is written
    again with the new text's white space; its vector is not recomputed). An added chunk never takes
    the id of a stored one (a repeated text can bring one back at its old position).
    """
    old_keys = [info.text_key for info in stored]
    new_keys = [text_key(c.text) for c in new]
    pairs = _matched(old_keys, new_keys)
    plan = Revision(doc_id)
    matched_old = {i for i, _ in pairs}
    matched_new = {j for _, j in pairs}
    for i, j in pairs:
        info, chunk = stored[i], new[j]
        plan.kept[info.id] = chunk
        if placed_differently(info, chunk):
            plan.moved[info.id] = chunk
    plan.removed = [info.id for i, info in enumerate(stored) if i not in matched_old]
    taken = {info.id for info in stored}
    for j, chunk in enumerate(new):
        if j not in matched_new:
            fresh = fresh_id(chunk, taken)
            taken.add(fresh.id)
            plan.added.append(fresh)
    return plan


def _matched(old: Sequence[bytes], new: Sequence[bytes]) -> list[tuple[int, int]]:
    """Index pairs (old, new) of equal keys, in order: the common head and tail, and a
    longest matching of the middle between them."""
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while (
        tail < min(len(old), len(new)) - head
        and old[len(old) - 1 - tail] == new[len(new) - 1 - tail]
    ):
        tail += 1
    pairs = [(i, i) for i in range(head)]
    old_mid, new_mid = old[head : len(old) - tail], new[head : len(new) - tail]
    if old_mid and new_mid and len(old_mid) * len(new_mid) <= MAX_DIFF_CELLS:
        matcher = difflib.SequenceMatcher(None, old_mid, new_mid, autojunk=False)
        for block in matcher.get_matching_blocks():
            pairs += [(head + block.a + d, head + block.b + d) for d in range(block.size)]
    pairs += [(len(old) - tail + d, len(new) - tail + d) for d in range(tail)]
    return pairs


def placed_differently(info: NodeInfo, chunk: Chunk) -> bool:
    props = info.props
    return (
        info.position != chunk.position
        or props.get("start_char") != chunk.start_char
        or props.get("end_char") != chunk.end_char
        or props.get("pages") != (list(chunk.pages) if chunk.pages is not None else None)
        or any(props.get(key) != value for key, value in (chunk.props or {}).items())
    )


def fresh_id(chunk: Chunk, taken: set[str]) -> Chunk:
    """The chunk under its usual id, or, when a stored chunk has that id (the same text
    at the same position, matched elsewhere), under the next free variant of it."""
    if chunk.id not in taken:
        return chunk
    variant = 1
    while True:
        seed = f"{chunk.doc_id}\x00{chunk.position}\x00{chunk.text}\x00{variant}"
        candidate = f"c{chunk.position}-{hashlib.sha1(seed.encode()).hexdigest()[:12]}"
        if candidate not in taken:
            return replace(chunk, id=candidate)
        variant += 1
