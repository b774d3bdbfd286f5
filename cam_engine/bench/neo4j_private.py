"""A private Neo4j server for tests that stop or kill it: docker/neo4j-local with its own
home (under a temporary folder), free ports and the cached jars linked in, so a shared
server is never touched. Used by ``cam bench crash --store neo4j`` and
tests/integration/test_crash.py and test_neo4j_faults.py.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from cam_engine.errors import CamError

SCRIPT = Path(__file__).resolve().parents[2] / "docker" / "neo4j-local"


class Neo4jUnavailable(CamError):
    """A private server cannot run here (no script, Java or cached jars)."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def script_default(variable: str) -> str:
    match = re.search(rf'"\$\{{{variable}:-([^}}]+)\}}"', SCRIPT.read_text(encoding="utf-8"))
    if not match:
        raise Neo4jUnavailable(f"{variable} has no default in {SCRIPT}")
    return match.group(1)


def find_java() -> Path | None:
    if os.environ.get("NEO4J_LOCAL_JAVA_HOME"):
        candidates = [Path(os.environ["NEO4J_LOCAL_JAVA_HOME"])]
    else:
        jvm = Path("/usr/lib/jvm")
        candidates = [p for v in (17, 21) for p in sorted(jvm.glob(f"java-{v}-openjdk*"))]
    return next((c for c in candidates if (c / "bin" / "java").is_file()), None)


def cached_jars() -> Path:
    version = os.environ.get("NEO4J_LOCAL_VERSION") or script_default("NEO4J_LOCAL_VERSION")
    default = Path.home() / ".cache" / "cam-engine" / f"neo4j-{version}"
    jars = Path(os.environ.get("NEO4J_LOCAL_HOME") or default)
    if (
        not (jars / "lib" / f"neo4j-{version}.jar").is_file()
        or not (jars / "lib" / ".neo4j-local-jars").is_file()
    ):
        raise Neo4jUnavailable(
            f"no cached Neo4j {version} jars in {jars}/lib: run `docker/neo4j-local start` "
            "once (it fetches them with Maven)"
        )
    return jars


def link_jars(home: Path, jars: Path) -> dict[str, str]:
    """Link each cached jar into ``home`` (never share the folders: the script empties
    them when it fetches jars again); the version settings that make them count as cached."""
    marker = jars / "lib" / ".neo4j-local-jars"
    versions = dict(item.split("=", 1) for item in marker.read_text().splitlines()[0].split())
    for folder in ("lib", "plugins"):
        (home / folder).mkdir(parents=True)
        for jar in sorted((jars / folder).glob("*.jar")):
            (home / folder / jar.name).symlink_to(jar)
    shutil.copy(marker, home / "lib" / marker.name)
    return {
        "NEO4J_LOCAL_VERSION": versions["neo4j"],
        "NEO4J_LOCAL_BROWSER_VERSION": versions["browser"],
        "NEO4J_LOCAL_APOC_VERSION": versions["apoc"],
    }


class PrivateNeo4j:
    """One docker/neo4j-local server in ``home``: start, stop, and SIGKILL of its JVM."""

    def __init__(self, home: Path) -> None:
        if not SCRIPT.is_file() or shutil.which("bash") is None:
            raise Neo4jUnavailable(f"{SCRIPT} or bash is missing")
        if find_java() is None:
            raise Neo4jUnavailable("no OpenJDK 17/21 under /usr/lib/jvm (or NEO4J_LOCAL_JAVA_HOME)")
        self.home = home
        bolt = free_port()
        http = next(port for port in iter(free_port, None) if port != bolt)
        self.uri = f"bolt://127.0.0.1:{bolt}"
        self.env = {
            **os.environ,
            **link_jars(home, cached_jars()),
            "NEO4J_LOCAL_HOME": str(home),
            "NEO4J_LOCAL_BOLT_PORT": str(bolt),
            "NEO4J_LOCAL_HTTP_PORT": str(http),
            "NEO4J_LOCAL_HEAP_INITIAL": "256m",
            "NEO4J_LOCAL_HEAP_MAX": "768m",
            "NEO4J_LOCAL_PAGECACHE": "64m",
            "NEO4J_LOCAL_START_TIMEOUT": "240",
            "NEO4J_LOCAL_CDS": "0",  # a class-data archive for a throwaway home is waste
            "NEO4J_LOCAL_PYTHON": sys.executable,  # the readiness probe needs the driver
        }

    def run(self, command: str) -> None:
        done = subprocess.run(
            [str(SCRIPT), command],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if done.returncode != 0:
            raise CamError(f"docker/neo4j-local {command} failed:\n{done.stderr}{done.stdout}")

    def start(self) -> None:
        self.run("start")

    def stop(self) -> None:
        self.run("stop")

    def pid(self) -> int | None:
        path = self.home / "run" / "neo4j-local.pid"
        text = path.read_text().strip() if path.is_file() else ""
        return int(text) if text.isdigit() else None

    def kill(self) -> None:
        """SIGKILL the server's JVM (no shutdown of any kind) and wait until it is gone."""
        pid = self.pid()
        if pid is None:
            raise CamError(f"no pid file under {self.home}/run: is the server running?")
        cmdline = Path(f"/proc/{pid}/cmdline")
        if not cmdline.is_file() or str(self.home) not in cmdline.read_text(errors="replace"):
            raise CamError(f"pid {pid} is not this home's server")
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if not _alive(pid):
                return
            time.sleep(0.05)
        raise CamError(f"the server's JVM (pid {pid}) outlived SIGKILL by 60 s")


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie no one has reaped yet does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"
