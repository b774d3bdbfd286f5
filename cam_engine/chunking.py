"""Split a document into chunks: paragraphs packed greedily up to ``chunk_tokens``.

A paragraph longer than the budget is split at sentence boundaries (and a sentence
longer than the budget at word boundaries). Chunks are exact slices of the text, so
joining them with the separators between them gives the document back.

Tokens here are words and punctuation marks (``\\w+|[^\\w\\s]``). For English prose
that count runs a little under a BERT word-piece count, which is why the default
budget (200) sits below MiniLM's 256-piece window: docs/defaults.md has the figures.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from cam_engine.types import Chunk

_TOKEN = re.compile(r"\w+|[^\w\s]")
_PARAGRAPH_BREAK = re.compile(r"\r?\n[ \t\r]*\n\s*")  # blank line, Unix or Windows endings
# whitespace after a sentence end, possibly behind a closing quote or bracket
_SENTENCE_BREAK = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"'”’)\]]))\s+")
_WHITESPACE = re.compile(r"\s+")


def count_tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    tokens: int


def _spans(text: str, pattern: re.Pattern[str], start: int, end: int) -> list[tuple[int, int]]:
    """Non-blank pieces of text[start:end] between matches of ``pattern``."""
    pieces: list[tuple[int, int]] = []
    cursor = start
    for match in pattern.finditer(text, start, end):
        if match.start() > cursor:
            pieces.append((cursor, match.start()))
        cursor = match.end()
    if cursor < end:
        pieces.append((cursor, end))
    # Trim white space at both ends, so a piece does not depend on how it was reached.
    trimmed = []
    for a, b in pieces:
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if a < b:
            trimmed.append((a, b))
    return trimmed


def _units(text: str, budget: int) -> Iterator[Span]:
    """Paragraphs, or sentences/word runs of a paragraph that exceeds the budget."""
    for p_start, p_end in _spans(text, _PARAGRAPH_BREAK, 0, len(text)):
        tokens = count_tokens(text[p_start:p_end])
        if tokens <= budget:
            yield Span(p_start, p_end, tokens)
            continue
        for s_start, s_end in _spans(text, _SENTENCE_BREAK, p_start, p_end):
            tokens = count_tokens(text[s_start:s_end])
            if tokens <= budget:
                yield Span(s_start, s_end, tokens)
            else:
                yield from _word_runs(text, s_start, s_end, budget)


def _word_runs(text: str, start: int, end: int, budget: int) -> Iterator[Span]:
    run_start: int | None = None
    run_tokens, last_end = 0, start
    for a, b in _spans(text, _WHITESPACE, start, end):
        tokens = count_tokens(text[a:b])
        if run_start is not None and run_tokens + tokens > budget:
            yield Span(run_start, last_end, run_tokens)
            run_start, run_tokens = None, 0
        if run_start is None:
            run_start = a
        run_tokens += tokens
        last_end = b
    if run_start is not None:
        yield Span(run_start, last_end, run_tokens)


def chunk_spans(text: str, budget: int) -> list[Span]:
    """Greedy packing of units into spans of at most ``budget`` tokens."""
    spans: list[Span] = []
    current: Span | None = None
    for unit in _units(text, budget):
        if current is not None and current.tokens + unit.tokens <= budget:
            current = Span(current.start, unit.end, current.tokens + unit.tokens)
            continue
        if current is not None:
            spans.append(current)
        current = unit
    if current is not None:
        spans.append(current)
    return spans


def chunk_id(doc_id: str, position: int, text: str) -> str:
    digest = hashlib.sha1(f"{doc_id}\x00{position}\x00{text}".encode()).hexdigest()[:12]
    return f"c{position}-{digest}"


def chunk_document(doc_id: str, text: str, budget: int, *, first_position: int = 0) -> list[Chunk]:
    return [
        Chunk(
            id=chunk_id(doc_id, first_position + i, text[s.start : s.end]),
            doc_id=doc_id,
            position=first_position + i,
            text=text[s.start : s.end],
            start_char=s.start,
            end_char=s.end,
        )
        for i, s in enumerate(chunk_spans(text, budget))
    ]


def chunk_stream(doc_id: str, lines: Iterable[str], budget: int) -> Iterator[Chunk]:
    """Chunks of a text that arrives line by line (stdin), without holding all of it.

    Text is buffered up to a paragraph break; everything before the last break is
    chunked and released, except the last chunk, which may still grow.
    """
    buffer, offset, position = "", 0, 0
    for line in lines:
        buffer += line
        last_break = None
        for match in _PARAGRAPH_BREAK.finditer(buffer):
            last_break = match
        if last_break is None or count_tokens(buffer) < 4 * budget:
            continue
        ready = chunk_spans(buffer[: last_break.start()], budget)
        for span in ready[:-1]:
            piece = buffer[span.start : span.end]
            yield Chunk(
                chunk_id(doc_id, position, piece),
                doc_id,
                position,
                piece,
                offset + span.start,
                offset + span.end,
            )
            position += 1
        keep_from = ready[-1].start if ready else last_break.start()
        buffer, offset = buffer[keep_from:], offset + keep_from
    for span in chunk_spans(buffer, budget):
        piece = buffer[span.start : span.end]
        yield Chunk(
            chunk_id(doc_id, position, piece),
            doc_id,
            position,
            piece,
            offset + span.start,
            offset + span.end,
        )
        position += 1
