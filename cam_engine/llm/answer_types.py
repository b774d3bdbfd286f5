"""What kind of answer a question asks for, and whether a sentence holds one.

The offline answerer quotes a sentence of the evidence; a sentence that matches the
question's words but holds no answer ("Where does Victor go?" answered by "Victor
went, and wept") is the usual miss. A question's first words say what it wants: a
person (who), a place (where), a time (when), a number (how many), a name or a thing
(which / what). ``answer_feature`` is 1.0 when a sentence holds something of that
kind that the question does not already name, 0.0 when it holds nothing of it, in
between for weaker signs. Regular expressions and word lists only: deterministic,
no model, any English text.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from cam_engine.calendar_names import MONTH_NAMES, WEEKDAY_NAMES
from cam_engine.stopwords import STOPWORDS

PERSON = "person"
PLACE = "place"
TIME = "time"
NUMBER = "number"
NAME = "name"  # a proper name of anything (which ship, what inn)
THING = "thing"  # no kind to look for: the question's words decide

# Titles go before a name; they are not the name ("Mr. Collins": Collins).
_TITLES = frozenset(
    [
        "mr",
        "mrs",
        "miss",
        "ms",
        "dr",
        "lady",
        "lord",
        "sir",
        "madam",
        "madame",
        "monsieur",
        "mademoiselle",
        "captain",
        "capt",
        "colonel",
        "col",
        "general",
        "lieutenant",
        "friar",
        "father",
        "professor",
        "m",
        "aunt",
        "uncle",
        "king",
        "queen",
        "prince",
        "princess",
        "count",
        "countess",
        "duke",
        "saint",
        "st",
    ]
)
# Capitalized words that are not names of anyone or anywhere.
_NOT_NAMES = frozenset(
    [
        "i",
        "god",
        "heaven",
        "heavens",
        "chapter",
        "letter",
        "volume",
        "book",
        "part",
        "act",
        "scene",
        "illustration",
        "oh",
        "o",
        "ah",
        "alas",
        "yes",
        "no",
        "nay",
        "sir",
        "madam",
        "english",
        "french",
    ]
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")
_CAPITALIZED = re.compile(r"^[A-Z][a-z]")

# Where the place names of a sentence follow: "in Geneva", "to the Orkneys", "of the
# Orkneys" ("the remotest of the Orkneys"), "at Evian", "for Mantua".
_PLACE_BEFORE = frozenset(
    [
        "in",
        "at",
        "to",
        "from",
        "into",
        "near",
        "towards",
        "toward",
        "of",
        "for",
        "through",
        "reach",
        "reached",
        "visit",
        "visited",
        "leave",
        "left",
        "quit",
        "across",
        "over",
        "via",
    ]
)
_PLACE_WORDS = re.compile(
    r"\b(?:island|isles?|town|city|village|street|county|country|shire|park|lake|"
    r"mountains?|river|sea|coast|harbou?r|port|abbey|inn|house|hall|court|church|"
    r"castle|vale|valley|glacier)s?\b",
    re.IGNORECASE,
)

_TIME_STRONG = re.compile(
    r"\b(?:1[0-9]{3}|[0-9]{1,2}(?:st|nd|rd|th)|"
    + "|".join(MONTH_NAMES[:4] + MONTH_NAMES[5:])  # "May" is also a verb: below, with a day
    + r"|May\s+[0-9]|"
    + "|".join(WEEKDAY_NAMES)
    + r"|Christmas|Easter|Michaelmas|Lammas|Whitsun\w*|Candlemas|Midsummer|"
    r"o'clock|o’clock|midnight|noon)\b"
)
_TIME_WEAK = re.compile(
    r"\b(?:spring|summer|autumn|winter|morning|evening|night|dawn|sunrise|sunset|"
    r"yesterday|to-?morrow|to-?day|tonight|week|month|year|eve|season|age|ago|hour|"
    r"day|days|years|months|weeks)\b",
    re.IGNORECASE,
)
_NUMBER = re.compile(
    r"\b(?:[0-9][0-9,.]*|one|two|three|four|five|six|seven|eight|nine|ten|eleven|"
    r"twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|"
    r"thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|million|dozen|"
    r"score|half|twice|thrice|first|second|third|fourth|fifth)\b",
    re.IGNORECASE,
)

# (pattern of the question's opening, the kind it asks for), first match wins.
_QUESTION_KINDS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), kind)
    for pattern, kind in (
        (r"\bhow\s+(?:many|much|old|tall|long|far|often|large|big|high|deep)\b", NUMBER),
        (r"\b(?:what|which)\s+(?:year|month|day|date|time|season|hour|eve)\b", TIME),
        (r"\b(?:what|which)\s+age\b", NUMBER),
        (
            r"\b(?:what|which)\s+(?:city|town|village|country|county|island|street|place|"
            r"port|river|lake|mountain|house|estate|inn)\b",
            PLACE,
        ),
        (r"\bwhen\b", TIME),
        (r"\bwhere\b", PLACE),
        (r"\bwho(?:m|se)?\b", PERSON),
        (r"\bwhat\s+(?:is|was|are|were)\s+(?:the\s+)?names?\b", NAME),
        (r"\bwhich\b", NAME),
        (r"\bwhat\b", THING),
    )
)


def fold(word: str) -> str:
    """A word compared without case or a possessive ending ("Victor's": victor)."""
    folded = word.casefold()
    for ending in ("'s", "’s"):
        folded = folded.removesuffix(ending)
    return folded


def question_words(question: str) -> frozenset[str]:
    """The question's words, folded: a name it holds is not its answer."""
    return frozenset(fold(w) for w in _WORD.findall(question))


