"""Eval set loaders: hand-made files in each public format, the JSONL format, real data."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from cam_engine.errors import InputError
from cam_engine.eval.dataset import (
    EvalDocument,
    EvalQuestion,
    EvalSet,
    GoldItem,
    load_jsonl,
    write_jsonl,
)
from cam_engine.eval.loaders import (
    load,
    load_2wiki,
    load_hotpotqa,
    load_locomo,
    load_musique,
    load_qmsum,
)
from tests.conftest import shared_file

ALPHA = ["Alpha is a Canadian band.", " It was formed in 1990.", " Its drummer is Beta."]
BETA = ["Beta is a drummer.", " He joined Alpha in 1995."]
ALPHA_FILM = ["Alpha is a 2018 film.", " It was shot in Iceland."]

HOTPOT: list[dict[str, Any]] = [
    {
        "_id": "h1",
        "question": "When did the drummer of Alpha join it?",
        "answer": "1995",
        "level": "hard",
        "type": "bridge",
        "context": [["Alpha", ALPHA], ["Beta", BETA], ["Gamma", ["Gamma is a city."]]],
        "supporting_facts": [["Alpha", 2], ["Beta", 1]],
    },
    {  # shares Beta (same text) and a different paragraph titled Alpha
        "_id": "h2",
        "question": "Where was Alpha shot?",
        "answer": "Iceland",
        "level": "medium",
        "context": [["Alpha", ALPHA_FILM], ["Beta", BETA]],
        "supporting_facts": [["Alpha", 1], ["Alpha", 7], ["Nowhere", 0]],
    },
    {  # the [title, [sent_ids], [sentences], {passage}] variant of the shared hard file
        "_id": "h3",
        "question": "What is Gamma?",
        "answer": "a city",
        "level": "hard",
        "context": [["Gamma", ["Gamma is a city."]], ["Beta", BETA]],
        "supporting_facts": [["Gamma", [0], ["Gamma is a city."], {"id": "9"}]],
    },
]


def write(path: Path, rows: Any, *, jsonl: bool = False) -> Path:
    if jsonl:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    else:
        path.write_text(json.dumps(rows), encoding="utf-8")
    return path


@pytest.fixture()
def hotpot_file(tmp_path: Path) -> Path:
    return write(tmp_path / "hotpot_dev.json", HOTPOT)


# ----------------------------------------------------------------------------- HotpotQA


def test_hotpotqa_pools_paragraphs_once_and_keeps_sentences_exact(hotpot_file: Path) -> None:
    evalset = load_hotpotqa(hotpot_file)
    evalset.validate()
    assert evalset.name == "hotpotqa/hotpot_dev"
    by_id = {d.id: d for d in evalset.documents}
    assert len(evalset.documents) == 4  # Alpha, Beta, Gamma, and the other Alpha
    assert by_id["Alpha"] == EvalDocument("Alpha", "".join(ALPHA), "Alpha")
    assert by_id["Beta"].text == "Beta is a drummer. He joined Alpha in 1995."
    (film_id,) = set(by_id) - {"Alpha", "Beta", "Gamma"}
    assert film_id.startswith("Alpha #")
    assert by_id[film_id] == EvalDocument(film_id, "".join(ALPHA_FILM), "Alpha")

    h1, h2, h3 = evalset.questions
    assert h1 == EvalQuestion(
        id="h1",
        question="When did the drummer of Alpha join it?",
        answers=("1995",),
        gold=(
            GoldItem("Alpha", "Its drummer is Beta."),
            GoldItem("Beta", "He joined Alpha in 1995."),
        ),
        doc_ids=("Alpha", "Beta", "Gamma"),
    )
    assert h1.gold_doc_ids == ("Alpha", "Beta")
    # out-of-range sentence and unknown title are skipped, not fatal
    assert h2.gold == (GoldItem(film_id, "It was shot in Iceland."),)
    assert h2.doc_ids == (film_id, "Beta")
    assert h3.gold == (GoldItem("Gamma", "Gamma is a city."),)


def test_hotpotqa_is_stable_across_runs_and_formats(hotpot_file: Path, tmp_path: Path) -> None:
    jsonl = write(tmp_path / "hotpot_dev.jsonl", HOTPOT, jsonl=True)
    assert load_hotpotqa(jsonl).documents == load_hotpotqa(hotpot_file).documents
    assert load_hotpotqa(jsonl).questions == load_hotpotqa(hotpot_file).questions


def test_hotpotqa_limit_keeps_only_needed_documents(hotpot_file: Path) -> None:
    evalset = load_hotpotqa(hotpot_file, limit=1)
    assert [q.id for q in evalset.questions] == ["h1"]
    assert [d.id for d in evalset.documents] == ["Alpha", "Beta", "Gamma"]
    assert load_hotpotqa(hotpot_file, limit=0).questions == []


def test_hotpotqa_level_filter_comes_before_limit(hotpot_file: Path) -> None:
    assert [q.id for q in load_hotpotqa(hotpot_file, level="hard").questions] == ["h1", "h3"]
    hard = load(kind="hotpotqa", path=hotpot_file, limit=1, level="hard")
    assert [q.id for q in hard.questions] == ["h1"]
    hard_second = load_hotpotqa(hotpot_file, level="hard").questions[1]
    assert hard_second.id == "h3"


# ----------------------------------------------------------------------------- 2Wiki, MuSiQue


def test_2wiki_adds_the_space_its_sentences_lack(tmp_path: Path) -> None:
    rows = [
        {
            "_id": "w1",
            "type": "compositional",
            "question": "Who directed Zeta?",
            "answer": "Eta",
            "context": [
                ["Zeta", ["Zeta is a film.", "It was directed by Eta."]],
                ["Eta", ["Eta."]],
            ],
            "supporting_facts": [["Zeta", 1]],
            "evidences": [["Zeta", "director", "Eta"]],
        }
    ]
    evalset = load_2wiki(write(tmp_path / "dev.json", rows))
    evalset.validate()
    assert evalset.documents[0] == EvalDocument(
        "Zeta", "Zeta is a film. It was directed by Eta.", "Zeta"
    )
    assert evalset.questions[0].gold == (GoldItem("Zeta", "It was directed by Eta."),)


MUSIQUE = [
    {
        "id": "2hop__1",
        "question": "Where was the founder of Acme born?",
        "answer": "Paris",
        "answer_aliases": ["Paris, France", "Paris"],
        "answerable": True,
        "paragraphs": [
            {
                "idx": 0,
                "title": "Acme",
                "paragraph_text": "Acme was founded by Jo.",
                "is_supporting": True,
            },
            {
                "idx": 1,
                "title": "Jo",
                "paragraph_text": "Jo was born in Paris.",
                "is_supporting": True,
            },
            {
                "idx": 2,
                "title": "Noise",
                "paragraph_text": "Noise is loud.",
                "is_supporting": False,
            },
        ],
    },
    {
        "id": "2hop__2",
        "question": "Who founded Acme?",
        "answer": "Jo",
        "answerable": False,
        "paragraphs": [
            {
                "idx": 0,
                "title": "Acme",
                "paragraph_text": "Acme sells anvils.",
                "is_supporting": False,
            }
        ],
    },
    {
        "id": "2hop__3",
        "question": "What is Noise?",
        "answer": "loud",
        "paragraphs": [
            {"idx": 0, "title": "Noise", "paragraph_text": "Noise is loud.", "is_supporting": True},
            {
                "idx": 1,
                "title": "Acme",
                "paragraph_text": "Acme sells anvils.",
                "is_supporting": False,
            },
        ],
    },
]


def test_musique_gold_is_whole_supporting_paragraphs(tmp_path: Path) -> None:
    evalset = load(kind="musique", path=write(tmp_path / "musique_dev.jsonl", MUSIQUE, jsonl=True))
    evalset.validate()
    # the unanswerable question is skipped, so its paragraph only comes in with 2hop__3
    assert [q.id for q in evalset.questions] == ["2hop__1", "2hop__3"]
    q1, q3 = evalset.questions
    assert q1.answers == ("Paris", "Paris, France")
    assert q1.gold == (
        GoldItem("Acme", "Acme was founded by Jo."),
        GoldItem("Jo", "Jo was born in Paris."),
    )
    assert q1.doc_ids == ("Acme", "Jo", "Noise")
    assert q3.gold == (GoldItem("Noise", "Noise is loud."),)  # shared paragraph, one document
    (other_acme,) = [d for d in q3.doc_ids if d.startswith("Acme #")]
    assert [d.id for d in evalset.documents] == ["Acme", "Jo", "Noise", other_acme]
    assert len(load_musique(tmp_path / "musique_dev.jsonl", limit=1).documents) == 3


# ----------------------------------------------------------------------------- QMSum


def turn(speaker: str, content: str) -> dict[str, str]:
    return {"speaker": speaker, "content": content}


QMSUM = [
    {
        "topic_list": [{"topic": "budget", "relevant_text_span": [["0", "4"]]}],
        "general_query_list": [{"query": "Summarize the meeting.", "answer": "They met."}],
        "specific_query_list": [
            {
                "query": "What did they say about the budget?",
                "answer": "It is tight.",
                "relevant_text_span": [["1", "2"]],
            },
            {
                "query": "How did the meeting start and end?",
                "answer": "With greetings.",
                "relevant_text_span": [["0", "0"], ["3", "4"]],
            },
        ],
        "meeting_transcripts": [
            turn("Chair", "Hello everyone ."),
            turn("PhD A", "The budget is tight ."),
            turn("Grad B", "We should cut travel ."),
            turn("Grad B", "   "),
            turn("Chair", "Bye ."),
        ],
    },
    {
        "meeting_id": "ES2004a",
        "specific_query_list": [
            {"query": "Which remote?", "answer": "The round one.", "relevant_text_span": [[0, 0]]}
        ],
        "general_query_list": [],
        "meeting_transcripts": [turn("Project Manager", "Let us pick the round remote .")],
    },
]


@pytest.fixture()
def qmsum_file(tmp_path: Path) -> Path:
    return write(tmp_path / "val.jsonl", QMSUM, jsonl=True)


def test_qmsum_one_document_per_meeting_gold_turns_from_spans(qmsum_file: Path) -> None:
    evalset = load_qmsum(qmsum_file)
    evalset.validate()
    first, second = evalset.documents
    assert first == EvalDocument(
        "val-1",
        "Chair: Hello everyone .\n\nPhD A: The budget is tight .\n\n"
        "Grad B: We should cut travel .\n\nChair: Bye .",
    )
    assert second.id == "ES2004a"
    budget, ends, remote = evalset.questions
    assert budget.kind == "long"
    assert budget.id == "val-1/q0"
    assert budget.answers == ("It is tight.",)
    assert budget.doc_ids == ("val-1",)
    assert budget.gold == (
        GoldItem("val-1", "PhD A: The budget is tight ."),
        GoldItem("val-1", "Grad B: We should cut travel ."),
    )
    # two spans; the silent turn 3 is no evidence
    assert [g.text for g in ends.gold] == ["Chair: Hello everyone .", "Chair: Bye ."]
    assert remote.gold == (GoldItem("ES2004a", "Project Manager: Let us pick the round remote ."),)


def test_qmsum_limit_cuts_inside_a_meeting(qmsum_file: Path) -> None:
    one = load_qmsum(qmsum_file, limit=1)
    assert [q.id for q in one.questions] == ["val-1/q0"]
    assert [d.id for d in one.documents] == ["val-1"]
    three = load(kind="qmsum", path=qmsum_file, limit=3)
    assert [d.id for d in three.documents] == ["val-1", "ES2004a"]


def test_qmsum_general_queries_are_summary_questions(qmsum_file: Path) -> None:
    evalset = load(kind="qmsum", path=qmsum_file, queries="general")
    evalset.validate()
    assert evalset.scoring == "summary" and evalset.name == "qmsum-general/val"
    # the second meeting has no general query, so it is not loaded
    assert [d.id for d in evalset.documents] == ["val-1"]
    (summary,) = evalset.questions
    assert summary == EvalQuestion(
        id="val-1/g0",
        question="Summarize the meeting.",
        answers=("They met.",),
        gold=(),
        doc_ids=("val-1",),
        kind="long",
    )
    assert evalset.scorable(summary)
    assert load_qmsum(qmsum_file).scoring == "evidence"
    with pytest.raises(InputError, match="queries must be 'specific' or 'general', not 'all'"):
        load_qmsum(qmsum_file, queries="all")


def test_qmsum_general_without_the_list_names_the_format(tmp_path: Path) -> None:
    row = {"meeting_transcripts": [turn("A", "Hi .")], "specific_query_list": []}
    path = write(tmp_path / "old.jsonl", [row], jsonl=True)
    with pytest.raises(InputError, match=r"no 'general_query_list'.*general_query_list"):
        load_qmsum(path, queries="general")


# ----------------------------------------------------------------------------- LoCoMo


LOCOMO = [
    {
        "sample_id": "conv-1",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Ben",
            "session_2_date_time": "2:00 pm on 9 May, 2023",
            "session_2": [
                {
                    "speaker": "Ben",
                    "dia_id": "D2:1",
                    "text": "Look at my painting!",
                    "img_url": ["http://x"],
                    "blip_caption": "a painting of a sunrise",
                },
                {"speaker": "Ann", "dia_id": "D2:2", "text": "Lovely."},
            ],
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I moved to Oslo in 2022."},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "Nice, I still live in Rome."},
            ],
        },
        "qa": [
            {
                "question": "When did Ann move to Oslo?",
                "answer": 2022,
                "evidence": ["D1:1"],
                "category": 2,
            },
            {
                "question": "What did Ann paint?",
                "adversarial_answer": "a sunrise",
                "evidence": ["D2:1"],
                "category": 5,
            },
            {
                "question": "Where do Ann and Ben live?",
                "answer": "Oslo and Rome",
                "evidence": ["D1:1; D1:2"],
                "category": 1,
            },
            {
                "question": "What did Ben paint?",
                "answer": "a sunrise",
                "evidence": ["D2:1", "D9:9"],
                "category": 4,
            },
        ],
        "event_summary": {},
    }
]


def test_locomo_sessions_in_order_skips_unanswered_questions(tmp_path: Path) -> None:
    evalset = load_locomo(write(tmp_path / "locomo10.json", LOCOMO))
    evalset.validate()
    (doc,) = evalset.documents
    assert doc.id == "conv-1"
    assert doc.title == "Ann and Ben"
    assert doc.text.split("\n\n") == [
        "[Session 1 · 8 May 2023 · Monday, May 8, 2023 · 2023-05-08]\n"
        "Ann: I moved to Oslo in 2022.\n"
        "Ben: Nice, I still live in Rome.",
        "[Session 2 · 9 May 2023 · Tuesday, May 9, 2023 · 2023-05-09]\n"
        "Ben: Look at my painting! [shared image: a painting of a sunrise]\n"
        "Ann: Lovely.",
    ]
    # the memory is built from the turns, as `cam ingest` reads a transcript
    assert doc.conversation is not None
    assert [s.date for s in doc.conversation.sessions] == [
        "1:56 pm on 8 May, 2023",
        "2:00 pm on 9 May, 2023",
    ]
    oslo, both, paint = evalset.questions
    assert [q.question for q in evalset.questions] == [
        "When did Ann move to Oslo?",
        "Where do Ann and Ben live?",
        "What did Ben paint?",
    ]
    assert oslo.answers == ("2022",)
    assert oslo.kind == "short"
    assert oslo.gold == (GoldItem("conv-1", "Ann: I moved to Oslo in 2022."),)
    assert [g.text for g in both.gold] == [
        "Ann: I moved to Oslo in 2022.",
        "Ben: Nice, I still live in Rome.",
    ]
    # the unknown dia_id D9:9 is dropped
    assert [g.text for g in paint.gold] == [
        "Ben: Look at my painting! [shared image: a painting of a sunrise]"
    ]
    assert paint.doc_ids == ("conv-1",)
    assert len(load(kind="locomo", path=tmp_path / "locomo10.json", limit=2).questions) == 2


def conversation_file(sample: dict[str, Any]) -> dict[str, Any]:
    """A locomo10.json sample in the layout of locomo10.zip (snap-research/locomo, main
    since 2024-08): the conversation's keys at the top level beside qa, the per-session
    events, observations and summaries, and no sample_id."""
    row: dict[str, Any] = dict(sample["conversation"])
    row["events_session_1"] = {"Ann": ["Ann moves to Oslo."], "Ben": [], "date": "8 May, 2023"}
    row["qa"] = sample["qa"]
    row["session_1_observation"] = {"Ann": [["Ann moved to Oslo in 2022.", "D1:1"]]}
    row["session_1_summary"] = "Ann and Ben talked about where they live."
    return row


def test_locomo_reads_the_per_conversation_files_as_shipped(tmp_path: Path) -> None:
    listed = load_locomo(write(tmp_path / "locomo10.json", LOCOMO))
    second = json.loads(json.dumps(LOCOMO[0]))
    second["conversation"]["speaker_a"] = "Cat"
    second["qa"] = second["qa"][:1]
    archive = tmp_path / "locomo10.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("data/multimodal_dialog/locomo10_v2/", "")  # the folder entry it has
        z.writestr(
            "data/multimodal_dialog/locomo10_v2/30.json", json.dumps(conversation_file(second))
        )
        z.writestr(
            "data/multimodal_dialog/locomo10_v2/26.json", json.dumps(conversation_file(LOCOMO[0]))
        )
    zipped = load(kind="locomo", path=archive)
    zipped.validate()
    assert zipped.name == "locomo/locomo10"
    # the file name is the conversation id; 26 before 30; the text is that of locomo10.json
    assert [d.id for d in zipped.documents] == ["26", "30"]
    assert zipped.documents[0].text == listed.documents[0].text
    assert zipped.documents[1].title == "Cat and Ben"
    assert [q.id for q in zipped.questions] == ["26/q0", "26/q1", "26/q2", "30/q0"]
    assert [q.gold for q in zipped.questions[:3]] == [
        tuple(GoldItem("26", g.text) for g in q.gold) for q in listed.questions
    ]
    assert len(load(kind="locomo", path=archive, limit=2).questions) == 2

    folder = tmp_path / "locomo10_v2"
    folder.mkdir()
    for name, sample in (("10", LOCOMO[0]), ("9", second)):
        write(folder / f"{name}.json", conversation_file(sample))
    unpacked = load(kind="locomo", path=folder)
    assert [d.id for d in unpacked.documents] == ["9", "10"]  # numeric order
    single = load_locomo(folder / "10.json")
    assert [d.id for d in single.documents] == ["10"] and len(single.questions) == 3


def test_locomo_bad_inputs_say_what_was_expected(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match=r"no \.json files in this folder"):
        load(kind="locomo", path=empty)
    with pytest.raises(InputError, match="no such file"):
        load(kind="qmsum", path=empty)  # only LoCoMo reads a folder
    broken = tmp_path / "locomo10.zip"
    broken.write_text("not a zip")
    with pytest.raises(InputError, match="cannot read the zip archive"):
        load_locomo(broken)
    no_sessions = write(tmp_path / "26.json", {"speaker_a": "Ann", "qa": []})
    with pytest.raises(InputError, match=r"record 1 is malformed \(no session_N turns\)"):
        load_locomo(no_sessions)


# ----------------------------------------------------------------------------- JSONL format


def test_jsonl_round_trip_is_equal(hotpot_file: Path, qmsum_file: Path, tmp_path: Path) -> None:
    general = load_qmsum(qmsum_file, queries="general")
    for evalset in (load_hotpotqa(hotpot_file), load_qmsum(qmsum_file), general):
        path = tmp_path / "own.jsonl"
        write_jsonl(evalset, path)
        assert load_jsonl(path) == evalset
        assert load(kind="jsonl", path=path) == evalset
    assert load(kind="jsonl", path=path, limit=1).scoring == "summary"


def test_jsonl_limit_keeps_the_documents_of_kept_questions(
    hotpot_file: Path, tmp_path: Path
) -> None:
    path = tmp_path / "own.jsonl"
    write_jsonl(load_hotpotqa(hotpot_file), path)
    evalset = load(kind="jsonl", path=path, limit=1)
    assert [q.id for q in evalset.questions] == ["h1"]
    assert {d.id for d in evalset.documents} == {"Alpha", "Beta", "Gamma"}


def test_jsonl_without_set_line_is_named_after_the_file(tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    rows = [
        {"type": "document", "id": "d", "text": "Red apples.\n\nGreen pears."},
        {
            "type": "question",
            "id": "q",
            "question": "Pears?",
            "answers": ["green"],
            "gold": [{"doc_id": "d", "text": "Green pears."}],
            "doc_ids": ["d"],
        },
    ]
    evalset = load_jsonl(write(path, rows, jsonl=True))
    assert evalset == EvalSet(
        "mine",
        [EvalDocument("d", "Red apples.\n\nGreen pears.")],
        [EvalQuestion("q", "Pears?", ("green",), (GoldItem("d", "Green pears."),), ("d",))],
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "not valid JSON"),
        ('["a list"]', "expected a JSON object"),
        ('{"type": "chapter"}', "'type' must be document, question or set"),
        ('{"type": "set", "name": "s", "scoring": "rouge"}', "'scoring' must be 'evidence' or"),
        (
            '{"type": "question", "id": "q", "question": "?", "gold": [], "doc_ids": []}',
            "'answers'",
        ),
        ('{"type": "document", "id": 3, "text": "x"}', "'id' must be a string"),
    ],
)
def test_bad_jsonl_line_is_named(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"type": "document", "id": "d", "text": "x"}\n\n' + line + "\n")
    with pytest.raises(InputError, match=message) as info:
        load_jsonl(path)
    assert f"{path}:3:" in str(info.value)
    assert "\n" not in str(info.value)


def test_jsonl_gold_not_in_document_names_the_question(tmp_path: Path) -> None:
    rows = [
        {"type": "document", "id": "d", "text": "Red apples."},
        {
            "type": "question",
            "id": "q7",
            "question": "?",
            "answers": ["x"],
            "gold": [{"doc_id": "d", "text": "Blue plums."}],
            "doc_ids": ["d"],
        },
    ]
    with pytest.raises(InputError, match=r"question 'q7': gold text 'Blue plums\.' is not in"):
        load_jsonl(write(tmp_path / "e.jsonl", rows, jsonl=True))


def test_validate_rejects_inconsistent_sets() -> None:
    doc = EvalDocument("d", "Red apples. Green pears.")

    def question(gold: tuple[GoldItem, ...], doc_ids: tuple[str, ...] = ("d",)) -> EvalQuestion:
        return EvalQuestion("q1", "?", ("a",), gold, doc_ids)

    EvalSet("ok", [doc], [question((GoldItem("d", "Green pears."),))]).validate()
    cases = [
        (EvalSet("s", [doc], [question((GoldItem("e", "Red"),))]), "unknown document 'e'"),
        (EvalSet("s", [doc], [question((GoldItem("d", "Blue"),))]), "is not in document 'd'"),
        (EvalSet("s", [doc], [question((GoldItem("d", " "),))]), "empty gold text"),
        (EvalSet("s", [doc], [question((), ("x",))]), "unknown document 'x'"),
        (EvalSet("s", [doc, doc], []), "document 'd' appears twice"),
        (EvalSet("s", [doc], [question(()), question(())]), "question 'q1' appears twice"),
    ]
    for evalset, message in cases:
        with pytest.raises(InputError, match=message):
            evalset.validate()


# ----------------------------------------------------------------------------- dispatcher errors


def test_unknown_kind_lists_the_known_ones(hotpot_file: Path) -> None:
    with pytest.raises(
        InputError, match="unknown eval data kind 'squad'; expected one of: hotpotqa"
    ):
        load(kind="squad", path=hotpot_file)


def test_unknown_option_and_missing_file(hotpot_file: Path, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="'qmsum' takes no option 'level'"):
        load(kind="qmsum", path=hotpot_file, level="hard")
    with pytest.raises(InputError, match="no such file"):
        load(kind="hotpotqa", path=tmp_path / "missing.json")
    with pytest.raises(InputError, match="limit must be >= 0"):
        load(kind="hotpotqa", path=hotpot_file, limit=-1)


def test_file_in_another_format_says_what_was_expected(
    hotpot_file: Path, qmsum_file: Path, tmp_path: Path
) -> None:
    expected = r"val.jsonl: record 1 is malformed \(no 'context'\); expected HotpotQA"
    with pytest.raises(InputError, match=expected):
        load(kind="hotpotqa", path=qmsum_file)
    with pytest.raises(InputError, match="expected QMSum meetings"):
        load(kind="qmsum", path=hotpot_file)
    with pytest.raises(InputError, match="expected LoCoMo samples"):
        load(kind="locomo", path=hotpot_file)
    text = tmp_path / "notes.txt"
    text.write_text("just some notes\nmore notes\n")
    with pytest.raises(InputError, match=r"neither JSON nor JSONL .*expected MuSiQue"):
        load(kind="musique", path=text)
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(MUSIQUE[0]) + "\n{oops\n")
    with pytest.raises(InputError, match=r"broken.jsonl:2: invalid JSON"):
        load(kind="musique", path=broken)


# ----------------------------------------------------------------------------- real data


@pytest.mark.realdata
@pytest.mark.parametrize(
    ("kind", "relative", "options"),
    [
        ("hotpotqa", "hotpotqa/hotpotqa_dev_200.jsonl", {}),
        ("hotpotqa", "hotpotqa/hotpotqa_dev_100_hard.jsonl", {"level": "hard"}),
        ("qmsum", "qmsum/val.jsonl", {}),
    ],
)
def test_real_files_load_with_gold_for_every_question(
    kind: str, relative: str, options: dict[str, str]
) -> None:
    evalset = load(kind, shared_file(relative), limit=20, **options)
    evalset.validate()
    assert len(evalset.questions) == 20
    assert all(q.gold and q.answers and q.doc_ids for q in evalset.questions)
    needed = {d for q in evalset.questions for d in q.doc_ids}
    assert needed == {d.id for d in evalset.documents}
    if kind == "hotpotqa":
        # two supporting paragraphs per question, each among the question's own ten
        assert all(len(q.gold_doc_ids) == 2 for q in evalset.questions)
        assert all(set(q.gold_doc_ids) <= set(q.doc_ids) for q in evalset.questions)
    else:
        assert all(q.kind == "long" and len(q.doc_ids) == 1 for q in evalset.questions)
