"""The names a chunk mentions: people, places, ships, organizations, dates, numbers.

Retrieval spreads relevance from a chunk to the chunks that share its names (the name
graph beside the similarity graph); this module finds those names in one chunk's text.
No English NER model installs offline from a package registry (the official spaCy
models are not on PyPI and NLTK's chunker needs data it downloads), so this is a
heuristic, in one pass over the text's tokens (docs/graph-model.md, "Names"):

- a *run* of capitalized words is a name, with lowercase connectors inside it
  ("Bank of England", "Duke of the Realm", "Ludwig van Beethoven");
- a capitalized word that opens a sentence is mostly just capitalized there ("Call me
  Ishmael"): it starts a name only when the chunk also has it capitalized inside a
  sentence and never lowercase, and never when it is a stopword ("The", "When"), a
  stopword's contraction ("I'll") or an interjection ("O", "Aye");
- abbreviated titles ("Mr.", "Dr.") and initials ("J.") do not end a sentence, and
  titles and words of address are left out of the name ("Mr. Darcy" is "darcy", as
  "Darcy" is; "Captain Ahab" is "ahab");
- dates ("12 May 2023", "May 12, 2023", "May 2023"; day, month, year in the key)
  and numbers of three or more digits (years, counts) are names too.

A name's *key* is casefolded, its white space collapsed, a leading "the" and a
trailing possessive "'s" dropped: "The Pequod's" and "the Pequod" are both "pequod".
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from cam_engine.calendar_names import MONTH_NAMES
from cam_engine.stopwords import STOPWORDS
from cam_engine.types import Node

MAX_NAMES = 64  # per chunk: a chunk is at most 16 x chunk_tokens characters
MAX_RUN_WORDS = 6  # a longer run of capitals is a heading or a title, cut into names
MAX_KEY_CHARS = 80

# Lowercase words that may sit inside a name between capitalized words.
CONNECTORS = frozenset(
    ["of", "the", "de", "del", "della", "der", "den", "van", "von", "da", "du", "la", "le", "al"]
)
# Abbreviated titles: their period does not end a sentence, and they are not kept in
# the name (so "Mr. Darcy" and "Darcy" are one name).
TITLES = frozenset(
    ["mr", "mrs", "ms", "messrs", "dr", "prof", "rev", "capt", "col", "gen", "lt", "sgt"]
)
# Words of address dropped before the name they introduce ("Captain Ahab" is "ahab",
# as "Ahab" is), unless they are the whole name.
HONORIFICS = frozenset(
    [
        "captain",
        "mister",
        "miss",
        "madam",
        "sir",
        "lady",
        "lord",
        "king",
        "queen",
        "father",
        "uncle",
    ]
)
# Capitalized at the start of an exclamation, and never a name alone.
INTERJECTIONS = frozenset(["o", "oh", "ah", "aye", "ay", "ho", "alas", "yes", "nay", "lo"])
# Other abbreviations whose period does not end a sentence; they stay in the name.
ABBREVIATIONS = frozenset(["st", "mt", "ft", "jr", "sr", "co", "inc", "ltd", "no", "vs"])
MONTHS = frozenset(name.casefold() for name in MONTH_NAMES)

# One token: a number (with thousands separators), a word (letters and digits, inner
# apostrophes and hyphens), a paragraph break, or one punctuation mark.
_TOKEN = re.compile(
    r"(?P<num>\d{1,3}(?:,\d{3})+(?![\d,])|\d+(?:\.\d+)?)"
    r"|(?P<word>[^\W\d_](?:[\w'’-]*[^\W_])?)"
    r"|(?P<para>\n[^\S\n]*\n\s*)"
    r"|(?P<mark>[^\w\s])"
)
_SENTENCE_END = frozenset(".!?…")
_DAY = re.compile(r"\d{1,2}$")
_YEAR = re.compile(r"\d{4}$")
_POSSESSIVE = re.compile(r"['’]s?$")
_APOSTROPHE = re.compile(r"['’]")


def _function_word(folded: str) -> bool:
    """A stopword, an interjection, or a stopword's contraction ("I'll", "don't")."""
    base = _APOSTROPHE.split(folded, maxsplit=1)[0]
    return folded in STOPWORDS or folded in INTERJECTIONS or base in STOPWORDS


class _Token(NamedTuple):  # a tuple: a chunk has hundreds of tokens, made fast
    kind: str  # "num", "word", "para" or "mark"
    text: str
    start: int  # offset in the text: names are returned in the order they first appear


