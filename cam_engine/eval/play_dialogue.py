"""A conversation eval set from a public-domain play: each scene a session, each speech a
turn, and template questions with the turn that answers them as gold evidence.

The output is the LoCoMo layout ``cam eval locomo`` reads (``load_locomo``): one sample
``{sample_id, conversation: {speaker_a, speaker_b, session_N: [{speaker, dia_id, text}],
session_N_date_time}, qa: [{question, answer, evidence, kind}]}``. Session dates are
SYNTHETIC: the play has none, so scene k (from 0) is dated ``FIRST_DATE + k *
DAYS_BETWEEN`` days at a time of day that cycles with k; they exist so that questions can
name dates as real conversation-memory questions do.

Two kinds of question, chosen deterministically (``random.Random(seed)``):

- ``said``: "What did <speaker> say about <w1> and <w2> on <date>?" where w1, w2 are the
  two rarest content words of the turn (fewest turns of the play use them; no other turn
  has both). Gold: that turn.
- ``reply``: "How did <B> answer when <A> spoke of <w1> and <w2>?" where A's turn is
  followed, in the same scene, by B's (another speaker), and w1, w2 are the rarest
  content words of A's turn that B's turn does not use. Gold: B's turn, which shares
  little with the question but its speaker.

Run ``cam bench play-dialogue PLAY.txt --out play.json``; docs/evaluation.md
("A conversation set from a play") says how it is built and what it is biased towards.
"""

from __future__ import annotations

import itertools
import json
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from cam_engine.sources import clean_text
from cam_engine.stopwords import STOPWORDS

FIRST_DATE = date(2023, 1, 7)  # synthetic: scene 0's date
DAYS_BETWEEN = 9  # synthetic: days from one scene to the next
TIMES = ("9:15 am", "11:40 am", "1:56 pm", "4:20 pm", "7:05 pm", "10:30 pm")
SAID, REPLY = "said", "reply"

_SESSION_HEADING = re.compile(r"^(?:ACT [IVX]+|SCENE [IVX]+\..*|THE PROLOGUE)$")
_SPEAKER = re.compile(r"^([A-Z][A-Z’' &-]*[A-Z])\.$")
_STAGE_DIRECTION = re.compile(r"\[_.*?_\]", re.S)
_CHARACTERS = re.compile(r"^\s*Dramatis Person.*$", re.M)
_WORD = re.compile(r"[a-z]+(?:’[a-z]+)?")
_MIN_CONTENT_WORDS = 5  # a turn with fewer says too little to ask about


@dataclass(frozen=True)
class Turn:
    speaker: str
    text: str
    session: int  # 1-based, the session_N it is in
    index: int  # 1-based inside its session

    @property
    def dia_id(self) -> str:
        return f"D{self.session}:{self.index}"


def parse_play(text: str) -> list[list[Turn]]:
    """The play's scenes (and prologues) as sessions of turns (speaker, speech on one
    line, stage directions removed). What comes before the list of characters, and
    speeches before the first heading, are skipped."""
    sessions: list[list[Turn]] = []
    speaker: str | None = None
    lines: list[str] = []

    def close_turn() -> None:
        speech = " ".join(_STAGE_DIRECTION.sub(" ", " ".join(lines)).split())
        if speaker is not None and sessions and speech:
            session = sessions[-1]
            session.append(Turn(speaker, speech, len(sessions), len(session) + 1))
        lines.clear()

    for raw in _after_contents(clean_text(text)).splitlines():
        line = raw.rstrip()
        if _SESSION_HEADING.match(line):
            close_turn()
            speaker = None
            if not sessions or sessions[-1]:
                sessions.append([])
        elif found := _SPEAKER.match(line):
            close_turn()
            speaker = _display_name(found.group(1))
        elif not line.strip():
            close_turn()
            speaker = None  # a speech ends at a blank line; a stage direction may follow
        elif speaker is not None and not line.startswith(" "):  # indented: stage direction
            lines.append(line.strip())
    close_turn()
    kept = [s for s in sessions if s]
    return [
        [Turn(t.speaker, t.text, number, t.index) for t in session]
        for number, session in enumerate(kept, start=1)
    ]


def _after_contents(text: str) -> str:
    """The text from its list of characters on: the table of contents before it has
    the ACT headings (and a speaker's name) too."""
    found = _CHARACTERS.search(text)
    return text[found.end() :] if found else text


def _display_name(heading: str) -> str:
    """``LADY CAPULET`` -> ``Lady Capulet``."""
    return " ".join(word.capitalize() for word in heading.split())


def session_date(number: int) -> date:
    """The synthetic date of session ``number`` (from 1)."""
    return FIRST_DATE + timedelta(days=(number - 1) * DAYS_BETWEEN)


def session_date_time(number: int) -> str:
    """LoCoMo's form: ``1:56 pm on 8 May, 2023``."""
    day = session_date(number)
    return f"{TIMES[(number - 1) % len(TIMES)]} on {day.day} {day:%B}, {day.year}"


def spoken_date(day: date) -> str:
    """The form the questions use: ``8 May 2023``."""
    return f"{day.day} {day:%B} {day.year}"


