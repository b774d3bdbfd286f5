"""The conversation eval set built from a play: scenes as sessions, speeches as turns, and
template questions whose gold turn is in the document the LoCoMo loader builds."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from cam_engine.cli.main import cli
from cam_engine.eval.loaders import load_locomo
from cam_engine.eval.play_dialogue import build_set, parse_play
from tests.conftest import shared_file

PLAY = """Contents

ACT I
CHORUS.
Scene I. A public place.

 Dramatis Personæ

CHORUS.
Two lovers, and their houses.

ACT I

SCENE I. A public place.

 Enter Romeo and Juliet.

ROMEO.
[_Aside._] Shall I hear more, or shall I speak at this?
The orchard walls are high.

JULIET.
Art thou not Romeo, and a Montague?

 [_Exit._]

SCENE II. A Street.

JULIET.
Wherefore art thou Romeo?
"""


def test_scenes_become_sessions_of_whole_speeches() -> None:
    sessions = parse_play(PLAY)
    assert [[(t.speaker, t.text) for t in s] for s in sessions] == [
        [
            ("Romeo", "Shall I hear more, or shall I speak at this? The orchard walls are high."),
            ("Juliet", "Art thou not Romeo, and a Montague?"),
        ],
        [("Juliet", "Wherefore art thou Romeo?")],
    ]
    assert [t.dia_id for s in sessions for t in s] == ["D1:1", "D1:2", "D2:1"]


def test_romeo_and_juliet_gives_deterministic_questions_the_loader_accepts(
    tmp_path: Path,
) -> None:
    play = shared_file("haystacks/gutenberg/pg1513.txt")
    out = tmp_path / "romeo.json"
    result = CliRunner().invoke(
        cli, ["bench", "play-dialogue", str(play), "--out", str(out), "--id", "romeo"]
    )
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"{out}: ")
    evalset = load_locomo(out)
    evalset.validate()  # every gold turn occurs verbatim in the conversation
    assert len(evalset.questions) == 500
    assert all(len(q.gold) == 1 for q in evalset.questions)
    sample = json.loads(out.read_text("utf-8"))[0]
    again = build_set(play.read_text("utf-8-sig"), "romeo")
    assert again == sample  # same seed, same set
    said = [q for q in sample["qa"] if q["kind"] == "said"]
    reply = [q for q in sample["qa"] if q["kind"] == "reply"]
    assert (len(said), len(reply)) == (300, 200)
    assert said[0]["question"].startswith("What did ") and " 2023?" in said[0]["question"]
    assert reply[0]["question"].startswith("How did ")
    assert sample["conversation"]["session_1_date_time"] == "9:15 am on 7 January, 2023"
