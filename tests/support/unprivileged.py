"""Child processes that file permissions apply to, even when the tests run as root.

Root ignores permission bits (CAP_DAC_OVERRIDE), so a store made read-only with chmod
stays writable to a ``cam`` run by root, and a test of it would pass without testing
anything. When the tests run as root, the child therefore drops those capabilities
from its bounding set before exec (it stays uid 0, so it can still reach an interpreter
under /root), or failing that becomes ``nobody``. Either way a probe first checks that
the child really is refused a write; otherwise the test is skipped, saying why.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PR_CAPBSET_DROP = 24  # <linux/prctl.h>
# <linux/capability.h>: bypass file read/write/execute checks, directory search checks,
# and owner checks (chmod and the like).
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER = 1, 2, 3
NOBODY = 65534

PROBE = """
import sys
import cam_engine.cli.main
try:
    open(sys.argv[1], "r+b").close()
except PermissionError:
    print("refused")
else:
    print("written")
"""


def _drop_capabilities() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), f"prctl(PR_CAPBSET_DROP, {cap})")


def _become_nobody() -> None:
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


@dataclass(frozen=True)
class Unprivileged:
    """How to start a child that file permissions apply to."""

    how: str
    preexec_fn: Callable[[], None] | None

    def run(self, argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
            preexec_fn=self.preexec_fn,
        )


def unprivileged(read_only_file: Path) -> Unprivileged | str:
    """A way to run children that cannot write ``read_only_file`` (mode 0444, in a
    folder every user can enter), or why there is none."""
    if os.geteuid() != 0:
        candidates: list[Unprivileged] = [Unprivileged(f"uid {os.geteuid()}", None)]
    else:
        candidates = [
            Unprivileged("root without CAP_DAC_OVERRIDE", _drop_capabilities),
            Unprivileged(f"uid {NOBODY}", _become_nobody),
        ]
    tried = []
    for candidate in candidates:
        try:
            done = candidate.run(
                [sys.executable, "-c", PROBE, str(read_only_file)], dict(os.environ)
            )
        except (OSError, subprocess.SubprocessError) as exc:
            tried.append(f"{candidate.how}: {exc}")
            continue
        if done.stdout.strip() == "refused":
            return candidate
        tried.append(f"{candidate.how}: {(done.stdout + done.stderr).strip()[-200:]}")
    return "no child process that file permissions apply to: " + "; ".join(tried)
