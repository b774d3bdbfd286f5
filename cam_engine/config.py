"""Settings of a memory, and the one place the environment is read.

``Settings`` holds everything that shapes a memory's structure. It is stored with the
memory, so reopening it continues with the same algorithm; ``Environment`` holds
where things live and which backends to use, read once from ``CAM_*`` variables.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

from cam_engine.errors import ConfigError
from cam_engine.limits import Limits

DEFAULT_MEMORY = "default"
N = TypeVar("N", int, float)
DEFAULT_EMBED_MODEL = "all-MiniLM-L6-v2"
# Memory names end up in file names, Neo4j property values and index names: keep them plain.
MEMORY_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,62}")


def validate_memory_name(name: str) -> str:
    if not MEMORY_NAME.fullmatch(name):  # `$` would let "name\n" in
        raise ConfigError(
            f"invalid memory name {name!r}: use a letter then up to 62 letters, digits, '_' or '-'"
        )
    return name


@dataclass(frozen=True)
class Settings:
    """Algorithm settings of one memory (CAM paper Section 4.1).

    Defaults are measured for the default embedder, not copied from the paper:
    docs/defaults.md has the evidence.
    """

    chunk_tokens: int = 200  # word/punctuation tokens per chunk; fits MiniLM's 256 word pieces
    # CAM's release uses alpha=0.6, sigma=1.0, theta=0.6 (tuned for OpenAI embeddings);
    # with MiniLM that isolates half the chunks of a book (docs/defaults.md).
    alpha: float = 0.7  # weight of cosine vs positional proximity in the composite score
    sigma: float = 2.0  # Gaussian decay of proximity, in chunk positions
    theta: float = 0.5  # minimum composite score for an edge
    k: int = 10  # edges kept per new chunk (top-k by score)
    candidate_k: int = 50  # vector top-K candidates scored exactly per new chunk
    max_cluster_size: int = 12  # larger clusters are split by Leiden
    max_levels: int = 10  # summary levels above the chunks
    max_rounds: int = 30  # label-propagation rounds per batch and level (the ripple cap)
    summary_words: int = 120  # length budget of one summary
    # A cluster whose members changed keeps its summary's text (no summarize call) while
    # the members it was written from differ from its current ones by at most this share
    # of its current size (symmetric difference / size); 0 rewrites on any change. A
    # removed member always forces a rewrite. At 0.25 a summary leaves out at most a
    # quarter of its members: a cluster of 8 takes in two new members (2/10) before it
    # is written again, one left with 3 members or fewer on any change (1/3 > 0.25). On
    # Moby Dick in batches of 64 that is 9% fewer summarize calls than 0 (13% fewer
    # than before the rule); 0.5 gives 17% (20%) but lets a summary speak for only
    # half its members. Recall on HotpotQA and QMSum moved by at most 0.005 either way
    # (docs/benchmarks.md, "Fewer summarize calls").
    resummarize_drift: float = 0.25
    seed: int = 0  # Leiden's seed: equal inputs give equal memories
    embed_model: str = DEFAULT_EMBED_MODEL
    # The size of the memory's vectors, recorded from the embedder when the memory is
    # first written (None in memories older than this field). It is a fact about the
    # model, not a choice, so it takes no part in comparing settings: reopening a memory
    # checks it against the embedder instead (an API model may change under one name).
    embed_dim: int | None = field(default=None, compare=False)
    # False is the CAM paper's "w/o flexibility" ablation (Table 3): no ego-splitting,
    # one replica per node, so clusters do not overlap. For comparison, not for use.
    ego_split: bool = True

    def __post_init__(self) -> None:
        _check_int("chunk_tokens", self.chunk_tokens, 16, 4096)
        _check_unit("alpha", self.alpha)
        _check_unit("theta", self.theta)
        if not (self.sigma > 0 and math.isfinite(self.sigma)):
            raise ConfigError(f"sigma must be a positive number, got {self.sigma}")
        _check_int("k", self.k, 1, 1000)
        _check_int("candidate_k", self.candidate_k, self.k, 100_000)
        _check_int("max_cluster_size", self.max_cluster_size, 2, 10_000)
        _check_int("max_levels", self.max_levels, 0, 50)
        _check_int("max_rounds", self.max_rounds, 1, 10_000)
        _check_int("summary_words", self.summary_words, 10, 2000)
        _check_unit("resummarize_drift", self.resummarize_drift)
        if self.embed_dim is not None:
            _check_int("embed_dim", self.embed_dim, 1, 1_000_000)
        if not isinstance(self.ego_split, bool):
            raise ConfigError(f"ego_split must be true or false, got {self.ego_split!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Settings:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def differences(self, built: Settings) -> list[str]:
        """What these settings change from those a memory was ``built`` with."""
        return [
            f"{f.name}={getattr(built, f.name)!r}, asked {getattr(self, f.name)!r}"
            for f in fields(self)
            if f.compare and getattr(self, f.name) != getattr(built, f.name)
        ]


def _number(env: dict[str, str], name: str, kind: type[N]) -> N | None:
    text = env.get(name)
    if not text:
        return None
    try:
        return kind(text)
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {text!r}") from None


STRUCTURED_MODES = ("auto", "off")


def _structured_mode(env: dict[str, str]) -> str:
    """``CAM_LLM_STRUCTURED``: ``auto`` (the default) asks chat endpoints for replies
    that follow a JSON Schema and stops asking one that refuses; ``off`` never asks."""
    text = (env.get("CAM_LLM_STRUCTURED") or "auto").strip().lower()
    if text not in STRUCTURED_MODES:
        raise ConfigError(f"CAM_LLM_STRUCTURED must be auto or off, got {text!r}")
    return text


def _check_int(name: str, value: int, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"{name} must be an integer in [{low}, {high}], got {value!r}")


def _check_unit(name: str, value: float) -> None:
    if not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise ConfigError(f"{name} must be a number in [0, 1], got {value!r}")


def check_batch_size(batch_size: int) -> int:
    _check_int("batch size", batch_size, 1, 1_000_000)
    return batch_size


def default_store_path(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_DATA_HOME/cam/memory.db``, else ``~/.local/share/cam/memory.db``: the XDG
    base directory spec has a relative ``XDG_DATA_HOME`` ignored, as it would put the
    store wherever the command happens to run."""
    env = os.environ if env is None else env
    base = env.get("XDG_DATA_HOME") or ""
    data = Path(base) if os.path.isabs(base) else Path.home() / ".local" / "share"
    return data / "cam" / "memory.db"


