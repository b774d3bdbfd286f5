"""Adversarial input and clients: every case of docs/reliability.md's table, rerun.

    cam bench hostile [--case NAME ...] [--timeout 180] [--out FILE]
    cam bench hostile

Each case builds its hostile input in a temporary folder (untimed, in a stream:
bench/hostile_inputs.py), then does what a user or a client would: a ``cam`` command
in a subprocess, or calls to a ``cam mcp --http`` server on loopback. It prints one
line per case: seconds, the peak RSS of the process that did the work (the command,
or the server: ``os.wait4``'s rusage of that process alone), what happened, and
whether what must hold held. Text is embedded by ``hashing:64`` (the costs measured
are the engine's, not a model's), except in ``embed-huge-text``, which is about the
default model's tokenizer.

The targets: no case above ``TARGET_SECONDS`` or ``TARGET_MIB`` on the 2-core machine
this project runs on, and no case that reads outside ``--allow``. The last line is
one JSON object of every figure; the exit status is 1 when a case missed.
"""

from __future__ import annotations

import contextlib
import http.client
import itertools
import json
import os
import resource
import signal
import socket
import string
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import anyio

from cam_engine.bench import hostile_inputs as inputs

TARGET_SECONDS = 60.0
TARGET_MIB = 1024.0
EMBED = "hashing:64"
TOKEN = "bench-token-0123456789abcdef"
SECRET = "zanzibarquokka"  # a word in a file outside --allow: it must never be found
MIB = 1 << 20


@dataclass
class Outcome:
    """One case: what was tried, what it cost, what happened, and whether it held."""

    case: str
    tried: str
    seconds: float = 0.0
    peak_mib: float = 0.0
    happened: str = ""
    held: bool = False
    figures: dict[str, Any] = field(default_factory=dict)

    @property
    def within(self) -> bool:
        return self.held and self.seconds <= TARGET_SECONDS and self.peak_mib <= TARGET_MIB

    def line(self) -> str:
        verdict = "ok" if self.within else "MISSED"
        return (
            f"{verdict:6} {self.case:20} {self.seconds:7.1f} s {self.peak_mib:7.0f} MiB  "
            f"{self.happened}"
        )


# --- running a process and measuring it -----------------------------------------------------


@dataclass
class Run:
    returncode: int
    seconds: float
    peak_mib: float
    stdout: str
    stderr: str
    timed_out: bool

    @property
    def last_error(self) -> str:
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        return lines[-1][:200] if lines else ""


def bench_env(folder: Path, **extra: str) -> dict[str, str]:
    """This environment without anyone's CAM_* settings, stores and data under ``folder``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAM_")}
    home = folder / "home"
    home.mkdir(exist_ok=True)
    return env | {
        "CAM_EMBED_MODEL": EMBED,
        "HF_HUB_OFFLINE": "1",
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / "data"),
        **extra,
    }


def cam(*args: str) -> list[str]:
    return [sys.executable, "-m", "cam_engine.cli", *args]


class PeakWatch:
    """The peak RSS of one process, from the high-water mark Linux keeps of its memory
    (``VmHWM`` in /proc/PID/status), read every ``POLL_SECONDS`` until it exits.

    Not ``wait4``'s ``ru_maxrss``: exec keeps in it the high-water mark of the memory it
    replaced, which for a child of this process is this process's own size at the fork
    (a 100 MB command started by a 500 MB process reports 500 MB). ``VmHWM`` belongs to
    the memory of the program exec started, and only grows; a peak within its last
    poll of exiting is missed, and a GiB takes far longer than that to fill.
    """

    POLL_SECONDS = 0.02

    def __init__(self, pid: int) -> None:
        self._status = Path(f"/proc/{pid}/status")
        self._kib = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._done.is_set():
            try:
                text = self._status.read_text()
            except OSError:  # it has exited
                return
            for line in text.splitlines():
                if line.startswith("VmHWM:"):
                    self._kib = max(self._kib, int(line.split()[1]))
            self._done.wait(self.POLL_SECONDS)

    def stop(self, usage: resource.struct_rusage) -> float:
        """The peak in MiB (``ru_maxrss`` where there is no /proc)."""
        self._done.set()
        self._thread.join()
        return (self._kib or usage.ru_maxrss) / 1024  # both in KiB on Linux


def measured(
    command: Sequence[str],
    env: dict[str, str],
    *,
    timeout: float,
    stdin: Path | None = None,
    cwd: Path | None = None,
) -> Run:
    """``command`` run to its end (killed after ``timeout`` s), with its own peak RSS."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        source = stdin.open("rb") if stdin is not None else subprocess.DEVNULL
        try:
            started = time.perf_counter()
            process = subprocess.Popen(
                command, stdin=source, stdout=out, stderr=err, env=env, cwd=cwd
            )
            watch = PeakWatch(process.pid)
            killed = threading.Event()

            def kill() -> None:
                killed.set()
                process.kill()

            timer = threading.Timer(timeout, kill)
            timer.start()
            _, status, usage = os.wait4(process.pid, 0)
            timer.cancel()
            seconds = time.perf_counter() - started
            process.returncode = os.waitstatus_to_exitcode(status)
        finally:
            if stdin is not None:
                source.close()  # type: ignore[union-attr]
        out.seek(0)
        err.seek(0)
        return Run(
            process.returncode,
            seconds,
            watch.stop(usage),
            out.read().decode(errors="replace"),
            err.read().decode(errors="replace"),
            killed.is_set(),
        )


