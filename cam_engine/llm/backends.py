"""Which model writes, from one string, and opening it.

The same string names a model everywhere: ``--llm`` and ``--summarizer`` on the
command line, ``CAM_LLM`` in the environment, ``open_chat`` in Python:

- ``extractive``: no model. Offline, deterministic, and labelled as such.
- ``openai``: an OpenAI-compatible endpoint at ``CAM_LLM_BASE_URL`` serving
  ``CAM_LLM_MODEL`` (OpenAI, vLLM, Ollama, llama-server, LM Studio, ...).
- ``local:PATH``: a model on this machine. A ``.gguf`` file is served in-process by
  llama.cpp (the ``local-llm`` extra); a directory is a transformers model.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from cam_engine.config import Environment
from cam_engine.errors import ConfigError
from cam_engine.llm.base import EXTRACTIVE, ChatModel

OPENAI = "openai"
LOCAL = "local"
LOCAL_PREFIX = "local:"
Kind = Literal["extractive", "openai", "llamacpp", "transformers"]


@dataclass(frozen=True)
class LLMSpec:
    kind: Kind
    path: Path | None = None  # the model of a local kind

    @property
    def is_model(self) -> bool:
        return self.kind != EXTRACTIVE


def parse_llm_spec(text: str) -> LLMSpec:
    """The model ``text`` names, or a one-line ``ConfigError`` saying what is accepted."""
    value = text.strip()
    if value == EXTRACTIVE:
        return LLMSpec("extractive")
    if value == OPENAI:
        return LLMSpec("openai")
    if value in (LOCAL, LOCAL_PREFIX):
        raise ConfigError(
            "a local model needs its path: local:PATH.gguf (llama.cpp) or local:DIR "
            "(a transformers model directory)"
        )
    if value.startswith(LOCAL_PREFIX):
        path = Path(value[len(LOCAL_PREFIX) :]).expanduser()
        if path.is_dir():
            return LLMSpec("transformers", path)
        if not path.exists():
            raise ConfigError(f"local model not found: {path} (local:PATH.gguf or local:DIR)")
        return LLMSpec("llamacpp", path)
    raise ConfigError(
        f"unknown model {text!r}: use extractive, openai (CAM_LLM_BASE_URL / "
        "CAM_LLM_MODEL) or local:PATH.gguf"
    )


@contextmanager
def open_chat(spec: LLMSpec | str, env: Environment | None = None) -> Iterator[ChatModel | None]:
    """The chat model ``spec`` names, open for the ``with`` block (``None`` for
    extractive). A local GGUF model's llama.cpp server starts here and stops when the
    block is left, however it is left."""
    spec = parse_llm_spec(spec) if isinstance(spec, str) else spec
    env = env or Environment.from_env()
    if spec.kind == "extractive":
        yield None
    elif spec.kind == "openai":
        from cam_engine.llm.openai_compat import OpenAICompatibleChat

        yield OpenAICompatibleChat.from_environment(env)
    elif spec.kind == "transformers":
        from cam_engine.llm.transformers_local import TransformersChat

        assert spec.path is not None
        yield TransformersChat(spec.path)
    else:
        from cam_engine.llm.llamacpp import LlamaCppServer, LlamaCppSettings

        assert spec.path is not None
        settings = LlamaCppSettings(
            threads=env.llm_threads or 0,
            context_tokens=env.llm_context_tokens or LlamaCppSettings.context_tokens,
            gpu_layers=LlamaCppSettings.gpu_layers
            if env.llm_gpu_layers is None
            else env.llm_gpu_layers,
        )
        server = LlamaCppServer(
            spec.path,
            settings,
            request_timeout_s=env.llm_timeout,
            request_retries=env.llm_max_retries,
            structured=env.llm_structured != "off",
            max_reply_tokens=env.llm_max_tokens,
        )
        with server as chat:
            yield chat
