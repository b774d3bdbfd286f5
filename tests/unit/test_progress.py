"""Progress lines: one rewritten line on a terminal, throttled plain lines elsewhere."""

from __future__ import annotations

from cam_engine.cli.progress import ProgressLines
from cam_engine.progress import Progress


def step(done: int, total: int = 10) -> Progress:
    return Progress("memagent", "step", done, total, f"read {done * 5000:,} of 50,000 tokens")


def test_the_line_names_the_task_the_count_and_the_detail() -> None:
    assert step(2).line() == "memagent: step 2/10 (read 10,000 of 50,000 tokens)"
    assert Progress("research", "iteration", 3, None).line() == "research: iteration 3"


def test_plain_lines_are_the_first_one_every_interval_and_the_last() -> None:
    written: list[tuple[str, bool]] = []
    now = [0.0]
    lines = ProgressLines(
        False, write=lambda text, nl: written.append((text, nl)), interval=10, clock=lambda: now[0]
    )
    for done in range(1, 11):
        lines(step(done))
        now[0] += 3.0  # steps 1, 5 and 9 are 12 s apart; 10 is the last
    lines.close()
    assert [text.split()[2] for text, _ in written] == ["1/10", "5/10", "9/10", "10/10"]
    assert all(nl for _, nl in written)


def test_a_terminal_line_is_rewritten_and_ended_once() -> None:
    written: list[tuple[str, bool]] = []
    lines = ProgressLines(True, write=lambda text, nl: written.append((text, nl)))
    lines(step(1))
    lines(step(2))
    lines.close()
    lines.close()
    assert [nl for _, nl in written] == [False, False, True]
    assert written[1][0].startswith("\rmemagent: step 2/10")