def names_in(text: str, *, limit: int = MAX_NAMES) -> list[str]:
    """The keys of the names ``text`` mentions, each once, in first-mention order, at
    most ``limit``. Linear in the text's length."""
    tokens = [_Token(m.lastgroup or "", m.group(), m.start()) for m in _TOKEN.finditer(text)]
    evidence = _Evidence.of(tokens)
    keys: list[str] = []
    seen: set[str] = set()
    for run in _candidates(tokens, evidence):
        for words in (run, *_parts(run)):
            key = name_key(words)
            if key and key not in seen:
                seen.add(key)
                keys.append(key)
                if len(keys) >= limit:
                    return keys
    return keys


def chunk_names(chunk: Node) -> Sequence[str]:
    """The name keys of a chunk node: as computed ahead (``Node.names``), or now."""
    return chunk.names if chunk.names is not None else names_in(chunk.text)


def name_key(words: list[str]) -> str:
    """The key of a name written as ``words``: casefolded, a leading "the" and a
    trailing possessive dropped, at most ``MAX_KEY_CHARS`` characters."""
    folded = [w.casefold() for w in words]
    while folded and folded[0] in CONNECTORS:
        folded = folded[1:]
    while folded and folded[-1] in CONNECTORS:
        folded = folded[:-1]
    if not folded:
        return ""
    while len(folded) > 1 and (folded[0] in TITLES or folded[0] in HONORIFICS):
        folded = folded[1:]
    folded[-1] = _POSSESSIVE.sub("", folded[-1]) if len(folded[-1]) > 2 else folded[-1]
    if all(_function_word(w) or not w for w in folded):
        return ""
    key = " ".join(w for w in folded if w)[:MAX_KEY_CHARS].strip()
    return key if len(key) > 1 else ""


@dataclass
class _Evidence:
    """What the whole chunk says about a word opening a sentence: whether it is also
    capitalized inside a sentence, and whether it is also written lowercase."""

    capitalized_inside: set[str]
    lowercase: set[str]

    @staticmethod
    def of(tokens: list[_Token]) -> _Evidence:
        inside: set[str] = set()
        lowercase: set[str] = set()
        for token, opens in _words_with_position(tokens):
            folded = _POSSESSIVE.sub("", token.text).casefold()
            if not token.text[0].isupper():
                lowercase.add(folded)
            elif not opens:
                inside.add(folded)
        return _Evidence(inside, lowercase)

    def names(self, word: str) -> bool:
        folded = _POSSESSIVE.sub("", word).casefold()
        if _function_word(folded) or folded in self.lowercase:
            return False
        return folded in self.capitalized_inside or _is_acronym(word)


def _is_acronym(word: str) -> bool:
    return len(word) >= 2 and word.isupper() and word.isalpha()


def _words_with_position(tokens: list[_Token]) -> Iterator[tuple[_Token, bool]]:
    """Each word token, with whether it opens a sentence."""
    opens = True
    for i, token in enumerate(tokens):
        if token.kind == "word":
            yield token, opens
            opens = False
        elif token.kind == "para" or (
            token.kind == "mark" and token.text in _SENTENCE_END and not _abbreviated(tokens, i)
        ):
            opens = True
        elif token.kind == "num":
            opens = False


def _abbreviated(tokens: list[_Token], i: int) -> bool:
    """Whether the period at ``i`` closes an abbreviation or an initial (not a sentence)."""
    if tokens[i].text != "." or i == 0 or tokens[i - 1].kind != "word":
        return False
    word = tokens[i - 1].text
    folded = word.casefold()
    return folded in TITLES or folded in ABBREVIATIONS or (len(word) == 1 and word.isupper())


