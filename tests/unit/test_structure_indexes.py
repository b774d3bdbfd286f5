"""The structure's compact indexes answer as the plain ones they replace: ``IdSets`` as a
dict of sets, ``holder`` as an index of every (node, neighbour) pair, after any
sequence of changes; and two structures that reached one state compare equal."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cam_engine.store.structure import GraphStructure, IdSets
from cam_engine.types import Replica

KEYS = st.sampled_from(["k1", "k2", "k3"])
IDS = st.sampled_from(["a", "b", "c", "d"])
OPERATIONS = st.lists(st.tuples(st.booleans(), KEYS, IDS), max_size=40)


@settings(max_examples=300, deadline=None)
@given(OPERATIONS)
def test_id_sets_answer_as_a_dict_of_sets(operations: list[tuple[bool, str, str]]) -> None:
    index, reference = IdSets(), {}
    for add, key, value in operations:
        if add:
            index.add(key, value)
            reference.setdefault(key, set()).add(value)
        else:
            index.discard(key, value)
            reference.get(key, set()).discard(value)
            if not reference.get(key, True):
                del reference[key]
    for key in ["k1", "k2", "k3"]:
        assert index.get(key) == reference.get(key, set())
        assert index.size(key) == len(reference.get(key, ()))
        assert (key in index) == (key in reference)
    assert len(index) == len(reference)
    rebuilt = IdSets()  # the same state reached in one go compares equal
    for key, values in reference.items():
        for value in sorted(values):
            rebuilt.add(key, value)
    assert rebuilt == index


NODES = ["n1", "n2", "n3"]
NEIGHBOURS = ["m1", "m2", "m3", "m4", "m5"]
REPLICA_CHANGES = st.lists(
    st.tuples(
        st.sampled_from(NODES),
        st.integers(0, 2),  # which replica of the node
        st.frozensets(st.sampled_from(NEIGHBOURS), max_size=4),  # empty: remove it
    ),
    max_size=30,
)


@settings(max_examples=300, deadline=None)
@given(REPLICA_CHANGES)
def test_holder_answers_as_an_index_of_every_pair(
    changes: list[tuple[str, int, frozenset[str]]],
) -> None:
    """Each change gives a node's replica a component disjoint from its other replicas'
    (ego-splitting's guarantee: every edge of a node leads to one of its replicas)."""
    structure = GraphStructure()
    for node, which, members in changes:
        replica_id = f"{node}/r{which}"
        others = [
            r for r in structure.replicas.values() if r.node_id == node and r.id != replica_id
        ]
        component = members - {m for r in others for m in r.members}
        if component:
            structure.put_replica(Replica(replica_id, node, 0, f"label-{which}", component))
        else:
            structure.remove_replica(replica_id)
    pairs = {(r.node_id, m): r.id for r in structure.replicas.values() for m in r.members}
    for node in NODES:
        for member in NEIGHBOURS:
            assert structure.holder(node, member) == pairs.get((node, member))
        held = structure.of_node.get(node, ())
        assert list(held) == sorted(r.id for r in structure.replicas.values() if r.node_id == node)
        # An index of pairs is kept only for a node of several replicas.
        assert (node in structure.holders) == (len(held) > 1)
