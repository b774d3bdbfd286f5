"""The default install (no extras) runs the main job: a process in which the packages of
the neo4j and eval extras cannot be imported, as if they were not installed, ingests,
asks, shows and serves MCP on the SQLite store; asking for a feature of a missing extra
(a bolt:// store, ROUGE, plots) is one line naming the extra to install."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from importlib.resources import files
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The import names of the extras' packages (neo4j-rust-ext lives inside neo4j).
EXTRAS_PACKAGES = ("neo4j", "matplotlib", "rouge_score")
QUESTION = "Who is executed for the murder of William?"

# Runs in a fresh interpreter: a meta-path finder first in line answers every import of
# those packages with ModuleNotFoundError, as Python does for a package not installed.
# Then the main job through the CLI, one MCP tool call, and each optional feature; it
# prints what happened as JSON for the test to check.
WITHOUT_EXTRAS = """
import importlib.abc, json, os, sys

BLOCKED = set(sys.argv[1].split(","))


class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, NotInstalled())
text_path, store, question = sys.argv[2:5]
env = {"CAM_STORE": store, "CAM_EMBED_MODEL": "hashing:64"}
report = {}
try:
    import neo4j  # noqa: F401
    report["blocked"] = False
except ModuleNotFoundError:
    report["blocked"] = True

import anyio
from click.testing import CliRunner
from mcp import Client

import cam_engine
from cam_engine import Environment
from cam_engine.cli.main import cli
from cam_engine.serve.mcp import create_server
from cam_engine.serve.tools import MemoryTools


def cam(*args):
    result = CliRunner().invoke(cli, list(args), env=env)
    return {"code": result.exit_code, "output": result.output}


report["help"] = cam("--help")
report["ingest"] = cam("ingest", text_path, "--json")
report["stats"] = cam("stats", "--json")
report["ask"] = cam("ask", question, "--json")
report["evidence"] = json.loads(report["ask"]["output"])["evidence"][0]["node_id"]
report["show"] = cam("show", report["evidence"], "--json")
report["bolt"] = cam("stats", "--store", "bolt://127.0.0.1:7687")
# An eval set scored by ROUGE (summary questions), as JSONL: the text and one question.
evalset = f"{store}.jsonl"
with open(evalset, "w", encoding="utf-8") as out:
    rows = [
        {"type": "set", "name": "trial", "scoring": "summary"},
        {"type": "document", "id": "book", "text": open(text_path, encoding="utf-8").read()},
        {"type": "question", "id": "q", "question": question, "answers": ["Justine"],
         "gold": [], "doc_ids": ["book"], "kind": "long"},
    ]
    out.writelines(json.dumps(row) + "\\n" for row in rows)
report["eval"] = cam("eval", "jsonl", evalset, "--strategies", "bm25")
report["eval_out"] = cam("eval", "jsonl", evalset, "--strategies", "bm25", "--out", f"{store}.out")


async def ask_over_mcp(tools):
    async with Client(create_server(tools)) as client:
        result = await client.call_tool("ask", {"question": question})
        return {"error": result.is_error, "text": result.content[0].text}


tools = MemoryTools(None, None, environment=Environment.from_env(env))
tools.start()
try:
    report["mcp"] = anyio.run(ask_over_mcp, tools)
finally:
    tools.close()


def error_of(call):
    try:
        call()
    except Exception as exc:  # what a missing extra raised, whatever it was
        return f"{type(exc).__name__}: {exc}"
    return None


def plot():
    from cam_engine.eval.plots import heatmap  # noqa: F401


def rouge():
    from cam_engine.eval.metrics import rouge

    rouge("the monster", ["the creature"])


