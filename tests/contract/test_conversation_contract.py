"""A conversation's chunks on every store: their props (speakers, session, date, turns)
are kept, and the full-text index finds a session by its date as a question writes it."""

from __future__ import annotations

import json
from pathlib import Path

from cam_engine import Memory
from cam_engine.embed import HashingEmbedder

TURNS = [
    {"speaker": "Caroline", "text": "I want to adopt a child.", "time": "2023-05-08T13:56:00"},
    {"speaker": "Melanie", "text": "That is a big step!", "time": "2023-05-08T13:57:00"},
    {"speaker": "Melanie", "text": "I painted a sunrise.", "time": "2023-06-25", "session": "b"},
]


def test_conversation_chunk_props_survive_and_dates_are_searchable(
    store_location: str, memory_name: str, tmp_path: Path
) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_text("\n".join(json.dumps(t) for t in TURNS), encoding="utf-8")
    with Memory.open(store_location, memory_name, embedder=HashingEmbedder(32)) as memory:
        report = memory.ingest(path)
        assert not report.errors
        chunks = sorted(memory.chunks(), key=lambda n: n.position or 0)
        assert [{k: n.props.get(k) for k in ("speakers", "session", "date")} for n in chunks] == [
            {"speakers": ["Caroline", "Melanie"], "session": "1", "date": "2023-05-08"},
            {"speakers": ["Melanie"], "session": "b", "date": "2023-06-25"},
        ]
        assert [n.props["turns"] for n in chunks] == [[0, 1], [2, 2]]
        for query in ("8 May 2023", "June 25, 2023", "2023-06-25"):
            best, _ = memory.store.search_text(0, query, 1)[0]
            assert best == chunks[0 if "May" in query else 1].id, query
