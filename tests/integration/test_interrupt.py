"""Ctrl-C: a real ``cam`` process gets SIGINT mid-work and ends with exit status 130 and
one line, never SIGABRT ("terminate called without an active exception": a thread
still inside torch at interpreter shutdown, the ingest's prefetch worker embedding the
next batch). An interrupted ingest keeps its committed batches, and the same command
resumes to the memory a clean ingest builds.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import shared_file

pytestmark = [pytest.mark.realdata, pytest.mark.model]

BOOK = "haystacks/gutenberg/pg84.txt"
BOOK_SHARE = 0.3  # of Frankenstein: about 160 chunks, 3 batches of 64
ABORTED = ("terminate called", "Aborted", "Traceback")


def cam(*args: str) -> list[str]:
    return [sys.executable, "-m", "cam_engine.cli", *args]


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAM_")}
    env["HF_HUB_OFFLINE"] = "1"
    return env


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cam(*args), capture_output=True, text=True, env=environment(), timeout=900
    )


def stats(store: Path) -> dict[str, Any]:
    result = run("stats", "--store", str(store), "--json")
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> Path:
    text = shared_file(BOOK).read_text(encoding="utf-8")
    cut = text.index("\n\n", int(len(text) * BOOK_SHARE))
    path = tmp_path_factory.mktemp("book") / "frankenstein.txt"
    path.write_text(text[:cut], encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def clean_store(book: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The book ingested without interruption."""
    store = tmp_path_factory.mktemp("clean") / "clean.db"
    clean = run("ingest", str(book), "--store", str(store))
    assert clean.returncode == 0, clean.stderr
    return store


def interrupt_after(command: list[str], ready: str, stream: str) -> tuple[int, str, str]:
    """Start ``cam`` and send SIGINT once a line containing ``ready`` appears on
    ``stream`` (stdout or stderr); return the exit status, stdout and stderr."""
    process = subprocess.Popen(
        cam(*command),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(),
        # A shell's background job (CI, `cmd &`) has SIGINT ignored, and a child inherits
        # that: Python then installs no Ctrl-C handler. Start it as a terminal would.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    watched = process.stdout if stream == "stdout" else process.stderr
    assert watched is not None
    seen: list[str] = []
    for line in watched:
        seen.append(line)
        if ready in line:
            break
    else:
        out, err = process.communicate(timeout=60)
        pytest.fail(f"cam ended before {ready!r}: {''.join(seen)}{out}{err}")
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=300)
    if stream == "stdout":
        out = "".join(seen) + out
    else:
        err = "".join(seen) + err
    return process.returncode, out, err


def test_ctrl_c_mid_ingest_exits_130_keeps_what_was_committed_and_the_same_command_resumes(
    book: Path, clean_store: Path, tmp_path: Path
) -> None:
    store = tmp_path / "interrupted.db"
    command = ["ingest", str(book), "--store", str(store), "--json"]
    # The first --json line is printed once batch 0 has committed; by then the prefetch
    # worker is embedding the next batch.
    status, out, err = interrupt_after(command, '"batch": 0', "stdout")
    assert status == 130, err
    assert not [word for word in ABORTED if word in err], err
    assert "interrupted: " in err and "kept; run the same command again to resume" in err
    [partial] = stats(store)["partial_documents"]
    committed = sum(json.loads(line)["chunks_added"] for line in out.splitlines())
    assert partial["chunks"] == committed and 0 < committed < partial["total"]

    resumed = run(*command)
    assert resumed.returncode == 0, resumed.stderr
    after, reference = stats(store), stats(clean_store)
    assert after["partial_documents"] == [] and after["document_list"][0]["chunks"] > committed
    for data in (after, reference):
        data.pop("store")
        for document in data["document_list"]:
            document.pop("updated_at")  # when each store wrote it
    assert after == reference


def test_ctrl_c_while_ask_reads_exits_130_with_one_line(clean_store: Path) -> None:
    # MemAgent reading the book in 200-token steps: the signal comes after its first
    # step, with a hundred more to go (the model and the memory are loaded by then; a
    # plain ask is over within a second of loading, too soon to interrupt surely).
    status, _, err = interrupt_after(
        [
            "ask",
            "who made the monster?",
            "--strategy",
            "memagent",
            "--read-tokens",
            "200",
            "--restart",
            "--store",
            str(clean_store),
        ],
        "memagent: step",
        "stderr",
    )
    assert status == 130, err
    assert not [word for word in ABORTED if word in err], err
    said = [line for line in err.splitlines() if line and not line.startswith("memagent: ")]
    assert said == ["interrupted"], err
