"""The adapters' view nodes (pages, memos, memory states), on every store."""

from __future__ import annotations

import numpy as np
import pytest

from cam_engine.store.base import DocumentRecord, GraphStore, open_store
from cam_engine.types import MEMORY_STATE, PAGE, ViewNode
from tests.contract.test_store_contract import chunk, many_words, unit


@pytest.fixture()
def store(store_location: str, memory_name: str) -> GraphStore:
    s = open_store(store_location, memory_name)
    s.prepare(32)
    with s.transaction():
        s.upsert_document(DocumentRecord("d", "d.txt", "abc", 4))
        s.upsert_nodes([chunk(i) for i in range(4)])
    yield s
    s.close()


def page(seq: int, text: str, chunks: tuple[str, ...], **props: object) -> ViewNode:
    return ViewNode(
        id=f"readagent/d/p{seq}",
        view="readagent",
        kind=PAGE,
        group="d",
        seq=seq,
        text=text,
        doc_id="d",
        props=dict(props),
        embedding=unit(100 + seq),
        chunk_ids=chunks,
    )


def test_view_nodes_round_trip_in_order_with_their_chunks(store: GraphStore) -> None:
    pages = [
        page(1, "the whale surfaced near the ship", ("c2", "c3"), gist="whale surfaces", words=6),
        page(0, "the captain spoke of the sea", ("c0", "c1"), gist="captain speaks", words=6),
    ]
    with store.transaction():
        store.upsert_view_nodes(pages)
    got = store.view_nodes("readagent", PAGE, embeddings=True)
    assert [n.seq for n in got] == [0, 1]
    assert got[0].chunk_ids == ("c0", "c1") and got[1].chunk_ids == ("c2", "c3")
    assert got[1].props == {"gist": "whale surfaces", "words": 6}
    assert got[0].embedding is not None
    assert np.allclose(got[0].embedding, unit(100))
    assert store.view_nodes("readagent", PAGE)[0].embedding is None
    assert store.stats()["views"] == {"readagent": {PAGE: 2}}
    assert store.stats()["views"] == {"readagent": {PAGE: 2}}
    assert store.view_nodes("gam", PAGE) == []


def test_rewriting_a_view_node_replaces_its_links(store: GraphStore) -> None:
    with store.transaction():
        store.upsert_view_nodes([page(0, "first", ("c0", "c1"))])
    with store.transaction():
        store.upsert_view_nodes([page(0, "second", ("c3",), gist="g")])
    (only,) = store.view_nodes("readagent", PAGE)
    assert (only.text, only.chunk_ids, only.props) == ("second", ("c3",), {"gist": "g"})


def test_deleting_one_group_keeps_the_others(store: GraphStore) -> None:
    states = [
        ViewNode(f"memagent/{q}/{s}", "memagent", MEMORY_STATE, q, s, f"memory {q} {s}")
        for q in ("q1", "q2")
        for s in range(3)
    ]
    with store.transaction():
        store.upsert_view_nodes(states)
        assert store.delete_view_nodes("memagent", MEMORY_STATE, "q1") == 3
    left = store.view_nodes("memagent", MEMORY_STATE)
    assert [(n.group, n.seq) for n in left] == [("q2", 0), ("q2", 1), ("q2", 2)]
    assert store.view_nodes("memagent", MEMORY_STATE, "q2")[2].text == "memory q2 2"


def test_keyword_search_ranks_pages_with_the_query_words(store: GraphStore) -> None:
    texts = [
        "Ahab nailed a gold doubloon to the mast for the first man to sight the whale",
        "Ishmael and Queequeg share a bed at the Spouter Inn in New Bedford",
        "the Pequod sails from Nantucket on Christmas Day",
        "a sermon on Jonah in the whaleman's chapel",
    ]
    with store.transaction():
        store.upsert_view_nodes([page(i, t, ()) for i, t in enumerate(texts)])
    hits = store.keyword_search("readagent", PAGE, "Who nailed the doubloon to the mast?", 2)
    assert hits and hits[0][0] == "readagent/d/p0"
    assert all(score > 0 for _, score in hits)
    # Query syntax characters are words or nothing, never Lucene operators.
    assert store.keyword_search("readagent", PAGE, 'Queequeg AND (bed OR "inn")~', 1)[0][0] == (
        "readagent/d/p1"
    )
    assert store.keyword_search("readagent", PAGE, "?!", 3) == []
    assert store.keyword_search("gam", PAGE, "doubloon", 3) == []


def test_a_keyword_query_of_thousands_of_words_is_searched_alike_on_every_store(
    store: GraphStore,
) -> None:
    with store.transaction():
        store.upsert_view_nodes(
            [page(0, "the glacier at dawn", ()), page(1, "the Pequod sails", ())]
        )
    # Lucene refuses more than 1,024 clauses: the search takes the first terms only.
    hits = store.keyword_search("readagent", PAGE, f"glacier {many_words(3000)}", 2)
    assert [i for i, _ in hits] == ["readagent/d/p0"]
    assert store.keyword_search("readagent", PAGE, f"{many_words(3000)} glacier", 2) == []
    assert store.keyword_search("readagent", PAGE, "Pequod " * 3000, 2)[0][0] == "readagent/d/p1"


def test_a_failed_view_write_leaves_nothing(store: GraphStore) -> None:
    with pytest.raises(RuntimeError), store.transaction():
        store.upsert_view_nodes([page(0, "lost", ("c0",))])
        raise RuntimeError("crash mid-write")
    assert store.view_nodes("readagent", PAGE) == []


def test_clearing_the_memory_drops_its_views(store: GraphStore) -> None:
    with store.transaction():
        store.upsert_view_nodes([page(0, "p", ("c0",))])
    with store.transaction():
        store.clear(keep_chunks=True)
    assert len(store.view_nodes("readagent", PAGE)) == 1  # a rebuild keeps the views
    with store.transaction():
        store.clear(keep_chunks=False)
    assert store.stats()["views"] == {}


def test_keyword_search_keeps_to_the_groups_asked_for(store: GraphStore) -> None:
    def gam_page(group: str, seq: int, text: str) -> ViewNode:
        return ViewNode(f"gam/{group}/p{seq}", "gam", PAGE, group, seq, text)

    with store.transaction():
        store.upsert_view_nodes(
            [
                gam_page("a", 0, "the doubloon nailed to the mainmast"),
                gam_page("b", 0, "a doubloon for the first man to raise the whale"),
                gam_page("b", 1, "Queequeg and his harpoon"),
            ]
        )
    everywhere = store.keyword_search("gam", PAGE, "doubloon", 5)
    assert {i for i, _ in everywhere} == {"gam/a/p0", "gam/b/p0"}
    only_b = store.keyword_search("gam", PAGE, "doubloon", 5, groups=["b"])
    assert [i for i, _ in only_b] == ["gam/b/p0"]
    assert store.keyword_search("gam", PAGE, "doubloon", 5, groups=[]) == []
