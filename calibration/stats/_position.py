"""Position (slot) bias in pairwise judgements, its decomposition, and length control.

**Verdict coding.** A pairwise judgement shows two answers in slots A (shown first) and B. Its
*slot-coded* verdict is ``+1`` when slot A wins, ``-1`` when slot B wins and ``0`` for a tie or
no decision; a graded comparative scale (``+2 .. -2``) is accepted where stated, and its sign
is the winner. An item is one pair of candidates ``(X, Y)`` judged in both orders:

- order ``"AB"`` (forward): X in slot A, Y in slot B; its slot-coded verdict is ``v_fwd``;
- order ``"BA"`` (reverse): Y in slot A, X in slot B; its slot-coded verdict is ``v_rev``.

Write each verdict as candidate preference plus slot preference (appendix B of "The Format is
the Filter", arXiv 2610.17158): ``v_fwd = q + b`` and ``v_rev = -q + b``. The candidate
preference ``q`` (for X) changes sign when X moves from slot A to slot B; the slot bias ``b``
(for slot A) stays with the slot. Hence ``q = (v_fwd - v_rev) / 2`` and
``b = (v_fwd + v_rev) / 2``. X won in both orders when ``v_fwd > 0`` and ``v_rev < 0``.

A *candidate-coded* verdict is relative to a named candidate instead of a slot: ``+1`` when
that candidate won. :func:`candidate_verdicts` converts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from sklearn.linear_model import LogisticRegression

from judgelab.calibration.stats._binomial import wilson_interval
from judgelab.calibration.stats._bootstrap import (
    RngLike,
    as_rng,
    check_choice,
    check_level,
    check_resamples,
    cluster_bootstrap,
    weighted_mean,
)
from judgelab.calibration.stats._result import Estimate

FloatArray = npt.NDArray[np.float64]

Order = Literal["AB", "BA"]
"""Presentation order of an item: ``"AB"`` shows the candidate of interest first (slot A)."""

ORDERS: tuple[Order, ...] = ("AB", "BA")

LengthTransform = Literal["tanh", "linear"]
"""How :func:`length_controlled_win_rate` enters the standardised length difference:
``"tanh"`` (AlpacaEval 2.0's bounded term) or ``"linear"``."""

_LENGTH_TRANSFORMS: tuple[LengthTransform, ...] = ("tanh", "linear")

# Inverse L2 strength for the length-control logistic fit. Large enough to be close to the
# maximum-likelihood fit at the sample sizes a probe has (hundreds of items); finite so a
# perfectly separated resample still has a finite fit.
_LC_C = 100.0


# --------------------------------------------------------------------------------------------
# coding helpers


def _verdicts(func: str, name: str, values: npt.ArrayLike) -> FloatArray:
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{func}: {name} must be one-dimensional; got shape {arr.shape}")
    if np.isinf(arr).any():
        raise ValueError(f"{func}: {name} must be finite verdict codes (nan = missing)")
    return arr


def _paired(
    func: str, v_fwd: npt.ArrayLike, v_rev: npt.ArrayLike
) -> tuple[FloatArray, FloatArray, npt.NDArray[np.bool_]]:
    """Forward and reverse verdicts as float arrays with incomplete items dropped."""
    f, r = _verdicts(func, "v_fwd", v_fwd), _verdicts(func, "v_rev", v_rev)
    if f.shape != r.shape:
        raise ValueError(
            f"{func}: v_fwd and v_rev must hold one verdict per item each; "
            f"got {f.shape[0]} and {r.shape[0]}"
        )
    keep = ~(np.isnan(f) | np.isnan(r))
    return f[keep], r[keep], keep


def candidate_verdicts(slot_verdicts: npt.ArrayLike, orders: npt.ArrayLike) -> FloatArray:
    """Re-code slot-coded verdicts relative to the candidate of interest.

    Args:
        slot_verdicts: ``+1`` slot A won, ``-1`` slot B won, ``0`` tie (graded scales keep
            their magnitude; ``nan`` stays ``nan``).
        orders: Per judgement, ``"AB"`` if the candidate of interest was in slot A, ``"BA"``
            if it was in slot B.

    Returns:
        Candidate-coded verdicts: ``+1`` when the candidate of interest won.

    Raises:
        ValueError: On an order other than ``"AB"``/``"BA"`` or mismatched lengths.
    """
    func = "candidate_verdicts"
    v = _verdicts(func, "slot_verdicts", slot_verdicts)
    o = np.asarray(orders)
    if o.shape != v.shape:
        raise ValueError(f"{func}: one order per verdict needed; got {o.shape} for {v.shape}")
    for value in np.unique(o):
        check_choice(func, "order", str(value), ORDERS)
    return np.where(o == "AB", v, -v)


def swap_average(v_fwd: npt.ArrayLike, v_rev: npt.ArrayLike) -> FloatArray:
    """Swap-averaged verdict per item: a win counts only when both orders agree.

    Args:
        v_fwd: Slot-coded verdict with X in slot A, one per item.
        v_rev: Slot-coded verdict with X in slot B (same item order).

    Returns:
        Candidate-coded verdict for X per item: ``+1`` if X won in both orders (``v_fwd > 0``
        and ``v_rev < 0``), ``-1`` if Y won in both, ``0`` otherwise (a flip or any tie is
        "no decision", as in judge-probe and FastChat). ``nan`` where either verdict is
        missing.
    """
    func = "swap_average"
    f, r = _verdicts(func, "v_fwd", v_fwd), _verdicts(func, "v_rev", v_rev)
    if f.shape != r.shape:
        raise ValueError(f"{func}: v_fwd and v_rev differ in length ({f.size} vs {r.size})")
    sf, sr = np.sign(f), np.sign(r)
    out = np.where((sf != 0) & (sf == -sr), sf, 0.0)
    out[np.isnan(f) | np.isnan(r)] = np.nan
    return out


# --------------------------------------------------------------------------------------------
# first-shown advantage and consistency


def first_shown_advantage(first_wins: int, n_decisions: int, *, level: float = 0.95) -> Estimate:
    """First-shown win rate minus 50%, in percentage points, with a Wilson interval.

    Counts judgements with a decision only (a tie is neither a win for the first-shown answer
    nor for the second). With answers of equal quality on average and both orders run, a
    position-neutral judge is at 0.

    Args:
        first_wins: Decisions won by the answer shown first (slot A).
        n_decisions: Judgements with a winner.
        level: Confidence level.

    Returns:
        Estimate in ``"percentage points"``: ``100 * (first_wins / n_decisions - 0.5)`` and the
        Wilson score interval shifted the same way; ``n`` is ``n_decisions``. Degenerate case:
        no decisions gives ``nan`` throughout.

    Examples:
        >>> est = first_shown_advantage(61, 100)
        >>> round(est.estimate, 6), round(est.ci_low, 1), round(est.ci_high, 1)
        (11.0, 1.2, 20.0)

    Raises:
        ValueError: On negative counts, ``first_wins > n_decisions`` or a bad ``level``.
    """
    func = "first_shown_advantage"
    check_level(func, level)
    try:
        lo, hi = wilson_interval(first_wins, n_decisions, level=level)
    except ValueError as err:
        raise ValueError(f"{func}: {err}") from None
    rate = first_wins / n_decisions if n_decisions else math.nan
    return Estimate(
        100 * (rate - 0.5),
        100 * (lo - 0.5),
        100 * (hi - 0.5),
        int(n_decisions),
        "first-shown win rate among decisions minus 50%; Wilson score interval",
        "percentage points",
        level,
        {"first_wins": int(first_wins), "win_rate": rate},
    )


def first_shown_advantage_from_verdicts(
    verdicts: npt.ArrayLike, *, level: float = 0.95
) -> Estimate:
    """:func:`first_shown_advantage` from slot-coded verdicts (``+1`` = first shown won).

    Args:
        verdicts: Slot-coded verdicts of every judgement (both orders pooled); ``0`` is a tie
            and ``nan`` a missing verdict, both left out of the decisions.
        level: Confidence level.

    Returns:
        As :func:`first_shown_advantage`, with ``extra["ties"]`` and ``extra["missing"]``.
    """
    v = _verdicts("first_shown_advantage_from_verdicts", "verdicts", verdicts)
    decided = ~np.isnan(v) & (v != 0)
    est = first_shown_advantage(int((v[decided] > 0).sum()), int(decided.sum()), level=level)
    extra = {**est.extra, "ties": int((v == 0).sum()), "missing": int(np.isnan(v).sum())}
    return Estimate(
        est.estimate, est.ci_low, est.ci_high, est.n, est.method, est.units, level, extra
    )


def consistency_rate(v_fwd: npt.ArrayLike, v_rev: npt.ArrayLike, *, level: float = 0.95) -> Estimate:
    """Share of items whose verdict survives swapping the order.

    An item is order-stable when, mapped back to candidates, both orders give the same outcome:
    ``sign(v_fwd) == -sign(v_rev)`` (the same winner, or a tie both times). This is the
    diagnostic that stays meaningful after swap-averaging, where the first-shown advantage is
    zero by construction.

    Args:
        v_fwd: Slot-coded verdict with X in slot A, one per item.
        v_rev: Slot-coded verdict with X in slot B.
        level: Confidence level.

    Returns:
        Estimate in ``"share of items"`` with a Wilson interval; ``n`` is the number of items
        with both verdicts (``extra["dropped"]`` counts the rest). Degenerate case: no
        complete item gives ``nan``.
    """
    func = "consistency_rate"
    check_level(func, level)
    f, r, keep = _paired(func, v_fwd, v_rev)
    stable = int(np.sum(np.sign(f) == -np.sign(r)))
    n = int(f.size)
    lo, hi = wilson_interval(stable, n, level=level)
    return Estimate(
        stable / n if n else math.nan,
        lo,
        hi,
        n,
        "share of items with the same outcome in both orders; Wilson score interval",
        "share of items",
        level,
        {"stable": stable, "dropped": int((~keep).sum())},
    )


# --------------------------------------------------------------------------------------------
# slot decomposition


@dataclass(frozen=True)
class SlotDecomposition:
    """Candidate preference and slot bias from order-swapped verdicts.

    Attributes:
        q: Mean candidate preference for X, ``(v_fwd - v_rev) / 2``, in verdict units.
        b: Mean slot-A bias, ``(v_fwd + v_rev) / 2``. On ``±1`` coding with no ties
            ``b = 2 * P(slot A wins) - 1``, so ``50 * b`` is the first-shown advantage in
            percentage points.
        consistency: :func:`consistency_rate` on the same items.
    """

    q: Estimate
    b: Estimate
    consistency: Estimate

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the three estimates."""
        return {"q": self.q.to_dict(), "b": self.b.to_dict(), "consistency": self.consistency.to_dict()}


def slot_decomposition(
    v_fwd: npt.ArrayLike,
    v_rev: npt.ArrayLike,
    *,
    clusters: npt.ArrayLike | None = None,
    n_resamples: int = 2000,
    level: float = 0.95,
    rng: RngLike = None,
) -> SlotDecomposition:
    """Split order-swapped verdicts into candidate preference ``q`` and slot bias ``b``.

    Per item, ``q_i = (v_fwd_i - v_rev_i) / 2`` and ``b_i = (v_fwd_i + v_rev_i) / 2`` (see the
    module docstring for the coding); the estimates are their means. A judge driven by quality
    has ``|q|`` large and ``b`` near 0; a judge driven by the slot has ``b`` far from 0 whatever
    the candidates. The paper reports ``b = -0.33`` (slot B) for two judges and ``+0.89``
    (slot A) for a third.

    Args:
        v_fwd: Slot-coded verdict with X in slot A, one per item (``±1``/``0`` or a graded
            comparative scale such as ``+2 .. -2``; ``nan`` drops the item).
        v_rev: Slot-coded verdict with X in slot B.
        clusters: Optional cluster id per item (e.g. task); intervals then resample whole
            clusters. ``None`` resamples items.
        n_resamples: Bootstrap resamples.
        level: Confidence level.
        rng: Generator, int seed (deterministic) or ``None``.

    Returns:
        A :class:`SlotDecomposition` whose ``q`` and ``b`` are in ``"verdict points"`` with
        percentile bootstrap intervals; ``n`` is the number of items (or clusters, when
        given). Degenerate cases: no complete item gives ``nan``; a single cluster gives a
        ``nan`` interval.
    """
    func = "slot_decomposition"
    check_level(func, level)
    check_resamples(func, n_resamples)
    f, r, keep = _paired(func, v_fwd, v_rev)
    if clusters is not None:
        ids = np.asarray(clusters)
        if ids.shape != keep.shape:
            raise ValueError(f"{func}: clusters must be one id per item; got shape {ids.shape}")
        ids = ids[keep]
    else:
        ids = None
    gen = as_rng(rng)
    consistency = consistency_rate(f, r, level=level)
    q_i, b_i = (f - r) / 2, (f + r) / 2
    n_units = int(np.unique(ids).size) if ids is not None else int(f.size)
    unit = "clusters" if ids is not None else "items"
    method = f"mean over items; percentile bootstrap over {unit}, {n_resamples} resamples"
    extra = {"items": int(f.size), "dropped": int((~keep).sum())}

    def summarise(values: FloatArray, what: str) -> Estimate:
        if values.size == 0:
            return Estimate(
                math.nan, math.nan, math.nan, 0, method, "verdict points", level, dict(extra)
            )
        lo, hi, _ = cluster_bootstrap(
            weighted_mean, ids, values, n_resamples=n_resamples, level=level, rng=gen
        )
        return Estimate(
            float(values.mean()), lo, hi, n_units, f"{what}: {method}", "verdict points",
            level, dict(extra),
        )

    return SlotDecomposition(
        q=summarise(q_i, "candidate preference q = (v_fwd - v_rev)/2"),
        b=summarise(b_i, "slot-A bias b = (v_fwd + v_rev)/2"),
        consistency=consistency,
    )


# --------------------------------------------------------------------------------------------
# length-controlled win rate


def _lc_design(
    len_term: FloatArray, covariates: FloatArray | None
) -> tuple[FloatArray, FloatArray]:
    """Design matrix as observed, and with the length term set to zero."""
    cols = [len_term[:, None]] + ([covariates] if covariates is not None else [])
    x = np.hstack(cols)
    x0 = x.copy()
    x0[:, 0] = 0.0
    return x, x0


def _lc_fit(
    wins: FloatArray, x: FloatArray, x0: FloatArray, weights: FloatArray
) -> tuple[float, float]:
    """Weighted soft-label logistic fit; (mean prediction at zero length, length coefficient).

    Each item enters twice, as a win with weight ``w * wins`` and as a loss with weight
    ``w * (1 - wins)``, so a tie (0.5) is half of each (AlpacaEval's soft labels).
    """
    w_win, w_loss = weights * wins, weights * (1 - wins)
    total = weights.sum()
    if total <= 0:
        return math.nan, math.nan
    if w_win.sum() <= 0 or w_loss.sum() <= 0:  # one class only: nothing to adjust
        return float(w_win.sum() / total), 0.0
    model = LogisticRegression(C=_LC_C, max_iter=1000)
    model.fit(
        np.vstack([x, x]),
        np.r_[np.ones(len(wins)), np.zeros(len(wins))],
        sample_weight=np.r_[w_win, w_loss],
    )
    p0 = model.predict_proba(x0)[:, 1]
    return float(np.sum(weights * p0) / total), float(model.coef_[0, 0])


def length_controlled_win_rate(
    wins: npt.ArrayLike,
    len_diff: npt.ArrayLike,
    *,
    covariates: npt.ArrayLike | None = None,
    transform: LengthTransform = "tanh",
    clusters: npt.ArrayLike | None = None,
    n_resamples: int = 1000,
    level: float = 0.95,
    rng: RngLike = None,
) -> Estimate:
    """Win rate with the length difference regressed out (AlpacaEval 2.0 style).

    Fits ``logit P(win) = θ0 + θ1·t(len_diff / sd(len_diff)) [+ γ·covariates]`` with scikit-
    learn's ``LogisticRegression`` (L2, ``C=100``, intercept unpenalised; ties as soft labels),
    then predicts every item with the length term at zero (``t(0) = 0``), covariates as
    observed, and averages. ``t`` is ``tanh`` as in AlpacaEval's ``glm_winrate`` or the
    identity. This is an *observational* correction (it regresses out a correlate); the
    padding probe is the interventional one. The interval is a percentile bootstrap that
    refits on each resample of items, or of clusters when given; ``sd`` is fixed at the full
    sample's.

    Args:
        wins: Per item, 1 if the candidate beat the baseline, 0 if it lost, 0.5 for a tie
            (any value in ``[0, 1]`` is a soft label).
        len_diff: Candidate length minus baseline length (characters or tokens).
        covariates: Optional ``(n, k)`` array of further regressors held at their observed
            values (e.g. a per-task difficulty).
        transform: ``"tanh"`` (default) or ``"linear"``.
        clusters: Optional cluster id per item (e.g. task) for the bootstrap.
        n_resamples: Bootstrap resamples (each is one logistic fit).
        level: Confidence level.
        rng: Generator, int seed (deterministic) or ``None``.

    Returns:
        Estimate in ``"win rate"`` (a share in ``[0, 1]``), ``n`` items (or clusters), with
        ``extra`` holding the raw win rate, the length coefficient and the ``sd`` used.
        Degenerate cases: a constant ``len_diff`` leaves nothing to control (the length term
        is zero and the result is the fitted mean); all wins or all losses return the raw
        rate.

    Raises:
        ValueError: On wins outside ``[0, 1]``, non-finite lengths, mismatched shapes, an
            unknown ``transform``, a bad ``level`` or ``n_resamples``, or no items.
    """
    func = "length_controlled_win_rate"
    check_choice(func, "transform", transform, _LENGTH_TRANSFORMS)
    check_level(func, level)
    check_resamples(func, n_resamples)
    w = np.asarray(wins, dtype=float)
    d = np.asarray(len_diff, dtype=float)
    if w.ndim != 1 or d.shape != w.shape:
        raise ValueError(f"{func}: wins and len_diff must be 1-D of one length; got {w.shape}, {d.shape}")
    if w.size == 0:
        raise ValueError(f"{func}: no items")
    if not (np.all((w >= 0) & (w <= 1))):
        raise ValueError(f"{func}: wins must lie in [0, 1] (1 win, 0 loss, 0.5 tie)")
    if not np.isfinite(d).all():
        raise ValueError(f"{func}: len_diff must be finite")
    cov = None
    if covariates is not None:
        cov = np.asarray(covariates, dtype=float)
        cov = cov[:, None] if cov.ndim == 1 else cov
        if cov.ndim != 2 or cov.shape[0] != w.size or not np.isfinite(cov).all():
            raise ValueError(f"{func}: covariates must be finite, shape (n, k); got {cov.shape}")
    sd = float(np.std(d))
    z = d / sd if sd > 0 else np.zeros_like(d)
    len_term = np.tanh(z) if transform == "tanh" else z
    x, x0 = _lc_design(len_term, cov)
    estimate, coef = _lc_fit(w, x, x0, np.ones(w.size))

    def stat(wv: FloatArray, xv: FloatArray, x0v: FloatArray, *, weights: FloatArray) -> FloatArray:
        return np.array([_lc_fit(wv, xv, x0v, row)[0] for row in weights])

    lo, hi, _ = cluster_bootstrap(
        stat, clusters, w, x, x0, n_resamples=n_resamples, level=level, rng=as_rng(rng)
    )
    n_units = int(np.unique(np.asarray(clusters)).size) if clusters is not None else int(w.size)
    unit = "clusters" if clusters is not None else "items"
    return Estimate(
        estimate,
        lo,
        hi,
        n_units,
        f"logistic regression of win on {transform}(len_diff/sd), predicted at zero length "
        f"difference and averaged; percentile bootstrap over {unit}, {n_resamples} refits",
        "win rate",
        level,
        {"raw_win_rate": float(w.mean()), "length_coefficient": coef, "sd_len_diff": sd},
    )
