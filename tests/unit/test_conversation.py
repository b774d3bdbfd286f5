"""Conversations as input: reading JSONL turns and LoCoMo's layout, dated session headers,
the turn-keeping chunker, and `cam ingest` + `cam ask` of a transcript."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from cam_engine import Memory
from cam_engine.chunking import char_cap, count_tokens
from cam_engine.cli.main import cli
from cam_engine.conversation import (
    Conversation,
    Session,
    Turn,
    parse_date,
    read_conversation,
    session_header,
)
from cam_engine.embed import HashingEmbedder
from cam_engine.errors import InputError
from cam_engine.eval.dataset import load_jsonl
from cam_engine.formats import detect
from cam_engine.limits import Limits
from cam_engine.sources import load_document
from cam_engine.turn_chunking import _Pack, chunk_conversation, pack_turns

CHAT = [
    {"speaker": "Caroline", "text": "I went to a support group yesterday.", "time": "2023-05-08"},
    {"speaker": "Melanie", "text": "How did it go?", "time": "2023-05-08T14:00:00"},
    {
        "speaker": "Caroline",
        "text": "Great. I am researching adoption agencies, I want to give a child a home.",
        "time": "2023-05-08T14:02:00",
    },
    {"speaker": "Melanie", "text": "I painted a lake sunrise last year.", "time": "2023-06-25"},
    {"speaker": "Caroline", "text": "The colours of it are lovely!", "time": "2023-06-25"},
]


def write_jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


# --- reading -------------------------------------------------------------------------------


def test_jsonl_turns_form_a_session_per_day_or_per_session_field(tmp_path: Path) -> None:
    talk = read_conversation(tmp_path / "c.jsonl", "\n".join(json.dumps(r) for r in CHAT))
    assert [(s.name, s.date, len(s.turns)) for s in talk.sessions] == [
        ("1", "2023-05-08T00:00:00", 3),
        ("2", "2023-06-25T00:00:00", 2),
    ]
    named = [{"speaker": "A", "text": "hi", "session": s} for s in ("x", "x", 7, "x")]
    talk = read_conversation(tmp_path / "c.jsonl", "\n".join(json.dumps(r) for r in named))
    assert [(s.name, len(s.turns)) for s in talk.sessions] == [("x", 2), ("7", 1), ("x", 1)]


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ('{"speaker": "A", "text": "hi"', "line 2: not JSON ("),
        ('["A", "hi"]', "line 2: expected a JSON object with speaker and text"),
        ('{"text": "hi"}', "line 2: speaker must be a non-empty string"),
        ('{"speaker": "A", "text": 3}', "line 2: text must be a string"),
        ('{"speaker": "A", "text": "hi", "time": "May 8"}', "line 2: time 'May 8' is not an ISO"),
        ('{"speaker": "A", "text": "hi", "session": [1]}', "line 2: session must be a string"),
        ('{"speaker": "' + "A" * 300 + '", "text": "hi"}', "line 2: speaker longer than 200"),
        ("[" * 100_000, "line 2: not JSON (nested too deep)"),
    ],
)
def test_a_bad_turn_is_one_line_naming_its_line(tmp_path: Path, line: str, error: str) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps(CHAT[0]) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_document(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: {error}") and "\n" not in message


def test_a_binary_transcript_is_refused_from_its_first_block(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_bytes(json.dumps(CHAT[0]).encode() + b"\n\x00\x00")
    with pytest.raises(InputError, match=r"chat.jsonl: looks binary \(NUL bytes\)"):
        load_document(path)


def test_a_conversation_is_held_to_the_text_limit(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "chat.jsonl", CHAT)
    with pytest.raises(InputError, match=r"refused, over the limit of .* CAM_MAX_TEXT_MB"):
        load_document(path, limits=Limits(text_chars=100))


def test_locomo_layout_one_conversation_per_file(tmp_path: Path) -> None:
    conversation = {
        "speaker_a": "Ann",
        "session_2": [{"speaker": "Ann", "text": "Back again.", "dia_id": "D2:1"}],
        "session_2_date_time": "2:00 pm on 9 May, 2023",
        "session_1": [
            {"speaker": "Ann", "text": "I moved to Oslo.", "dia_id": "D1:1"},
            {"speaker": "Ben", "text": "Look!", "blip_caption": "a photo of a dog"},
        ],
        "session_1_date_time": "1:56 pm on 8 May, 2023",
    }
    path = tmp_path / "conv.json"
    path.write_text(json.dumps([{"sample_id": "c1", "conversation": conversation}]), "utf-8")
    talk = load_document(path).conversation
    assert talk is not None
    assert [(s.name, [t.line for t in s.turns]) for s in talk.sessions] == [
        ("1", ["Ann: I moved to Oslo.", "Ben: Look! [shared image: a photo of a dog]"]),
        ("2", ["Ann: Back again."]),
    ]
    path.write_text(json.dumps([{"conversation": conversation}] * 3), "utf-8")
    with pytest.raises(InputError, match=r"holds 3 conversations; give one per file"):
        load_document(path)


def test_format_is_detected_from_extension_and_first_turn(tmp_path: Path) -> None:
    turns = (json.dumps(CHAT[0]) + "\n").encode()
    assert detect(Path("chat.jsonl"), turns) == "conversation"
    assert detect(Path("chat.txt"), turns) == "text"  # the extension says text
    assert detect(Path("rows.jsonl"), b'{"id": 1, "value": 2}\n') == "text"
    assert detect(Path("bad.jsonl"), b'{"speaker": "A"}\n') == "conversation"  # then refused
    assert detect(Path("conv.json"), b'{"speaker_a": "A", "session_1": [') == "conversation"
    assert detect(Path("other.json"), b'{"session": 1}') == "text"
    # --format conversation reads a file of turns whatever its name
    path = write_jsonl(tmp_path / "chat.log", CHAT)
    assert load_document(path).conversation is None
    forced = load_document(path, file_format="conversation").conversation
    assert forced is not None and len(forced.turns) == len(CHAT)


def test_session_headers_write_the_date_as_questions_do() -> None:
    assert parse_date("1:56 pm on 8 May, 2023") == date(2023, 5, 8)
    assert parse_date("May 8th, 2023") == date(2023, 5, 8)
    assert parse_date("2023-05-08T13:56:00+02:00") == date(2023, 5, 8)
    assert parse_date("some day") is None
    header = session_header(Session("3", "1:56 pm on 8 May, 2023", ()))
    assert header == "[Session 3 · 8 May 2023 · Monday, May 8, 2023 · 2023-05-08]"
    assert session_header(Session("x", "the day after", ())) == "[Session x · the day after]"


# --- the chunker ---------------------------------------------------------------------------

_words = st.text(alphabet="abcdefgh .,!?", min_size=0, max_size=400)
_turns = st.lists(
    st.builds(Turn, st.sampled_from(["Ann", "Ben", "Dr. Chen Li"]), _words), min_size=1
)
_sessions = st.lists(
    st.builds(
        Session,
        st.text(alphabet="0123456789", min_size=1, max_size=3),
        st.sampled_from([None, "2023-05-08", "1:56 pm on 8 May, 2023", "someday"]),
        _turns.map(tuple),
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=150, deadline=None)
@given(_sessions, st.integers(min_value=16, max_value=120))
def test_chunks_give_back_the_turns_in_order_cut_only_when_too_long(
    sessions: list[Session], budget: int
) -> None:
    talk = Conversation(tuple(sessions))
    text, chunks = chunk_conversation("d", talk, budget)
    packs = pack_turns(talk, budget)
    assert [p.text() for p in packs] == [c.text for c in chunks]
    for chunk in chunks:
        assert text[chunk.start_char : chunk.end_char] == chunk.text
        assert count_tokens(chunk.text) <= budget and len(chunk.text) <= char_cap(budget)
    shown = [(index, line) for p in packs for index, line in zip(p.turns, p.lines, strict=True)]
    turns = talk.turns
    assert [i for i, _ in shown] == sorted(i for i, _ in shown)  # in order
    assert {i for i, _ in shown} == set(range(len(turns)))  # every turn
    for index, turn in enumerate(turns):
        pieces = [line for i, line in shown if i == index]
        if pieces == [turn.line]:
            continue
        # cut only when it does not fit a chunk by itself, after its session's header
        header = next(p.header for p in packs if index in p.turns)
        fresh = _Pack(header, packs[0].session)
        assert not fresh.fits(turn.line, count_tokens(turn.line), budget)
        prefix = f"{turn.speaker}: "
        assert all(p.startswith(prefix) for p in pieces)
        bodies = "".join(p[len(prefix) :] for p in pieces)
        assert bodies.replace(" ", "") == turn.line[len(prefix) :].replace(" ", "")
    for session, first in zip(talk.sessions, _first_packs(packs), strict=True):
        assert first.session is session  # a session starts a new chunk


def _first_packs(packs: list[_Pack]) -> list[_Pack]:
    return [p for i, p in enumerate(packs) if i == 0 or packs[i - 1].session is not p.session]


def test_each_session_starts_a_chunk_with_its_header_and_props() -> None:
    turns = tuple(
        Turn("Ann" if i % 2 else "Ben", f"turn number {i} says a few words") for i in range(40)
    )
    talk = Conversation(
        (Session("1", "1:56 pm on 8 May, 2023", turns), Session("2", None, turns[:3]))
    )
    _, chunks = chunk_conversation("d", talk, 120)
    assert len(chunks) > 3
    for chunk in chunks:
        props = chunk.props or {}
        session = props["session"]
        assert chunk.text.startswith(f"[Session {session}")
        speakers = [line.split(":")[0] for line in chunk.text.split("\n")[1:]]
        assert props["speakers"] == list(dict.fromkeys(speakers))
    assert [c.props["session"] for c in chunks if c.props].count("2") == 1
    last = chunks[-1]
    assert last.text == "[Session 2]\nBen: turn number 0 says a few words\n" + (
        "Ann: turn number 1 says a few words\nBen: turn number 2 says a few words"
    )
    assert last.props == {"turns": [40, 42], "speakers": ["Ben", "Ann"], "session": "2"}
    assert chunks[0].props and chunks[0].props["date"] == "2023-05-08"


# --- end to end ----------------------------------------------------------------------------


def test_cam_ingest_and_ask_a_transcript(tmp_path: Path) -> None:
    env = {"CAM_STORE": str(tmp_path / "chat.db"), "CAM_EMBED_MODEL": "hashing:64"}
    path = write_jsonl(tmp_path / "chat.jsonl", CHAT)
    result = CliRunner().invoke(cli, ["ingest", str(path)], env=env)
    assert result.exit_code == 0, result.output
    assert "2 new chunks" in result.output  # one per session: May, June
    question = "What did Caroline say about adoption in May 2023?"
    result = CliRunner().invoke(cli, ["ask", question, "--strategy", "bm25", "--json"], env=env)
    assert result.exit_code == 0, result.output
    top = json.loads(result.output)["evidence"][0]
    assert top["text"].startswith("[Session 1 · 8 May 2023 · Monday, May 8, 2023 · 2023-05-08]")
    assert "Caroline: Great. I am researching adoption agencies" in top["text"]
    result = CliRunner().invoke(cli, ["show", top["node_id"], "--json"], env=env)
    assert result.exit_code == 0, result.output
    props = json.loads(result.output)["props"]
    assert props["speakers"] == ["Caroline", "Melanie"]
    assert (props["date"], props["session"], props["turns"]) == ("2023-05-08", "1", [0, 2])


def test_a_bad_turn_is_reported_and_the_file_skipped(tmp_path: Path) -> None:
    env = {"CAM_STORE": str(tmp_path / "chat.db"), "CAM_EMBED_MODEL": "hashing:64"}
    path = write_jsonl(tmp_path / "chat.jsonl", [CHAT[0], {"speaker": "", "text": "x"}])
    result = CliRunner().invoke(cli, ["ingest", str(path)], env=env)
    assert result.exit_code == 1
    assert f"error: {path}: line 2: speaker must be a non-empty string" in result.output


def test_eval_documents_of_turns_are_built_as_conversations(tmp_path: Path) -> None:
    rows = [
        {"type": "document", "id": "c1", "turns": CHAT},
        {
            "type": "question",
            "id": "q1",
            "question": "What did Caroline say about adoption in May 2023?",
            "answers": ["adoption agencies"],
            "gold": [{"doc_id": "c1", "text": "Caroline: Great. I am researching adoption"}],
            "doc_ids": ["c1"],
        },
    ]
    evalset = load_jsonl(write_jsonl(tmp_path / "set.jsonl", rows))  # validated: gold in text
    (doc,) = evalset.documents
    assert doc.conversation is not None and len(doc.conversation.sessions) == 2
    with Memory.open(tmp_path / "m.db", "eval", embedder=HashingEmbedder(32)) as memory:
        memory.ingest_documents([(doc.id, doc.conversation)])
        texts = sorted((n.position or 0, n.text) for n in memory.chunks())
    assert [t.split("\n")[0] for _, t in texts] == [
        "[Session 1 · 8 May 2023 · Monday, May 8, 2023 · 2023-05-08]",
        "[Session 2 · 25 June 2023 · Sunday, June 25, 2023 · 2023-06-25]",
    ]
    bad = [{"type": "document", "id": "c1", "turns": [{"speaker": "Ann", "text": 3}]}]
    with pytest.raises(InputError, match=r"bad.jsonl:1: turn 1: text must be a string$"):
        load_jsonl(write_jsonl(tmp_path / "bad.jsonl", bad))
