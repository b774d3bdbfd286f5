"""The offline selector of prune-and-grow: no model, relevance decides."""

from __future__ import annotations

from collections.abc import Sequence

from cam_engine.errors import ConfigError
from cam_engine.llm.base import EXTRACTIVE, Candidate, Selection, Usage

MAX_CHOSEN = 8  # per turn, as an LLM selector names a handful, not all that is plausible


class RelevanceSelector:
    """Chooses the candidates retrieval vouches for (a relevance score above 0), the
    best ``max_chosen`` of them. Stateless: one instance can serve any number of asks.

    This is what an offline selector can honestly know: whether the question's words
    or meaning found the node, or relevance flowed to it from a chosen one. The cosine
    selector used before (``ExtractiveSelector``: within 0.3 of the turn's best
    cosine) drops what only the question's words find, such as names and dates."""

    def __init__(self, max_chosen: int = MAX_CHOSEN) -> None:
        if max_chosen < 1:
            raise ConfigError(f"max_chosen must be >= 1, got {max_chosen}")
        self.max_chosen = max_chosen

    @property
    def backend(self) -> str:
        return EXTRACTIVE

    def select(self, question: str, candidates: Sequence[Candidate]) -> Selection:
        scored = [(c.score or 0.0, i) for i, c in enumerate(candidates)]
        best = sorted((p for p in scored if p[0] > 0), key=lambda p: (-p[0], p[1]))
        return Selection([i for _, i in best[: self.max_chosen]], EXTRACTIVE, Usage())
