"""CAM Engine: a long-document memory for LLM reading agents (CAM's incremental,
overlapping hierarchy of summaries, kept in a graph store)."""

from cam_engine.config import Environment, Settings
from cam_engine.errors import CamError, ConfigError, InputError, NotFoundError, StoreError
from cam_engine.memory import Memory, NodeView

__all__ = [
    "CamError",
    "ConfigError",
    "Environment",
    "InputError",
    "Memory",
    "NodeView",
    "NotFoundError",
    "Settings",
    "StoreError",
]
__version__ = "0.1.0"
