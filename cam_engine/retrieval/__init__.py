"""Memory retrieval (CAM Section 4.2): which nodes a question activates, best first.

- ``prune-grow`` (CAM, the default): hybrid localization, then selector-guided growth
  along neighbours, children and name bridges (prune_grow.py).
- ``global``: fast localization only; ``traverse``: top-down from the top level.
- ``dense``, ``bm25``, ``hybrid``: flat rankings of the chunks, the baselines the
  memory's structure is measured against.

strategies.py names them all (and the adapters' traversals) for every caller.
"""

from cam_engine.retrieval.base import Retrieval, context_passages
from cam_engine.retrieval.prune_grow import prune_and_grow
from cam_engine.retrieval.selection import RelevanceSelector
from cam_engine.retrieval.simple import dense, fused, global_top_k, lexical, traverse

__all__ = [
    "RelevanceSelector",
    "Retrieval",
    "context_passages",
    "dense",
    "fused",
    "global_top_k",
    "lexical",
    "prune_and_grow",
    "traverse",
]
