"""FastChat's agreement counting (compute_agreement.py) against a brute force over random votes."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from judgelab.calibration.stats import VOTES, combine_orders, judge_rater_agreement, rater_rater_agreement


def _brute_judge(judge: dict[int, str], raters: list[tuple[int, str]], ties: bool) -> tuple[int, int]:
    agree = total = 0
    for item, vote in raters:
        if item in judge and (ties or "tie" not in (vote, judge[item])):
            total, agree = total + 1, agree + (vote == judge[item])
    return agree, total


def _brute_raters(raters: list[tuple[int, str]], ties: bool) -> tuple[int, int]:
    agree = total = 0
    for (i, (item1, v1)), (j, (item2, v2)) in itertools.product(enumerate(raters), repeat=2):
        if i < j and item1 == item2 and (ties or "tie" not in (v1, v2)):
            total, agree = total + 1, agree + (v1 == v2)
    return agree, total


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("ties", [True, False])
def test_the_counts_equal_a_brute_force(seed: int, ties: bool) -> None:
    rng = np.random.default_rng(seed)
    judge = {int(i): str(rng.choice(VOTES)) for i in rng.choice(12, size=8, replace=False)}
    raters = [(int(rng.integers(14)), str(rng.choice(VOTES))) for _ in range(int(rng.integers(0, 30)))]
    got = judge_rater_agreement(list(judge), list(judge.values()), [i for i, _ in raters], [v for _, v in raters],
                                ties=ties)
    agree, total = _brute_judge(judge, raters, ties)
    assert (got.extra["agree"], got.n) == (agree, total)
    assert math.isnan(got.estimate) if total == 0 else got.estimate == agree / total
    got = rater_rater_agreement([i for i, _ in raters], [v for _, v in raters], ties=ties)
    agree, total = _brute_raters(raters, ties)
    assert (got.extra["agree"], got.n) == (agree, total)


def test_known_values_and_degenerate_cases() -> None:
    # Judge a on q1; raters a, b, tie on q1: with ties 1 of 3 agree; without, the tie is dropped: 1 of 2.
    assert judge_rater_agreement(["q1"], ["a"], ["q1"] * 3, ["a", "b", "tie"]).extra["agree"] == 1
    without = judge_rater_agreement(["q1"], ["a"], ["q1"] * 3, ["a", "b", "tie"], ties=False)
    assert (without.extra["agree"], without.n, without.estimate) == (1, 2, 0.5)
    # Two ties agree (S1); no comparison at all gives nan.
    assert rater_rater_agreement(["q"] * 2, ["tie", "tie"]).estimate == 1.0
    assert math.isnan(rater_rater_agreement(["q"], ["a"]).estimate)
    assert [combine_orders(x, y) for x, y in [("a", "a"), ("a", "b"), ("b", "tie"), ("tie", "tie")]] == [
        "a", "tie", "tie", "tie"]


def test_bad_input_is_refused_with_the_fix() -> None:
    with pytest.raises(ValueError, match="two votes on item 'q1'"):
        judge_rater_agreement(["q1", "q1"], ["a", "b"], [], [])
    with pytest.raises(ValueError, match=r"votes \['model_a'\] are not one of"):
        rater_rater_agreement(["q1"], ["model_a"])
    with pytest.raises(ValueError, match="2 items but 1 votes"):
        rater_rater_agreement(["q1", "q2"], ["a"])
