"""The eval harness end to end on small real text: scopes, strategies, budgets, outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cam_engine.cli.main import cli
from cam_engine.embed import HashingEmbedder
from cam_engine.errors import InputError
from cam_engine.eval.dataset import EvalDocument, EvalQuestion, EvalSet, GoldItem, write_jsonl
from cam_engine.eval.niah import needle_sentence, niah_set
from cam_engine.eval.runner import markdown_table, run_eval, scope_of, write_outputs
from tests.conftest import shared_file

EMBEDDER = HashingEmbedder(64)


def essays_set(folder: Path, pooled: bool) -> EvalSet:
    """Three real essays as documents; each question quotes a distinctive sentence."""
    documents = []
    questions = []
    for i, name in enumerate(["gap.txt", "founders.txt", "avg.txt"]):
        text = (folder / name).read_text()[:6000]
        documents.append(EvalDocument(name, text))
        # The essays are hard-wrapped: a sentence spans lines, verbatim in the text.
        sentence = max(text.split(". ")[5:15], key=len)
        questions.append(
            EvalQuestion(
                id=f"q{i}",
                question=" ".join(sentence.split()),
                answers=("x",),
                gold=(GoldItem(name, sentence),),
                doc_ids=tuple(d.id for d in documents) if pooled else (name,),
            )
        )
    return EvalSet("essays", documents, questions)


@pytest.fixture(scope="module")
def essays() -> Path:
    return shared_file("haystacks/paul_graham")


def test_pooled_and_per_document_scopes(essays: Path) -> None:
    assert list(scope_of(essays_set(essays, pooled=True))) == ["pool"]
    per_doc = scope_of(essays_set(essays, pooled=False))
    assert sorted(per_doc.values()) == [["avg.txt"], ["founders.txt"], ["gap.txt"]]


def test_every_strategy_is_scored_at_every_budget(essays: Path, tmp_path: Path) -> None:
    evalset = essays_set(essays, pooled=True)
    run = run_eval(
        evalset,
        embedder=EMBEDDER,
        workdir=tmp_path,
        strategies=[
            "bm25",
            "dense",
            "prune-grow",
            "prune-grow-no-hierarchy",
            "prune-grow-no-flexibility",
        ],
        budgets=[50, 4000],
    )
    assert len(run.results) == 3 * 5
    for r in run.results:
        assert set(r.scores["recall"]) == set(r.scores["mrr"]) == {50, 4000}
        assert r.tokens[50] <= 50 and r.tokens[4000] <= 4000
        assert r.scores["recall"][50] <= r.scores["recall"][4000]
    # The question is the gold sentence itself: BM25 must put it first.
    bm25 = [r for r in run.results if r.strategy == "bm25"]
    assert all(r.scores["recall"][4000] == 1.0 and r.scores["mrr"][4000] == 1.0 for r in bm25)
    rows = run.summary()
    assert {(r["strategy"], r["budget"]) for r in rows} == {
        (s, b) for s in run.strategies for b in (50, 4000)
    }
    assert all(r["recall_low"] <= r["recall"] <= r["recall_high"] for r in rows)
    paired = run.paired("prune-grow", 4000)
    assert [r["other"] for r in paired] == [
        "bm25",
        "dense",
        "prune-grow-no-hierarchy",
        "prune-grow-no-flexibility",
    ]
    for r in paired:
        assert r["low"] <= r["difference"] <= r["high"] and r["wins"] + r["losses"] <= 3
    table = markdown_table(run)
    assert table.count("\n") == 1 + len(run.strategies) and "recall@4000" in table
    written = write_outputs(run, tmp_path / "out")
    assert [p.name for p in written] == ["results.json", "table.md", "recall.png"]
    assert written[2].read_bytes()[:4] == b"\x89PNG"
    assert "prune-grow minus" in written[1].read_text()
    saved = json.loads(written[0].read_text())
    assert len(saved["paired"]) == 4 * 2
    assert len(saved["results"]) == 15 and saved["build"]["chunks"] > 0
    # Offline, no LLM reply is parsed: the counts are there, and zero.
    assert all(r["unusable_replies_per_question"] == 0.0 for r in saved["summary"])
    assert all(r["repaired_replies_per_question"] == 0.0 for r in saved["summary"])
    assert all(r["unusable_replies"] == 0 for r in saved["results"])
    assert saved["build"]["unusable_replies"] == saved["build"]["repaired_replies"] == 0


def test_niah_puts_one_needle_at_each_depth(essays: Path) -> None:
    evalset = niah_set(essays, lengths=[3000], depths=[0, 50, 100])
    evalset.validate()
    assert [q.id for q in evalset.questions] == ["niah-3000-0", "niah-3000-50", "niah-3000-100"]
    for doc, question in zip(evalset.documents, evalset.questions, strict=True):
        needle = question.gold[0].text
        assert doc.text.count("special magic number") == 1
        assert needle == needle_sentence(
            question.question.split(" for ")[1].split()[0], needle[-8:-1]
        )
        depth = int(question.id.rsplit("-", 1)[1])
        where = doc.text.index(needle) / len(doc.text)
        assert abs(where - depth / 100) < 0.15


@pytest.mark.model
def test_cam_eval_command_on_own_jsonl(essays: Path, tmp_path: Path) -> None:
    data = tmp_path / "own.jsonl"
    write_jsonl(essays_set(essays, pooled=False), data)
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli,
        ["eval", "jsonl", str(data), "--strategies", "bm25,dense,global", "--budgets",
         "200,1000", "--out", str(out), "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["questions"] == 3 and summary["build"]["memories"] == 3
    assert {r["strategy"] for r in summary["summary"]} == {"bm25", "dense", "global"}
    assert (out / "table.md").exists() and (out / "recall.png").exists()


def test_cam_eval_refuses_an_unknown_strategy(essays: Path, tmp_path: Path) -> None:
    data = tmp_path / "own.jsonl"
    write_jsonl(essays_set(essays, pooled=True), data)
    result = CliRunner().invoke(cli, ["eval", "jsonl", str(data), "--strategies", "magic"])
    assert result.exit_code != 0
    assert "unknown strategy 'magic'" in result.output


def test_adapter_strategies_run_on_per_document_memories(essays: Path, tmp_path: Path) -> None:
    evalset = essays_set(essays, pooled=False)
    run = run_eval(
        evalset,
        embedder=EMBEDDER,
        workdir=tmp_path,
        strategies=["lookup", "research"],
        budgets=[300, 4000],
    )
    assert {r.strategy for r in run.results} == {"lookup", "research"}
    assert all(r.llm_calls == 0 and r.activated > 0 for r in run.results)
    # GAM's keyword search finds the page holding the quoted sentence.
    assert all(r.scores["recall"][4000] == 1.0 for r in run.results if r.strategy == "research")


def test_an_answering_llm_is_scored_on_each_strategys_context(essays: Path, tmp_path: Path) -> None:
    from dataclasses import replace

    from cam_engine.eval.runner import answer_table
    from cam_engine.llm.openai_compat import OpenAICompatibleChat
    from cam_engine.llm.tasks import ChatAnswerer
    from tests.support.chat_server import ChatServer

    evalset = essays_set(essays, pooled=True)
    evalset.questions[0] = replace(evalset.questions[0], answers=("Leonardo",))
    evalset.questions[1] = replace(
        evalset.questions[1], answers=("the founders work hard",), kind="long"
    )

    def reply(body: dict) -> str:  # the "LLM": right for q0, partly right for q1
        prompt = str(body["messages"][-1]["content"])
        return "Leonardo" if evalset.questions[0].question in prompt else "founders work"

    with ChatServer(default=reply) as server:
        chat = OpenAICompatibleChat(server.base_url, "judge", max_retries=0)
        run = run_eval(
            evalset,
            embedder=EMBEDDER,
            workdir=tmp_path,
            strategies=["bm25", "global"],
            budgets=[200, 1000],
            answerer=ChatAnswerer(chat),
            answer_budget=200,
        )
        assert len(server.requests) == 3 * 2
        # The answer prompt holds the strategy's context cut to the answer budget.
        assert all(
            len(str(r.body["messages"][-1]["content"]).split()) < 400 for r in server.requests
        )
    by_question = {(r.question_id, r.strategy): r for r in run.results}
    first = by_question[("q0", "bm25")]
    assert first.answer == "Leonardo" and first.answer_scores["em"] == 1.0
    assert by_question[("q2", "bm25")].answer_scores == {"em": 0.0, "f1": 0.0, "sub_em": 0.0}
    long = by_question[("q1", "global")].answer_scores
    assert set(long) == {"rouge1", "rouge2", "rouge_l"} and 0 < long["rouge1"] < 1
    assert all(r.answer_llm_calls == 1 and r.answer_tokens > 0 for r in run.results)
    summary = run.answer_summary()
    assert [row["strategy"] for row in summary] == ["bm25", "global"]
    assert "em" in answer_table(run) and "rouge_l" in answer_table(run)


def test_cam_eval_options_are_checked_before_any_work(essays: Path, tmp_path: Path) -> None:
    data = tmp_path / "own.jsonl"
    write_jsonl(essays_set(essays, pooled=True), data)
    env = {"CAM_EMBED_MODEL": "hashing:64"}
    base = ["eval", "jsonl", str(data), "--strategies", "bm25,global"]
    zero = CliRunner().invoke(cli, [*base, "--limit", "0"], env=env)
    assert zero.exit_code == 2 and "--limit" in zero.output
    budget = CliRunner().invoke(cli, [*base, "--budgets", "0,500"], env=env)
    assert budget.exit_code == 2 and "--budgets must be integers >= 1" in budget.output
    afile = tmp_path / "afile"
    afile.write_text("")
    out = CliRunner().invoke(cli, [*base, "--out", str(afile)], env=env)
    assert out.exit_code == 1 and "cannot make it a folder" in out.output
    below = CliRunner().invoke(cli, [*base, "--out", str(afile / "sub")], env=env)
    assert below.exit_code == 1 and "cannot make it a folder" in below.output
    assert "Traceback" not in out.output
    # budgets are sorted and deduplicated; CAM_EMBED_MODEL picks the model, as for ingest
    ran = CliRunner().invoke(cli, [*base, "--budgets", "1000,,200,1000", "--json"], env=env)
    assert ran.exit_code == 0, ran.output
    summary = json.loads(ran.stdout)
    assert summary["budgets"] == [200, 1000]
    assert summary["build"]["settings"]["embed_model"] == "hashing:64"


def test_niah_refuses_essays_too_short_for_a_haystack(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("Just a short essay.")
    with pytest.raises(InputError, match="too short to build a haystack"):
        niah_set(tmp_path, lengths=[1000], depths=[0])


def test_cam_eval_on_a_single_document_of_its_own(essays: Path, tmp_path: Path) -> None:
    # Every question has its own document and only one is used: one per-document memory.
    data = tmp_path / "own.jsonl"
    write_jsonl(essays_set(essays, pooled=False), data)
    args = ["eval", "jsonl", str(data), "--strategies", "bm25,global", "--limit", "1"]
    ran = CliRunner().invoke(cli, [*args, "--json"], env={"CAM_EMBED_MODEL": "hashing:64"})
    assert ran.exit_code == 0, ran.output
    assert json.loads(ran.stdout)["questions"] == 1


def test_a_question_without_gold_is_excluded_and_counted(essays: Path, tmp_path: Path) -> None:
    from dataclasses import replace

    from cam_engine.eval.runner import headline

    evalset = essays_set(essays, pooled=False)
    evalset.questions[1] = replace(evalset.questions[1], gold=())
    run = run_eval(
        evalset, embedder=EMBEDDER, workdir=tmp_path, strategies=["bm25"], budgets=[4000]
    )
    assert run.questions == 2 and run.excluded == ["q1"]
    assert {r.question_id for r in run.results} == {"q0", "q2"}
    # scored 0 it would have pulled the mean down to 2/3
    assert run.summary()[0]["recall"] == 1.0
    assert run.build["memories"] == 2  # its document is not even built
    assert run.to_dict()["excluded"] == {"count": 1, "reason": "no gold evidence", "ids": ["q1"]}
    assert "2 questions (1 excluded: no gold evidence)" in headline(run)
    evalset.questions = [replace(q, gold=()) for q in evalset.questions]
    with pytest.raises(InputError, match="none of the 3 questions can be scored"):
        run_eval(evalset, embedder=EMBEDDER, workdir=tmp_path, strategies=["bm25"])


def test_summary_questions_are_scored_by_rouge_recall(essays: Path, tmp_path: Path) -> None:
    from dataclasses import replace

    from cam_engine.eval.runner import paired_tables

    evalset = essays_set(essays, pooled=False)
    # the reference summary is the quoted sentence; the third question has none
    evalset.questions = [
        replace(q, gold=(), answers=(q.question,) if i < 2 else (" ",), kind="long")
        for i, q in enumerate(evalset.questions)
    ]
    evalset.scoring = "summary"
    run = run_eval(
        evalset,
        embedder=EMBEDDER,
        workdir=tmp_path,
        strategies=["bm25", "dense", "prune-grow"],
        budgets=[20, 4000],
    )
    assert run.scoring == "summary" and run.excluded == ["q2"]
    assert run.excluded_reason == "no reference answer"
    for r in run.results:
        assert set(r.scores) == {"rouge_l_recall", "rouge2_recall"}
        for key in r.scores:  # a bigger budget extends the context: recall cannot drop
            assert 0.0 <= r.scores[key][20] <= r.scores[key][4000] <= 1.0
    # BM25 puts the chunk holding the whole reference first
    bm25 = [r for r in run.results if r.strategy == "bm25"]
    assert all(r.scores["rouge_l_recall"][4000] == 1.0 for r in bm25)
    assert all(r.scores["rouge_l_recall"][20] < 1.0 for r in bm25)  # 20 tokens: a part
    table = markdown_table(run)
    assert "ROUGE-L recall@20" in table and "ROUGE-2 recall@4000" in table
    assert "MRR" not in table and "| recall@" not in table
    assert [m.key for m, _ in paired_tables(run)] == ["rouge_l_recall", "rouge2_recall"]
    written = write_outputs(run, tmp_path / "out")
    saved = json.loads(written[0].read_text())
    assert saved["scoring"] == "summary"
    assert saved["metrics"] == ["rouge_l_recall", "rouge2_recall"]
    assert {r["metric"] for r in saved["paired"]} == {"rouge_l_recall", "rouge2_recall"}
    assert len(saved["paired"]) == 2 * 2 * 2  # metrics x budgets x other strategies
    assert {"rouge_l_recall", "rouge2_recall"} <= set(saved["summary"][0])
    assert "rouge_l_recall" in saved["results"][0] and "recall" not in saved["results"][0]
    assert "ROUGE-2 recall, question by question" in written[1].read_text()
    assert written[2].read_bytes()[:4] == b"\x89PNG"


def test_progress_lines_every_interval_without_a_terminal() -> None:
    from cam_engine.cli.eval import _Ticker

    now = [100.0]
    lines: list[str] = []
    ticker = _Ticker(lines.append, interval=30, clock=lambda: now[0])
    for at, stage, done in [
        (10, "build", 1),
        (31, "build", 2),
        (45, "build", 3),
        (61, "questions", 4),
    ]:
        now[0] = 100.0 + at
        ticker(stage, done, 9)
    assert lines == [
        "cam eval: building memories, 2/9 documents done, 31 s elapsed",
        "cam eval: asking, 4/9 questions done, 61 s elapsed",
    ]


@pytest.mark.realdata
def test_cam_eval_qmsum_general_queries_end_to_end(tmp_path: Path) -> None:
    qmsum = shared_file("qmsum/val.jsonl")
    env = {"CAM_EMBED_MODEL": "hashing:64"}
    args = ["eval", "qmsum", str(qmsum), "--queries", "general", "--limit", "2"]
    ran = CliRunner().invoke(
        cli, [*args, "--strategies", "bm25,dense,prune-grow", "--budgets", "500,2000",
              "--out", str(tmp_path)], env=env,
    )  # fmt: skip
    assert ran.exit_code == 0, ran.output
    assert "qmsum-general/val: 2 summary questions, scored by ROUGE recall" in ran.stdout
    assert "ROUGE-L recall@500" in ran.stdout
    assert "question by question (ROUGE-2 recall difference, wins/losses)" in ran.stdout
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["questions"] == 2 and saved["excluded"]["count"] == 0
    assert saved["build"]["seconds"] > 0
    rows = {(r["strategy"], r["budget"]): r for r in saved["summary"]}
    # about 2,000 tokens of a meeting hold more of its summary than 500 do
    assert all(rows[(s, 2000)]["rouge_l_recall"] > rows[(s, 500)]["rouge_l_recall"] > 0 for s in
               ("bm25", "dense"))  # fmt: skip
    wrong = CliRunner().invoke(cli, ["eval", "hotpotqa", str(qmsum), "--queries", "general"])
    assert wrong.exit_code == 2 and "--queries" in wrong.output and "only for qmsum" in wrong.output
