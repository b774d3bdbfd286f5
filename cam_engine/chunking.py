"""Split a document into chunks: paragraphs packed greedily up to ``chunk_tokens``.

Paragraphs end at a blank line or at a run of white space longer than the character
cap (which no chunk could hold). A paragraph over the budget is split at sentence
boundaries, a sentence over it at word boundaries, and a "word" over it (a run with no
white space: 20 MB of punctuation, a base64 blob) at token boundaries, a word-character
token longer than the character cap in pieces of the cap. The budget is
``chunk_tokens`` tokens and ``char_cap`` (16 characters per token) characters: no
chunk is longer, whatever the text. Chunks are exact slices of the text, so joining
them with the separators between them gives the document back; a stream
(``chunk_stream``) gives the same chunks as the whole text.

Tokens here are words and punctuation marks (``\\w+|[^\\w\\s]``). For English prose
that count runs a little under a BERT word-piece count, which is why the default
budget (200) sits below MiniLM's 256-piece window: docs/defaults.md has the figures.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from cam_engine.types import Chunk

_TOKEN = re.compile(r"\w+|[^\w\s]")
_BLANK_LINE = r"\r?\n[ \t\r]*\n\s*"  # Unix or Windows endings
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


# Chunk length in characters, per token of the budget. Real text runs at 4.5 characters
# per token on average (the Gutenberg books, the essays, HotpotQA and QMSum of
# ../shared/data at the 200-token default) and at most 10.2 in one chunk (a table of
# contents padded with spaces); 16 leaves room above that, so the cap never cuts real
# prose and only binds on runs such as 20 MB of punctuation or one endless "word".
CHARS_PER_TOKEN = 16


def char_cap(budget: int) -> int:
    """The most characters one chunk of a ``budget``-token chunking may hold."""
    return CHARS_PER_TOKEN * budget


@functools.lru_cache(maxsize=8)
def paragraph_break(chars: int) -> re.Pattern[str]:
    """A blank line, or a run of white space longer than ``chars`` (the character cap):
    no chunk can hold such a run, and a stream need not hold it to learn what it is."""
    return re.compile(rf"{_BLANK_LINE}|\s{{{chars + 1},}}")


_NON_SPACE = re.compile(r"\S")

# Where the splitter stopped for more text, as (level, position): at a paragraph's
# start, at a sentence's start inside a paragraph known to be over budget, at a word
# run's start inside a sentence known to be over budget, or at a token run's start
# inside one "word" (no white space) known to be over budget.
PARAGRAPH, SENTENCE, WORD, TOKEN = range(4)
Resume = tuple[int, int]


class _Splitter:
    """The units (paragraphs, sentences, word runs, token runs) of ``text`` from a
    position, as far as they are certain: with ``final`` the text ends here; without it
    more may follow, and a unit that more text could still change is left for later.

    Each level is a slice of the one above it, and descends only when its piece is over
    budget (more than ``tokens`` tokens or ``chars`` characters) — which more text can
    never undo, as a piece only grows. So a stream can be split piece by piece, resuming
    where the last piece stopped, into the units of the whole text.
    """

    def __init__(self, text: str, tokens: int, chars: int, *, final: bool) -> None:
        self.text, self.tokens, self.chars, self.final = text, tokens, chars, final
        self.units: list[Span] = []
        self.breaks = paragraph_break(chars)

    def run(self, level: int, pos: int) -> Resume:
        """Split from ``pos`` at ``level``; where to resume when more text comes."""
        if level != PARAGRAPH:  # inside an over-long paragraph: find its end first
            found = self.breaks.search(self.text, pos)
            stop = found.start() if found else len(self.text)
            left = self._inside(level, pos, stop, found is not None or self.final)
            if left is not None:
                return left
            if found is None:
                return PARAGRAPH, len(self.text)
            pos = found.end()
        return self._paragraphs(pos)

    def _fit(self, start: int, end: int) -> int:
        """Tokens of text[start:end] when it is within budget, else -1."""
        if end - start > self.chars:
            return -1
        tokens = count_tokens(self.text[start:end])
        return tokens if tokens <= self.tokens else -1

    def _paragraphs(self, pos: int) -> Resume:
        text, end = self.text, len(self.text)
        while True:
            start = _skip_space(text, pos, end)
            if start == end:
                return PARAGRAPH, end
            found = self.breaks.search(text, start)
            stop = found.start() if found else end
            closed = found is not None or self.final
            tokens = self._fit(start, _content_end(text, start, stop))
            if tokens < 0:
                left = self._sentences(start, stop, closed)
                if left is not None:
                    return left
            elif closed:
                self.units.append(Span(start, _content_end(text, start, stop), tokens))
            else:
                return PARAGRAPH, start  # it may still grow past the budget
            if found is None:
                return PARAGRAPH, end
            pos = found.end()

    def _inside(self, level: int, pos: int, stop: int, closed: bool) -> Resume | None:
        """Go on inside an over-long paragraph ending at ``stop`` (``closed``: for sure)."""
        if level == SENTENCE:
            return self._sentences(pos, stop, closed)
        found = _SENTENCE_BREAK.search(self.text, pos, stop)
        end = found.start() if found else stop
        left = self._words(pos, end, found is not None or closed, inside_word=level == TOKEN)
        if left is not None or found is None:
            return left
        return self._sentences(found.start(), stop, closed)

    def _sentences(self, pos: int, stop: int, closed: bool) -> Resume | None:
        text = self.text
        while True:
            start = _skip_space(text, pos, stop)
            if start == stop:
                return None if closed else (SENTENCE, pos)
            found = _SENTENCE_BREAK.search(text, start, stop)
            end = found.start() if found else stop
            done = found is not None or closed
            tokens = self._fit(start, _content_end(text, start, end))
            if tokens < 0:
                left = self._words(start, end, done)
                if left is not None:
                    return left
            elif done:
                self.units.append(Span(start, _content_end(text, start, end), tokens))
            else:
                return SENTENCE, start
            if found is None:
                return None
            pos = found.start()

    def _words(
        self, pos: int, stop: int, closed: bool, *, inside_word: bool = False
    ) -> Resume | None:
        """Runs of whole words, greedily up to the budget; a word over budget by itself
        is cut into token runs (``_tokens``). ``inside_word``: ``pos`` is inside such a word."""
        text = self.text
        if inside_word:
            end = _word_end(text, pos, stop)
            left = self._tokens(pos, end, end < stop or closed)
            if left is not None:
                return left
            pos = end
        run: Span | None = None
        while True:
            start = _skip_space(text, pos, stop)
            if start == stop:
                if closed:
                    self._add(run)
                    return None
                return (WORD, run.start) if run else (WORD, pos)
            end = _word_end(text, start, stop)
            whole = end < stop or closed
            tokens = self._fit(start, end)
            if tokens < 0:  # over budget by itself: cut into token runs
                self._add(run)
                run = None
                left = self._tokens(start, end, whole)
                if left is not None:
                    return left
                pos = end
                continue
            if (
                run is not None
                and run.tokens + tokens <= self.tokens
                and end - run.start <= self.chars
            ):
                if not whole:
                    return WORD, run.start
                run = Span(run.start, end, run.tokens + tokens)
            else:
                self._add(run)
                if not whole:
                    return WORD, start
                run = Span(start, end, tokens)
            pos = end

    def _tokens(self, pos: int, stop: int, closed: bool) -> Resume | None:
        """Runs of the tokens of one over-budget "word" (text[pos:stop], no white space),
        greedily up to the budget; a word-character token longer than the character cap
        is cut into pieces of the cap."""
        run: Span | None = None
        for start, end, whole in _atoms(self.text, pos, stop, closed, self.chars):
            if run is not None and run.tokens < self.tokens and end - run.start <= self.chars:
                if not whole:
                    return TOKEN, run.start
                run = Span(run.start, end, run.tokens + 1)
                continue
            self._add(run)
            if not whole:
                return TOKEN, start
            run = Span(start, end, 1)
        if not closed:
            return TOKEN, run.start if run else pos
        self._add(run)
        return None

    def _add(self, unit: Span | None) -> None:
        if unit is not None:
            self.units.append(unit)


def _atoms(
    text: str, pos: int, stop: int, closed: bool, cap: int
) -> Iterator[tuple[int, int, bool]]:
    """(start, end, whole) of the tokens of text[pos:stop], a word-character token
    longer than ``cap`` in pieces of ``cap``; not ``whole``: a word-character token at
    an end that is not ``closed`` (more text may lengthen it)."""
    for match in _TOKEN.finditer(text, pos, stop):
        start, end = match.span()
        growing = end == stop and not closed and _WORD_CHAR.match(text, start) is not None
        while end - start > cap:
            yield start, start + cap, True
            start += cap
        yield start, end, not growing or end - start == cap


_WORD_CHAR = re.compile(r"\w")


def _skip_space(text: str, pos: int, stop: int) -> int:
    found = _NON_SPACE.search(text, pos, stop)
    return found.start() if found else stop


def _word_end(text: str, pos: int, stop: int) -> int:
    found = _WHITESPACE.search(text, pos, stop)
    return found.start() if found else stop


def _content_end(text: str, start: int, stop: int) -> int:
    """``stop`` without the white space before it."""
    while stop > start and text[stop - 1].isspace():
        stop -= 1
    return stop


class _Packer:
    """Greedy packing of units into spans of at most ``tokens`` tokens and ``chars``
    characters: a span is final when the next unit does not fit in it."""

    def __init__(self, tokens: int, chars: int) -> None:
        self.tokens, self.chars = tokens, chars
        self.current: Span | None = None

    def add(self, unit: Span) -> Span | None:
        current = self.current
        if (
            current is not None
            and current.tokens + unit.tokens <= self.tokens
            and unit.end - current.start <= self.chars
        ):
            self.current = Span(current.start, unit.end, current.tokens + unit.tokens)
            return None
        self.current = unit
        return current

    def end(self) -> Span | None:
        current, self.current = self.current, None
        return current


def chunk_spans(text: str, budget: int) -> list[Span]:
    """Greedy packing of units into spans of at most ``budget`` tokens and
    ``char_cap(budget)`` characters."""
    splitter = _Splitter(text, budget, char_cap(budget), final=True)
    splitter.run(PARAGRAPH, 0)
    packer = _Packer(budget, char_cap(budget))
    spans = [s for s in map(packer.add, splitter.units) if s is not None]
    last = packer.end()
    return spans if last is None else [*spans, last]


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


def chunk_stream(doc_id: str, pieces: Iterable[str], budget: int) -> Iterator[Chunk]:
    """The chunks of a text that arrives in pieces of any size (stdin's blocks), each
    as soon as it is final, without holding the text: the same chunks as
    ``chunk_document`` of the whole text, however it is cut into pieces.

    What is held between pieces is the unit being read and the white space after it
    (each within the character cap: a longer run of white space is a paragraph break)
    and the chunk being packed; each piece is scanned with them once, so the work is
    linear in the text.
    """
    chars = char_cap(budget)
    packer = _Packer(budget, chars)
    buffer, offset = "", 0  # buffer == the text from offset on
    level, pos = PARAGRAPH, 0  # where the splitter resumes, in the buffer
    position = 0
    for piece in itertools.chain(pieces, [None]):
        if piece == "":
            continue
        buffer += piece or ""
        splitter = _Splitter(buffer, budget, chars, final=piece is None)
        level, pos = splitter.run(level, pos)
        done = [s for s in map(packer.add, splitter.units) if s is not None]
        if piece is None and packer.current is not None:
            done.append(packer.current)
        for span in done:
            text = buffer[span.start : span.end]
            start, end = offset + span.start, offset + span.end
            yield Chunk(chunk_id(doc_id, position, text), doc_id, position, text, start, end)
            position += 1
        # Keep what is still to split, two characters before it (the look-behind of a
        # sentence end), and the chunk still being packed.
        keep = max(0, pos - 2)
        if packer.current is not None:
            keep = min(keep, packer.current.start)
        buffer, offset, pos = buffer[keep:], offset + keep, pos - keep
        if packer.current is not None:
            packer.current = Span(
                packer.current.start - keep, packer.current.end - keep, packer.current.tokens
            )
