"""Tests for Wilson proportions and the Newcombe difference of proportions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from judgelab.calibration.stats._binomial import difference_of_proportions, proportion, wilson_interval


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 500), frac=st.floats(0, 1), level=st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_wilson_equals_scipy(n: int, frac: float, level: float) -> None:
    k = round(frac * n)
    ref = stats.binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
    lo, hi = wilson_interval(k, n, level=level)
    assert math.isclose(lo, ref.low, abs_tol=1e-12)
    assert math.isclose(hi, ref.high, abs_tol=1e-12)


def test_proportion_from_array_and_count_agree() -> None:
    outcomes = np.array([1, 0, 1, 1, 0, 1, 1, 1])
    from_array = proportion(outcomes)
    from_count = proportion(6, n=8)
    from_bool = proportion(outcomes.astype(bool))
    assert from_array == from_count == from_bool
    assert from_array.estimate == 0.75
    assert from_array.units == "proportion" and from_array.n == 8


def test_proportion_degenerate_zero_trials_is_nan() -> None:
    est = proportion([])
    assert est.n == 0
    assert math.isnan(est.estimate) and math.isnan(est.ci_low) and math.isnan(est.ci_high)
    assert wilson_interval(0, 0) == (pytest.approx(math.nan, nan_ok=True),) * 2


def test_proportion_all_successes_has_interval_below_one() -> None:
    est = proportion(np.ones(20))
    assert est.estimate == 1.0 and est.ci_high == pytest.approx(1.0) and est.ci_low < 1.0


def test_newcombe_published_example() -> None:
    # Newcombe (1998), Table II example (a): 56/70 vs 48/80 -> 0.2000 (0.0524, 0.3339).
    est = difference_of_proportions((56, 70), (48, 80))
    assert est.estimate == pytest.approx(0.2)
    assert est.ci_low == pytest.approx(0.0524, abs=5e-5)
    assert est.ci_high == pytest.approx(0.3339, abs=5e-5)
    assert "Newcombe" in est.method


def test_difference_accepts_arrays() -> None:
    a = np.r_[np.ones(71), np.zeros(29)]
    b = np.r_[np.ones(68), np.zeros(32)]
    assert difference_of_proportions(a, b) == difference_of_proportions((71, 100), (68, 100))


def test_difference_degenerate_empty_group_is_nan() -> None:
    est = difference_of_proportions((3, 10), (0, 0))
    assert math.isnan(est.estimate) and math.isnan(est.ci_low)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: proportion([0, 1, 2]), "proportion: outcomes must be 0/1"),
        (lambda: proportion([0, 1, np.nan]), "drop missing"),
        (lambda: proportion(3), "without n"),
        (lambda: proportion([1, 0], n=2), "only for a count"),
        (lambda: wilson_interval(5, 3), "0 <= k <= n"),
        (lambda: proportion([1], level=95), "level"),
    ],
)
def test_bad_input_raises(call, match: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=match):
        call()
