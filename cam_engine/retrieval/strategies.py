"""Every retrieval strategy by name: the one registry that ``Memory.ask``, ``cam ask``,
the MCP ``ask`` tool, ``cam eval`` and the benches dispatch through, so an evaluation
measures exactly the path a user runs, under the name a user types.

A strategy takes the memory (the public API), the question and ``AskOptions``, and
returns a ``Retrieval``: the evidence best first, what would fill a larger budget,
and, for the adapters, which write their own answer, that answer. Adding one is that
function given to ``register_strategy`` as a ``Strategy``, from any module (the
built-ins below register through the same call; docs/extending.md, "A retrieval
strategy"); nothing else lists them.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from cam_engine.config import Settings
from cam_engine.errors import ConfigError
from cam_engine.llm.base import AnswerText, ChatModel, Selector
from cam_engine.progress import ProgressCallback
from cam_engine.retrieval import simple
from cam_engine.retrieval.base import Retrieval
from cam_engine.retrieval.prune_grow import DEFAULT_GROW, GrowSettings, prune_and_grow
from cam_engine.retrieval.scope import within
from cam_engine.retrieval.selection import RelevanceSelector
from cam_engine.types import Node

if TYPE_CHECKING:
    from cam_engine.adapters.base import AdapterAnswer
    from cam_engine.memory import Memory

CAM = "cam"
BASELINE = "baseline"
ADAPTER = "adapter"
ABLATION = "ablation"  # CAM without one of its parts, for comparison (CAM Table 3)
FAMILIES = (CAM, BASELINE, ADAPTER, ABLATION)


@dataclass(frozen=True)
class AskOptions:
    top_k: int = 10  # nodes found by fast localization (flat strategies: evidence kept)
    max_turns: int = 5  # prune-and-grow turns at most
    level: int | None = None  # prune-grow/global: one level only (0: "w/o hierarchy")
    selector: Selector | None = None  # None: the offline RelevanceSelector
    chat: ChatModel | None = None  # adapters: None runs their offline extractive rules
    adapter: Mapping[str, Any] = field(default_factory=dict)  # adapter-specific options
    grow: GrowSettings = DEFAULT_GROW  # prune-grow's growth and relevance flow
    # Only these documents' nodes are searched and returned (retrieval/scope.py);
    # None: every document. Memory.ask checks the ids.
    documents: tuple[str, ...] | None = None
    progress: ProgressCallback | None = None  # hears of long work: steps, turns, iterations

    def __post_init__(self) -> None:
        if self.top_k < 1 or self.max_turns < 1:
            raise ConfigError(
                f"top_k and max_turns must be >= 1, got {self.top_k} and {self.max_turns}"
            )


Run = Callable[["Memory", str, AskOptions], Retrieval]


@dataclass(frozen=True)
class EvalUse:
    """How ``cam eval`` asks with a strategy (it asks with any of them by name)."""

    default: bool = True  # in cam eval's default set (False: minutes per question)
    options: Mapping[str, Any] = field(default_factory=dict)  # adapter options it asks with
    answer_first: bool = False  # the strategy's own answer leads the context scored


@dataclass(frozen=True)
class Strategy:
    name: str
    family: str  # CAM, BASELINE, ADAPTER or ABLATION
    help: str
    run: Run
    view: str | None = None  # the adapter view it reads (built by `cam ingest --view`)
    writes: bool = False  # it stores what it reads as it goes (MemAgent's memory states)
    # Settings the memory must have been built with (e.g. {"ego_split": False}):
    # asking another memory is one ConfigError; cam eval builds such a memory beside
    # the default one.
    needs_build: Mapping[str, Any] = field(default_factory=dict)
    evaluation: EvalUse = field(default_factory=EvalUse)

    def __post_init__(self) -> None:
        known = {f.name for f in fields(Settings)}
        if unknown := sorted(set(self.needs_build) - known):
            raise ConfigError(f"strategy {self.name!r}: no setting {unknown[0]!r} to build with")

    def retrieve(self, memory: Memory, question: str, options: AskOptions) -> Retrieval:
        """``run`` on a memory built as this strategy needs, the result under its name."""
        self.check_build(memory.name, memory.settings)
        found = self.run(memory, question, options)
        found.strategy = self.name
        return found

    def check_build(self, memory_name: str, settings: Settings) -> None:
        """A ConfigError when the memory was built otherwise than ``needs_build`` says."""
        built = settings.to_dict()
        wrong = {k: v for k, v in self.needs_build.items() if built[k] != v}
        if not wrong:
            return
        need = ", ".join(f"{k}={v!r}" for k, v in wrong.items())
        has = ", ".join(f"{k}={built[k]!r}" for k in wrong)
        raise ConfigError(
            f"strategy {self.name!r} needs a memory built with {need}, and {memory_name!r} "
            f"was built with {has}: ingest into a new memory with "
            f"`cam ingest --memory NAME {build_flags(wrong)}`"
        )


def build_flags(settings: Mapping[str, Any]) -> str:
    """The ``cam ingest`` options that build a new memory with these settings."""
    flags = []
    for name, value in settings.items():
        flag = name.replace("_", "-")
        if isinstance(value, bool):
            flags.append(f"--{flag}" if value else f"--no-{flag}")
        else:
            flags.append(f"--{flag} {value}")
    return " ".join(flags)


def _vector(memory: Memory, question: str) -> Any:
    return memory.embedder.embed([question])[0]


def _flat(rank: Callable[..., Retrieval], *, with_level: bool = False, embeds: bool = True) -> Run:
    def run(memory: Memory, question: str, options: AskOptions) -> Retrieval:
        # BM25 alone needs no vector: the embedding model is not even loaded.
        vector = _vector(memory, question) if embeds else None
        if with_level:
            return rank(
                memory.store,
                question,
                vector,
                options.top_k,
                options.level,
                documents=options.documents,
            )
        return rank(memory.store, question, vector, options.top_k, documents=options.documents)

    return run


def _prune_grow(memory: Memory, question: str, options: AskOptions) -> Retrieval:
    return prune_and_grow(
        memory.store,
        question,
        _vector(memory, question),
        options.selector or RelevanceSelector(),
        top_k=options.top_k,
        max_turns=options.max_turns,
        level=options.level,
        grow=options.grow,
        documents=options.documents,
        on_progress=options.progress,
    )


def _prune_grow_level_0(memory: Memory, question: str, options: AskOptions) -> Retrieval:
    return _prune_grow(memory, question, replace(options, level=0))


def _adapter(name: str) -> Run:
    def run(memory: Memory, question: str, options: AskOptions) -> Retrieval:
        from cam_engine.adapters.registry import ASK_STRATEGIES

        run_adapter = ASK_STRATEGIES[name]
        adapter_options = _scoped_adapter_options(name, options)
        signature = inspect.signature(run_adapter)
        try:
            signature.bind(memory, question, options.chat, **adapter_options)
        except TypeError as exc:
            raise ConfigError(f"strategy {name!r}: {exc}") from None
        if options.progress is not None and "on_progress" in signature.parameters:
            adapter_options["on_progress"] = options.progress  # lookup has no loop to report
        answer: AdapterAnswer = run_adapter(memory, question, options.chat, **adapter_options)
        evidence = _scoped_sources(
            [Node(s.id, 0, s.kind, s.text, s.document) for s in answer.sources],
            options.documents,
        )
        extra = []
        if name in ("lookup", "lookup-seq"):
            read = {s.id for s in answer.sources}
            extra = within(_other_gists(memory, read), options.documents)
        return Retrieval(
            name,
            evidence,
            usage=answer.log.usage,
            ranked=evidence,
            extra_context=extra,
            answer=AnswerText(answer.answer, answer.backend, answer.log.usage),
            details={**answer.log.to_dict(), **answer.details},
        )

    return run


def _scoped_adapter_options(name: str, options: AskOptions) -> dict[str, Any]:
    """The adapter's options, with the scope as its ``doc_ids`` (the documents every
    adapter reads); a scope and ``doc_ids`` given together are one question too many."""
    adapter = dict(options.adapter)
    if options.documents is None:
        return adapter
    if "doc_ids" in adapter:
        raise ConfigError(
            f"strategy {name!r}: give the documents once, as documents (--document), "
            "not also as the doc_ids option"
        )
    adapter["doc_ids"] = list(options.documents)
    return adapter


def _scoped_sources(sources: list[Node], documents: tuple[str, ...] | None) -> list[Node]:
    """An adapter's sources within a scope. Every adapter reads only the documents it
    is given (``doc_ids``), so a source of no one document (MemAgent's memory state) is
    of the scope's, and of its one document when it has one; a source of another
    document is dropped all the same: evidence never comes from outside the scope."""
    if documents is None:
        return sources
    only = documents[0] if len(documents) == 1 else None
    return [
        replace(n, doc_id=only) if n.doc_id is None else n
        for n in sources
        if n.doc_id is None or n.doc_id in documents
    ]


def _other_gists(memory: Memory, read: set[str]) -> list[Node]:
    """ReadAgent's gist memory beyond the pages it read: the gists of the other pages in
    page order (its answering prompt holds them all, the chosen pages expanded)."""
    from cam_engine.types import PAGE

    return [
        Node(p.id, 0, "gist", str(p.props.get("gist", "")), p.doc_id)
        for p in memory.view_nodes("readagent", PAGE)
        if p.id not in read
    ]


# Every strategy by name, in the order registered: read it, change it only through
# register_strategy and unregister_strategy.
STRATEGIES: dict[str, Strategy] = {}


def register_strategy(strategy: Strategy) -> Strategy:
    """Adds a strategy under its name for ``Memory.ask``, ``cam ask``, the MCP ``ask``
    tool and ``cam eval``; a ``ConfigError`` for a name already taken or one those
    cannot carry (empty, with a space or a comma: ``--strategies`` splits on commas)."""
    name = strategy.name
    if not name or any(c.isspace() or c == "," for c in name):
        raise ConfigError(f"strategy name {name!r}: give one word such as first-chunks")
    if name in STRATEGIES:
        raise ConfigError(f"strategy {name!r} is already registered")
    if strategy.family not in FAMILIES:
        raise ConfigError(
            f"strategy {name!r}: family {strategy.family!r} is not one of {', '.join(FAMILIES)}"
        )
    STRATEGIES[name] = strategy
    return strategy


def unregister_strategy(name: str) -> None:
    """Removes a strategy (a test's, or a plugin's being unloaded)."""
    if STRATEGIES.pop(name, None) is None:
        raise ConfigError(f"strategy {name!r} is not registered")


BUILT_IN = (
    Strategy(
        "prune-grow",
        CAM,
        "hybrid localization, then selector-guided growth along neighbours, "
        "children and shared names (CAM's Prune-and-Grow)",
        _prune_grow,
    ),
    Strategy(
        "prune-grow-no-hierarchy",
        ABLATION,
        "prune-grow on the chunks alone, no summary levels: CAM's 'w/o hierarchy'",
        _prune_grow_level_0,
    ),
    Strategy(
        "prune-grow-no-flexibility",
        ABLATION,
        "prune-grow on a memory built without ego-splitting: CAM's 'w/o flexibility'",
        _prune_grow,
        needs_build={"ego_split": False},
    ),
    Strategy(
        "global",
        CAM,
        "fast localization only: top-k nodes of all levels",
        _flat(simple.global_top_k, with_level=True),
    ),
    Strategy("traverse", CAM, "top-down from the top level", _flat(simple.traverse)),
    Strategy("hybrid", BASELINE, "chunks by BM25 + cosine rank fusion", _flat(simple.fused)),
    Strategy("dense", BASELINE, "chunks by cosine", _flat(simple.dense)),
    Strategy(
        "bm25",
        BASELINE,
        "chunks by BM25 (full-text index)",
        _flat(simple.lexical, embeds=False),
    ),
    Strategy("lookup", ADAPTER, "ReadAgent-P: pick pages by gist", _adapter("lookup"), "readagent"),
    Strategy(
        "lookup-seq",
        ADAPTER,
        "ReadAgent-S: one page per turn",
        _adapter("lookup-seq"),
        "readagent",
        evaluation=EvalUse(default=False),
    ),
    Strategy(
        "memagent",
        ADAPTER,
        "MemAgent: read in order, overwrite a memory",
        _adapter("memagent"),
        writes=True,
        evaluation=EvalUse(default=False),
    ),
    Strategy(
        "research",
        ADAPTER,
        "GAM: plan, search, integrate, reflect",
        _adapter("research"),
        "gam",
        # Evaluated on its integrated result, then its source pages' raw content.
        evaluation=EvalUse(options={"output": "sources"}, answer_first=True),
    ),
)
for _strategy in BUILT_IN:
    register_strategy(_strategy)
DEFAULT = "prune-grow"


def strategy_named(name: str) -> Strategy:
    try:
        return STRATEGIES[name]
    except KeyError:
        raise ConfigError(
            f"unknown strategy {name!r}: use one of {', '.join(STRATEGIES)}"
        ) from None


def described() -> str:
    """Every strategy with its help and what it needs, for ``--help`` and the MCP
    ``ask`` tool (read when asked, so a strategy added to the registry is in it)."""
    parts = []
    for s in STRATEGIES.values():
        needs = [f"`cam ingest --view {s.view}`"] if s.view else []
        if s.needs_build:
            needs.append(f"a memory built by `cam ingest {build_flags(s.needs_build)}`")
        parts.append(f"{s.name}: {s.help}" + (f" (needs {', '.join(needs)})" if needs else ""))
    return "; ".join(parts) + "."
