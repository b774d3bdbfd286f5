"""A ``cam ask`` process with the default model never imports torch: the question is
embedded with numpy, and nothing on the path imports what it does not use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.model

# What `cam ask` (prune-grow, extractive, SQLite) must not import: the model libraries,
# and what only other commands, stores, formats or the memory's growth use.
NOT_ON_THE_ASK_PATH = (
    "torch",
    "transformers",
    "sentence_transformers",
    "neo4j",
    "mcp",
    "pypdf",
    "bs4",
    "matplotlib",
    "leidenalg",
    "igraph",
)
# Runs the CLI in this process, then writes which of those modules it imported.
RUN_CLI = """
import json, sys
from cam_engine.cli.main import cli
out, unwanted, args = sys.argv[1], sys.argv[2].split(","), sys.argv[3:]
try:
    cli(args, prog_name="cam")
except SystemExit as exc:
    code = exc.code
with open(out, "w") as f:
    json.dump({"code": code, "imported": [m for m in unwanted if m in sys.modules]}, f)
"""
BOOK = """The ship sailed north through the ice, and Walton wrote to his sister of the
stranger they had taken aboard, half frozen, from a sledge on the ice.

Victor Frankenstein was born in Geneva. His parents took in Elizabeth Lavenza, an orphan,
who grew up beside him as his dearest companion.

At the university of Ingolstadt Victor studied chemistry under Professor Waldman, and in
his lonely chamber he gave life to a creature made of parts of the dead.

The creature, shunned by everyone who saw him, learned to speak and read by watching the
De Lacey family through a crack in the wall of their cottage.
"""


def run_cam(args: list[str], tmp_path: Path, unwanted: tuple[str, ...]) -> list[str]:
    report = tmp_path / "modules.json"
    env = {**os.environ, "CAM_STORE": str(tmp_path / "m.db"), "HF_HUB_OFFLINE": "1"}
    for variable in ("CAM_EMBED_MODEL", "CAM_EMBED_DEVICE", "CAM_NEO4J_URI"):
        env.pop(variable, None)
    done = subprocess.run(
        [sys.executable, "-c", RUN_CLI, str(report), ",".join(unwanted), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(report.read_text())
    assert result["code"] in (0, None), done.stdout + done.stderr
    return list(result["imported"])


def test_ask_imports_no_model_library_nor_unused_ones(tmp_path: Path) -> None:
    book = tmp_path / "book.txt"
    book.write_text(BOOK, encoding="utf-8")
    # Ingest on the CPU uses numpy too (it grows the memory: igraph may be imported).
    assert run_cam(["ingest", str(book), "--device", "cpu"], tmp_path, ("torch",)) == []

    imported = run_cam(["ask", "Who is Elizabeth Lavenza?"], tmp_path, NOT_ON_THE_ASK_PATH)

    assert imported == []
