"""Multiplicity: p-values read off intervals, and Holm / Benjamini-Hochberg adjustments."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from judgelab.calibration.stats import Estimate, adjust_p_values, p_value_from_interval


def test_holm_by_hand() -> None:
    # Sorted p: 0.01, 0.03, 0.04 (m = 3) -> 3*0.01 = 0.03, 2*0.03 = 0.06, 1*0.04 = 0.04, then
    # made monotone upwards: 0.03, 0.06, 0.06; returned in the original order.
    assert adjust_p_values([0.04, 0.01, 0.03], method="holm").tolist() == pytest.approx([0.06, 0.03, 0.06])


def test_benjamini_hochberg_by_hand() -> None:
    # Sorted p: 0.01, 0.03, 0.04 -> 0.01*3/1 = 0.03, 0.03*3/2 = 0.045, 0.04*3/3 = 0.04, then
    # made monotone from the top: 0.03, 0.04, 0.04.
    assert adjust_p_values([0.04, 0.01, 0.03], method="bh").tolist() == pytest.approx([0.04, 0.03, 0.04])


def test_adjustments_never_exceed_one_and_skip_missing_tests() -> None:
    out = adjust_p_values([0.5, math.nan, 0.9], method="holm")
    assert out[0] == 1.0 and math.isnan(out[1]) and out[2] == 1.0
    assert adjust_p_values([0.2, math.nan], method="none")[0] == 0.2
    assert adjust_p_values([], method="holm").size == 0
    with pytest.raises(ValueError, match="method"):
        adjust_p_values([0.1], method="bonferroni")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        adjust_p_values([1.5])


def test_holm_controls_the_family_wise_error_under_the_null() -> None:
    rng = np.random.default_rng(0)
    p = rng.uniform(size=(4000, 10))
    holm = np.apply_along_axis(lambda row: adjust_p_values(row, method="holm"), 1, p)
    raw_any = (p < 0.05).any(axis=1).mean()
    holm_any = (holm < 0.05).any(axis=1).mean()
    assert raw_any > 0.35  # ten tests at 5% each: some false alarm in 40% of runs
    assert holm_any <= 0.05 + 0.01


def test_p_value_from_a_symmetric_interval_is_the_normal_test() -> None:
    est = Estimate(2.0, 2.0 - 1.959963984540054, 2.0 + 1.959963984540054, 50, "", "points")
    assert p_value_from_interval(est) == pytest.approx(2 * stats.norm.sf(2.0))
    # An asymmetric interval uses its half on the side of zero.
    lopsided = Estimate(-3.0, -9.0, -1.0, 50, "", "points")
    assert p_value_from_interval(lopsided) == pytest.approx(2 * stats.norm.sf(3.0 / (2.0 / 1.959963984540054)))


@pytest.mark.parametrize(
    ("estimate", "expected"),
    [
        pytest.param(Estimate(0.0, 0.0, 0.0, 10, "", "pp"), 1.0, id="zero_by_construction"),
        pytest.param(Estimate(4.0, 4.0, 4.0, 10, "", "pp"), 0.0, id="no_sampling_error"),
        pytest.param(Estimate(math.nan, math.nan, math.nan, 0, "", "pp"), math.nan, id="nothing_measured"),
        pytest.param(Estimate(3.0, math.nan, math.nan, 1, "", "pp"), math.nan, id="no_interval"),
    ],
)
def test_p_value_degenerate_cases(estimate: Estimate, expected: float) -> None:
    got = p_value_from_interval(estimate)
    assert (math.isnan(got) and math.isnan(expected)) or got == expected