report["rouge"] = error_of(rouge)
report["plots"] = error_of(plot)
report["imported"] = sorted(m for m in BLOCKED if m in sys.modules)
report["eval_out_made"] = os.path.exists(f"{store}.out")
print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("extras")
    # Frankenstein (the sample that ships with the package) from the letter that says
    # William is dead to past Justine's trial: about 30,000 characters.
    book = files("cam_engine.samples").joinpath("frankenstein.txt").read_text(encoding="utf-8")
    start = book.index("William is dead")
    text = folder / "frankenstein.txt"
    text.write_text(book[start : book.index("Justine also was a girl of merit") + 10_000])
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            WITHOUT_EXTRAS,
            ",".join(EXTRAS_PACKAGES),
            str(text),
            str(folder / "memory.db"),
            QUESTION,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict = json.loads(done.stdout.splitlines()[-1])
    assert result["blocked"], "the extras' packages were importable in the child process"
    return result


def test_cam_help_lists_the_commands_without_the_extras(report: dict) -> None:
    assert report["help"]["code"] == 0
    assert "ingest" in report["help"]["output"] and "ask" in report["help"]["output"]


def test_ingest_stats_ask_and_show_run_on_sqlite_without_the_extras(report: dict) -> None:
    assert report["ingest"]["code"] == 0, report["ingest"]["output"]
    assert report["stats"]["code"] == 0, report["stats"]["output"]
    stats = json.loads(report["stats"]["output"])
    assert stats["documents"] == 1 and stats["document_list"][0]["chunks"] > 20
    assert report["ask"]["code"] == 0, report["ask"]["output"]
    assert "Justine" in json.loads(report["ask"]["output"])["answer"]
    assert report["show"]["code"] == 0, report["show"]["output"]
    assert json.loads(report["show"]["output"])["id"] == report["evidence"]


def test_the_mcp_server_answers_without_the_extras(report: dict) -> None:
    assert not report["mcp"]["error"], report["mcp"]["text"]
    assert "Justine" in report["mcp"]["text"]


def test_none_of_the_extras_packages_was_imported(report: dict) -> None:
    assert report["imported"] == []


def test_a_bolt_store_without_the_neo4j_extra_is_one_line_naming_it(report: dict) -> None:
    assert report["bolt"]["code"] == 1
    assert report["bolt"]["output"] == (
        "Error: the Neo4j store needs the neo4j extra: pip install 'cam-engine[neo4j]' "
        "(from a checkout: pip install -e '.[neo4j]')\n"
    )


def test_rouge_and_plots_without_the_eval_extra_name_it(report: dict) -> None:
    install = (
        "needs the eval extra: pip install 'cam-engine[eval]' "
        "(from a checkout: pip install -e '.[eval]')"
    )
    assert report["rouge"] == f"MissingExtraError: ROUGE scoring {install}"
    assert report["plots"] == f"MissingExtraError: plotting {install}"


def test_cam_eval_without_the_eval_extra_is_one_line_naming_it(report: dict) -> None:
    install = (
        "needs the eval extra: pip install 'cam-engine[eval]' "
        "(from a checkout: pip install -e '.[eval]')"
    )
    # ROUGE scores this set's answers; --out writes recall.png: said before the run.
    assert report["eval"]["code"] == 1
    assert report["eval"]["output"] == f"Error: ROUGE scoring {install}\n"
    assert report["eval_out"]["code"] == 1
    assert report["eval_out"]["output"] == f"Error: cam eval --out (its recall.png) {install}\n"
    assert not report["eval_out_made"]


def test_the_extras_packages_are_not_installed_by_default_and_dev_brings_them() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

    def names(requirements: list[str]) -> set[str]:
        return {re.split(r"[<>=\[; ]", r, maxsplit=1)[0] for r in requirements}

    extras = project["optional-dependencies"]
    assert names(extras["neo4j"]) == {"neo4j", "neo4j-rust-ext"}
    assert names(extras["eval"]) == {"matplotlib", "rouge-score"}
    assert not names(project["dependencies"]) & (names(extras["neo4j"]) | names(extras["eval"]))
    assert "cam-engine[neo4j,eval]" in extras["dev"]  # CI runs every test