# The user information of a URI ("bolt://neo4j:secret@host"), also in a URI missing a
# slash ("bolt:/neo4j:secret@host"): what ``redact_credentials`` hides.
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*:/{0,2})[^/@]*@")


def redact_credentials(location: str) -> str:
    """A store location fit to print: a URI's user name and password replaced by
    ``***`` (``bolt://***@host:7687``); a file path as it is."""
    return _USERINFO.sub(r"\1***@", location)


def has_credentials(location: str) -> bool:
    return redact_credentials(location) != location


@dataclass(frozen=True)
class Environment:
    """Where the memory lives and which backends to use; read from ``CAM_*`` once."""

    store: str
    memory: str
    embed_model: str | None
    llm_base_url: str | None
    llm_model: str | None
    llm_api_key: str | None
    neo4j_user: str = "neo4j"
    neo4j_password: str | None = None
    neo4j_database: str | None = None
    neo4j_browser_url: str | None = None
    llm_timeout: float | None = None  # seconds per chat request (client default 60)
    llm_max_retries: int | None = None  # retries of a failed chat request (client default 4)
    llm: str | None = None  # CAM_LLM: the default of --llm and --summarizer (llm/backends.py)
    # A local GGUF model's llama.cpp server (llm/llamacpp.py has the defaults)
    llm_threads: int | None = None
    llm_context_tokens: int | None = None
    llm_gpu_layers: int | None = None
    llm_max_tokens: int | None = None  # CAM_LLM_MAX_TOKENS: a cap on every reply's length
    llm_structured: str = "auto"  # CAM_LLM_STRUCTURED: ask for schema-shaped replies (or off)
    embed_device: str | None = None  # auto (the default), cpu, cuda or mps
    # texts per embedding call (default: 256 on a GPU, 64 on a CPU, 128 per API request)
    embed_batch_size: int | None = None
    embed_base_url: str | None = None  # API root of an openai:NAME embedding model
    embed_api_key: str | None = None
    # What one input may cost (CAM_MAX_* variables): cam_engine/limits.py.
    limits: Limits = field(default_factory=Limits)

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Environment:
        env = dict(os.environ) if env is None else env
        return cls(
            # --store beats CAM_STORE, which beats CAM_NEO4J_URI; else the SQLite default
            store=env.get("CAM_STORE") or env.get("CAM_NEO4J_URI") or str(default_store_path(env)),
            memory=env.get("CAM_MEMORY") or DEFAULT_MEMORY,
            embed_model=env.get("CAM_EMBED_MODEL") or None,
            llm_base_url=env.get("CAM_LLM_BASE_URL") or None,
            llm_model=env.get("CAM_LLM_MODEL") or None,
            llm_api_key=env.get("CAM_LLM_API_KEY") or env.get("OPENAI_API_KEY") or None,
            neo4j_user=env.get("CAM_NEO4J_USER") or "neo4j",
            neo4j_password=env.get("CAM_NEO4J_PASSWORD") or None,
            neo4j_database=env.get("CAM_NEO4J_DATABASE") or None,
            neo4j_browser_url=env.get("CAM_NEO4J_BROWSER_URL") or None,
            llm_timeout=_number(env, "CAM_LLM_TIMEOUT", float),
            llm_max_retries=_number(env, "CAM_LLM_MAX_RETRIES", int),
            llm=env.get("CAM_LLM") or None,
            llm_threads=_number(env, "CAM_LLM_THREADS", int),
            llm_context_tokens=_number(env, "CAM_LLM_CONTEXT", int),
            llm_gpu_layers=_number(env, "CAM_LLM_GPU_LAYERS", int),
            llm_max_tokens=_number(env, "CAM_LLM_MAX_TOKENS", int),
            llm_structured=_structured_mode(env),
            embed_device=env.get("CAM_EMBED_DEVICE") or None,
            embed_batch_size=_number(env, "CAM_EMBED_BATCH_SIZE", int),
            embed_base_url=env.get("CAM_EMBED_BASE_URL") or None,
            embed_api_key=env.get("CAM_EMBED_API_KEY") or env.get("OPENAI_API_KEY") or None,
            limits=Limits.from_env(env),
        )

    def __repr__(self) -> str:  # never print the keys
        key = "set" if self.llm_api_key else "unset"
        embed_key = "set" if self.embed_api_key else "unset"
        return (
            f"Environment(store={redact_credentials(self.store)!r}, memory={self.memory!r}, "
            f"embed_model={self.embed_model!r}, embed_base_url={self.embed_base_url!r}, "
            f"embed_api_key=<{embed_key}>, llm_base_url={self.llm_base_url!r}, "
            f"llm_model={self.llm_model!r}, llm_api_key=<{key}>, "
            f"neo4j_user={self.neo4j_user!r}, neo4j_password=<"
            f"{'set' if self.neo4j_password else 'unset'}>, neo4j_database={self.neo4j_database!r})"
        )
