"""Conversations as input: turns (speaker, text) in sessions, each session with its date.

Two layouts are read:

- JSONL, one turn per line: ``{"speaker": ..., "text": ..., "time": ..., "session": ...}``
  (``time``: optional ISO date or datetime; ``session``: optional name or number). Turns
  with the same ``session`` in a row form a session; without ``session`` fields a new
  session starts where the calendar day of ``time`` changes. A session's date is its
  first turn's time.
- LoCoMo's: a conversation object with ``session_N`` lists of ``{speaker, text}`` turns and
  ``session_N_date_time`` strings (``1:56 pm on 8 May, 2023``), bare or inside a sample
  ``{"conversation": ...}`` (or a list holding one such sample), as ``cam eval locomo``
  reads it.

A bad turn is refused with one line naming the file and the line (JSONL) or the session
(LoCoMo). ``turn_chunking`` cuts a conversation into chunks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

from cam_engine.calendar_names import MONTH_NAMES, WEEKDAY_NAMES
from cam_engine.errors import InputError

# A speaker's name or a session's name is a label, not a text: longer is a mistake.
MAX_NAME_CHARS = 200
_SESSION_KEY = re.compile(r"session_(\d+)")
_MONTHS = {name.lower(): number for number, name in enumerate(MONTH_NAMES, start=1)}
_DAY_MONTH_YEAR = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?\s+([A-Za-z]{3,9})\.?,?\s+(\d{4})\b")
_MONTH_DAY_YEAR = re.compile(r"\b([A-Za-z]{3,9})\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b")


@dataclass(frozen=True)
class Turn:
    speaker: str
    text: str

    @property
    def line(self) -> str:
        """How a chunk shows the turn: ``Speaker: text`` on one line."""
        return turn_line(self.speaker, self.text)


@dataclass(frozen=True)
class Session:
    name: str
    date: str | None  # as given: ISO, or LoCoMo's "1:56 pm on 8 May, 2023"
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Conversation:
    sessions: tuple[Session, ...]

    @property
    def turns(self) -> list[Turn]:
        return [t for s in self.sessions for t in s.turns]

    def plain_text(self) -> str:
        """Each session's header line, then its turns, one per line; sessions apart by a
        blank line."""
        return "\n\n".join(
            "\n".join([session_header(s), *(t.line for t in s.turns)]) for s in self.sessions
        )


def turn_line(speaker: str, text: str) -> str:
    """``Speaker: text``, the text's white space (line breaks too) folded to one space."""
    return f"{' '.join(speaker.split())}: {' '.join(text.split())}"


# --- dates ---------------------------------------------------------------------------------


def parse_date(raw: str) -> date | None:
    """The calendar day of an ISO date or datetime, or of a date written out (``8 May,
    2023``, ``May 8th 2023``) anywhere in ``raw``; None when it names none."""
    text = raw.strip()
    try:
        return datetime.fromisoformat(text).date()
    except ValueError:
        pass
    for pattern, day_group, month_group in ((_DAY_MONTH_YEAR, 1, 2), (_MONTH_DAY_YEAR, 2, 1)):
        for found in pattern.finditer(text):
            month = _month(found.group(month_group))
            if month is None:
                continue
            try:
                return date(int(found.group(3)), month, int(found.group(day_group)))
            except ValueError:
                continue
    return None


def _month(name: str) -> int | None:
    name = name.lower()
    if name in _MONTHS:
        return _MONTHS[name]
    matches = [n for full, n in _MONTHS.items() if len(name) >= 3 and full.startswith(name)]
    return matches[0] if len(matches) == 1 else None


def date_renderings(day: date) -> list[str]:
    """The ways a question may write the day: ``8 May 2023``, ``Monday, May 8, 2023``,
    ``2023-05-08`` (``May 2023`` and ``2023`` are inside them as words)."""
    month, weekday = MONTH_NAMES[day.month - 1], WEEKDAY_NAMES[day.weekday()]
    return [
        f"{day.day} {month} {day.year}",
        f"{weekday}, {month} {day.day}, {day.year}",
        day.isoformat(),
    ]


def session_header(session: Session) -> str:
    """The line that opens each chunk of a session: its name and its date written the
    ways a question may write it, so a full-text search for a date or a month finds it:
    ``[Session 3 · 8 May 2023 · Monday, May 8, 2023 · 2023-05-08]``. A date that cannot be
    read is shown as given."""
    parts = [f"Session {_short(session.name)}"]
    if session.date:
        day = parse_date(session.date)
        parts += date_renderings(day) if day is not None else [_short(session.date)]
    return f"[{' · '.join(parts)}]"


def session_iso_date(session: Session) -> str | None:
    """The session's day as ISO (``2023-05-08``), or its date as given when unreadable."""
    if not session.date:
        return None
    day = parse_date(session.date)
    return day.isoformat() if day is not None else session.date


def _short(label: str) -> str:
    label = " ".join(label.split())
    return label if len(label) <= 60 else label[:59] + "…"


# --- JSONL turns ---------------------------------------------------------------------------


def looks_like_turns(data: bytes) -> bool:
    """Whether the first non-blank line of JSONL ``data`` (within its first 64 KiB) is a
    turn: a JSON object with a ``speaker`` (a bad one is then refused naming its line)."""
    for raw in data[: 64 << 10].splitlines():
        if not raw.strip():
            continue
        try:
            first = json.loads(raw)
        except (ValueError, RecursionError):
            return False
        return isinstance(first, dict) and "speaker" in first
    return False


def looks_like_locomo(data: bytes) -> bool:
    """Whether JSON ``data`` names a ``session_N`` list in its first 64 KiB."""
    return re.search(rb'"session_\d+"\s*:\s*\[', data[: 64 << 10]) is not None


