"""Options shared by several commands, and opening a memory from them."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import click
from click.shell_completion import CompletionItem

from cam_engine import Environment, Memory, Settings
from cam_engine.api import (
    STRATEGIES,
    ChatModel,
    ExtractiveSummarizer,
    Summarizer,
    open_chat,
    parse_llm_spec,
    strategy_named,
)
from cam_engine.errors import CamError


def memory_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--store and --memory, defaulting to CAM_STORE / CAM_MEMORY."""

    @click.option(
        "--store",
        metavar="PATH|URI",
        help="SQLite file, or a bolt:// or neo4j:// URI (default: $CAM_STORE, else "
        "$CAM_NEO4J_URI, else $XDG_DATA_HOME/cam/memory.db when it is absolute, else "
        "~/.local/share/cam/memory.db).",
    )
    @click.option(
        "--memory",
        "memory_name",
        metavar="NAME",
        help="Memory name (default: $CAM_MEMORY or 'default').",
    )
    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return command(*args, **kwargs)

    return wrapper


DEVICES = ("auto", "cpu", "cuda", "mps")


def device_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """--device: where the embedding model runs."""
    return click.option(
        "--device",
        type=click.Choice(DEVICES, case_sensitive=False),
        help="Where the embedding model runs (default: $CAM_EMBED_DEVICE, else auto: a GPU "
        "when torch sees one, in fp16, else the CPU). An openai:NAME model runs at its API "
        "and ignores it.",
    )(command)


def json_option(command: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(
        command
    )


class ModelSpec(click.ParamType):
    """A model as ``--llm`` / ``--summarizer`` / ``CAM_LLM`` name it (llm/backends.py)."""

    name = "MODEL"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            parse_llm_spec(str(value))
        except CamError as exc:
            self.fail(f"{exc}{from_environment(param, ctx)}", param, ctx)
        return str(value).strip()

    def shell_complete(
        self, ctx: click.Context, param: click.Parameter, incomplete: str
    ) -> list[CompletionItem]:
        return [
            CompletionItem(name)
            for name in ("extractive", "openai", "local:")
            if name.startswith(incomplete)
        ]


def from_environment(param: click.Parameter | None, ctx: click.Context | None) -> str:
    """`` (from $CAM_LLM)`` when the value being checked came from the environment: the
    error names the option, which the user may never have typed."""
    if param is None or ctx is None or param.name is None:
        return ""
    if ctx.get_parameter_source(param.name) is not click.core.ParameterSource.ENVIRONMENT:
        return ""
    return f" (from ${param.envvar})" if isinstance(param.envvar, str) else ""


MODEL_SPEC = ModelSpec()
MODEL_HELP = (
    "extractive (offline: quotes the text, no model), openai (the endpoint at "
    "CAM_LLM_BASE_URL serving CAM_LLM_MODEL: OpenAI, vLLM, Ollama, llama-server, ...) or "
    "local:PATH (a .gguf file run in-process by llama.cpp, extra 'local-llm'; or a "
    "transformers model directory). Default: $CAM_LLM, else extractive."
)


def llm_option(help_first: str, *names: str, default: str | None = "extractive") -> Any:
    """--llm (or --summarizer): which model writes; ``CAM_LLM`` is its default."""
    return click.option(
        *(names or ("--llm",)),
        type=MODEL_SPEC,
        envvar="CAM_LLM",
        default=default,
        show_default=False,
        help=f"{help_first} {MODEL_HELP}",
    )


def chat_for(spec: str, env: Environment) -> ChatModel | None:
    """The chat model ``spec`` names (None for extractive), open until the command ends.

    A local GGUF model starts a llama.cpp server here; it is stopped when the command
    returns, fails or is interrupted (a resource of the click context), and a second
    option naming the same model (mcp's --summarizer and --llm) gets the same server.
    """
    ctx = click.get_current_context()
    opened: dict[str, ChatModel | None] = ctx.find_root().meta.setdefault("cam.chats", {})
    if spec not in opened:
        try:
            opened[spec] = ctx.find_root().with_resource(open_chat(spec, env))
        except CamError as exc:
            raise click.ClickException(str(exc)) from exc
    return opened[spec]


def summarizer_for(spec: str, env: Environment) -> Summarizer:
    chat = chat_for(spec, env)
    if chat is None:
        return ExtractiveSummarizer()
    from cam_engine.api import ChatSummarizer

    return ChatSummarizer(chat)


def open_memory(
    store: str | None,
    memory_name: str | None,
    *,
    settings: Settings | None = None,
    summarizer: str = "extractive",
    llm_concurrency: int = 4,
    create: bool = False,
    device: str | None = None,
) -> Memory:
    """The memory a command works on. Only commands that add documents create one: for
    the others a mistyped --store or --memory is an error, not a new empty memory."""
    env = Environment.from_env()
    if device is not None:  # --device beats CAM_EMBED_DEVICE
        env = replace(env, embed_device=device)
    try:
        return Memory.open(
            store,
            memory_name,
            settings=settings,
            summarizer=summarizer_for(summarizer, env),
            environment=env,
            llm_concurrency=llm_concurrency,
            create=create,
        )
    except CamError as exc:
        raise click.ClickException(str(exc)) from exc


def plural(count: int, noun: str) -> str:
    if count == 1:
        return f"{count} {noun}"
    if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "i", "o", "u"):
        return f"{count} {noun[:-1]}ies"  # summary: summaries
    return f"{count} {noun}es" if noun.endswith(("ch", "s", "sh", "x")) else f"{count} {noun}s"


def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, sort_keys=True, default=str))


class LiveHelp(click.Option):
    """An option whose help is written when it is shown, by ``help_from``: a list that
    can grow after import (the strategy registry) is never out of date in ``--help``."""

    def __init__(self, *args: Any, help_from: Callable[[], str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help_from = help_from

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        self.help = self.help_from()
        return super().get_help_record(ctx)


class StrategyName(click.ParamType):
    """A strategy of the registry (``cam_engine.retrieval.strategies.STRATEGIES``), read
    when the value is checked, not copied at import."""

    name = "strategy"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            return strategy_named(str(value)).name
        except CamError as exc:
            self.fail(str(exc), param, ctx)

    def get_metavar(self, param: click.Parameter, ctx: click.Context) -> str:
        return "[" + "|".join(STRATEGIES) + "]"

    def shell_complete(
        self, ctx: click.Context, param: click.Parameter, incomplete: str
    ) -> list[CompletionItem]:
        return [CompletionItem(n) for n in STRATEGIES if n.startswith(incomplete)]
