"""Probe statistics: score gaps and win-rate lifts, before/after comparisons, PASS/WARN/FAIL.

A probe varies one property of an answer (padding, truncation, markdown, tone, citations, a
byline) and reads the judge's gap between the two conditions as the size of the effect. Every
figure here is a *difference between conditions* run through the same judge, never a level:

- pointwise formats give a gap in the judge's own scale (:func:`pointwise_gap`: padded 3.71
  minus original 3.42 is +0.29 judge scale points; :func:`truncation_gap` is signed so that a
  judge that marks truncated answers down gives a positive number);
- pairwise formats give a lift in percentage points over an even split
  (:func:`pairwise_lift`: the padded side winning 61% is +11 points), or the lift of a
  decorated arm over a placebo arm (:func:`lift_difference`).

:func:`compare_runs` reads the padding and truncation gaps before and after a rubric change
together, which is what separates "stopped rewarding empty words" from "stopped noticing
length". :func:`verdict` turns an estimate into the report card's PASS/WARN/FAIL.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from types import MappingProxyType
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from scipy import stats

from judgelab.calibration.stats._bootstrap import (
    RngLike,
    as_rng,
    check_choice,
    check_level,
    check_resamples,
    cluster_bootstrap,
    weighted_mean,
)
from judgelab.calibration.stats._position import ORDERS
from judgelab.calibration.stats._result import Estimate

FloatArray = npt.NDArray[np.float64]

TieRule = Literal["half", "exclude"]
"""How a tie enters a win rate: ``"half"`` counts it as half a win (FastChat's adjusted win
rate; the paper scores unresolved comparisons 0.5), ``"exclude"`` drops it (decisions only)."""

_TIE_RULES: tuple[TieRule, ...] = ("half", "exclude")

DifferenceMethod = Literal["newcombe", "wald"]
"""Interval for a difference of two win rates: ``"newcombe"`` (hybrid score, from two Wilson
intervals) or ``"wald"`` (normal approximation, judge-probe's choice)."""

_DIFFERENCE_METHODS: tuple[DifferenceMethod, ...] = ("newcombe", "wald")

BiasKind = Literal["position", "decoration", "slot_bias", "pointwise_gap"]
"""Which default PASS/WARN/FAIL thresholds to use (see :data:`THRESHOLDS`)."""

Verdict = Literal["PASS", "WARN", "FAIL"]

RunVerdict = Literal[
    "fixed the length preference",
    "made the judge less sensitive to completeness",
    "no change",
    "other/mixed",
]
"""What a rubric change did, read from the padding and truncation gaps before and after."""


# --------------------------------------------------------------------------------------------
# pointwise gaps


def _scores(func: str, name: str, values: npt.ArrayLike) -> FloatArray:
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{func}: {name} must be one-dimensional; got shape {arr.shape}")
    return arr


def _paired_gap(
    func: str,
    minuend: npt.ArrayLike,
    subtrahend: npt.ArrayLike,
    names: tuple[str, str],
    clusters: npt.ArrayLike | None,
    level: float,
    n_resamples: int,
    rng: RngLike,
) -> Estimate:
    check_level(func, level)
    check_resamples(func, n_resamples)
    a, b = _scores(func, names[0], minuend), _scores(func, names[1], subtrahend)
    if a.shape != b.shape:
        raise ValueError(
            f"{func}: {names[0]} and {names[1]} must be paired (one of each per answer); "
            f"got {a.size} and {b.size}"
        )
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b = a[keep], b[keep]
    d = a - b
    n = int(d.size)
    extra: dict[str, Any] = {
        f"{names[0]}_mean": float(a.mean()) if n else math.nan,
        f"{names[1]}_mean": float(b.mean()) if n else math.nan,
        "pairs": n,
        "dropped": int((~keep).sum()),
    }
    units = "judge scale points"
    if clusters is not None:
        ids = np.asarray(clusters)
        if ids.shape != keep.shape:
            raise ValueError(f"{func}: clusters must be one id per pair; got shape {ids.shape}")
        ids = ids[keep]
        method = f"mean paired difference; cluster percentile bootstrap, {n_resamples} resamples"
        if n == 0:
            return Estimate(math.nan, math.nan, math.nan, 0, method, units, level, extra)
        lo, hi, _ = cluster_bootstrap(
            weighted_mean, ids, d, n_resamples=n_resamples, level=level, rng=as_rng(rng)
        )
        return Estimate(float(d.mean()), lo, hi, int(np.unique(ids).size), method, units, level, extra)
    method = "mean paired difference; paired t interval"
    if n < 2:
        est = float(d.mean()) if n else math.nan
        return Estimate(est, math.nan, math.nan, n, method, units, level, extra)
    if np.all(d == d[0]):  # no spread: the t interval collapses to the point
        return Estimate(float(d[0]), float(d[0]), float(d[0]), n, method, units, level, extra)
    ci = stats.ttest_1samp(d, 0.0).confidence_interval(confidence_level=level)
    return Estimate(float(d.mean()), float(ci.low), float(ci.high), n, method, units, level, extra)


def pointwise_gap(
    variant_scores: npt.ArrayLike,
    base_scores: npt.ArrayLike,
    *,
    clusters: npt.ArrayLike | None = None,
    level: float = 0.95,
    n_resamples: int = 2000,
    rng: RngLike = None,
) -> Estimate:
    """Mean paired score gap, variant minus base, in the judge's own scale.

    Example: originals averaging 3.42 and their padded variants 3.71 give ``+0.29``, the price
    of empty words on that rubric with that judge.

    Args:
        variant_scores: Judge score of each variant answer (e.g. padded); ``nan`` for a
            parse failure drops the pair.
        base_scores: Judge score of the matching original answer, same order.
        clusters: Optional cluster id per pair (e.g. task); the interval then resamples whole
            clusters. ``None`` uses the paired t interval.
        level: Confidence level.
        n_resamples: Bootstrap resamples (only with ``clusters``).
        rng: Generator, int seed or ``None`` (only with ``clusters``).

    Returns:
        Estimate in ``"judge scale points"``; ``n`` is pairs (or clusters); ``extra`` holds
        ``variant_mean``, ``base_mean``, ``pairs`` and ``dropped``. Degenerate cases: no
        complete pair gives ``nan``; one pair gives a ``nan`` interval; identical differences
        give a zero-width interval.
    """
    return _paired_gap(
        "pointwise_gap", variant_scores, base_scores, ("variant", "base"),
        clusters, level, n_resamples, rng,
    )


def truncation_gap(
    truncated_scores: npt.ArrayLike,
    base_scores: npt.ArrayLike,
    *,
    clusters: npt.ArrayLike | None = None,
    level: float = 0.95,
    n_resamples: int = 2000,
    rng: RngLike = None,
) -> Estimate:
    """How much lower truncated answers score than their originals (base minus truncated).

    Signed so that a judge that notices missing load-bearing content gives a *positive*
    number: originals at 3.42 and truncated variants at 2.98 give ``+0.44``. This is the sign
    :func:`compare_runs` expects.

    Args:
        truncated_scores: Judge score of each truncated variant; ``nan`` drops the pair.
        base_scores: Judge score of the matching original, same order.
        clusters: As in :func:`pointwise_gap`.
        level: Confidence level.
        n_resamples: Bootstrap resamples (only with ``clusters``).
        rng: Generator, int seed or ``None`` (only with ``clusters``).

    Returns:
        As :func:`pointwise_gap`, with ``extra`` holding ``base_mean`` and ``truncated_mean``.
    """
    return _paired_gap(
        "truncation_gap", base_scores, truncated_scores, ("base", "truncated"),
        clusters, level, n_resamples, rng,
    )


# --------------------------------------------------------------------------------------------
# pairwise lifts


def _score_interval(successes: float, n: int, level: float) -> tuple[float, float]:
    """Wilson score interval; ``successes`` may be fractional (ties counted as halves).

    Equal to ``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")`` for integer ``k``.
    With half-wins the binomial variance ``p(1-p)/n`` overstates the true variance, so the
    interval is conservative.
    """
    if n == 0:
        return math.nan, math.nan
    p = successes / n
    z = float(stats.norm.ppf(0.5 + level / 2))
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def _outcomes(func: str, name: str, wins: npt.ArrayLike, ties: TieRule) -> tuple[FloatArray, FloatArray]:
    """Win outcomes (1, 0.5, 0) and the kept-row mask from candidate-coded verdicts."""
    check_choice(func, "ties", ties, _TIE_RULES)
    v = np.asarray(wins, dtype=float)
    if v.ndim != 1:
        raise ValueError(f"{func}: {name} must be one-dimensional; got shape {v.shape}")
    keep = ~np.isnan(v)
    if ties == "exclude":
        keep &= v != 0
    y = np.where(v > 0, 1.0, np.where(v < 0, 0.0, 0.5))
    return y[keep], keep


def pairwise_lift(
    decorated_wins: npt.ArrayLike,
    *,
    orders: npt.ArrayLike | None = None,
    ties: TieRule = "half",
    clusters: npt.ArrayLike | None = None,
    level: float = 0.95,
    n_resamples: int = 2000,
    rng: RngLike = None,
) -> Estimate:
    """Win rate of the decorated side minus 50%, in percentage points.

    The design runs each comparison in both orders with the decorated side alternating
    between slots, so slot bias cancels in the pooled rate and what is left is the
    decoration's lift. Example: the padded side winning 61% of comparisons is ``+11`` points.

    Args:
        decorated_wins: Candidate-coded verdict per judgement from the decorated side's view:
            ``+1`` it won, ``-1`` it lost, ``0`` tie (a graded scale's sign is used); ``nan``
            is a missing verdict and is dropped. Swap-averaged verdicts
            (:func:`~judgelab.calibration.stats.swap_average`) are accepted as they are.
        orders: Optional presentation order per judgement, ``"AB"`` when the decorated answer
            was in slot A. Used to report the per-order rates and to warn when the orders are
            unbalanced (then slot bias leaks into the lift).
        ties: ``"half"`` (default) or ``"exclude"``, see :data:`TieRule`.
        clusters: Optional cluster id per judgement (e.g. the pair or task, so both orders of
            one pair move together); the interval then is a cluster percentile bootstrap.
        level: Confidence level.
        n_resamples: Bootstrap resamples (only with ``clusters``).
        rng: Generator, int seed or ``None`` (only with ``clusters``).

    Returns:
        Estimate in ``"percentage points"``; without clusters the interval is the Wilson score
        interval on the win rate (ties as half-wins, which makes it conservative), shifted
        and scaled. ``extra`` holds ``win_rate``, ``wins``, ``losses``, ``ties`` and, with
        ``orders``, ``win_rate_AB``/``win_rate_BA`` and ``n_AB``/``n_BA``. Degenerate case:
        no usable judgement gives ``nan``.

    Raises:
        ValueError: On an unknown ``ties`` value or order, mismatched lengths, bad ``level``.
    """
    func = "pairwise_lift"
    check_level(func, level)
    check_resamples(func, n_resamples)
    y, keep = _outcomes(func, "decorated_wins", decorated_wins, ties)
    n = int(y.size)
    rate = float(y.mean()) if n else math.nan
    extra: dict[str, Any] = {
        "win_rate": rate,
        "wins": int((y == 1).sum()),
        "losses": int((y == 0).sum()),
        "ties": int((y == 0.5).sum()),
    }
    if orders is not None:
        o = np.asarray(orders)
        if o.shape != keep.shape:
            raise ValueError(f"{func}: orders must be one per judgement; got shape {o.shape}")
        for value in np.unique(o):
            check_choice(func, "order", str(value), ORDERS)
        o = o[keep]
        for order in ORDERS:
            sel = o == order
            extra[f"n_{order}"] = int(sel.sum())
            extra[f"win_rate_{order}"] = float(y[sel].mean()) if sel.any() else math.nan
        n_ab, n_ba = extra["n_AB"], extra["n_BA"]
        if abs(n_ab - n_ba) > max(1, 0.1 * n):
            warnings.warn(
                f"{func}: decorated side was in slot A {n_ab} times and slot B {n_ba} times; "
                "with unbalanced orders, slot bias leaks into the lift",
                stacklevel=2,
            )
    units = "percentage points"
    if clusters is not None:
        ids = np.asarray(clusters)
        if ids.shape != keep.shape:
            raise ValueError(f"{func}: clusters must be one id per judgement; got {ids.shape}")
        ids = ids[keep]
        method = (
            f"decorated-side win rate minus 50% (ties {ties}); cluster percentile bootstrap, "
            f"{n_resamples} resamples"
        )
        if n == 0:
            return Estimate(math.nan, math.nan, math.nan, 0, method, units, level, extra)
        lo, hi, _ = cluster_bootstrap(
            weighted_mean, ids, y, n_resamples=n_resamples, level=level, rng=as_rng(rng)
        )
        n_units = int(np.unique(ids).size)
    else:
        method = (
            f"decorated-side win rate minus 50% (ties {ties}); Wilson score interval"
            + (" (ties as half-wins: conservative)" if ties == "half" else "")
        )
        lo, hi = _score_interval(float(y.sum()), n, level)
        n_units = n
    return Estimate(
        100 * (rate - 0.5), 100 * (lo - 0.5), 100 * (hi - 0.5), n_units, method, units, level, extra
    )


def lift_difference(
    arm_wins: npt.ArrayLike,
    placebo_wins: npt.ArrayLike,
    *,
    ties: TieRule = "half",
    method: DifferenceMethod = "newcombe",
    level: float = 0.95,
) -> Estimate:
    """Lift of a decoration arm over a placebo (baseline) arm, in percentage points.

    judge-probe's "lift between the baseline and decorated arms": the win rate of the side
    that carries the decoration in the decorated arm, minus the win rate of the same side in
    the baseline arm where it is undecorated. Whatever the side wins on its own merits (and
    any leftover slot bias) is in both arms and cancels.

    Args:
        arm_wins: Candidate-coded verdicts (``+1``/``-1``/``0``) of the decorated side in the
            decoration arm; ``nan`` dropped.
        placebo_wins: The same side's verdicts in the baseline arm.
        ties: ``"half"`` (default) or ``"exclude"``.
        method: ``"newcombe"`` (default): Newcombe's hybrid score interval from the two
            (fractional) Wilson intervals; ``"wald"``: difference of proportions with the
            normal approximation ``sqrt(p1(1-p1)/n1 + p2(1-p2)/n2)``. Both treat the two arms
            as independent samples of independent judgements.
        level: Confidence level.

    Returns:
        Estimate in ``"percentage points"``, ``n`` the judgements in both arms, ``extra``
        with ``arm_win_rate``, ``placebo_win_rate``, ``n_arm``, ``n_placebo``. Degenerate
        case: an empty arm gives ``nan``.

    Raises:
        ValueError: On an unknown ``ties`` or ``method``, or a bad ``level``.
    """
    func = "lift_difference"
    check_choice(func, "method", method, _DIFFERENCE_METHODS)
    check_level(func, level)
    y1, _ = _outcomes(func, "arm_wins", arm_wins, ties)
    y2, _ = _outcomes(func, "placebo_wins", placebo_wins, ties)
    n1, n2 = int(y1.size), int(y2.size)
    p1 = float(y1.mean()) if n1 else math.nan
    p2 = float(y2.mean()) if n2 else math.nan
    extra = {"arm_win_rate": p1, "placebo_win_rate": p2, "n_arm": n1, "n_placebo": n2}
    label = (
        "Newcombe hybrid score interval" if method == "newcombe"
        else "normal approximation (Wald)"
    )
    desc = f"difference of win rates, decorated arm minus placebo arm (ties {ties}); {label}"
    units = "percentage points"
    if n1 == 0 or n2 == 0:
        return Estimate(math.nan, math.nan, math.nan, n1 + n2, desc, units, level, extra)
    d = p1 - p2
    if method == "newcombe":
        l1, u1 = _score_interval(float(y1.sum()), n1, level)
        l2, u2 = _score_interval(float(y2.sum()), n2, level)
        lo = d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
        hi = d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    else:
        z = float(stats.norm.ppf(0.5 + level / 2))
        se = math.sqrt(p1 * (1 - p1) / n1 + p2 * (1 - p2) / n2)
        lo, hi = d - z * se, d + z * se
    return Estimate(100 * d, 100 * lo, 100 * hi, n1 + n2, desc, units, level, extra)


# --------------------------------------------------------------------------------------------
# before/after


@dataclass(frozen=True)
class RunComparison:
    """Padding and truncation gaps before and after a change, and what the change did.

    Attributes:
        verdict: One of :data:`RunVerdict`.
        padding_before: Padding gap before the change (judge scale points).
        padding_after: Padding gap after.
        truncation_before: Truncation gap before (positive: truncated answers score lower).
        truncation_after: Truncation gap after.
        padding_fall: ``padding_before - padding_after``.
        truncation_fall: ``truncation_before - truncation_after``.
        padding_fall_ci: Approximate interval of the padding fall (normal approximation from
            the two estimates' half-widths, runs treated as independent); ``nan`` if either
            estimate lacks an interval.
        truncation_fall_ci: The same for the truncation fall.
        tolerance: The tolerance the verdict used.
        explanation: One paragraph a reader can check against the four numbers.
    """

    verdict: RunVerdict
    padding_before: float
    padding_after: float
    truncation_before: float
    truncation_after: float
    padding_fall: float
    truncation_fall: float
    padding_fall_ci: tuple[float, float]
    truncation_fall_ci: tuple[float, float]
    tolerance: float
    explanation: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``nan`` becomes ``None``; intervals become lists)."""

        def clean(x: Any) -> Any:
            if isinstance(x, float) and math.isnan(x):
                return None
            if isinstance(x, tuple):
                return [clean(v) for v in x]
            return x

        return {k: clean(v) for k, v in asdict(self).items()}


def _fall_interval(before: Estimate, after: Estimate, level: float) -> tuple[float, float]:
    def se(e: Estimate) -> float:
        z = float(stats.norm.ppf(0.5 + e.level / 2))
        return e.half_width / z

    fall = before.estimate - after.estimate
    spread = math.hypot(se(before), se(after))
    if math.isnan(spread):
        return math.nan, math.nan
    z = float(stats.norm.ppf(0.5 + level / 2))
    return fall - z * spread, fall + z * spread


def compare_runs(
    pad_before: Estimate,
    pad_after: Estimate,
    trunc_before: Estimate,
    trunc_after: Estimate,
    *,
    tolerance: float = 0.1,
    level: float = 0.95,
) -> RunComparison:
    """Read a rubric change through the padding and truncation probes together.

    A clause against unsupported length should shrink the padding gap and leave the
    truncation gap where it was. If both gaps fall by about the same amount, the judge has
    become less responsive to length in both directions: it stopped noticing missing content
    as much as it stopped paying for empty words.

    Rule, with ``fall = before - after`` for each gap and ``tol = tolerance``:

    1. **"no change"**: neither gap moved by more than ``tol`` (``|fall| <= tol`` for both).
    2. **"fixed the length preference"**: the padding gap fell (``pad_fall > tol``) and the
       truncation gap held (``trunc_fall <= tol``; a truncation gap that *grew* also counts
       as held, since a judge that penalises missing content more is not a regression).
    3. **"made the judge less sensitive to completeness"**: both fell by more than ``tol``
       and the truncation fall is about the same as the padding fall or larger
       (``trunc_fall >= pad_fall - tol``): all of the padding improvement is matched by lost
       sensitivity to completeness.
    4. **"other/mixed"**: anything else, e.g. the truncation gap fell by clearly less than the
       padding gap (part fix, part loss), or the padding gap grew.

    The seed's run: padding 0.29 → 0.06 (fall 0.23), truncation 0.44 → 0.19 (fall 0.25) is
    rule 3; had truncation gone 0.44 → 0.42 it would be rule 2. The verdict reads the point
    estimates; the explanation says whether each fall's interval excludes zero, because a
    verdict from probes too small to resolve the falls is a hypothesis, not a finding.

    Args:
        pad_before: Padding gap before the change (:func:`pointwise_gap`, padded minus base).
        pad_after: Padding gap after.
        trunc_before: Truncation gap before (:func:`truncation_gap`: positive when truncated
            answers score lower).
        trunc_after: Truncation gap after.
        tolerance: Largest movement counted as "held", and the slack in "about the same", in
            the gaps' units. The default 0.1 suits a 1-5 scale; scale it for other scales.
        level: Confidence level of the fall intervals.

    Returns:
        A :class:`RunComparison`.

    Raises:
        TypeError: If an argument is not an :class:`Estimate`.
        ValueError: If the four estimates are in different units, a point estimate is
            ``nan``, or ``tolerance`` is negative.
    """
    func = "compare_runs"
    check_level(func, level)
    named = {
        "pad_before": pad_before,
        "pad_after": pad_after,
        "trunc_before": trunc_before,
        "trunc_after": trunc_after,
    }
    for name, est in named.items():
        if not isinstance(est, Estimate):
            raise TypeError(f"{func}: {name} must be an Estimate; got {type(est).__name__}")
        if math.isnan(est.estimate):
            raise ValueError(f"{func}: {name} has no point estimate (nan)")
    units = {est.units for est in named.values()}
    if len(units) > 1:
        raise ValueError(f"{func}: the four gaps must share units; got {sorted(units)}")
    if not (isinstance(tolerance, (int, float)) and tolerance >= 0):
        raise ValueError(f"{func}: tolerance must be a number >= 0; got {tolerance!r}")

    pad_fall = pad_before.estimate - pad_after.estimate
    trunc_fall = trunc_before.estimate - trunc_after.estimate
    pad_ci = _fall_interval(pad_before, pad_after, level)
    trunc_ci = _fall_interval(trunc_before, trunc_after, level)
    tol = float(tolerance)

    result: RunVerdict
    if abs(pad_fall) <= tol and abs(trunc_fall) <= tol:
        result = "no change"
    elif pad_fall > tol and trunc_fall <= tol:
        result = "fixed the length preference"
    elif pad_fall > tol and trunc_fall > tol and trunc_fall >= pad_fall - tol:
        result = "made the judge less sensitive to completeness"
    else:
        result = "other/mixed"

    explanation = _explain(
        result, pad_before.estimate, pad_after.estimate, trunc_before.estimate,
        trunc_after.estimate, pad_ci, trunc_ci, tol, pad_before.units,
    )
    return RunComparison(
        verdict=result,
        padding_before=pad_before.estimate,
        padding_after=pad_after.estimate,
        truncation_before=trunc_before.estimate,
        truncation_after=trunc_after.estimate,
        padding_fall=pad_fall,
        truncation_fall=trunc_fall,
        padding_fall_ci=pad_ci,
        truncation_fall_ci=trunc_ci,
        tolerance=tol,
        explanation=explanation,
    )


def _explain(
    result: RunVerdict,
    pb: float,
    pa: float,
    tb: float,
    ta: float,
    pad_ci: tuple[float, float],
    trunc_ci: tuple[float, float],
    tol: float,
    units: str,
) -> str:
    def moved(before: float, after: float) -> str:
        fall = before - after
        word = "fell" if fall > 0 else "rose" if fall < 0 else "stayed"
        return f"{word} from {before:.2f} to {after:.2f} ({-fall:+.2f})"

    def resolved(name: str, ci: tuple[float, float]) -> str:
        lo, hi = ci
        if math.isnan(lo):
            return f"the {name} change has no interval"
        if lo > 0 or hi < 0:
            return f"the {name} change is resolved ({lo:+.2f} to {hi:+.2f} as a fall)"
        return f"the {name} change is not resolved ({lo:+.2f} to {hi:+.2f} as a fall)"

    head = (
        f"The padding gap {moved(pb, pa)} and the truncation gap {moved(tb, ta)} {units} "
        f"(tolerance {tol:g}). "
    )
    body = {
        "fixed the length preference": (
            "The padding gap collapsed while the truncation gap held, which is what a change "
            "that stopped rewarding empty words looks like: padding now buys less and missing "
            "content still costs as much."
        ),
        "made the judge less sensitive to completeness": (
            "Both gaps fell by about the same amount, the signature of a judge that has become "
            "less responsive to length in both directions rather than better at telling "
            "substance from padding: it made the judge less sensitive to completeness, and the "
            "smaller padding gap is not a fix."
        ),
        "no change": "Neither gap moved by more than the tolerance.",
        "other/mixed": (
            "The two gaps did not move in either of the readable patterns (padding falling "
            "with truncation holding, or both falling together); read the four numbers "
            "directly."
        ),
    }[result]
    tail = f" Treating the runs as independent, {resolved('padding', pad_ci)} and " + (
        f"{resolved('truncation', trunc_ci)}."
    )
    return head + body + tail


# --------------------------------------------------------------------------------------------
# PASS / WARN / FAIL


@dataclass(frozen=True)
class Thresholds:
    """Report-card thresholds on ``|estimate|`` for one kind of bias.

    Attributes:
        warn: Size at which a bias deserves a look.
        fail: Size at which a resolved bias fails the judge.
        units: Units the thresholds are in (must match the estimate's).
    """

    warn: float
    fail: float
    units: str


THRESHOLDS: Mapping[BiasKind, Thresholds] = MappingProxyType(
    {
        # first-shown advantage: 10 points means the first answer wins 60% of decisions
        "position": Thresholds(warn=5.0, fail=10.0, units="percentage points"),
        # decoration lifts (verbosity, markdown, tone, citations, byline)
        "decoration": Thresholds(warn=5.0, fail=10.0, units="percentage points"),
        # slot bias b on ±1 verdicts: b = 0.2 is a 10-point first-shown advantage
        "slot_bias": Thresholds(warn=0.1, fail=0.2, units="verdict points"),
        # pointwise gaps on a 1-5 scale (the seed's padding gap is 0.29)
        "pointwise_gap": Thresholds(warn=0.1, fail=0.25, units="judge scale points"),
    }
)
"""Default thresholds per :data:`BiasKind` (pointwise gaps assume a 1-5 scale)."""


def verdict(
    estimate: Estimate,
    *,
    warn: float | None = None,
    fail: float | None = None,
    kind: BiasKind | None = None,
) -> Verdict:
    """PASS, WARN or FAIL for a bias estimate, as on the report card.

    With ``m = |estimate|`` and the interval ``[lo, hi]``:

    - **FAIL** when ``m >= fail`` and the interval excludes 0: a large bias, resolved.
    - **PASS** when ``m < warn`` and the whole interval lies inside ``(-fail, fail)``: small,
      and the data rule out a failing-size bias. A tiny effect whose interval excludes 0 still
      passes: resolved is not the same as large.
    - **WARN** otherwise: a moderate bias (``warn <= m < fail``), a large one the data do not
      resolve, a small point estimate whose interval still reaches ``fail`` (too few trials to
      tell), or an estimate with no interval. A ``nan`` estimate is WARN: an unmeasured bias
      never passes.

    Args:
        estimate: The bias estimate (e.g. a first-shown advantage or a padding gap).
        warn: Warning threshold on ``|estimate|``, in the estimate's units.
        fail: Failing threshold, ``>= warn``.
        kind: Use the defaults in :data:`THRESHOLDS` for this kind (``warn``/``fail`` passed
            explicitly override them); the estimate's units must match the kind's.

    Returns:
        ``"PASS"``, ``"WARN"`` or ``"FAIL"``.

    Examples:
        judge-probe's card: a raw position advantage of +28.7 ± 1.4 points fails, a verbosity
        lift of -0.7 ± 2.4 points passes.

        >>> from judgelab.calibration.stats._result import Estimate
        >>> verdict(Estimate(28.7, 27.3, 30.1, 120, "", "percentage points"), kind="position")
        'FAIL'
        >>> verdict(Estimate(-0.7, -3.1, 1.7, 120, "", "percentage points"), kind="position")
        'PASS'

    Raises:
        ValueError: On an unknown ``kind``, a units mismatch with ``kind``, missing or
            negative thresholds, or ``warn > fail``.
    """
    func = "verdict"
    if kind is not None:
        check_choice(func, "kind", kind, tuple(THRESHOLDS))
        default = THRESHOLDS[kind]
        if estimate.units != default.units:
            raise ValueError(
                f"{func}: {kind!r} thresholds are in {default.units!r} but the estimate is in "
                f"{estimate.units!r}; pass warn= and fail= in the estimate's units"
            )
        warn = default.warn if warn is None else warn
        fail = default.fail if fail is None else fail
    if warn is None or fail is None:
        raise ValueError(f"{func}: pass warn= and fail=, or kind= (one of {tuple(THRESHOLDS)})")
    if not (0 <= warn <= fail):
        raise ValueError(f"{func}: need 0 <= warn <= fail; got warn={warn!r}, fail={fail!r}")
    m = abs(estimate.estimate)
    lo, hi = estimate.ci_low, estimate.ci_high
    if math.isnan(m):
        return "WARN"
    has_interval = not (math.isnan(lo) or math.isnan(hi))
    excludes_zero = has_interval and (lo > 0 or hi < 0)
    if m >= fail and excludes_zero:
        return "FAIL"
    if has_interval and m < warn and max(abs(lo), abs(hi)) < fail:
        return "PASS"
    return "WARN"
