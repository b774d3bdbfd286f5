"""A GGUF model served in-process by llama.cpp (the ``xllamacpp`` package).

``LlamaCppServer`` starts llama.cpp's own HTTP server inside this process, on
127.0.0.1 and a port the system picks, waits until ``/health`` answers, and hands
out an ``OpenAICompatibleChat`` pointed at it: the engine then talks to a local
model exactly as it talks to vLLM, Ollama or a hosted API, structured outputs
included. ``stop`` (or leaving the ``with`` block, also on an error or Ctrl-C)
shuts the server down; it lives in this process, so it can never outlive it.

``xllamacpp`` is an optional extra (``pip install "cam-engine[local-llm]"``); it
ships prebuilt llama.cpp binaries, so nothing is compiled.
"""

from __future__ import annotations

import gc
import logging
import os
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from cam_engine.errors import ConfigError, LLMError
from cam_engine.llm.openai_compat import OpenAICompatibleChat

logger = logging.getLogger(__name__)

EXTRA = "local-llm"
GGUF_MAGIC = b"GGUF"
# Requests to a model on this machine do not fail transiently the way a hosted API
# does, but a large model on a CPU can take minutes per reply: wait long, retry once.
REQUEST_TIMEOUT_S = 600.0
REQUEST_RETRIES = 1


@dataclass(frozen=True)
class LlamaCppSettings:
    """How llama.cpp runs the model.

    - ``threads``: CPU threads generating (default: the cores this process may use,
      at most 8; past that a CPU is memory-bound and more threads only contend).
    - ``context_tokens``: the context window of the server (8,192: room for a
      selector turn of 20 passages or a MemAgent step, and a KV cache a laptop holds
      even for an 8B model; a model trained on less is cut to what it was trained on
      by llama.cpp itself).
    - ``gpu_layers``: layers offloaded to a GPU; -1 (default) lets llama.cpp put as
      many as fit, 0 keeps the model on the CPU. A CPU-only build ignores it.
    - ``startup_timeout_s``: how long loading the model and the first ``/health`` may take.
    """

    threads: int = 0  # 0: default_threads()
    context_tokens: int = 8192
    gpu_layers: int = -1
    startup_timeout_s: float = 300.0

    def __post_init__(self) -> None:
        for name, value, minimum in (
            ("threads", self.threads, 0),
            ("context_tokens", self.context_tokens, 256),
            ("gpu_layers", self.gpu_layers, -1),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise ConfigError(
                    f"llama.cpp {name} must be an integer >= {minimum}, got {value!r}"
                )
        if not self.startup_timeout_s > 0:
            raise ConfigError(
                f"llama.cpp startup_timeout_s must be > 0, got {self.startup_timeout_s!r}"
            )

    @property
    def thread_count(self) -> int:
        return self.threads or default_threads()


def default_threads() -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 8))


def check_gguf(path: str | Path) -> Path:
    """The model file, checked before llama.cpp sees it: its own error for a missing or
    wrong file is one line that names neither."""
    model = Path(path).expanduser()
    if not model.is_file():
        raise ConfigError(f"local model not found: {model} (give the path of a .gguf file)")
    try:
        with model.open("rb") as f:
            magic = f.read(len(GGUF_MAGIC))
    except OSError as exc:
        raise ConfigError(f"cannot read local model {model}: {exc.strerror or exc}") from exc
    if magic != GGUF_MAGIC:
        raise ConfigError(f"{model} is not a GGUF model file (it does not start with 'GGUF')")
    return model


def import_xllamacpp() -> Any:
    try:
        import xllamacpp
    except ImportError as exc:
        raise ConfigError(
            f"a local GGUF model needs llama.cpp: pip install 'cam-engine[{EXTRA}]' "
            f"(from a checkout: pip install -e '.[{EXTRA}]')"
        ) from exc
    return xllamacpp


