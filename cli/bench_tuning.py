"""``cam bench`` commands behind the defaults and the eval sets: graph-parameters,
tuning, play-dialogue."""

from __future__ import annotations

from pathlib import Path

import click

from cam_engine.cli.bench_options import shared_data_option


@click.command(
    "graph-parameters", short_help="The similarity graph's parameters on the shared data."
)
@shared_data_option
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Also write report.md (with the full grid) and results.json into this folder.",
)
@click.option(
    "--cache",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("/tmp/cam-defaults-cache"),
    show_default=True,
    help="Embedding cache folder.",
)
def bench_graph_parameters(data: Path, out: Path | None, cache: Path) -> None:
    """Measure the similarity graph's parameters (alpha, sigma, theta, chunk size) for
    the MiniLM embedder on the shared data; print a report."""
    from cam_engine.bench import graph_parameters

    if graph_parameters.lacks_data(data):
        raise click.BadParameter(
            f"no hotpotqa and haystacks folders in {data}; pass --data FOLDER",
            param_hint="--data",
        )
    click.echo(graph_parameters.run(data, cache, out), nl=False)


def tuning_set(text: str) -> tuple[str, Path]:
    """A --set value, KIND:PATH, as (loader kind, existing file)."""
    kind, _, path = text.partition(":")
    if not kind or not path:
        raise click.BadParameter(f"{text}: not KIND:PATH", param_hint="--set")
    if not Path(path).is_file():
        raise click.BadParameter(f"no file at {path}", param_hint="--set")
    return kind, Path(path)


@click.command("tuning", short_help="How prune-and-grow's growth settings were chosen.")
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KIND:PATH",
    help="A tuning set, repeatable (default: hotpotqa:hotpotqa/hotpotqa_dev_100_hard.jsonl "
    "and qmsum:qmsum/val.jsonl under --data).",
)
@shared_data_option
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Keep the built memories and vectors here (a second run skips the build).",
)
def bench_tuning(sets: tuple[str, ...], data: Path, out: Path | None) -> None:
    """How prune-and-grow's growth settings were chosen: recall at four budgets per
    variant, a markdown table per tuning set."""
    from cam_engine.bench import tuning

    chosen = [tuning_set(text) for text in sets]
    if not chosen:
        chosen = tuning.default_sets(data)
        for _, path in chosen:
            if not path.is_file():
                raise click.BadParameter(
                    f"no tuning set at {path}; pass --data FOLDER or --set KIND:PATH",
                    param_hint="--data",
                )
    tuning.run(chosen, out)


@click.command("play-dialogue", short_help="Write a conversation eval set built from a play.")
@click.argument("play", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--out",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The JSON file to write.",
)
@click.option("--said", default=300, show_default=True, help="'What did X say' questions.")
@click.option("--reply", default=200, show_default=True, help="'How did B answer' questions.")
@click.option("--seed", default=13, show_default=True)
@click.option("--id", "sample_id", help="The sample id (default: the file's stem).")
def bench_play_dialogue(
    play: Path, out: Path, said: int, reply: int, seed: int, sample_id: str | None
) -> None:
    """Write a LoCoMo-layout conversation eval set built from a play's text (PLAY:
    plain text, Project Gutenberg's)."""
    from cam_engine.eval import play_dialogue

    click.echo(play_dialogue.run(play, out, said=said, reply=reply, seed=seed, sample_id=sample_id))
