"""SIGTERM and Ctrl-C end ``cam mcp`` within seconds, whatever it is doing.

A tool call runs in a worker thread that nothing can interrupt: an ingest reading a long
file or writing a batch, a question inside torch. Waiting for it (as the SDK's stdio
loop and uvicorn's graceful shutdown both do) could take minutes. Instead, a signal
starts a thread that closes the memory if no ingest holds it within ``STOP_GRACE_SECONDS``
and then ends the process at once (``os._exit``), as interrupts.py does for Ctrl-C.

An ingest cut short this way loses only its batch in flight: each batch is one
transaction, and an uncommitted one is never seen (SQLite discards it when the store is
next opened; Neo4j rolls it back when the connection drops), so the batches committed
before it are kept and running the same ingest again completes the document.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from types import FrameType
from typing import Protocol

STOP_GRACE_SECONDS = 2.0
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Closable(Protocol):
    def close(self, *, timeout: float | None = None) -> bool: ...


def stop_on_signals(tools: Closable, *, grace: float = STOP_GRACE_SECONDS) -> None:
    """From now on, SIGINT and SIGTERM end the process after closing ``tools`` (waiting
    ``grace`` seconds at most for a call that writes). Call it from the main thread."""
    stopping = threading.Event()

    def handle(signum: int, frame: FrameType | None) -> None:
        if stopping.is_set():  # a second signal: the first one is already ending it
            return
        stopping.set()
        threading.Thread(
            target=_stop, args=(tools, signum, grace), name="cam-mcp-stop", daemon=True
        ).start()

    for sig in SIGNALS:
        signal.signal(sig, handle)


def _stop(tools: Closable, signum: int, grace: float) -> None:
    closed = tools.close(timeout=grace)
    name = signal.Signals(signum).name
    line = "interrupted" if signum == signal.SIGINT else f"stopped by {name}"
    if not closed:
        line += (
            ": a call in flight was stopped; an ingest keeps the batches it committed and "
            "loses the one being written (the same ingest again completes it)"
        )
    # stdout may carry the protocol (stdio): the line goes to stderr only.
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"cam mcp: {line}\n")
        sys.stderr.flush()
    os._exit(128 + signum)