class LlamaCppServer:
    """llama.cpp serving one GGUF model on 127.0.0.1 for as long as this object is open.

    >>> with LlamaCppServer("model.gguf") as chat:  # doctest: +SKIP
    ...     summarizer = ChatSummarizer(chat)
    """

    def __init__(
        self,
        model_path: str | Path,
        settings: LlamaCppSettings | None = None,
        *,
        request_timeout_s: float | None = None,
        request_retries: int | None = None,
        structured: bool = True,
        max_reply_tokens: int | None = None,
    ) -> None:
        self.model_path = check_gguf(model_path)
        self.settings = settings or LlamaCppSettings()
        self._timeout = REQUEST_TIMEOUT_S if request_timeout_s is None else request_timeout_s
        self._retries = REQUEST_RETRIES if request_retries is None else request_retries
        self._structured = structured  # llama.cpp turns a JSON schema into a grammar
        self._max_reply_tokens = max_reply_tokens
        self._server: Any = None
        self._chat: OpenAICompatibleChat | None = None
        self._lock = threading.Lock()

    @property
    def model_name(self) -> str:
        """What every output written by this model is labelled with: ``local:<file stem>``."""
        return f"local:{self.model_path.stem}"

    @property
    def chat(self) -> OpenAICompatibleChat:
        if self._chat is None:
            raise LLMError(f"the llama.cpp server for {self.model_path.name} is not running")
        return self._chat

    def start(self) -> OpenAICompatibleChat:
        with self._lock:
            if self._chat is not None:
                return self._chat
            xllamacpp = import_xllamacpp()
            params = xllamacpp.CommonParams()
            params.model.path = str(self.model_path)
            params.hostnames = ["127.0.0.1"]  # never reachable from another machine
            params.port = 0  # the system picks a free port; the server reports it
            params.n_ctx = self.settings.context_tokens
            params.n_gpu_layers = self.settings.gpu_layers
            params.cpuparams.n_threads = self.settings.thread_count
            params.cpuparams_batch.n_threads = self.settings.thread_count
            params.verbosity = -1  # llama.cpp logs every request on stderr otherwise
            started = time.perf_counter()
            try:
                self._server = xllamacpp.Server(params)
            except RuntimeError as exc:  # its only error: "Failed to init server"
                raise LLMError(
                    f"llama.cpp could not load {self.model_path} "
                    f"(context {self.settings.context_tokens} tokens; is the file complete "
                    "and is there memory for it?)"
                ) from exc
            base = str(self._server.listening_address).rstrip("/")
            try:
                self._wait_until_healthy(base, started)
                self._wait_until_serving(base, started)
            except BaseException:
                self._shut_down()
                raise
            logger.info(
                "llama.cpp serves %s at %s (%d threads, context %d) after %.1f s",
                self.model_path.name,
                base,
                self.settings.thread_count,
                self.settings.context_tokens,
                time.perf_counter() - started,
            )
            self._chat = OpenAICompatibleChat(
                f"{base}/v1",
                self.model_path.stem,
                timeout=self._timeout,
                max_retries=self._retries,
                structured=self._structured,
                name=self.model_name,
                max_reply_tokens=self._max_reply_tokens,
            )
            return self._chat

    def _wait_until_serving(self, base: str, started: float) -> None:
        """Wait until the server's task loop runs, not only its HTTP thread: /slots is
        answered by that loop. Stopping a server whose loop has not begun yet (a busy
        machine delays the thread) hangs: llama.cpp's stop is lost when the loop starts
        after it, and the destructor waits for the loop forever."""
        timeout = max(1.0, started + self.settings.startup_timeout_s - time.perf_counter())
        try:
            with urllib.request.urlopen(f"{base}/slots", timeout=timeout):
                pass
        except urllib.error.HTTPError:  # slots monitoring off: answered without the loop
            logger.debug("llama.cpp at %s: /slots is off; its loop is not awaited", base)

    def _wait_until_healthy(self, base: str, started: float) -> None:
        deadline = started + self.settings.startup_timeout_s
        last = "no answer"
        while time.perf_counter() < deadline:
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=5) as reply:
                    if reply.status == 200:
                        return
                    last = f"HTTP {reply.status}"
            except urllib.error.HTTPError as exc:  # 503 while the model is loading
                last = f"HTTP {exc.code}"
            except OSError as exc:
                last = str(exc)
            time.sleep(0.05)
        raise LLMError(
            f"llama.cpp did not become healthy within {self.settings.startup_timeout_s:g} s "
            f"({last})"
        )

    def stop(self) -> None:
        with self._lock:
            self._chat = None
            self._shut_down()

    def _shut_down(self) -> None:
        # xllamacpp has no stop(): the native server stops when its object is freed.
        server, self._server = self._server, None
        if server is not None:
            del server
            gc.collect()

    def __enter__(self) -> OpenAICompatibleChat:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
