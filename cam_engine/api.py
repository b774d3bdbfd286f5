"""The rest of the public API: what a caller of `Memory` hands it or gets back beyond
the top level (`cam_engine`): retrieval strategies, task interfaces and chat models,
ingest reports, document formats and sources, node kinds, progress and transfer reports,
embedders, and optional extras. The `cam` CLI imports the engine only from here,
`cam_engine` and `cam_engine.errors`, besides the programs its commands start
(adapters, the MCP server, eval, benchmarks); tests/unit/test_public_api.py checks it."""

from cam_engine.config import DEFAULT_EMBED_MODEL
from cam_engine.embed import load_embedder
from cam_engine.embed.caching import CachingEmbedder
from cam_engine.engine.reports import (
    BatchReport,
    DocumentChange,
    IngestError,
    IngestReport,
    document_changes,
)
from cam_engine.extras import EVAL, require_extra
from cam_engine.formats import format_names
from cam_engine.llm import (
    Answerer,
    ChatAnswerer,
    ChatModel,
    ChatSelector,
    ChatSummarizer,
    ExtractiveSummarizer,
    Selector,
    Summarizer,
)
from cam_engine.llm.backends import open_chat, parse_llm_spec
from cam_engine.memory import memories_in
from cam_engine.progress import Progress
from cam_engine.retrieval.strategies import (
    ADAPTER,
    DEFAULT,
    STRATEGIES,
    described,
    strategy_named,
)
from cam_engine.samples import sample_path
from cam_engine.sources import CLI_OPTIONS, check_encoding
from cam_engine.transfer import TransferReport
from cam_engine.types import CHUNK, PAGE

__all__ = [
    "ADAPTER",
    "CHUNK",
    "CLI_OPTIONS",
    "DEFAULT",
    "DEFAULT_EMBED_MODEL",
    "EVAL",
    "PAGE",
    "STRATEGIES",
    "Answerer",
    "BatchReport",
    "CachingEmbedder",
    "ChatAnswerer",
    "ChatModel",
    "ChatSelector",
    "ChatSummarizer",
    "DocumentChange",
    "ExtractiveSummarizer",
    "IngestError",
    "IngestReport",
    "Progress",
    "Selector",
    "Summarizer",
    "TransferReport",
    "check_encoding",
    "described",
    "document_changes",
    "format_names",
    "load_embedder",
    "memories_in",
    "open_chat",
    "parse_llm_spec",
    "require_extra",
    "sample_path",
    "strategy_named",
]
