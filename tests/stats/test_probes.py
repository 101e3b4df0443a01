"""Tests for probe statistics: gaps, lifts, before/after comparison, PASS/WARN/FAIL."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from judgelab.calibration.stats._binomial import difference_of_proportions
from judgelab.calibration.stats._probes import (
    THRESHOLDS,
    RunComparison,
    _score_interval,
    compare_runs,
    lift_difference,
    pairwise_lift,
    pointwise_gap,
    truncation_gap,
    verdict,
)
from judgelab.calibration.stats._result import Estimate


def padding_run(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """200 originals averaging exactly 3.42 and their padded variants averaging exactly 3.71.

    Originals: 116 threes and 84 fours (3*116 + 4*84 = 684 = 200 * 3.42). Padding lifts 58 of
    the threes to four (variants: 58 threes, 142 fours, 742 = 200 * 3.71). Gap = 58/200 = 0.29.
    """
    rng = np.random.default_rng(seed)
    base = np.r_[np.full(116, 3.0), np.full(84, 4.0)]
    padded = base.copy()
    padded[:58] = 4.0
    order = rng.permutation(200)
    return padded[order], base[order]


def gap(value: float, half: float = 0.05) -> Estimate:
    return Estimate(value, value - half, value + half, 200, "test", "judge scale points")


# ----------------------------------------------------------------------------- pointwise gaps


def test_padding_gap_is_the_seed_number() -> None:
    padded, base = padding_run()
    est = pointwise_gap(padded, base)
    assert math.isclose(est.estimate, 0.29, abs_tol=1e-12)
    assert math.isclose(est.extra["variant_mean"], 3.71, abs_tol=1e-12)
    assert math.isclose(est.extra["base_mean"], 3.42, abs_tol=1e-12)
    assert est.n == 200 and est.units == "judge scale points"
    ci = stats.ttest_rel(padded, base).confidence_interval()
    assert math.isclose(est.ci_low, ci.low) and math.isclose(est.ci_high, ci.high)


def test_truncation_gap_is_positive_when_truncated_answers_score_lower() -> None:
    base = np.r_[np.full(116, 3.0), np.full(84, 4.0)]  # mean 3.42
    truncated = base.copy()
    truncated[:88] = 2.0  # 88 threes lose a point: 3.42 - 0.44 = 2.98
    est = truncation_gap(truncated, base)
    assert math.isclose(est.estimate, 0.44, abs_tol=1e-12)
    assert math.isclose(est.extra["truncated_mean"], 2.98, abs_tol=1e-12)
    assert math.isclose(pointwise_gap(truncated, base).estimate, -0.44, abs_tol=1e-12)


def test_pointwise_gap_clusters_missing_and_degenerate() -> None:
    padded, base = padding_run(1)
    padded[0] = np.nan  # parse failure: the pair is dropped
    tasks = np.repeat(np.arange(50), 4)
    est = pointwise_gap(padded, base, clusters=tasks, n_resamples=300, rng=2)
    assert est.n == 50 and est.extra["pairs"] == 199 and est.extra["dropped"] == 1
    assert est.ci_low < est.estimate < est.ci_high
    assert est == pointwise_gap(padded, base, clusters=tasks, n_resamples=300, rng=2)
    constant = pointwise_gap([4, 4, 4], [3, 3, 3])
    assert (constant.estimate, constant.ci_low, constant.ci_high) == (1.0, 1.0, 1.0)
    assert math.isnan(pointwise_gap([np.nan], [1.0]).estimate)
    with pytest.raises(ValueError, match="pointwise_gap: variant and base must be paired"):
        pointwise_gap([1, 2], [1])


# ----------------------------------------------------------------------------- pairwise lifts


def test_score_interval_equals_scipy_wilson_for_whole_counts() -> None:
    for k, n in [(0, 10), (3, 10), (61, 100), (100, 100), (1, 1)]:
        ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.9, method="wilson")
        lo, hi = _score_interval(k, n, 0.9)
        assert math.isclose(lo, ci.low, abs_tol=1e-12) and math.isclose(hi, ci.high, abs_tol=1e-12)


def test_pairwise_lift_seed_number_and_orders() -> None:
    # the padded side wins 61 of 100 swapped comparisons, alternating slots: +11 points
    wins = np.r_[np.ones(61), -np.ones(39)]
    orders = np.tile(["AB", "BA"], 50)
    est = pairwise_lift(wins, orders=orders)
    assert math.isclose(est.estimate, 11.0)
    ci = stats.binomtest(61, 100).proportion_ci(method="wilson")
    assert math.isclose(est.ci_low, 100 * (ci.low - 0.5))
    assert est.extra["n_AB"] == 50 and est.extra["n_BA"] == 50
    assert math.isclose(
        (est.extra["win_rate_AB"] + est.extra["win_rate_BA"]) / 2, est.extra["win_rate"]
    )


def test_pairwise_lift_ties_clusters_and_validation() -> None:
    wins = [1, 1, 0, -1]
    assert math.isclose(pairwise_lift(wins).estimate, 100 * (2.5 / 4 - 0.5))  # tie = half
    assert math.isclose(pairwise_lift(wins, ties="exclude").estimate, 100 * (2 / 3 - 0.5))
    with pytest.raises(ValueError) as err:
        pairwise_lift(wins, ties="drop")  # type: ignore[arg-type]
    msg = str(err.value)
    assert "pairwise_lift" in msg and "'drop'" in msg and "'half'" in msg and "'exclude'" in msg
    with pytest.warns(UserWarning, match="unbalanced"):
        pairwise_lift(np.ones(20), orders=["AB"] * 20)
    rng = np.random.default_rng(30)
    pairs = np.repeat(np.arange(100), 2)  # both orders of a pair move together
    v = np.where(rng.random(200) < 0.6, 1.0, -1.0)
    est = pairwise_lift(v, clusters=pairs, n_resamples=300, rng=0)
    assert est.n == 100 and est.ci_low < est.estimate < est.ci_high


def test_lift_difference_matches_newcombe_and_wald() -> None:
    arm = np.r_[np.ones(70), -np.ones(30)]
    placebo = np.r_[np.ones(52), -np.ones(48)]
    est = lift_difference(arm, placebo)
    ref = difference_of_proportions((70, 100), (52, 100))
    assert math.isclose(est.estimate, 18.0)
    assert math.isclose(est.ci_low, 100 * ref.ci_low) and math.isclose(est.ci_high, 100 * ref.ci_high)
    wald = lift_difference(arm, placebo, method="wald")
    se = math.sqrt(0.7 * 0.3 / 100 + 0.52 * 0.48 / 100)
    assert math.isclose(wald.ci_high, 100 * (0.18 + 1.959963984540054 * se))
    assert est.extra["n_arm"] == 100 and est.n == 200
    with pytest.raises(ValueError, match="lift_difference: unsupported method 'exact'"):
        lift_difference(arm, placebo, method="exact")  # type: ignore[arg-type]
    assert math.isnan(lift_difference([], placebo).estimate)


# ----------------------------------------------------------------------------- before / after


def test_seed_rubric_change_made_the_judge_less_sensitive_to_completeness() -> None:
    # padding 0.29 -> 0.06 (fall 0.23), truncation 0.44 -> 0.19 (fall 0.25)
    result = compare_runs(gap(0.29), gap(0.06), gap(0.44), gap(0.19))
    assert isinstance(result, RunComparison)
    assert result.verdict == "made the judge less sensitive to completeness"
    assert math.isclose(result.padding_fall, 0.23) and math.isclose(result.truncation_fall, 0.25)
    assert "0.29" in result.explanation and "0.19" in result.explanation
    assert "not a fix" in result.explanation
    assert result.padding_fall_ci[0] > 0  # resolved with these half-widths
    json.dumps(result.to_dict())


def test_seed_rubric_change_end_to_end_from_scores() -> None:
    padded, base = padding_run()
    pad_before = pointwise_gap(padded, base)
    threes = np.flatnonzero(base == 3.0)  # 116 of them
    after = base.copy()
    after[threes[:12]] = 4.0  # after the clause padding lifts only 12: gap 0.06
    trunc_b = base.copy()
    trunc_b[threes[:88]] = 2.0  # truncation costs 88 of them a point before: 0.44
    trunc_a = base.copy()
    trunc_a[threes[:38]] = 2.0  # and 38 after: 0.19
    pad_after = pointwise_gap(after, base)
    result = compare_runs(
        pad_before, pad_after, truncation_gap(trunc_b, base), truncation_gap(trunc_a, base)
    )
    assert math.isclose(result.padding_after, 0.06) and math.isclose(result.truncation_after, 0.19)
    assert result.verdict == "made the judge less sensitive to completeness"


@pytest.mark.parametrize(
    ("pad", "trunc", "expected"),
    [
        ((0.29, 0.06), (0.44, 0.42), "fixed the length preference"),
        ((0.29, 0.06), (0.44, 0.60), "fixed the length preference"),  # truncation grew: fine
        ((0.29, 0.06), (0.44, 0.00), "made the judge less sensitive to completeness"),
        ((0.29, 0.25), (0.44, 0.40), "no change"),
        ((0.29, 0.06), (0.44, 0.33), "other/mixed"),  # part fix (0.23), part loss (0.11)
        ((0.29, 0.45), (0.44, 0.44), "other/mixed"),  # padding gap grew
        ((0.29, 0.27), (0.44, 0.10), "other/mixed"),  # only completeness fell
    ],
)
def test_compare_runs_rules(
    pad: tuple[float, float], trunc: tuple[float, float], expected: str
) -> None:
    result = compare_runs(gap(pad[0]), gap(pad[1]), gap(trunc[0]), gap(trunc[1]))
    assert result.verdict == expected


def test_compare_runs_validation() -> None:
    pp = Estimate(5.0, 4.0, 6.0, 10, "test", "percentage points")
    with pytest.raises(ValueError, match="compare_runs: the four gaps must share units"):
        compare_runs(gap(0.3), gap(0.1), gap(0.4), pp)
    with pytest.raises(TypeError, match="compare_runs: pad_after must be an Estimate"):
        compare_runs(gap(0.3), 0.1, gap(0.4), gap(0.4))  # type: ignore[arg-type]
    no_ci = Estimate(0.1, math.nan, math.nan, 1, "test", "judge scale points")
    result = compare_runs(gap(0.29), no_ci, gap(0.44), gap(0.42))
    assert math.isnan(result.padding_fall_ci[0]) and "no interval" in result.explanation


# ----------------------------------------------------------------------------- verdict


def pp(value: float, half: float) -> Estimate:
    return Estimate(value, value - half, value + half, 100, "test", "percentage points")


@pytest.mark.parametrize(
    ("est", "expected"),
    [
        (pp(28.7, 1.4), "FAIL"),  # judge-probe's position row, raw
        (pp(-0.7, 2.4), "PASS"),  # its verbosity row
        (pp(-2.6, 2.4), "PASS"),  # resolved but small: still passes
        (pp(12.0, 15.0), "WARN"),  # large but unresolved
        (pp(7.0, 2.0), "WARN"),  # moderate and resolved
        (pp(1.0, 12.0), "WARN"),  # small, but the interval reaches a failing size
        (pp(-11.0, 0.5), "FAIL"),  # sign does not matter
        (pp(10.0, 9.0), "FAIL"),  # exactly at fail, interval excludes 0
        (Estimate(1.0, math.nan, math.nan, 1, "t", "percentage points"), "WARN"),
        (Estimate(math.nan, math.nan, math.nan, 0, "t", "percentage points"), "WARN"),
    ],
)
def test_verdict_rules(est: Estimate, expected: str) -> None:
    assert verdict(est, kind="position") == expected
    assert verdict(est, warn=5, fail=10) == expected


def test_verdict_thresholds_and_validation() -> None:
    assert THRESHOLDS["pointwise_gap"].fail == 0.25
    assert verdict(gap(0.29, 0.05), kind="pointwise_gap") == "FAIL"
    assert verdict(gap(0.06, 0.05), kind="pointwise_gap") == "PASS"
    # explicit thresholds override the kind's defaults
    assert verdict(gap(0.29, 0.05), kind="pointwise_gap", fail=0.5) == "WARN"
    with pytest.raises(ValueError, match="'position' thresholds are in 'percentage points'"):
        verdict(gap(0.29), kind="position")
    with pytest.raises(ValueError) as err:
        verdict(gap(0.29), kind="length")  # type: ignore[arg-type]
    assert "verdict" in str(err.value) and "'length'" in str(err.value)
    assert "'pointwise_gap'" in str(err.value)
    with pytest.raises(ValueError, match="verdict: pass warn= and fail="):
        verdict(gap(0.29))
    with pytest.raises(ValueError, match="warn <= fail"):
        verdict(gap(0.29), warn=1, fail=0.5)
