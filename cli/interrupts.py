"""Ctrl-C: every command ends with one line on stderr and exit status 130.

A command stopped by Ctrl-C has already undone what it was doing (the batch in flight
rolled back, context managers closed) by the time the ``KeyboardInterrupt`` reaches
the group. The process then ends at once, without the interpreter's shutdown: a thread
still inside torch or an LLM call (a server's tool call, a summarizer's worker) would
otherwise make that shutdown wait for it, or abort the process with SIGABRT.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import NoReturn

import click

EXIT_INTERRUPTED = 130  # 128 + SIGINT: what shells report for a command stopped by Ctrl-C


def exit_interrupted(detail: str | None = None) -> NoReturn:
    """Say the command was interrupted (and ``detail``: what was kept) and exit 130."""
    # On a terminal the line starts after the echoed ^C (or a progress bar).
    start = "\n" if sys.stderr.isatty() else ""
    click.echo(f"{start}interrupted{': ' + detail if detail else ''}", err=True)
    raise SystemExit(EXIT_INTERRUPTED)


def end_process_if_interrupted(exc: SystemExit) -> None:
    """At the process's entry point: an interrupted command's exit skips the interpreter
    shutdown (``os._exit``) once its output is flushed; any other exit is left as it is."""
    if exc.code != EXIT_INTERRUPTED:
        return
    for stream in (sys.stdout, sys.stderr):
        # A closed pipe or stream: there is nothing more to say on it.
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(EXIT_INTERRUPTED)