def chunk_lengths(store: Path) -> list[int]:
    from cam_engine.store.sqlite import SqliteStore

    with closing(SqliteStore(store, "default")) as memory:
        return [len(node.text) for node in memory.nodes_at_level(0)]


def from_run(outcome: Outcome, run: Run) -> Outcome:
    outcome.seconds, outcome.peak_mib = round(run.seconds, 2), round(run.peak_mib, 1)
    if run.timed_out:
        outcome.happened = "killed at the time limit"
        outcome.held = False
    return outcome


def refused_in_one_line(run: Run) -> bool:
    return run.returncode != 0 and "Traceback" not in run.stderr and bool(run.last_error)


# --- the readers ----------------------------------------------------------------------------


def ingest(folder: Path, path: Path, timeout: float) -> Run:
    """``cam ingest PATH`` into a fresh memory, ``folder``/m.db."""
    command = cam("ingest", str(path), "--store", str(folder / "m.db"))
    return measured(command, bench_env(folder), timeout=timeout)


def read_or_refuse(outcome: Outcome, run: Run) -> Outcome:
    """A reader's case holds when the file was ingested or refused in one line."""
    outcome.happened = run.last_error if run.returncode else "ingested"
    outcome.held = run.returncode == 0 or refused_in_one_line(run)
    return from_run(outcome, run)


def epub_paragraphs(folder: Path, timeout: float) -> Outcome:
    book = inputs.paragraph_epub(folder / "p.epub", 250 * MIB)
    outcome = Outcome(
        "epub-paragraphs",
        f"`cam ingest` an EPUB of {book.stat().st_size // 1024} KB holding 250 MiB of <p>a</p>",
    )
    return read_or_refuse(outcome, ingest(folder, book, timeout))


def html_nested(folder: Path, timeout: float) -> Outcome:
    depth = 200_000
    page = inputs.nested_html(folder / "deep.html", depth)
    outcome = Outcome(
        "html-nested",
        f"`cam ingest` HTML of {depth:,} nested divs ({page.stat().st_size // 1024} KB)",
    )
    return read_or_refuse(outcome, ingest(folder, page, timeout))


def pdf_shared_stream(folder: Path, timeout: float) -> Outcome:
    pdf = inputs.shared_stream_pdf(folder / "shared.pdf", 1000, 2 * MIB)
    outcome = Outcome(
        "pdf-shared-stream",
        f"`cam ingest` a {pdf.stat().st_size // 1024} KB PDF: 1,000 pages drawing one 2 MB "
        "content stream",
    )
    return read_or_refuse(outcome, ingest(folder, pdf, timeout))


