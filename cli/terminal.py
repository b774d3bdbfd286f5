"""What the CLI prints to a terminal: user-supplied text with its control characters
escaped, so that a document id, a file name or a document's text cannot move the
cursor, recolour the terminal, hide text behind a bidi override or forge a line of
output (``cam stats`` listing a document named ``"a\\nmemory 'x' deleted"``).

Every human-readable line that carries names, ids, paths or texts goes through
``printable``; JSON output needs nothing, as ``json.dumps`` escapes control characters.
"""

from __future__ import annotations

import logging
import re

# C0 controls (newline, carriage return, ESC, ...), DEL and the C1 controls (a CSI
# alone, 0x9b, starts an escape sequence on some terminals); the Arabic letter mark,
# the left-to-right and right-to-left marks, the line and paragraph separators, and the
# bidi embeddings, overrides and isolates, which reorder what follows them on screen.
_OTHERS = "\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069"
_UNSAFE = re.compile(f"[\x00-\x1f{_OTHERS}]")
_UNSAFE_BUT_LINES = re.compile(f"[\x00-\x08\x0b-\x1f{_OTHERS}]")  # keeps \t and \n


def printable(text: object, *, lines: bool = False) -> str:
    """``text`` with each control character written as its escape (``\\x1b``,
    ``\\n``, ``\\u202e``), as Python writes it in a string's repr; ``lines=True`` keeps
    new lines and tabs (an answer of several lines)."""
    unsafe = _UNSAFE_BUT_LINES if lines else _UNSAFE
    return unsafe.sub(_escape, str(text))


def _escape(match: re.Match[str]) -> str:
    return repr(match.group())[1:-1]  # "\n", "\x1b", "\x9b", "\u202e"


class PrintableFormatter(logging.Formatter):
    """Log lines with their message escaped as ``printable`` does (a path named by a
    client of ``cam mcp`` cannot forge a line of the log); a traceback below keeps its
    lines."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return printable(super().formatMessage(record))
