"""Progress lines on stderr for long work, for every command and strategy that reports
``Progress``: on a terminal one line rewritten in place; elsewhere (a CI log, a pipe,
nohup) plain lines, the first one, then at most one every ``interval`` seconds, and
the last one, so that a log shows the work is moving without a line per step."""

from __future__ import annotations

import time
from collections.abc import Callable

import click

from cam_engine.api import Progress

PLAIN_INTERVAL = 10.0  # seconds between plain progress lines (the first and last always)


class ProgressLines:
    def __init__(
        self,
        terminal: bool,
        *,
        write: Callable[[str, bool], None] | None = None,
        interval: float = PLAIN_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.terminal = terminal
        self.write = write or (lambda text, newline: click.echo(text, nl=newline, err=True))
        self.interval = interval
        self.clock = clock
        self.last: float | None = None  # when the last plain line was written
        self.open = False  # a rewritten terminal line is waiting for its newline

    def __call__(self, progress: Progress) -> None:
        if self.terminal:
            self.write(f"\r{progress.line()}\x1b[K", False)  # ESC[K: clear the line's rest
            self.open = True
            return
        now = self.clock()
        if self.last is None or progress.finished or now - self.last >= self.interval:
            self.write(progress.line(), True)
            self.last = now

    def close(self) -> None:
        if self.open:
            self.write("", True)
            self.open = False
