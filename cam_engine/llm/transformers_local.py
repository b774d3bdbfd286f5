"""A chat model run in-process with transformers, from a model directory on disk.

For machines with a local instruct model (CPU or GPU) and no server: it applies the
model's chat template, generates up to ``max_tokens`` new tokens (greedy at
temperature 0), and drops reasoning up to the last ``</think>``. Nothing is fetched
from a hub: the directory must hold the weights and the tokenizer. A ``schema`` is
accepted and ignored (no constrained decoding here): the callers' tolerant parsers and
their repair round (llm/structured.py) deal with the free-form reply.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cam_engine.errors import ConfigError, LLMError
from cam_engine.llm.base import Completion, JsonSchema, Message, Usage
from cam_engine.llm.parsers import strip_thinking


class TransformersChat:
    def __init__(self, model_dir: str | Path, *, device: str | None = None) -> None:
        path = Path(model_dir)
        if not path.is_dir():
            raise ConfigError(f"local model directory not found: {path}")
        self._path = path
        self._device = device
        self._loaded: tuple[Any, Any] | None = None
        self._lock = threading.Lock()  # one generate() at a time per model

    @property
    def name(self) -> str:
        return f"local:{self._path.name}"

    def _load(self) -> tuple[Any, Any]:
        if self._loaded is None:
            try:
                import torch
                from transformers import AutoModelForCausalLM, AutoTokenizer
                from transformers.utils import logging as transformers_logging

                transformers_logging.disable_progress_bar()

                tokenizer = AutoTokenizer.from_pretrained(self._path, local_files_only=True)
                model = AutoModelForCausalLM.from_pretrained(self._path, local_files_only=True)
                device = self._device or ("cuda" if torch.cuda.is_available() else "cpu")
                # transformers wraps to() in functools.wraps(Module.to): mypy sees an
                # unbound signature whose first parameter is the model.
                model.to(device).eval()  # type: ignore[arg-type]
            except Exception as exc:  # transformers raises many kinds; name the directory
                raise LLMError(f"cannot load local model {self._path}: {exc}") from exc
            self._loaded = (tokenizer, model)
        return self._loaded

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        schema: JsonSchema | None = None,
    ) -> Completion:
        start = time.perf_counter()
        with self._lock:
            tokenizer, model = self._load()
            chat = [{"role": m.role, "content": m.content} for m in messages]
            if tokenizer.chat_template:
                inputs = tokenizer.apply_chat_template(
                    chat, add_generation_prompt=True, return_tensors="pt", return_dict=True
                )
            else:  # a base model: a plain transcript ending where the answer starts
                text = "".join(f"{m['role']}: {m['content']}\n" for m in chat) + "assistant:"
                inputs = tokenizer(text, return_tensors="pt")
            inputs = {k: v.to(model.device) for k, v in inputs.items()}
            sampling: dict[str, Any] = (
                {"do_sample": True, "temperature": temperature}
                if temperature > 0
                else {"do_sample": False}  # greedy: the same prompt gives the same reply
            )
            output = model.generate(
                **inputs,
                max_new_tokens=max_tokens,
                pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id,
                **sampling,
            )
        prompt_tokens = int(inputs["input_ids"].shape[1])
        new = output[0][prompt_tokens:]
        text = tokenizer.decode(new, skip_special_tokens=True)
        usage = Usage(1, prompt_tokens, int(new.shape[0]), time.perf_counter() - start)
        return Completion(strip_thinking(text).strip(), self.name, usage)
