"""Chunks of a conversation: whole turns packed greedily, each session from a new chunk.

Each chunk opens with its session's header line (``[Session 3 · 8 May 2023 · Monday, May
8, 2023 · 2023-05-08]``: ``conversation.session_header``), then one ``Speaker: text``
line per turn. A turn is never cut between chunks unless it alone is longer than a
chunk holds after the header: then it, and only it, is cut at sentence (else word)
boundaries by the document chunker, each piece shown as ``Speaker: piece``. The
budget is ``chunk_tokens`` tokens and ``char_cap`` characters, header included.

The document's text is its chunks joined by blank lines, so each chunk is
``text[start_char:end_char]`` as for any document; each chunk's props say which turns
it holds (``turns``: first and last, from 0), their ``speakers``, and its ``session``
and ``date`` (ISO when the date could be read).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cam_engine.chunking import CHARS_PER_TOKEN, char_cap, chunk_id, chunk_spans, count_tokens
from cam_engine.conversation import (
    Conversation,
    Session,
    Turn,
    session_header,
    session_iso_date,
)
from cam_engine.types import Chunk

SEPARATOR = "\n\n"


@dataclass
class _Pack:
    """The chunk being filled: its header, its lines and the turns they show."""

    header: str
    session: Session
    lines: list[str] = field(default_factory=list)
    turns: list[int] = field(default_factory=list)  # conversation-wide turn index per line
    speakers: list[str] = field(default_factory=list)  # the speaker of each line
    tokens: int = 0
    chars: int = 0

    def __post_init__(self) -> None:
        self.tokens, self.chars = count_tokens(self.header), len(self.header)

    def fits(self, line: str, tokens: int, budget: int) -> bool:
        return self.tokens + tokens <= budget and self.chars + 1 + len(line) <= char_cap(budget)

    def add(self, line: str, tokens: int, index: int, speaker: str) -> None:
        self.lines.append(line)
        self.turns.append(index)
        self.speakers.append(speaker)
        self.tokens += tokens
        self.chars += 1 + len(line)

    def text(self) -> str:
        return "\n".join([self.header, *self.lines] if self.header else self.lines)

    def props(self) -> dict[str, Any]:
        props: dict[str, Any] = {
            "turns": [self.turns[0], self.turns[-1]],
            "speakers": list(dict.fromkeys(self.speakers)),
            "session": self.session.name,
        }
        date = session_iso_date(self.session)
        if date is not None:
            props["date"] = date
        return props


def pack_turns(conversation: Conversation, budget: int) -> list[_Pack]:
    """The chunks' contents: whole turns greedily, a session from a new chunk, a turn
    too long for a chunk by itself in pieces."""
    packs: list[_Pack] = []
    index = 0
    for session in conversation.sessions:
        header = _header(session, budget)
        pack = _Pack(header, session)
        for turn in session.turns:
            line = turn.line
            tokens = count_tokens(line)
            if not pack.fits(line, tokens, budget) and pack.lines:
                packs.append(pack)
                pack = _Pack(header, session)
            if pack.fits(line, tokens, budget):
                pack.add(line, tokens, index, turn.speaker)
            else:  # longer than any chunk can hold: this turn alone is cut
                for piece in _pieces(turn, pack, budget):
                    if pack.lines:
                        packs.append(pack)
                        pack = _Pack(header, session)
                    pack.add(piece, count_tokens(piece), index, turn.speaker)
            index += 1
        if pack.lines:
            packs.append(pack)
    return packs


def _header(session: Session, budget: int) -> str:
    """The session's header, shorter (its ISO date alone, or nothing) when it would take
    more than a quarter of a small budget."""
    date = session_iso_date(session)
    for header in (session_header(session), f"[{date}]" if date else ""):
        if count_tokens(header) <= budget // 4:
            return header
    return ""


def _pieces(turn: Turn, empty: _Pack, budget: int) -> list[str]:
    """``Speaker: piece`` lines of a turn cut to fit a chunk after the header."""
    prefix = turn.line[: turn.line.index(": ") + 2]
    tokens = budget - empty.tokens - count_tokens(prefix)
    chars = char_cap(budget) - empty.chars - 1 - len(prefix)
    # chunk_spans keeps each piece within its budget's tokens and CHARS_PER_TOKEN each
    piece_budget = max(1, min(tokens, chars // CHARS_PER_TOKEN))
    body = turn.line[len(prefix) :]
    return [prefix + body[s.start : s.end] for s in chunk_spans(body, piece_budget)]


def chunk_conversation(
    doc_id: str, conversation: Conversation, budget: int
) -> tuple[str, list[Chunk]]:
    """The document text of ``conversation`` and its chunks (slices of that text)."""
    chunks: list[Chunk] = []
    start = 0
    for position, pack in enumerate(pack_turns(conversation, budget)):
        text = pack.text()
        end = start + len(text)
        chunks.append(
            Chunk(
                id=chunk_id(doc_id, position, text),
                doc_id=doc_id,
                position=position,
                text=text,
                start_char=start,
                end_char=end,
                props=pack.props(),
            )
        )
        start = end + len(SEPARATOR)
    return SEPARATOR.join(c.text for c in chunks), chunks