def punctuation(folder: Path, timeout: float) -> Outcome:
    size = 2 * MIB
    text = inputs.repeated(folder / "punct.txt", b"!?.,;:-", size)
    store = folder / "m.db"
    outcome = Outcome(
        "punctuation", f"`cam ingest` {size // MIB} MB of punctuation without white space"
    )
    run = ingest(folder, text, timeout)
    if run.returncode == 0:
        lengths = chunk_lengths(store)
        outcome.figures = {"chunks": len(lengths), "longest_chunk_chars": max(lengths)}
        outcome.happened = f"{len(lengths):,} chunks, the longest {max(lengths):,} characters"
        outcome.held = max(lengths) < 10_000
    else:
        outcome.happened = run.last_error
    return from_run(outcome, run)


_EMBED_ONE = """
import sys
from cam_engine.embed import load_embedder
from cam_engine.config import DEFAULT_EMBED_MODEL
embedder = load_embedder(DEFAULT_EMBED_MODEL)
text = open(sys.argv[1], encoding="utf-8").read()
print(embedder.embed([text]).shape)
"""


def embed_huge_text(folder: Path, timeout: float) -> Outcome:
    size = 20 * MIB
    text = inputs.repeated(folder / "punct.txt", b"!?.,;:-", size)
    outcome = Outcome(
        "embed-huge-text",
        f"embed one {size // MIB} MB text without white space with the default model",
    )
    env = bench_env(folder)
    env.pop("CAM_EMBED_MODEL")
    run = measured([sys.executable, "-c", _EMBED_ONE, str(text)], env, timeout=timeout)
    outcome.happened = f"vector {run.stdout.strip()}" if run.returncode == 0 else run.last_error
    outcome.held = run.returncode == 0
    return from_run(outcome, run)


def huge_file(folder: Path, timeout: float) -> Outcome:
    big = inputs.sparse_file(folder / "big.txt", 3 << 30)
    outcome = Outcome("huge-file", "`cam ingest` a 3 GB file (sparse, all NULs)")
    run = ingest(folder, big, timeout)
    outcome.happened = run.last_error if run.returncode else "ingested"
    outcome.held = refused_in_one_line(run)
    return from_run(outcome, run)


def stdin_log(folder: Path, timeout: float) -> Outcome:
    size = 2 * MIB
    outcome = Outcome(
        "stdin-log",
        f"`cat log | cam ingest - --document log`, {size // MIB} MB of log lines without a "
        "blank line, against `cam ingest` of the same file",
    )
    log = inputs.log_lines(folder / "server.log", size)
    piped = measured(
        cam("ingest", "-", "--document", "log", "--store", str(folder / "piped.db")),
        bench_env(folder),
        timeout=timeout,
        stdin=log,
    )
    read = measured(
        cam("ingest", str(log), "--store", str(folder / "file.db")),
        bench_env(folder),
        timeout=timeout,
    )
    if piped.returncode == 0 and read.returncode == 0:
        piped_chunks = len(chunk_lengths(folder / "piped.db"))
        file_chunks = len(chunk_lengths(folder / "file.db"))
        ratio = piped.seconds / max(read.seconds, 1e-9)
        outcome.figures = {
            "stdin_seconds": round(piped.seconds, 2),
            "file_seconds": round(read.seconds, 2),
            "chunks": [piped_chunks, file_chunks],
        }
        outcome.happened = (
            f"stdin {piped.seconds:.1f} s, the file {read.seconds:.1f} s ({ratio:.2f}x); "
            f"{piped_chunks:,} and {file_chunks:,} chunks"
        )
        outcome.held = ratio < 1.5 and piped_chunks == file_chunks
    else:
        outcome.happened = piped.last_error or read.last_error
    return from_run(outcome, piped)


