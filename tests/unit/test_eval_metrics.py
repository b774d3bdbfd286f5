"""Eval metrics: values computed by hand, and the behaviours the harness relies on."""

from __future__ import annotations

import numpy as np
import pytest

from cam_engine.eval.metrics import (
    DEFAULT_RULE,
    Rouge,
    Rule,
    approx_tokens,
    bootstrap_ci,
    evidence_recall,
    exact_match,
    lcs_length,
    normalize_answer,
    reciprocal_rank,
    rouge,
    rouge_recall,
    sub_em,
    token_f1,
    truncate_to_budget,
)

# ----------------------------------------------------------------------------- short answers


def test_squad_normalization() -> None:
    assert normalize_answer("An apple, the pear & a plum.") == "apple pear plum"
    assert normalize_answer("  The  Cat\tsat! ") == "cat sat"
    assert normalize_answer("Theatre") == "theatre"  # articles only as whole words


def test_exact_match_is_the_best_over_golds() -> None:
    assert exact_match("The Cat, sat!", ["dog", "the cat sat"]) == 1.0
    assert exact_match("the cat sat down", ["the cat sat"]) == 0.0
    assert exact_match("anything", []) == 0.0


def test_token_f1_hand_computed() -> None:
    # "cat sat" vs "cat sat down": P = 2/2, R = 2/3, F1 = 2 * 1 * 2/3 / (5/3) = 0.8
    assert token_f1("the cat sat", ["a cat sat down"]) == pytest.approx(0.8)
    assert token_f1("the cat sat", ["dog", "a cat sat down"]) == pytest.approx(0.8)
    # repeated tokens count once per gold occurrence: P = 1/3, R = 1, F1 = 0.5
    assert token_f1("cat cat cat", ["cat"]) == pytest.approx(0.5)
    # "Canadian rock band Rush" vs "Rush": P = 1/4, R = 1, F1 = 0.4
    assert token_f1("Canadian rock band Rush", ["Rush"]) == pytest.approx(0.4)
    assert token_f1("dog", ["cat"]) == 0.0


def test_token_f1_empty_sides() -> None:
    assert token_f1("", [""]) == 1.0
    assert token_f1("the", ["cat"]) == 0.0  # "the" normalizes to nothing
    assert token_f1("cat", ["a"]) == 0.0
    assert token_f1("cat", []) == 0.0


def test_sub_em_either_contains_the_other() -> None:
    assert sub_em("It was Rush, a Canadian band.", ["Toto", "rush"]) == 1.0
    assert sub_em("Rush", ["Rush band"]) == 1.0  # the prediction inside the gold counts too
    assert sub_em("Toto", ["Rush band"]) == 0.0
    assert sub_em("", ["Rush"]) == 0.0
    assert sub_em("in 1990", ["1"]) == 1.0  # plain substring, as documented
    assert sub_em("anything", ["the"]) == 0.0  # an empty normalized gold never matches


# ----------------------------------------------------------------------------- ROUGE


def test_rouge_hand_computed() -> None:
    # 6 and 6 tokens; unigrams in common 5; bigrams: the cat, on the, the mat = 3 of 5;
    # LCS "the cat on the mat" = 5.
    scores = rouge("the cat sat on the mat", ["the cat was on the mat"])
    assert scores.rouge1 == pytest.approx(5 / 6)
    assert scores.rouge2 == pytest.approx(3 / 5)
    assert scores.rouge_l == pytest.approx(5 / 6)
    # unigrams all shared (F1 1); bigrams "a b" only: P = R = 1/2; LCS "a b": 2/3
    scores = rouge("c a b", ["a b c"])
    assert (scores.rouge1, scores.rouge2) == pytest.approx((1.0, 0.5))
    assert scores.rouge_l == pytest.approx(2 / 3)
    # "a b c d" vs "a c e": 2 shared unigrams, P = 2/4, R = 2/3, F1 = 4/7; no bigram
    assert rouge("a b c d", ["a c e"]) == Rouge(pytest.approx(4 / 7), 0.0, pytest.approx(4 / 7))


def test_rouge_best_reference_stemming_and_empty() -> None:
    best = rouge("the cat sat", ["dogs bark loudly", "the cat sat"])
    assert best == Rouge(1.0, 1.0, 1.0)
    assert rouge("cats running", ["cat runs"]).rouge1 == 0.0
    assert rouge("cats running", ["cat runs"], stem=True).rouge1 == pytest.approx(1.0)
    assert rouge("anything", []) == Rouge(0.0, 0.0, 0.0)
    assert rouge("", ["the cat"]) == Rouge(0.0, 0.0, 0.0)


def test_rouge_recall_hand_computed() -> None:
    # context tokens: the cat sat on a mat; the bigram cat-sat spans the two passages
    found = rouge_recall(["the cat", "sat on a mat"], ["The cat sat on the mat."], stem=False)
    assert found.rouge_l == pytest.approx(5 / 6)  # the cat sat on mat
    assert found.rouge2 == pytest.approx(3 / 5)  # the-cat, cat-sat, sat-on of 5 bigrams
    # recall ignores what else the context holds; the best reference counts
    padded = rouge_recall(["noise " * 50, "the cat sat on the mat"], ["x y", "the cat sat"])
    assert padded.rouge_l == 1.0 and padded.rouge2 == 1.0