def read_turns_jsonl(path: Path, text: str) -> Conversation:
    """The conversation of a JSONL file of turns; InputError naming the line of a bad one."""
    rows = (
        (f"{path}: line {number}", _json_line(f"{path}: line {number}", line))
        for number, line in enumerate(text.splitlines(), start=1)
        if line.strip()
    )
    talk = conversation_of_turns(rows)
    if not talk.sessions:
        raise InputError(f"{path}: no turns (expected one JSON object per line: speaker, text)")
    return talk


def conversation_of_turns(rows: Iterable[tuple[str, object]]) -> Conversation:
    """The conversation of turn objects ``{speaker, text, time, session}``, each given
    with where it was read (``chat.jsonl: line 7``), which its refusal names."""
    sessions: list[Session] = []
    turns: list[Turn] = []
    key: object = None  # what the current session is told apart by
    name, when = "", None
    for where, row in rows:
        turn, session, time = _turn_row(where, row)
        this = session if session is not None else (time.date() if time else key)
        if turns and this != key:
            sessions.append(Session(name, when, tuple(turns)))
            turns = []
        if not turns:
            name = session if session is not None else str(len(sessions) + 1)
            when = time.isoformat() if time is not None else None
        key = this
        turns.append(turn)
        if when is None and time is not None:
            when = time.isoformat()
    if turns:
        sessions.append(Session(name, when, tuple(turns)))
    return Conversation(tuple(sessions))


def _json_line(where: str, line: str) -> object:
    try:
        return json.loads(line)
    except (ValueError, RecursionError) as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deep"
        raise InputError(f"{where}: not JSON ({reason})") from None


def _turn_row(where: str, row: object) -> tuple[Turn, str | None, datetime | None]:
    if not isinstance(row, dict):
        raise InputError(f"{where}: expected a JSON object with speaker and text")
    turn = _turn(where, row)
    session = row.get("session")
    if session is not None and (isinstance(session, bool) or not isinstance(session, str | int)):
        raise InputError(f"{where}: session must be a string or a number")
    name = None if session is None else _name(where, "session", str(session))
    return turn, name, _time(where, row)


def _turn(where: str, row: dict[str, Any]) -> Turn:
    speaker, text = row.get("speaker"), row.get("text")
    if not isinstance(speaker, str) or not speaker.strip():
        raise InputError(f"{where}: speaker must be a non-empty string")
    if not isinstance(text, str):
        raise InputError(f"{where}: text must be a string")
    return Turn(_name(where, "speaker", speaker), text)


def _name(where: str, field: str, value: str) -> str:
    value = " ".join(value.split())
    if len(value) > MAX_NAME_CHARS:
        raise InputError(f"{where}: {field} longer than {MAX_NAME_CHARS} characters")
    return value


def _time(where: str, row: dict[str, Any]) -> datetime | None:
    value = row.get("time")
    if value is None:
        return None
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.strip())
        except ValueError:
            pass
    raise InputError(f"{where}: time {str(value)[:40]!r} is not an ISO date or datetime")


def read_conversation(path: Path, text: str) -> Conversation:
    """The conversation of a file: JSONL turns (``.jsonl``, or a first line that is a
    turn), else LoCoMo's layout."""
    if path.suffix.lower() == ".jsonl" or looks_like_turns(text[: 64 << 10].encode()):
        return read_turns_jsonl(path, text)
    return read_locomo(path, text)


# --- LoCoMo's layout -----------------------------------------------------------------------


def read_locomo(path: Path, text: str) -> Conversation:
    """The conversation of a LoCoMo-layout JSON file holding one conversation."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        where = f"line {exc.lineno}: " if isinstance(exc, json.JSONDecodeError) else ""
        reason = getattr(exc, "msg", "nested too deep")
        raise InputError(f"{path}: not JSON ({where}{reason})") from None
    if isinstance(data, list):
        if len(data) != 1:
            raise InputError(
                f"{path}: holds {len(data)} conversations; give one per file (cam eval "
                "locomo reads several)"
            )
        data = data[0]
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a conversation object with session_N lists")
    conversation = data.get("conversation", data)
    if not isinstance(conversation, dict):
        raise InputError(f"{path}: conversation must be an object with session_N lists")
    sessions = [s for s in locomo_sessions(path, conversation) if s.turns]
    if not sessions:
        raise InputError(f"{path}: no session_N lists of turns in the conversation")
    return Conversation(tuple(sessions))


def locomo_sessions(where: object, conversation: dict[str, Any]) -> Iterator[Session]:
    """The ``session_N`` lists in N's order, each turn as LoCoMo shows it (a shared image
    adds ``[shared image: caption]``)."""
    numbers = sorted(
        int(m.group(1))
        for key, value in conversation.items()
        if (m := _SESSION_KEY.fullmatch(key)) and isinstance(value, list)
    )
    for n in numbers:
        date_time = conversation.get(f"session_{n}_date_time")
        turns = [
            locomo_turn(f"{where}: session_{n} turn {i}", row)
            for i, row in enumerate(conversation[f"session_{n}"], start=1)
        ]
        yield Session(str(n), str(date_time) if date_time else None, tuple(turns))


def locomo_turn(where: str, row: object) -> Turn:
    if not isinstance(row, dict):
        raise InputError(f"{where}: expected an object with speaker and text")
    turn = _turn(where, row)
    caption = row.get("blip_caption")
    if caption:
        return Turn(turn.speaker, f"{turn.text.strip()} [shared image: {caption}]")
    return turn


def speakers_of(turns: Sequence[Turn]) -> list[str]:
    """The speakers of ``turns``, each once, in order of first turn."""
    return list(dict.fromkeys(t.speaker for t in turns))