def _candidates(tokens: list[_Token], evidence: _Evidence) -> Iterator[list[str]]:
    """The names of the text as lists of words (dates and numbers as their parts), in
    the order they appear."""
    run: list[str] = []  # the capitalized run being read
    pending: list[str] = []  # connectors read after it, kept if a capital follows
    opens = True
    guessed = False  # the run opens a sentence on _opens_a_run's guess
    i = 0
    while i < len(tokens):
        token = tokens[i]
        date = _date_at(tokens, i) if _may_start_date(token) else 0
        if date:
            if run:
                yield from _finished(run, guessed)
            run, pending = [], []
            yield _date_words(tokens[i : i + date])
            i += date
            opens = False
            continue
        if token.kind == "word":
            capital = token.text[0].isupper()
            folded = token.text.casefold()
            guess = not run and opens and not evidence.names(token.text)
            if capital and (run or not opens or not guess or _opens_a_run(tokens, i)):
                if folded in TITLES and not run:
                    pass  # a title is not part of the name it introduces
                elif _function_word(folded) and folded not in CONNECTORS and not run:
                    pass  # "I", "I'll", or "When" inside a quoted sentence
                else:
                    guessed = guessed if run else guess
                    run += [*pending, token.text]
                    pending = []
                    if len(run) >= MAX_RUN_WORDS:
                        yield from _finished(run, guessed)
                        run = []
            elif run and folded in CONNECTORS and len(pending) < 2:
                pending.append(token.text)
            else:
                if run:
                    yield from _finished(run, guessed)
                run, pending = [], []
            opens = False
        else:
            joins = token.kind == "mark" and token.text == "." and _abbreviated(tokens, i)
            if not joins:
                if run:
                    yield from _finished(run, guessed)
                run, pending = [], []
                if token.kind == "num" and len(token.text.replace(",", "").split(".")[0]) >= 3:
                    yield [token.text.replace(",", "")]
            if token.kind == "para" or (
                token.kind == "mark" and token.text in _SENTENCE_END and not joins
            ):
                opens = True
            elif token.kind == "num":
                opens = False
        i += 1
    if run:
        yield from _finished(run, guessed)


def _finished(run: list[str], guessed: bool) -> list[list[str]]:
    """A run read, and, when it opened a sentence on a guess, the run without its
    first word too ("Later Buddy Hield moved": "Buddy Hield" is the name)."""
    return [run, run[1:]] if guessed and len(run) > 1 else [run]


def _opens_a_run(tokens: list[_Token], i: int) -> bool:
    """Whether the capitalized word opening a sentence at ``i`` starts a run of
    capitals: "Ardmore Park is a stadium", "Buddy Hield plays": a paragraph about a
    subject names it first, and a sentence-opening word followed by a capital is
    rarely just capitalized there (a function word, "When Ahab", is not a name)."""
    folded = tokens[i].text.casefold()
    if _function_word(folded) or folded in TITLES or i + 1 >= len(tokens):
        return False
    after = tokens[i + 1]
    return (
        after.kind == "word"
        and after.text[0].isupper()
        and not _function_word(after.text.casefold())
    )


def _parts(run: list[str]) -> list[list[str]]:
    """A run with connectors inside, as the names it joins: "Sacramento Kings of the
    NBA" also names "Sacramento Kings" and "NBA", which another chunk may write alone."""
    parts: list[list[str]] = [[]]
    for word in run:
        if word.casefold() in CONNECTORS and not word[0].isupper():
            parts.append([])
        else:
            parts[-1].append(word)
    return [part for part in parts if part] if len(parts) > 1 else []


def _may_start_date(token: _Token) -> bool:
    """A day number or a month name: what a date starts with (checked before the
    fuller look of ``_date_at``, which most tokens would fail)."""
    if token.kind == "num":
        return len(token.text) <= 2
    return token.kind == "word" and token.text[0].isupper() and token.text.casefold() in MONTHS


def _date_at(tokens: list[_Token], i: int) -> int:
    """How many tokens from ``i`` make a date ("12 May 2023", "May 12, 2023",
    "May 2023"), 0 when none starts there."""
    texts = [t.text for t in tokens[i : i + 4]]
    kinds = [t.kind for t in tokens[i : i + 4]]

    def month(j: int) -> bool:
        return (j < len(texts) and kinds[j] == "word" and texts[j][0].isupper()) and texts[
            j
        ].casefold().rstrip(".") in MONTHS

    def day(j: int) -> bool:
        return j < len(texts) and kinds[j] == "num" and _DAY.match(texts[j]) is not None

    def year(j: int) -> bool:
        return j < len(texts) and kinds[j] == "num" and _YEAR.match(texts[j]) is not None

    if day(0) and month(1):  # 12 May [2023]
        return 3 if year(2) else 2
    if month(0) and day(1):  # May 12[,] 2023
        if len(texts) > 2 and texts[2] == "," and year(3):
            return 4
        return 3 if year(2) else 2
    if month(0) and year(1):  # May 2023
        return 2
    return 0


def _date_words(tokens: list[_Token]) -> list[str]:
    """A date's parts in one order, day month year: "May 12, 2023" is "12 May 2023"."""
    words = [t.text for t in tokens if t.kind != "mark"]
    if words[0][0].isdigit():
        return words
    return [words[1], words[0], *words[2:]] if _DAY.match(words[1]) else words