def non_utf8_name(folder: Path, timeout: float) -> Outcome:
    docs = folder / "docs"
    docs.mkdir()
    (docs / "plain.txt").write_text("A plain file about whales and ships.\n")
    with open(os.path.join(os.fsencode(docs), b"caf\xe9.txt"), "wb") as odd:
        odd.write(b"A file whose name is latin-1, about coffee.\n")
    store = folder / "m.db"
    outcome = Outcome("non-utf8-name", "`cam ingest FOLDER` holding a file name not in UTF-8")
    run = ingest(folder, docs, timeout)
    if "Traceback" in run.stderr:
        outcome.happened = "traceback"
    else:
        kept = len(chunk_lengths(store)) if store.exists() else 0
        outcome.happened = f"exit {run.returncode}; {kept} chunk(s) stored; {run.last_error}"
        outcome.held = kept >= 1
    return from_run(outcome, run)


# --- the MCP server over HTTP ---------------------------------------------------------------


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


class Server:
    """``cam mcp --http`` in a subprocess; ``stop`` sends SIGTERM and measures it."""

    def __init__(
        self,
        folder: Path,
        host: str,
        *args: str,
        env: dict[str, str] | None = None,
        max_files: int | None = None,
    ) -> None:
        self.host, self.port = host, free_port(host)
        self.log = folder / f"server-{self.port}.log"
        command = cam(
            "mcp", "--store", str(folder / "served.db"), "--http", f"{host}:{self.port}", *args
        )
        limit = None if max_files is None else (max_files, max_files)
        with self.log.open("wb") as errors:
            self.process = subprocess.Popen(
                command,
                env=env or bench_env(folder),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=errors,
                preexec_fn=(lambda: resource.setrlimit(resource.RLIMIT_NOFILE, limit))
                if limit
                else None,
            )
        self.watch = PeakWatch(self.process.pid)
        self.url = f"http://{host}:{self.port}/mcp"

    def wait_listening(self, limit: float = 60.0) -> None:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"cam mcp exited: {self.log.read_text()[-500:]}")
            try:
                with socket.create_connection((self.host, self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"cam mcp did not listen on {self.port}")

    def stop(self, limit: float = 60.0) -> tuple[float, float]:
        """SIGTERM; (seconds until it exited, its peak RSS in MiB)."""
        started = time.perf_counter()
        if self.process.poll() is not None:  # it exited by itself (and was reaped)
            return 0.0, self.watch.stop(resource.getrusage(resource.RUSAGE_CHILDREN))
        self.process.send_signal(signal.SIGTERM)
        timer = threading.Timer(limit, self.process.kill)
        timer.start()
        _, status, usage = os.wait4(self.process.pid, 0)
        timer.cancel()
        self.process.returncode = os.waitstatus_to_exitcode(status)
        return time.perf_counter() - started, self.watch.stop(usage)


@dataclass
class Reply:
    """A tool call's result, or the protocol error the server answered instead."""

    is_error: bool
    text: str
    data: dict[str, Any] | None = None


def call_tools(
    url: str, calls: Sequence[tuple[str, dict[str, Any]]], token: str | None = None
) -> list[Reply]:
    """Each (tool, arguments) called in order in one MCP session."""
    from mcp import Client
    from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
    from mcp.shared.exceptions import MCPError

    headers = {"Authorization": f"Bearer {token}"} if token else {}

    async def call(client: Client, name: str, arguments: dict[str, Any]) -> Reply:
        try:
            result = await client.call_tool(name, arguments)
        except MCPError as exc:  # the request itself refused (too large, malformed)
            return Reply(True, f"protocol error: {exc}")
        text = " ".join(getattr(part, "text", "") for part in result.content)
        return Reply(result.is_error, text, result.structured_content)

    async def session() -> list[Reply]:
        transport = streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))
        async with Client(transport) as client:
            return [await call(client, name, arguments) for name, arguments in calls]

    return anyio.run(session)


