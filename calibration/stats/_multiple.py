"""Many rows, one error rate: p-values from intervals and their adjustment for multiplicity.

A report card that tests seven biases at 95% each raises a false alarm on *some* row far more
often than 5% of the time. :func:`adjust_p_values` controls that: Holm's step-down procedure
(Holm 1979, "A simple sequentially rejective multiple test procedure", Scand. J. Statist. 6:65-70)
keeps the chance of any false FAIL at ``alpha`` whatever the dependence between rows;
Benjamini-Hochberg (1995, doi:10.1111/j.2517-6161.1995.tb02031.x) keeps the expected share of
false FAILs among the FAILs at ``alpha``, which is the same guarantee when no row has a bias.

The card's estimates come with intervals, not p-values; :func:`p_value_from_interval` reads the
two-sided p-value of "no effect" back off an interval with the normal approximation, using the
half-width on the side of zero (Altman & Bland 2011, "How to obtain the P value from a
confidence interval", BMJ 343:d2304).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy import stats

from judgelab.calibration.stats._bootstrap import check_choice
from judgelab.calibration.stats._result import Estimate

Adjustment = Literal["holm", "bh", "none"]
"""How a family of p-values is adjusted: Holm (family-wise error), Benjamini-Hochberg (false
discovery rate) or not at all."""

ADJUSTMENTS: tuple[Adjustment, ...] = ("holm", "bh", "none")

ADJUSTMENT_NAMES: dict[Adjustment, str] = {
    "holm": "Holm (family-wise error rate)",
    "bh": "Benjamini-Hochberg (false discovery rate)",
    "none": "none",
}
"""How each adjustment is named on a report."""


def p_value_from_interval(estimate: Estimate) -> float:
    """Two-sided p-value of "no effect" (0) read off an estimate's confidence interval.

    The standard error is the half-width on the side of zero divided by the normal quantile of
    the interval's level, and ``p = 2 (1 - Phi(|estimate| / se))``.

    Returns:
        The p-value. Degenerate cases: ``nan`` when the estimate or its interval is missing;
        ``1.0`` for an estimate of exactly 0; ``0.0`` for a non-zero estimate with a
        zero-width interval on the side of zero (no sampling error at all).

    Examples:
        A 95% interval that just touches 0 gives p = 0.05:

        >>> round(p_value_from_interval(Estimate(1.96, 0.0, 3.92, 100, "", "points")), 4)
        0.05
    """
    est, lo, hi = estimate.estimate, estimate.ci_low, estimate.ci_high
    if any(math.isnan(x) for x in (est, lo, hi)):
        return math.nan
    if est == 0:
        return 1.0
    half = est - lo if est > 0 else hi - est
    if half <= 0:
        return 0.0
    z_crit = float(stats.norm.ppf(0.5 + estimate.level / 2))
    z = abs(est) / (half / z_crit)
    return float(2 * stats.norm.sf(z))


def adjust_p_values(p_values: npt.ArrayLike, *, method: Adjustment = "holm") -> npt.NDArray[np.float64]:
    """Adjusted p-values for a family of tests (compare each with ``alpha``).

    Args:
        p_values: One p-value per test; ``nan`` marks a test that could not be made and is left
            out of the family (its adjusted value stays ``nan``).
        method: ``"holm"``, ``"bh"`` or ``"none"``.

    Returns:
        The adjusted p-values, same order, capped at 1. ``m`` is the number of finite p-values.

    Examples:
        >>> adjust_p_values([0.01, 0.04, 0.03], method="holm").round(3).tolist()
        [0.03, 0.06, 0.06]
        >>> adjust_p_values([0.01, 0.04, 0.03], method="bh").round(3).tolist()
        [0.03, 0.04, 0.04]

    Raises:
        ValueError: On an unknown ``method``, or p-values outside ``[0, 1]``.
    """
    func = "adjust_p_values"
    check_choice(func, "method", method, ADJUSTMENTS)
    p = np.asarray(p_values, dtype=float).reshape(-1)
    finite = ~np.isnan(p)
    if np.any((p[finite] < 0) | (p[finite] > 1)):
        raise ValueError(f"{func}: p-values must lie in [0, 1]; got {p[finite].tolist()!r}")
    out = np.full(p.shape, math.nan)
    vals = p[finite]
    m = vals.size
    if m == 0 or method == "none":
        out[finite] = vals
        return out
    order = np.argsort(vals, kind="stable")
    ranked = vals[order]
    if method == "holm":
        # Step-down: the i-th smallest is multiplied by (m - i), then made monotone upwards.
        scaled = np.maximum.accumulate(ranked * (m - np.arange(m)))
    else:
        # Step-up: the i-th smallest times m / (i + 1), then made monotone from the top.
        scaled = np.minimum.accumulate((ranked * m / np.arange(1, m + 1))[::-1])[::-1]
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(scaled, 1.0)
    out[finite] = adjusted
    return out
