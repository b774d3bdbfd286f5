"""Progress of long work (a question read step by step, an LLM asked turn after turn),
reported through a callback: the engine never prints; the CLI shows it on stderr."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Progress:
    """``task``'s ``done``-th ``unit`` of ``total`` (None: not known in advance)."""

    task: str  # who reports: a strategy's name ("memagent", "research", ...)
    unit: str  # what is counted: "step", "iteration", "turn", "page"
    done: int
    total: int | None
    detail: str = ""  # what the count does not say, e.g. "read 60,000 of 400,000 tokens"

    @property
    def finished(self) -> bool:
        return self.total is not None and self.done >= self.total

    def line(self) -> str:
        """One line for people: ``memagent: step 12/80 (read 60,000 of 400,000 tokens)``."""
        count = f"{self.done}/{self.total}" if self.total is not None else str(self.done)
        return f"{self.task}: {self.unit} {count}" + (f" ({self.detail})" if self.detail else "")


ProgressCallback = Callable[[Progress], None]