def test_rouge_recall_edge_cases() -> None:
    assert (
        rouge_recall([], ["a summary"])
        == rouge_recall(["text"], [])
        == (rouge_recall(["text"], ["   "]))
    )
    assert rouge_recall([], ["a summary"]).rouge_l == 0.0
    one_word = rouge_recall(["cats"], ["cat"], stem=True)  # no bigram in the reference
    assert one_word.rouge_l == 1.0 and one_word.rouge2 == 0.0
    assert rouge_recall(["discussed"], ["discussion"], stem=True).rouge_l == 1.0
    assert rouge_recall(["discussed"], ["discussion"], stem=False).rouge_l == 0.0


@pytest.mark.parametrize("stem", [False, True])
def test_rouge_recall_equals_rouge_score_on_the_joined_context(stem: bool) -> None:
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rouge2", "rougeL"], use_stemmer=stem)
    rng = np.random.default_rng(7)
    vocabulary = [
        "the",
        "remote",
        "control",
        "design",
        "meeting",
        "decided",
        "budget",
        "buttons",
        "was",
        "were",
        "a",
    ]
    for _ in range(30):
        reference = " ".join(rng.choice(vocabulary, size=rng.integers(1, 40)))
        passages = [
            " ".join(rng.choice(vocabulary, size=rng.integers(0, 30)))
            for _ in range(rng.integers(1, 6))
        ]
        mine = rouge_recall(passages, [reference], stem=stem)
        theirs = scorer.score(reference, "\n".join(passages))
        assert mine.rouge_l == pytest.approx(theirs["rougeL"].recall)
        assert mine.rouge2 == pytest.approx(theirs["rouge2"].recall)


def test_lcs_length() -> None:
    assert lcs_length(list("ABCBDAB"), list("BDCABA")) == 4  # CLRS's example
    assert lcs_length(list("abc"), list("xyz")) == 0
    assert lcs_length([], list("abc")) == lcs_length(list("abc"), []) == 0
    assert lcs_length(list("aaa"), list("aaaaa")) == 3


# ----------------------------------------------------------------------------- evidence

GOLD = (
    "The committee approved the new budget for the spring term after a long debate "
    "about travel costs and the price of printing."
)  # 22 words
_TERM = GOLD.index(" term ")
FIRST, SECOND = GOLD[:_TERM], GOLD[_TERM:]  # cut before " term"
HEAD, TAIL = GOLD[: _TERM + 3], GOLD[_TERM + 3 :]  # cut inside the word: "te" | "rm"
OTHER = "Unrelated text about gardening, tomatoes and the weather in early June."


def recall(passages: list[str], gold: str, rule: Rule = DEFAULT_RULE) -> float:
    """Evidence recall of one gold item: 1.0 when it is contained, else 0.0."""
    return evidence_recall(passages, [gold], rule=rule)


def test_substring_rule_normalizes_whitespace_only() -> None:
    assert recall(["x " + GOLD.replace(" ", "\n  ", 3) + " y"], GOLD, "substring") == 1.0
    assert recall([FIRST, SECOND], GOLD, "substring") == 1.0  # halves rejoin with "\n"
    assert recall([SECOND, FIRST], GOLD, "substring") == 0.0
    assert recall([GOLD.lower()], GOLD, "substring") == 0.0


def test_gold_split_across_two_passages_in_any_order() -> None:
    passages = [SECOND, OTHER, FIRST]
    assert recall(passages, GOLD) == 1.0
    assert recall(passages, GOLD, "tokens") == 1.0
    assert recall(passages, GOLD, "substring") == 0.0
    # a cut inside a word loses that word ("te", "rm"): 21 of 22 words still in runs
    passages = [TAIL, OTHER, HEAD]
    assert recall(passages, GOLD) == 1.0
    assert recall(passages, GOLD, "tokens") == 1.0
    assert recall(passages, GOLD, "substring") == 0.0


def test_budget_cut_tail_still_counts_under_the_default_rule() -> None:
    cut = truncate_to_budget([OTHER, GOLD], 11 + 20, lambda text: len(text.split()))
    assert cut[-1] == GOLD.rsplit(" ", 2)[0]  # 20 of 22 words: 91% of the gold
    assert recall(cut, GOLD) == 1.0
    assert recall(cut, GOLD, "substring") == 0.0
    shorter = truncate_to_budget([OTHER, GOLD], 11 + 19, lambda text: len(text.split()))
    assert recall(shorter, GOLD) == 0.0  # 19 of 22 = 86%


def test_stray_words_fool_the_tokens_rule_but_not_runs() -> None:
    words = GOLD.rstrip(".").split()
    shuffled = " ".join(words[1::2] + words[0::2])  # every word, runs of 3 broken
    assert recall([shuffled], GOLD, "tokens") == 1.0
    assert recall([shuffled], GOLD) == 0.0