def answer_kind(question: str) -> str:
    """The kind of answer ``question`` asks for (``THING`` when it does not say)."""
    for pattern, kind in _QUESTION_KINDS:
        if pattern.search(question):
            return kind
    return THING


@dataclass(frozen=True)
class Vocabulary:
    """What the evidence says about its words: those written capitalized where no
    sentence begins (name-like), and those also written in lower case (common words
    that can open a sentence)."""

    capitalized: frozenset[str]
    lowercase: frozenset[str]

    def is_name(self, word: str) -> bool:
        folded = fold(word)
        return (
            bool(_CAPITALIZED.match(word))
            and folded not in _TITLES
            and folded not in _NOT_NAMES
            and folded not in STOPWORDS
            and folded in self.capitalized
            and folded not in self.lowercase
        )


def vocabulary(sentences: Iterable[str]) -> Vocabulary:
    capitalized: set[str] = set()
    lowercase: set[str] = set()
    for sentence in sentences:
        for i, word in enumerate(_WORD.findall(sentence)):
            folded = fold(word)
            if word[0].islower():
                lowercase.add(folded)
            elif i > 0 and _CAPITALIZED.match(word):
                capitalized.add(folded)
    return Vocabulary(frozenset(capitalized), frozenset(lowercase))


def _names(sentence: str, vocab: Vocabulary, asked: Collection[str]) -> list[tuple[int, str]]:
    """(word index, word) of the names in ``sentence`` the question does not name."""
    words = _WORD.findall(sentence)
    return [(i, w) for i, w in enumerate(words) if vocab.is_name(w) and fold(w) not in asked]


NEAR = 8  # words: a name this close to a word of the question is its likeliest answer
FAR_NAME = 0.6  # how surely a name further from the question's words answers it


def _near_question_words(
    sentence: str, vocab: Vocabulary, asked: Collection[str]
) -> dict[str, float]:
    """The sentence's names (folded), 1.0 for those within ``NEAR`` words of a
    content word of the question ("Justine ... was executed" for "Who was executed?"),
    ``FAR_NAME`` for the others."""
    words = [fold(w) for w in _WORD.findall(sentence)]
    anchors = [i for i, w in enumerate(words) if w in asked and w not in STOPWORDS and len(w) > 2]
    found: dict[str, float] = {}
    for i, name in _names(sentence, vocab, asked):
        close = any(abs(i - a) <= NEAR for a in anchors)
        key = fold(name)
        found[key] = max(found.get(key, 0.0), 1.0 if close else FAR_NAME)
    return found


def _place_names(sentence: str, vocab: Vocabulary, asked: Collection[str]) -> list[str]:
    """The names of the sentence that come after a preposition of place (a few words
    after it: "to the remotest of the Orkneys")."""
    words = [w.casefold() for w in _WORD.findall(sentence)]
    return [
        fold(name)
        for i, name in _names(sentence, vocab, asked)
        if any(w in _PLACE_BEFORE for w in words[max(0, i - 3) : i])
    ]


def _new(matches: Iterable[str], asked: Collection[str]) -> list[str]:
    return [m.casefold() for m in matches if m.casefold() not in asked]


def answer_candidates(
    sentence: str, kind: str, vocab: Vocabulary, asked: Collection[str]
) -> dict[str, float]:
    """The answers of ``kind`` that ``sentence`` holds and the question (its words,
    folded: ``asked``) does not, each with how surely it is one (0.0 to 1.0); for
    ``THING`` none is looked for."""
    found: dict[str, float] = {}

    def add(items: Iterable[str], weight: float) -> None:
        for item in items:
            found[item] = max(found.get(item, 0.0), weight)

    if kind in (PERSON, NAME, PLACE):
        names = [fold(w) for _, w in _names(sentence, vocab, asked)]
        if kind == PLACE:
            add(names, 0.6 if _PLACE_WORDS.search(sentence) else 0.4)
            add(_place_names(sentence, vocab, asked), 1.0)
        else:
            near = _near_question_words(sentence, vocab, asked)
            for name, closeness in near.items():
                add([name], closeness)
    elif kind == TIME:
        add(_new(_TIME_WEAK.findall(sentence), asked), 0.5)
        add(_new(_TIME_STRONG.findall(sentence), asked), 1.0)
    elif kind == NUMBER:
        add(_new(_NUMBER.findall(sentence), asked), 1.0)
    return found


def answer_feature(sentence: str, kind: str, vocab: Vocabulary, asked: Collection[str]) -> float:
    """How surely ``sentence`` holds an answer of ``kind`` that the question does not
    already hold: 0.0 to 1.0 (1.0 for ``THING``, which has no kind to look for; 0.5
    for a ``NAME`` question without a name: "which" also asks for things)."""
    if kind == THING:
        return 1.0
    found = answer_candidates(sentence, kind, vocab, asked)
    if not found:
        return 0.5 if kind == NAME else 0.0
    return max(found.values())
