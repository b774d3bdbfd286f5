"""The CLI is a client of the public engine API: every cam_engine module a cli/ file
imports is one a Python user is offered, or a program shipped beside the CLI."""

from __future__ import annotations

import ast
from pathlib import Path

from cam_engine import api

CLI_DIR = Path(__file__).resolve().parents[2] / "cli"

# The public API: Memory and the top level, its errors, and cam_engine.api.
PUBLIC = {"cam_engine", "cam_engine.errors", "cam_engine.api"}
# Packages the CLI may reach inside: itself, and the programs that cam commands start
# (each is built on the public API itself: adapters, the MCP server, eval, benchmarks).
OPEN_PACKAGES = (
    "cam_engine.cli",
    "cam_engine.adapters",
    "cam_engine.serve",
    "cam_engine.eval",
    "cam_engine.bench",
)


def allowed(module: str) -> bool:
    return module in PUBLIC or any(
        module == package or module.startswith(package + ".") for package in OPEN_PACKAGES
    )


def engine_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every import of a cam_engine module in one file, lazy ones too."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
    return [(line, m) for line, m in found if m == "cam_engine" or m.startswith("cam_engine.")]


def test_cli_imports_only_the_public_api() -> None:
    files = sorted(CLI_DIR.rglob("*.py"))
    assert files, f"no CLI modules under {CLI_DIR}"
    internal = [
        f"{path.relative_to(CLI_DIR.parent)}:{line} imports {module}"
        for path in files
        for line, module in engine_imports(path)
        if not allowed(module)
    ]
    assert not internal, "CLI modules import engine internals:\n" + "\n".join(internal)


def test_the_public_module_exports_what_it_lists() -> None:
    missing = [name for name in api.__all__ if not hasattr(api, name)]
    assert not missing


def test_memory_tells_the_store_kind_and_gives_the_browse_queries() -> None:
    from cam_engine import Memory

    assert Memory.is_neo4j_location("bolt+s://db.example:7687")
    assert Memory.is_neo4j_location("neo4j://localhost")
    assert not Memory.is_neo4j_location("memory.db")
    assert "$memory" in Memory.browser_query("browse_levels")
