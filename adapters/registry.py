"""The adapters by name, for the CLI and anyone choosing one at run time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cam_engine.adapters import gam, memagent, readagent

# view name -> build_view(memory, doc_ids, chat, **options) -> ViewReport
VIEW_BUILDERS: dict[str, Callable[..., Any]] = {
    readagent.VIEW: readagent.build_view,
    gam.VIEW: gam.build_view,
}
# strategy name -> run(memory, question, chat, **options) -> AdapterAnswer
ASK_STRATEGIES: dict[str, Callable[..., Any]] = {
    **readagent.STRATEGIES,
    **memagent.STRATEGIES,
    **gam.STRATEGIES,
}
