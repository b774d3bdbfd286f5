"""The cheap cases of ``cam bench hostile``, run as the benchmark runs them: each must
hold (nothing read outside --allow, refusals in one line, ...). Their time and memory
are the benchmark's business, printed, not asserted."""

from __future__ import annotations

import pytest

from cam_engine.bench import hostile

CHEAP = ["small-inputs", "symlink-swap", "non-utf8-name", "host-origin", "sigterm-busy"]


@pytest.mark.parametrize("case", CHEAP)
def test_the_case_holds(case: str) -> None:
    (outcome,) = hostile.run_cases([case], timeout=120)
    assert outcome.held, outcome.line()
