"""Options shared by the ``cam bench`` commands: what embeds a benchmark's text, and the
data paths (books, the shared data folder) whose defaults only a source checkout has."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from cam_engine.bench import shared_data_dir
from cam_engine.cli.options import device_option

Command = Callable[..., Any]

GUTENBERG = shared_data_dir() / "haystacks" / "gutenberg"
FRANKENSTEIN = GUTENBERG / "pg84.txt"
MOBY_DICK = GUTENBERG / "pg2701.txt"


def cached_vectors_option(command: Command) -> Command:
    """--cached-vectors: a .npz of the benchmark's vectors, read and saved."""
    return click.option(
        "--cached-vectors",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Read and save chunk and summary vectors in this .npz, so a second run times "
        "the engine alone.",
    )(command)


def embedding_options(command: Command) -> Command:
    """--embed-model, --device and --cached-vectors: what embeds a benchmark's text."""
    command = cached_vectors_option(command)
    command = device_option(command)
    return click.option(
        "--embed-model",
        default=None,
        help="Embedding model (default: the memory default); openai:NAME for an API at "
        "$CAM_EMBED_BASE_URL.",
    )(command)


def existing_file_or_absent_default(ctx: click.Context, param: click.Parameter, path: Any) -> Any:
    """A path option whose default lies in ../shared/data, which only a source checkout
    has beside it: a missing default is one line naming the option, the path and how to
    replace it; a given path that is missing is click's own one line. The value keeps
    the option's type (str, or Path with ``path_type=Path``)."""
    given = click.Path() if not isinstance(param.type, click.Path) else param.type
    from_default = ctx.get_parameter_source(str(param.name)) is ParameterSource.DEFAULT
    if from_default and not Path(path).exists():
        raise absent_default(ctx, param, Path(path))
    existing = click.Path(
        exists=True, file_okay=given.file_okay, dir_okay=given.dir_okay, path_type=given.type
    )
    return existing.convert(path, param, ctx)


def absent_default(ctx: click.Context, param: click.Parameter, path: Path) -> click.BadParameter:
    """The one line for a default path that is not there: the option, the path, and
    what to pass instead."""
    given = click.Path() if not isinstance(param.type, click.Path) else param.type
    kind = "FOLDER" if given.dir_okay and not given.file_okay else "FILE"
    return click.BadParameter(
        f"no {kind.lower()} at the default {path} (it comes with a source checkout); "
        f"pass {param.opts[0]} {kind}",
        ctx=ctx,
        param=param,
    )


def default_when_read(name: str, path: Path) -> Path:
    """The default of option ``name``, for an option read only in some modes (checked
    there, not when the command starts): ``path``, or the one line if it is absent."""
    ctx = click.get_current_context()
    if not path.exists():
        param = next(p for p in ctx.command.params if p.name == name)
        raise absent_default(ctx, param, path)
    return path


def data_file_option(*decls: str, default: Path, help: str) -> Callable[[Command], Command]:
    """A file the benchmark reads, by default one under ../shared/data (a Path)."""
    return click.option(
        *decls,
        type=click.Path(dir_okay=False, path_type=Path),
        default=str(default),
        show_default=True,
        callback=existing_file_or_absent_default,
        help=help,
    )


def book_option(default: Path, help: str) -> Callable[[Command], Command]:
    """--book: the text a benchmark ingests."""
    return data_file_option("--book", default=default, help=help)


def shared_data_option(command: Command) -> Command:
    """--data: the shared data folder (books, essays, HotpotQA, QMSum)."""
    return click.option(
        "--data",
        type=click.Path(file_okay=False, path_type=Path),
        default=str(shared_data_dir()),
        show_default=True,
        callback=existing_file_or_absent_default,
        help="The shared data folder (default: ../shared/data beside the checkout).",
    )(command)


def out_option(
    help: str = "Also write the JSON line to this file.",
) -> Callable[[Command], Command]:
    return click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help=help)


def verbose_option(command: Command) -> Command:
    """-v/--verbose: log each point (as ``cam -v`` does for every command)."""

    def log_points(ctx: click.Context, param: click.Parameter, verbose: bool) -> bool:
        if verbose:
            logging.getLogger().setLevel(logging.INFO)
        return verbose

    return click.option(
        "-v",
        "--verbose",
        is_flag=True,
        expose_value=False,
        callback=log_points,
        help="Log each point.",
    )(command)
