"""Tolerant parsers of model output.

Convention: every parser is a pure function that never raises on any ``str`` input;
it returns ``None`` when nothing usable is found, so the caller decides whether to
ask again, fall back or give up. Each parser first drops a reasoning model's
thinking (``strip_thinking``), so numbers or JSON inside ``<think>`` never count.

- ``strip_thinking``: the text after the last ``</think>``.
- ``parse_number_list``: the last bracketed list of integers, ``[1, 3, 5]`` (``[]`` too).
  Only bracketed lists count: bare numbers such as ``1, 3 and 5`` give ``None``.
- ``parse_json_object``: a JSON object from the first ``{`` to the last ``}`` (GAM).
- ``parse_boxed``: the content of the last ``\\boxed{...}``, braces matched (MemAgent).
- ``parse_break_point``: ``n`` in ``Break point: <n>`` (ReadAgent pagination).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any

THINK_START = "<think>"
THINK_END = "</think>"
BOXED = "\\boxed{"
# At most 18 digits per number: always an int64, and never near Python's limit on
# int() of long digit strings (which raises ValueError).
_INT = r"[+-]?[0-9]{1,18}"
_NUMBER_LIST = re.compile(rf"\[\s*(?:{_INT}\s*(?:,\s*{_INT}\s*)*,?\s*)?\]")
_LIST_ITEM = re.compile(_INT)
_BREAK_POINT = re.compile(r"break\s*point\s*:?\s*<?\s*([0-9]{1,18})\s*>?", re.IGNORECASE)


def strip_thinking(text: str) -> str:
    """Everything after the last ``</think>``; ``""`` when the reply is still inside an
    unclosed ``<think>`` (the model ran out of tokens while thinking); else ``text``."""
    if THINK_END in text:
        return text.rsplit(THINK_END, 1)[1]
    if text.lstrip().startswith(THINK_START):
        return ""
    return text


def parse_number_list(text: str, *, count: int | None = None) -> list[int] | None:
    """The integers of the last bracketed list, first occurrences in order.

    With ``count``, numbers outside ``1..count`` are dropped (the result may then be
    empty). ``[]`` gives ``[]``; no bracketed list of integers gives ``None``.
    """
    matches = _NUMBER_LIST.findall(strip_thinking(text))
    if not matches:
        return None
    numbers: list[int] = []
    for item in _LIST_ITEM.findall(matches[-1]):
        number = int(item)
        if count is not None and not 1 <= number <= count:
            continue
        if number not in numbers:
            numbers.append(number)
    return numbers


def parse_json_object(text: str) -> dict[str, Any] | None:
    """The JSON object from the first ``{`` to the last ``}``, or ``None`` when that
    span is missing, is not valid JSON, or is not an object."""
    body = strip_thinking(text)
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end < start:
        return None
    try:
        value = json.loads(body[start : end + 1])
    except (ValueError, RecursionError):  # RecursionError: absurdly deep nesting
        return None
    return value if isinstance(value, dict) else None


def parse_boxed(text: str) -> str | None:
    """The content of the last ``\\boxed{...}`` whose braces close, or ``None``.

    Braces are matched, so ``\\boxed{\\frac{1}{2}}`` gives ``\\frac{1}{2}``. A last
    ``\\boxed{`` that never closes (a truncated reply) is skipped for an earlier one.
    """
    body = strip_thinking(text)
    start = body.rfind(BOXED)
    while start >= 0:
        content = _braced(body, start + len(BOXED))
        if content is not None:
            return content
        start = body.rfind(BOXED, 0, start)
    return None


def _braced(text: str, begin: int) -> str | None:
    """The text from ``begin`` up to the ``}`` that closes an already open ``{``."""
    depth = 1
    for i in range(begin, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[begin:i]
    return None


def parse_break_point(text: str, *, valid: Collection[int]) -> int | None:
    """``n`` from the last ``Break point: <n>`` (also ``Break point: n``), or ``None``
    when there is none or ``n`` is not in ``valid``."""
    matches = _BREAK_POINT.findall(strip_thinking(text))
    if not matches:
        return None
    number = int(matches[-1])
    return number if number in valid else None
