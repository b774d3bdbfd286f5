"""The wheel installs one import package, cam_engine, with its data files."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(ROOT),
        ],
        check=True,
    )
    (path,) = out.glob("cam_engine-*.whl")
    return zipfile.ZipFile(path)


def test_only_cam_engine_is_installed_at_the_top_level(wheel: zipfile.ZipFile) -> None:
    tops = {name.split("/")[0] for name in wheel.namelist() if not name.endswith(".dist-info/")}
    tops = {t for t in tops if not t.endswith(".dist-info")}
    assert tops == {"cam_engine"}


def test_cli_adapters_cypher_and_prompts_are_inside_the_package(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    assert "cam_engine/cli/main.py" in names
    assert "cam_engine/adapters/__init__.py" in names
    assert "cam_engine/cypher/__init__.py" in names
    assert "cam_engine/llm/prompts/summarize.toml" in names
    assert "cam_engine/samples/frankenstein.txt" in names  # cam ingest --sample
    assert "cam_engine/cypher/browser/style.grass" in names  # cam browse prints it
    for path in (ROOT / "cypher").glob("*.cypher"):
        assert f"cam_engine/cypher/{path.name}" in names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "cam = cam_engine.cli.main:cli" in wheel.read(entry_points).decode()


def test_every_subpackage_of_the_source_is_in_the_wheel(wheel: zipfile.ZipFile) -> None:
    # A package missing from pyproject's list builds without complaint and then fails
    # to import once installed from the wheel (cam_engine.retrieval once did).
    names = set(wheel.namelist())
    for init in (ROOT / "cam_engine").rglob("__init__.py"):
        relative = init.relative_to(ROOT).as_posix()
        assert relative in names, f"{init.parent.name} is not in pyproject's packages"