def content_words(text: str, names: frozenset[str]) -> list[str]:
    """The turn's distinct words of four letters or more that are neither function words
    nor part of a speaker's name, in order of first use."""
    words = (w for w in _WORD.findall(text.lower()) if len(w) >= 4)
    return list(dict.fromkeys(w for w in words if w not in STOPWORDS and w not in names))


class _Rarity:
    """How many turns use each content word."""

    def __init__(self, turns: Sequence[Turn], names: frozenset[str]) -> None:
        self.names = names
        self.words = {t.dia_id: content_words(t.text, names) for t in turns}
        self.turns_using: Counter[str] = Counter(w for ws in self.words.values() for w in ws)

    def rarest(self, turn: Turn, count: int, avoid: frozenset[str] = frozenset()) -> list[str]:
        """The ``count`` words of ``turn`` fewest turns use (ties: first used first)."""
        words = [w for w in self.words[turn.dia_id] if w not in avoid]
        ranked = sorted(words, key=lambda w: (self.turns_using[w], words.index(w)))
        return ranked[:count]

    def unique_pair(self, turn: Turn, pair: Sequence[str]) -> bool:
        """No other turn uses both words."""
        return not any(
            dia_id != turn.dia_id and all(w in ws for w in pair)
            for dia_id, ws in self.words.items()
        )


def said_questions(turns: Sequence[Turn], rarity: _Rarity) -> list[dict[str, Any]]:
    out = []
    for turn in turns:
        if len(rarity.words[turn.dia_id]) < _MIN_CONTENT_WORDS:
            continue
        pair = rarity.rarest(turn, 2)
        if not rarity.unique_pair(turn, pair):
            continue
        when = spoken_date(session_date(turn.session))
        out.append(
            {
                "question": f"What did {turn.speaker} say about {pair[0]} and {pair[1]} on {when}?",
                "answer": turn.text,
                "evidence": [turn.dia_id],
                "kind": SAID,
            }
        )
    return out


def reply_questions(sessions: Sequence[Sequence[Turn]], rarity: _Rarity) -> list[dict[str, Any]]:
    out = []
    for session in sessions:
        for said, answer in itertools.pairwise(session):
            if said.speaker == answer.speaker:
                continue
            if len(rarity.words[said.dia_id]) < _MIN_CONTENT_WORDS:
                continue
            if len(rarity.words[answer.dia_id]) < 3:  # "Ay." answers nothing to look for
                continue
            pair = rarity.rarest(said, 2, avoid=frozenset(rarity.words[answer.dia_id]))
            if len(pair) < 2 or not rarity.unique_pair(said, pair):
                continue
            out.append(
                {
                    "question": f"How did {answer.speaker} answer when {said.speaker} "
                    f"spoke of {pair[0]} and {pair[1]}?",
                    "answer": answer.text,
                    "evidence": [answer.dia_id],
                    "kind": REPLY,
                }
            )
    return out


def build_set(
    text: str, sample_id: str, *, said: int = 300, reply: int = 200, seed: int = 13
) -> dict[str, Any]:
    """The LoCoMo-layout sample of the play ``text``: its sessions and ``said`` + ``reply``
    questions (fewer if the play has fewer candidates), drawn with ``seed``."""
    sessions = parse_play(text)
    if not sessions:
        raise ValueError("no scenes found (expected ACT/SCENE headings and SPEAKER. lines)")
    turns = [t for s in sessions for t in s]
    names = frozenset(w for t in turns for w in t.speaker.lower().split())
    rarity = _Rarity(turns, names)
    draw = random.Random(seed)
    candidates = (said_questions(turns, rarity), reply_questions(sessions, rarity))
    qa: list[dict[str, Any]] = []
    for pool, wanted in zip(candidates, (said, reply), strict=True):
        qa.extend(draw.sample(pool, min(wanted, len(pool))))
    counts = Counter(t.speaker for t in turns).most_common(2)
    conversation: dict[str, Any] = {
        "speaker_a": counts[0][0],
        "speaker_b": counts[-1][0],
    }
    for number, session in enumerate(sessions, start=1):
        conversation[f"session_{number}"] = [
            {"speaker": t.speaker, "dia_id": t.dia_id, "text": t.text} for t in session
        ]
        conversation[f"session_{number}_date_time"] = session_date_time(number)
    return {"sample_id": sample_id, "conversation": conversation, "qa": qa}


def run(
    play: Path,
    out: Path,
    *,
    said: int = 300,
    reply: int = 200,
    seed: int = 13,
    sample_id: str | None = None,
) -> str:
    """Write the set built from ``play`` to ``out``; return a line saying what it holds."""
    text = play.read_text(encoding="utf-8-sig")
    sample = build_set(text, sample_id or play.stem, said=said, reply=reply, seed=seed)
    out.write_text(json.dumps([sample], ensure_ascii=False, indent=1) + "\n", "utf-8")
    sessions = sum(1 for k in sample["conversation"] if re.fullmatch(r"session_\d+", k))
    kinds = Counter(q["kind"] for q in sample["qa"])
    return f"{out}: {sessions} sessions, {dict(kinds)} questions"
