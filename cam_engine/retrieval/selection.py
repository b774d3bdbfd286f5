"""The offline selector of prune-and-grow: no model, relevance decides."""

from __future__ import annotations

from collections.abc import Sequence

from cam_engine.errors import ConfigError
from cam_engine.llm.base import EXTRACTIVE, Candidate, Selection, Usage

MAX_CHOSEN = 8  # per turn, as an LLM selector names a handful, not all that is plausible


class RelevanceSelector:
    """Chooses the candidates retrieval found relevant to the question (a fused rank
    score above 0), the best ``max_chosen`` of them.

    This is what an offline selector can honestly know: whether the question's words
    or meaning found the node. An earlier selector kept candidates within 0.3 of the
    turn's best cosine; it dropped what only the question's words find (names,
    dates), and growth from a node the question does not reach at all added noise
    (docs/evaluation.md has the comparison)."""

    def __init__(self, max_chosen: int = MAX_CHOSEN) -> None:
        if max_chosen < 1:
            raise ConfigError(f"max_chosen must be >= 1, got {max_chosen}")
        self.max_chosen = max_chosen
        self._bar: tuple[str, float] | None = None  # (question, lowest score chosen first)

    @property
    def backend(self) -> str:
        return EXTRACTIVE

    def select(self, question: str, candidates: Sequence[Candidate]) -> Selection:
        """The first turn of a question sets the bar: a node grown later is chosen only
        when it is at least as relevant as the least relevant node localization found.
        Otherwise growth would put weaker nodes ahead of stronger ones it never reached."""
        scored = [(c.score or 0.0, i) for i, c in enumerate(candidates)]
        bar = self._bar[1] if self._bar is not None and self._bar[0] == question else 0.0
        best = sorted((p for p in scored if p[0] > 0 and p[0] >= bar), key=lambda p: (-p[0], p[1]))
        chosen = best[: self.max_chosen]
        if chosen and (self._bar is None or self._bar[0] != question):
            self._bar = (question, chosen[-1][0])
        return Selection([i for _, i in chosen], EXTRACTIVE, Usage())
