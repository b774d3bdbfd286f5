"""Incremental label propagation (CAM Section 4.1.3) on the replica graph.

Starting from the affected replicas, each takes the label carrying the largest total
edge weight among its neighbours; ties keep the current label when it is among the
best, otherwise the smallest label wins, so runs are reproducible. A replica whose
label changed queues its neighbours for the next round. It stops when no label
changes or after ``max_rounds`` rounds (the ripple cap).

With ``max_size``, propagation is size-constrained: a replica may only join a label
that holds fewer than ``max_size`` replicas. Without it, propagation keeps re-merging
the pieces of every cluster that was split for size, and the next split hands them
new labels: churn that would re-summarize unchanged parts of the memory each batch.

The graph is read through two callables so the store can serve only the part the
ripple actually reaches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

NeighbourReader = Callable[[list[str]], Mapping[str, Mapping[str, float]]]
LabelReader = Callable[[list[str]], Mapping[str, str]]
SizeReader = Callable[[list[str]], Mapping[str, int]]


@dataclass
class PropagationResult:
    changed: dict[str, tuple[str, str]] = field(default_factory=dict)  # replica -> (old, new)
    rounds: int = 0
    updates: int = 0  # replica visits
    capped: bool = False  # stopped by max_rounds with replicas still queued


def majority_label(
    current: str, weights: Mapping[str, float], full: Callable[[str], bool] = lambda _: False
) -> str:
    """The heaviest label among the neighbours' (ties: current, else smallest); labels
    for which ``full`` is true can be kept but not joined."""
    weights = {label: w for label, w in weights.items() if label == current or not full(label)}
    if not weights:
        return current
    best = max(weights.values())
    # Rounded so that equal sums reached in different orders still tie.
    top = sorted(label for label, w in weights.items() if round(w - best, 9) == 0)
    return current if current in top else top[0]


def propagate(
    seeds: Iterable[str],
    labels: dict[str, str],
    neighbours: NeighbourReader,
    read_labels: LabelReader,
    *,
    max_rounds: int,
    max_size: int | None = None,
    read_sizes: SizeReader | None = None,
) -> PropagationResult:
    """Update ``labels`` in place (asynchronous updates, sorted order within a round).

    ``read_sizes`` gives the number of replicas holding each label (for ``max_size``).
    """
    result = PropagationResult()
    limit = max_size if read_sizes is not None else None
    sizes: dict[str, int] = {}

    def full(label: str) -> bool:
        return limit is not None and sizes[label] >= limit

    adjacency: dict[str, Mapping[str, float]] = {}
    queue = sorted(set(seeds))
    while queue and result.rounds < max_rounds:
        result.rounds += 1
        missing = [r for r in queue if r not in adjacency]
        if missing:
            adjacency.update(neighbours(missing))
        unknown = sorted({n for r in queue for n in adjacency.get(r, {}) if n not in labels})
        unknown += [r for r in queue if r not in labels]
        if unknown:
            labels.update(read_labels(unknown))
        if limit is not None and read_sizes is not None:
            seen = {labels[n] for r in queue for n in [r, *adjacency.get(r, {})]}
            missing_sizes = sorted(seen - sizes.keys())
            if missing_sizes:
                counts = read_sizes(missing_sizes)
                sizes.update({label: counts.get(label, 0) for label in missing_sizes})
        next_queue: set[str] = set()
        for replica in queue:
            nbrs = adjacency.get(replica, {})
            result.updates += 1
            weights: dict[str, float] = {}
            for other, weight in nbrs.items():
                label = labels[other]
                weights[label] = weights.get(label, 0.0) + weight
            old = labels[replica]
            new = majority_label(old, weights, full)
            if new != old:
                if limit is not None:
                    sizes[old] -= 1
                    sizes[new] += 1
                labels[replica] = new
                first = result.changed.get(replica, (old, new))[0]
                result.changed[replica] = (first, new)
                next_queue.update(nbrs)
        queue = sorted(next_queue)
    result.capped = bool(queue)
    # A replica that changed and changed back is not a change.
    result.changed = {r: (a, b) for r, (a, b) in result.changed.items() if a != b}
    return result