def raw_post(host: str, port: int, headers: dict[str, str]) -> int:
    """The status of an MCP initialize POSTed with ``headers``."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        }
    )
    connection = http.client.HTTPConnection(host, port, timeout=30)
    try:
        connection.request(
            "POST",
            "/mcp",
            body=body,
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                **headers,
            },
        )
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def host_origin(folder: Path, timeout: float) -> Outcome:
    outcome = Outcome(
        "host-origin",
        "`cam mcp --http 0.0.0.0:PORT` without a token; on 127.0.0.2 (not loopback by "
        "name) with one: no token, a wrong one, a forged Host, a forged Origin",
    )
    started = time.perf_counter()
    # Without a token it must refuse to start: one that serves is killed after 30 s.
    refused = measured(
        cam("mcp", "--store", str(folder / "x.db"), "--http", f"0.0.0.0:{free_port()}"),
        bench_env(folder),
        timeout=30,
    )
    refused_start = refused_in_one_line(refused) and not refused.timed_out
    server = Server(folder, "127.0.0.2", "--token", TOKEN)
    try:
        server.wait_listening()
        host = f"127.0.0.2:{server.port}"
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        statuses = {
            "no_token": raw_post(server.host, server.port, {"Host": host}),
            "wrong_token": raw_post(
                server.host, server.port, {"Host": host, "Authorization": "Bearer nope"}
            ),
            "forged_host": raw_post(server.host, server.port, {"Host": "evil.example", **bearer}),
            "forged_origin": raw_post(
                server.host,
                server.port,
                {"Host": host, "Origin": "http://evil.example", **bearer},
            ),
            "good": raw_post(server.host, server.port, {"Host": host, **bearer}),
        }
    finally:
        _, peak = server.stop()
    outcome.seconds = round(time.perf_counter() - started, 2)
    outcome.peak_mib = round(peak, 1)
    outcome.figures = {"refused_without_token": refused_start, **statuses}
    outcome.happened = (
        f"0.0.0.0 without a token: {'refused' if refused_start else 'STARTED'}; "
        + ", ".join(f"{k} {v}" for k, v in statuses.items())
    )
    outcome.held = (
        refused_start
        and statuses["good"] == 200
        and all(400 <= statuses[k] < 500 for k in statuses if k != "good")
    )
    return outcome


def slow_connections(folder: Path, timeout: float) -> Outcome:
    count = 300
    outcome = Outcome(
        "slow-connections",
        f"{count} connections sending headers a byte at a time to a server with 256 file "
        "descriptors, then one normal client",
    )
    server = Server(folder, "127.0.0.1", max_files=256)
    sockets: list[socket.socket] = []
    started = time.perf_counter()
    try:
        server.wait_listening()
        for _ in range(count):
            try:
                slow = socket.create_connection((server.host, server.port), timeout=5)
                slow.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                sockets.append(slow)
            except OSError:
                break
        asked = time.perf_counter()
        try:
            (result,) = call_tools(server.url, [("memories", {})], None)
            answered = not result.is_error
        except Exception as exc:  # the figure is whether a normal client got through
            answered = False
            outcome.figures["client_error"] = f"{type(exc).__name__}: {exc}"[:200]
        waited = time.perf_counter() - asked
    finally:
        for slow in sockets:
            slow.close()
        _, peak = server.stop()
    log_bytes = server.log.stat().st_size
    outcome.seconds = round(time.perf_counter() - started, 2)
    outcome.peak_mib = round(peak, 1)
    outcome.figures |= {
        "slow_open": len(sockets),
        "client_seconds": round(waited, 2),
        "stderr_bytes": log_bytes,
    }
    outcome.happened = (
        f"{len(sockets)} slow connections open; the client {'answered' if answered else 'FAILED'} "
        f"in {waited:.1f} s; server log {log_bytes:,} bytes"
    )
    outcome.held = answered and waited <= TARGET_SECONDS and log_bytes < MIB
    return outcome


def held_streams(folder: Path, timeout: float) -> Outcome:
    streams, sessions = 150, 2000
    outcome = Outcome(
        "held-streams",
        f"{streams} event streams (GET /mcp) held open and {sessions:,} sessions initialized, "
        "then one normal client",
    )
    server = Server(folder, "127.0.0.1")
    held: list[socket.socket] = []
    started = time.perf_counter()
    try:
        server.wait_listening()
        for _ in range(streams):
            stream = socket.create_connection((server.host, server.port), timeout=5)
            stream.sendall(
                b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: text/event-stream\r\n\r\n"
                % server.port
            )
            held.append(stream)
        statuses = [raw_post(server.host, server.port, {}) for _ in range(sessions)]
        asked = time.perf_counter()
        (reply,) = call_tools(server.url, [("memories", {})])
        waited = time.perf_counter() - asked
    finally:
        for stream in held:
            stream.close()
        _, peak = server.stop()
    outcome.seconds = round(time.perf_counter() - started, 2)
    outcome.peak_mib = round(peak, 1)
    accepted = sum(1 for status in statuses if status == 200)
    outcome.figures = {"sessions_answered": accepted, "client_seconds": round(waited, 2)}
    outcome.happened = (
        f"{accepted:,} of {sessions:,} initializations answered; the client "
        f"{'answered' if not reply.is_error else 'FAILED'} in {waited:.1f} s"
    )
    outcome.held = not reply.is_error and accepted == sessions
    return outcome


def big_arguments(folder: Path, timeout: float) -> Outcome:
    size = 3 * MIB + MIB // 2  # under the MCP SDK's 4 MiB cap on a request's body over HTTP
    outcome = Outcome(
        "big-arguments",
        "over MCP: a 3.5 MiB search query, 1 MiB of ingest_text without white space (5,000 "
        "chunks), text with a NUL",
    )
    server = Server(folder, "127.0.0.1")
    started = time.perf_counter()
    try:
        server.wait_listening()
        # 1 MiB: punctuation is a chunk per 200 characters, and 3.5 MiB (18,000 chunks) is
        # three minutes of honest work here (docs/reliability.md), not a cost out of bounds.
        blob = "!?.,;:-" * (MIB // 7)
        ingest, search, nul = call_tools(
            server.url,
            [
                ("ingest_text", {"text": blob, "document": "blob"}),
                ("search", {"query": "whale " * (size // 6)}),
                ("ingest_text", {"text": "a\x00b", "document": "nul"}),
            ],
        )
    finally:
        _, peak = server.stop()
    outcome.seconds = round(time.perf_counter() - started, 2)
    outcome.peak_mib = round(peak, 1)
    results = {"search": search, "ingest_text": ingest, "nul": nul}
    outcome.happened = "; ".join(
        f"{name}: {r.text[:90] if r.is_error else 'done'}" for name, r in results.items()
    )
    outcome.held = (
        search.is_error
        and "CAM_MAX_QUERY_CHARS" in search.text
        and nul.is_error
        and not ingest.is_error
    )
    return outcome


def symlink_swap(folder: Path, timeout: float) -> Outcome:
    allowed, outside = folder / "allowed", folder / "outside"
    allowed.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text(f"The password is {SECRET}.\n")
    notes = allowed / "notes.txt"
    notes.write_text("Notes about the harbour and its boats.\n")
    pause = folder / "pause"
    outcome = Outcome(
        "symlink-swap",
        "ingest_file of a file under --allow, swapped for a symlink to a file outside it "
        "while the call waits for another ingest; a NUL in a path",
    )
    env = bench_env(folder, CAM_PAUSE_AT="applied:1", CAM_PAUSE_FILE=str(pause))
    server = Server(folder, "127.0.0.1", "--allow", str(allowed), env=env)
    started = time.perf_counter()
    results: dict[str, Any] = {}
    try:
        server.wait_listening()
        first = threading.Thread(
            target=lambda: results.update(
                first=call_tools(
                    server.url, [("ingest_text", {"text": "hold " * 50, "document": "hold"})], None
                )
            )
        )
        first.start()
        while not pause.exists():
            time.sleep(0.05)
        second = threading.Thread(
            target=lambda: results.update(
                second=call_tools(server.url, [("ingest_file", {"path": str(notes)})], None)
            )
        )
        second.start()
        time.sleep(2.0)  # the call has checked its path and waits for the ingest lock
        notes.unlink()
        notes.symlink_to(outside / "secret.txt")
        pause.unlink()
        first.join()
        second.join()
        found, nul = call_tools(
            server.url,
            [("search", {"query": SECRET, "top_k": 50}), ("ingest_file", {"path": "/tmp/a\x00b"})],
            None,
        )
    finally:
        _, peak = server.stop()
    outcome.seconds = round(time.perf_counter() - started, 2)
    outcome.peak_mib = round(peak, 1)
    nodes = (found.data or {}).get("nodes", [])  # the reply echoes the query: nodes only
    leaked = any(SECRET in node["text"] for node in nodes)
    (swapped,) = results.get("second", [None])
    swap_said = swapped.text[:100] if swapped is not None and swapped.is_error else "read"
    outcome.figures = {"read_outside_allow": leaked}
    outcome.happened = (
        f"secret {'FOUND by search' if leaked else 'never stored'}; the swapped call: {swap_said}; "
        f"NUL path: {nul.text[:80]}"
    )
    outcome.held = not leaked and nul.is_error and "\n" not in nul.text
    return outcome


def sigterm_busy(folder: Path, timeout: float) -> Outcome:
    pause = folder / "pause"
    outcome = Outcome(
        "sigterm-busy", "SIGTERM to `cam mcp --http` while a batch is written, not committed"
    )
    env = bench_env(folder, CAM_PAUSE_AT="applied:1", CAM_PAUSE_FILE=str(pause))
    server = Server(folder, "127.0.0.1", env=env)
    server.wait_listening()
    caller = threading.Thread(
        target=lambda: _ignore_errors(
            lambda: call_tools(
                server.url, [("ingest_text", {"text": "busy " * 500, "document": "b"})], None
            )
        ),
        daemon=True,
    )
    caller.start()
    while not pause.exists():
        time.sleep(0.05)
    seconds, peak = server.stop(limit=timeout)
    from cam_engine.store.sqlite import SqliteStore

    with closing(SqliteStore(folder / "served.db", "default")) as memory:
        chunks = sum(1 for _ in memory.nodes_at_level(0))
    outcome.seconds, outcome.peak_mib = round(seconds, 2), round(peak, 1)
    outcome.figures = {"exit_seconds": round(seconds, 2), "chunks_after": chunks}
    outcome.happened = (
        f"exited in {seconds:.1f} s (code {server.process.returncode}); {chunks} chunks kept"
    )
    outcome.held = seconds <= 10 and chunks == 0
    return outcome


def _ignore_errors(work: Callable[[], Any]) -> None:
    # the server is killed under the call: its failure is expected
    with contextlib.suppress(Exception):
        work()


# --- small ones -----------------------------------------------------------------------------


def small_inputs(folder: Path, timeout: float) -> Outcome:
    outcome = Outcome(
        "small-inputs",
        "a memory name ending in a newline; control characters in a document id; --store "
        ":memory: and ''; a relative XDG_DATA_HOME; a Neo4j URI with a password",
    )
    env = bench_env(folder)
    store = str(folder / "m.db")
    note = folder / "note.txt"
    note.write_text("A short note about lighthouses.\n")
    checks: dict[str, bool] = {}
    runs: list[Run] = []

    def run(*args: str, environment: dict[str, str] | None = None, cwd: Path | None = None) -> Run:
        done = measured(cam(*args), environment or env, timeout=timeout, cwd=cwd)
        runs.append(done)
        return done

    checks["name_newline_refused"] = refused_in_one_line(
        run("ingest", str(note), "--store", store, "--memory", "notes\n")
    )
    run("ingest", str(note), "--store", store, "--document", "forged\x1b[2J\rline")
    stats = run("stats", "--store", store)
    checks["stats_escapes_controls"] = "\x1b" not in stats.stdout and "\r" not in stats.stdout
    checks["memory_store_refused"] = refused_in_one_line(run("stats", "--store", ":memory:"))
    checks["empty_store_refused"] = refused_in_one_line(run("stats", "--store", ""))
    relative = bench_env(folder, XDG_DATA_HOME="relative-data")
    work = folder / "work"
    work.mkdir()
    env_no_store = {k: v for k, v in relative.items() if k != "CAM_STORE"}
    run("ingest", str(note), environment=env_no_store, cwd=work)
    checks["relative_xdg_ignored"] = not (work / "relative-data").exists()
    default = folder / "home" / ".local" / "share" / "cam"
    checks["data_folder_0700"] = default.exists() and (default.stat().st_mode & 0o077) == 0
    uri = run("stats", "--store", "bolt://neo4j:hunter2@127.0.0.1:1")
    checks["uri_password_hidden"] = uri.returncode != 0 and "hunter2" not in uri.stderr + uri.stdout
    outcome.seconds = round(max(r.seconds for r in runs), 2)
    outcome.peak_mib = round(max(r.peak_mib for r in runs), 1)
    outcome.figures = dict(checks)
    outcome.happened = ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in checks.items())
    outcome.held = all(checks.values()) and not any("Traceback" in r.stderr for r in runs)
    return outcome


def long_question_neo4j(folder: Path, timeout: float) -> Outcome:
    uri = os.environ.get("CAM_NEO4J_URI") or "bolt://127.0.0.1:7687"
    outcome = Outcome(
        "long-question-neo4j", "`cam ask` a question of 1,500 distinct words, on Neo4j"
    )
    host, _, port = uri.rpartition("//")[2].partition(":")
    try:
        socket.create_connection((host, int(port or 7687)), timeout=2).close()
    except OSError:
        outcome.happened, outcome.held = f"skipped: no Neo4j at {uri}", True
        return outcome
    memory = f"hostile{os.getpid()}"
    env = bench_env(folder, CAM_STORE=uri)
    note = folder / "note.txt"
    note.write_text("The lighthouse keeper wrote about the storm and the ships.\n")
    ingest = measured(cam("ingest", str(note), "--memory", memory), env, timeout=timeout)
    # 1,500 distinct three-letter words: 6,000 characters, within CAM_MAX_QUERY_CHARS
    words = ("".join(letters) for letters in itertools.product(string.ascii_lowercase, repeat=3))
    question = " ".join(itertools.islice(words, 1500)) + " lighthouse?"
    asked = measured(cam("ask", question, "--memory", memory), env, timeout=timeout)
    measured(cam("delete", "--memory", memory, "--yes"), env, timeout=timeout)
    outcome.happened = "answered" if asked.returncode == 0 else asked.last_error
    outcome.held = ingest.returncode == 0 and asked.returncode == 0
    return from_run(outcome, asked)


CASES: dict[str, Callable[[Path, float], Outcome]] = {
    "epub-paragraphs": epub_paragraphs,
    "html-nested": html_nested,
    "pdf-shared-stream": pdf_shared_stream,
    "punctuation": punctuation,
    "embed-huge-text": embed_huge_text,
    "huge-file": huge_file,
    "stdin-log": stdin_log,
    "non-utf8-name": non_utf8_name,
    "host-origin": host_origin,
    "slow-connections": slow_connections,
    "held-streams": held_streams,
    "big-arguments": big_arguments,
    "symlink-swap": symlink_swap,
    "sigterm-busy": sigterm_busy,
    "small-inputs": small_inputs,
    "long-question-neo4j": long_question_neo4j,
}


def run_cases(names: Sequence[str], timeout: float) -> list[Outcome]:
    outcomes = []
    for name in names:
        with tempfile.TemporaryDirectory(prefix=f"cam-hostile-{name}-") as folder:
            try:
                outcome = CASES[name](Path(folder), timeout)
            except Exception as exc:  # a case that breaks is reported, and the rest run
                outcome = Outcome(
                    name, "", happened=f"the case failed: {type(exc).__name__}: {exc}"
                )
        print(outcome.line(), flush=True)
        outcomes.append(outcome)
    return outcomes


def run(names: Sequence[str], timeout: float) -> dict[str, Any]:
    """Each case's outcome (one line each as it ends), then the figures: every case
    and the names of those that missed their targets."""
    outcomes = run_cases(names, timeout)
    return {
        "cases": [asdict(o) | {"within_targets": o.within} for o in outcomes],
        "missed": [o.case for o in outcomes if not o.within],
    }
