"""The optional extras: packages that only some features need, imported when one of
those features is used, so the default install runs the main job without them."""

from __future__ import annotations

import importlib

from cam_engine.errors import MissingExtraError

NEO4J = "neo4j"  # the Neo4j store: the driver and its Rust decoding
EVAL = "eval"  # cam eval's plots (matplotlib) and ROUGE (rouge-score)


def require_extra(module: str, extra: str, feature: str) -> None:
    """Import ``module``, or say in one line which extra installs it: ``feature`` needs
    it. The caller then imports it as usual, so that it is typed as the module itself
    (cam_engine/llm/llamacpp.py says the same of the local-llm extra)."""
    try:
        importlib.import_module(module)
    except ImportError as exc:  # not installed, or blocked (None in sys.modules)
        raise MissingExtraError(
            f"{feature} needs the {extra} extra: pip install 'cam-engine[{extra}]' "
            f"(from a checkout: pip install -e '.[{extra}]')"
        ) from exc