def test_short_gold_must_occur_whole() -> None:
    turn = "PhD A: Yeah ."
    assert recall(["Grad B: so .\n\nPhD A: yeah, I agree ."], turn) == 1.0  # case, punctuation
    assert recall(["PhD A: I said yeah ."], turn) == 0.0


def test_evidence_recall_shares_and_edge_cases() -> None:
    golds = ["Alpha was founded in 1990.", "Beta joined in 1995.", "Gamma left in 2001."]
    context = ["Intro. Alpha was founded in 1990. More.", "Then Beta joined in 1995."]
    assert evidence_recall(context, golds) == pytest.approx(2 / 3)
    assert evidence_recall(context, golds, rule="substring") == pytest.approx(2 / 3)
    assert evidence_recall(context, []) == 0.0
    assert evidence_recall([], golds) == 0.0
    with pytest.raises(ValueError, match="unknown containment rule"):
        evidence_recall(context, golds, rule="fuzzy")  # type: ignore[arg-type]


def test_reciprocal_rank() -> None:
    golds = ["Beta joined in 1995.", "Gamma left in 2001."]
    assert reciprocal_rank([OTHER, "x", "So Gamma left in 2001, sadly."], golds) == pytest.approx(
        1 / 3
    )
    assert reciprocal_rank(["Beta joined in 1995.", OTHER], golds) == 1.0
    assert reciprocal_rank([OTHER, OTHER], golds) == 0.0
    assert reciprocal_rank([], golds) == 0.0
    # a gold item split over two passages is in neither alone
    assert reciprocal_rank([SECOND, FIRST], [GOLD]) == 0.0


# ----------------------------------------------------------------------------- budget


def test_approx_tokens() -> None:
    assert approx_tokens("") == 0
    assert approx_tokens("one two three") == 4
    assert approx_tokens("a b c d e f") == 8
    assert approx_tokens("one\n\ntwo") == 3  # ceil(2 * 4/3)


def test_truncate_to_budget_fills_it_exactly() -> None:
    def words(text: str) -> int:
        return len(text.split())

    passages = ["one two three", "four five  six\nseven eight nine", "ten"]
    kept = truncate_to_budget(passages, 7, words)
    assert kept == ["one two three", "four five  six\nseven"]  # spacing kept
    assert sum(words(p) for p in kept) == 7
    assert truncate_to_budget(passages, 100, words) == passages
    assert truncate_to_budget(passages, 3, words) == ["one two three"]
    assert truncate_to_budget(passages, 0, words) == []


def test_truncate_to_budget_default_counter() -> None:
    # costs 4, then 8 for six words; 5 left fits three words (4 tokens), not four (6)
    kept = truncate_to_budget(["one two three", "four five six seven eight nine"], 9)
    assert kept == ["one two three", "four five six"]
    assert sum(approx_tokens(p) for p in kept) <= 9
    # a passage whose first word alone is over the room left is dropped, and so are the rest
    assert truncate_to_budget(["one two three", "four", "five"], 5) == ["one two three"]


# ----------------------------------------------------------------------------- bootstrap


def test_bootstrap_is_deterministic_for_a_seed() -> None:
    values = [float(v) for v in np.random.default_rng(1).random(200)]
    assert bootstrap_ci(values, seed=3) == bootstrap_ci(values, seed=3)
    assert bootstrap_ci(values, seed=3) != bootstrap_ci(values, seed=4)


def test_bootstrap_interval_contains_the_mean_and_narrows_with_data() -> None:
    small = [0.0, 1.0] * 50
    mean, low, high = bootstrap_ci(small)
    assert mean == 0.5
    # binomial standard error 0.05, so about 0.5 +- 0.098
    assert 0.38 < low < 0.45 < 0.55 < high < 0.62
    rng = np.random.default_rng(7)
    large = [float(v) for v in rng.integers(0, 2, 5000)]
    big_mean, big_low, big_high = bootstrap_ci(large)
    assert big_low < big_mean < big_high
    assert big_high - big_low < (high - low) / 5  # ~sqrt(50) narrower
    _, low50, high50 = bootstrap_ci(small, level=0.5)
    assert low < low50 < high50 < high


def test_bootstrap_edge_cases() -> None:
    assert bootstrap_ci([0.7] * 10) == pytest.approx((0.7, 0.7, 0.7))
    assert bootstrap_ci([0.25]) == (0.25, 0.25, 0.25)
    with pytest.raises(ValueError, match="at least one value"):
        bootstrap_ci([])
    with pytest.raises(ValueError, match="level"):
        bootstrap_ci([1.0, 0.0], level=1.0)
    with pytest.raises(ValueError, match="resamples"):
        bootstrap_ci([1.0, 0.0], resamples=0)
    # numpy input, and more values than one draw of resamples holds (blocks of 400)
    values = np.random.default_rng(2).random(2500)
    mean, low, high = bootstrap_ci(values, resamples=1001)
    assert mean == pytest.approx(values.mean())
    assert low < mean < high
