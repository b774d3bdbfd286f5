"""cam bench lifecycle's edit: which paragraph of the book is replaced, and by what."""

from __future__ import annotations

from cam_engine.bench.lifecycle import middle_edit, paragraphs, summaries_by_level
from cam_engine.chunking import count_tokens
from cam_engine.engine.reports import BatchReport, LevelReport


def words(n: int, word: str) -> str:
    return " ".join([word] * n)


def test_paragraphs_are_trimmed_spans_between_blank_lines() -> None:
    text = "  one two\r\n\r\nthree\n \n\n four five \n"
    assert [text[a:b] for a, b in paragraphs(text)] == ["one two", "three", "four five"]


def test_the_edit_replaces_the_first_fitting_paragraph_past_the_middle() -> None:
    sizes = [(100, "early"), (30, "short"), (400, "long"), (120, "target"), (90, "late")]
    book = "\n\n".join(words(n, word) for n, word in sizes)
    donor = "\n\n".join([words(120, "front"), *(words(n, f"d{n}") for n in (50, 118, 121, 300))])
    edit = middle_edit(book, donor)
    assert edit.old == words(120, "target")
    assert edit.new == words(121, "d121")  # closest in tokens; front matter skipped
    edited = edit.apply(book)
    assert words(121, "d121") in edited and "target" not in edited
    assert count_tokens(edited) == count_tokens(book) + 1


def test_summaries_are_counted_per_level_of_the_summary_and_for_the_top() -> None:
    first = BatchReport("d", 0, levels=[LevelReport(0, summaries_written=2), LevelReport(1)])
    first.top_summaries_written = 1
    second = BatchReport("d", 1, levels=[LevelReport(0, summaries_written=1)])
    assert summaries_by_level([first, second]) == {"1": 3, "top": 1}
