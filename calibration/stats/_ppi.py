"""Prediction-powered inference for a mean.

The judge's verdicts on many answers, rectified by blind human labels on a few.

Hand labels are expensive; judge verdicts are cheap. With ``n`` answers labelled by humans
(``Y``) and judged (``f``), and ``N`` further answers judged only (``f̃``), the PPI++ estimate
of the human mean is (Angelopoulos, Duchi & Zrnic 2023, "PPI++", arXiv:2311.01453)::

    θ̂_λ = λ · mean(f̃) + mean(Y − λ f)

with variance ``λ² Var(f̃)/N + Var(Y − λ f)/n`` and a normal interval. ``λ = 0`` is the
classical human-only mean; ``λ = 1`` is plain PPI (Angelopoulos et al. 2023, Science,
doi:10.1126/science.adi6000), whose correction term ``mean(Y − f)`` is minus the judge's
residual on the labelled answers. ``λ = None`` picks the variance-minimising value
``λ̂ = Cov(Y, f) / ((1 + n/N) Var(f))`` (Var over all judged answers), clipped to [0, 1] so the
estimate stays between classical inference and plain PPI; with a useless judge it falls back
towards the classical mean, so PPI++ is (asymptotically) never worse than human-only.

The unlabelled answers must come from the same population as the labelled ones (a uniform
random subset of the pool was labelled); for a stratified label sample use design weights
with :func:`judgelab.calibration.stats.family_residuals` instead.

Clusters. Answers to one task are correlated. Pass ``clusters=(labelled_ids, unlabelled_ids)``
and the variance becomes the cluster-robust sandwich over the estimator's influence values,
summed within each cluster id across *both* sets (an id on both sides is one cluster), with
the small-sample factor ``G/(G−1)``. ``λ̂`` keeps its unclustered formula (still valid, perhaps
not optimal).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats

from judgelab.calibration.stats._bootstrap import check_level, finite_vector
from judgelab.calibration.stats._raters import RaterScope, rater_terms
from judgelab.calibration.stats._result import Estimate
from judgelab.calibration.stats._variance import (
    REFUSED_METHOD,
    VarianceParts,
    cluster_design,
    design_variance,
    narrower_note,
    rare_event_floor,
    reliability_note,
    t_interval,
)

_NAN = float("nan")
_PAPER = "arXiv:2311.01453"
# ppi_py (the paper's reference code) divides its variances by n; these divide by n - 1 (clusters:
# G - 1), the unbiased variance and the convention of every other interval in the report, which the
# coverage suite checks. The interval is √(n/(n−1)) wider: 2.6% at 20 labels, 0.5% at 100.
_CONVENTION = "variances divided by n − 1 (ppi_py's ppi_mean_ci divides by n: up to √(n/(n−1)) narrower)"
_DESIGN_CONVENTION = ("cluster variances divided by G − 1, as every interval here; ppi_py divides by n and is "
                      "up to √(G/(G−1)) narrower")


def classical_mean(
    y: npt.ArrayLike,
    *,
    level: float = 0.95,
    clusters: npt.ArrayLike | None = None,
    units: str = "proportion",
) -> Estimate:
    """Human-only mean with a normal (Wald) interval, optionally cluster-robust.

    Args:
        y: Human labels (0/1 or scores).
        level: Confidence level.
        clusters: Optional cluster id per label (e.g. task id) for a cluster-robust standard
            error with the factor ``G/(G−1)``.
        units: Units label for the result (the values are not rescaled).

    Returns:
        An :class:`Estimate` with ``extra["se"]``. Degenerate cases: fewer than two labels (or
        two clusters) gives a ``nan`` interval; labels that are all equal give a zero-width
        interval (for a proportion at 0 or 1 prefer :func:`judgelab.calibration.stats.proportion`'s
        Wilson interval).

    Raises:
        ValueError: On no labels, missing values or a bad ``level``.
    """
    func = "classical_mean"
    check_level(func, level)
    values = _vector(func, "y", y)
    if values.size == 0:
        raise ValueError(f"{func}: no labels")
    mean = float(values.mean())
    if clusters is None:
        se = float(values.std(ddof=1) / math.sqrt(values.size)) if values.size > 1 else _NAN
        method = "classical mean, normal interval"
    else:
        ids = _ids(func, "clusters", clusters, values.size)
        se = _cluster_se([ids], [(values - mean) / values.size])
        method = "classical mean, normal interval, cluster-robust SE"
    lo, hi = _normal_interval(mean, se, level)
    return Estimate(mean, lo, hi, int(values.size), method, units, level, {"se": se})


def ppi_mean(
    y_labeled: npt.ArrayLike,
    yhat_labeled: npt.ArrayLike,
    yhat_unlabeled: npt.ArrayLike,
    *,
    lam: float | None = None,
    level: float = 0.95,
    clusters: tuple[npt.ArrayLike, npt.ArrayLike] | None = None,
    units: str = "proportion",
) -> Estimate:
    """Prediction-powered (PPI / PPI++) estimate of the human mean, with a normal interval.

    Args:
        y_labeled: Human labels on the ``n`` labelled answers.
        yhat_labeled: Judge verdicts on the same answers, same order.
        yhat_unlabeled: Judge verdicts on the ``N`` answers with no human label.
        lam: ``None`` for PPI++ power tuning (clipped to [0, 1]); ``1`` for plain PPI; ``0``
            for classical inference; any other finite value is used as given.
        level: Confidence level.
        clusters: Optional ``(labelled_ids, unlabelled_ids)`` cluster ids (e.g. task ids)
            for a cluster-robust variance; an id on both sides is one cluster.
        units: Units label for the result (the values are not rescaled).

    Returns:
        An :class:`Estimate`; ``n`` is the number of human labels. ``extra`` holds ``lam``
        (the λ used), ``n_unlabeled``, ``rectifier`` (``mean(Y − f)``, minus the judge's
        residual), ``se``, ``effective_n`` (labels a human-only estimate would need for the
        same variance), the human-only ``classical_estimate``, ``classical_ci_low``,
        ``classical_ci_high`` and ``reason``. Degenerate cases: judge verdicts that are all
        equal carry no information, so tuned λ is 0 (classical) and ``reason`` says so; fewer
        than two labels or two unlabelled answers gives a ``nan`` interval.

    Raises:
        ValueError: On empty sets, mismatched lengths, missing values, a non-finite ``lam``
            or a bad ``level``.
    """
    func = "ppi_mean"
    check_level(func, level)
    y = _vector(func, "y_labeled", y_labeled)
    f = _vector(func, "yhat_labeled", yhat_labeled)
    fu = _vector(func, "yhat_unlabeled", yhat_unlabeled)
    if y.size == 0 or fu.size == 0:
        raise ValueError(
            f"{func}: need at least one labelled and one unlabelled answer; got n={y.size}, "
            f"N={fu.size} (with no unlabelled answers use classical_mean)"
        )
    if f.shape != y.shape:
        raise ValueError(f"{func}: yhat_labeled must match y_labeled ({y.size}); got {f.size} values")
    n, big_n = y.size, fu.size
    reason: str | None = None
    if lam is None:
        lam_used, reason = _tuned_lambda(y, f, fu)
        how = f"PPI++ mean (power-tuned λ={lam_used:.3g}, {_PAPER})"
    else:
        if isinstance(lam, bool) or not isinstance(lam, (int, float)) or not math.isfinite(lam):
            raise ValueError(f"{func}: lam must be a finite number or None; got {lam!r}")
        lam_used = float(lam)
        name = {0.0: "classical mean (λ=0)", 1.0: "PPI mean (λ=1)"}
        how = name.get(lam_used, f"PPI++ mean (fixed λ={lam_used:.3g}, {_PAPER})")

    rect = y - lam_used * f
    estimate = float(lam_used * fu.mean() + rect.mean())
    if clusters is None:
        if n < 2 or big_n < 2:
            se = _NAN
        else:
            var = lam_used**2 * fu.var(ddof=1) / big_n + rect.var(ddof=1) / n
            se = math.sqrt(var)
        method = f"{how}, normal interval, {_CONVENTION}"
    else:
        if not (isinstance(clusters, tuple) and len(clusters) == 2):
            raise ValueError(
                f"{func}: clusters must be a pair (labelled_ids, unlabelled_ids); got {type(clusters).__name__}"
            )
        ids_l = _ids(func, "clusters[0]", clusters[0], n)
        ids_u = _ids(func, "clusters[1]", clusters[1], big_n)
        psi_l = (rect - rect.mean()) / n
        psi_u = lam_used * (fu - fu.mean()) / big_n
        se = _cluster_se([ids_l, ids_u], [psi_l, psi_u])
        method = f"{how}, normal interval, cluster-robust SE, {_CONVENTION}"
    lo, hi = _normal_interval(estimate, se, level)

    classical = classical_mean(y, level=level, clusters=None if clusters is None else clusters[0], units=units)
    c_se = classical.extra["se"]
    eff_n = float(n * (c_se / se) ** 2) if se and math.isfinite(se) and se > 0 else _NAN
    extra: dict[str, Any] = {
        "lam": lam_used,
        "n_unlabeled": int(big_n),
        "rectifier": float((y - f).mean()),
        "se": se,
        "effective_n": eff_n,
        "classical_estimate": classical.estimate,
        "classical_ci_low": classical.ci_low,
        "classical_ci_high": classical.ci_high,
        "reason": reason,
    }
    return Estimate(estimate, lo, hi, int(n), method, units, level, extra)


def _tuned_lambda(
    y: npt.NDArray[np.float64], f: npt.NDArray[np.float64], fu: npt.NDArray[np.float64]
) -> tuple[float, str | None]:
    n, big_n = y.size, fu.size
    pooled = np.concatenate([f, fu])
    var_f = float(pooled.var(ddof=1)) if pooled.size > 1 else 0.0
    if var_f <= 0.0:
        return 0.0, "judge verdicts are all equal: they carry no information, so λ = 0"
    cov = float(np.mean((y - y.mean()) * (f - f.mean())))
    lam = cov / ((1 + n / big_n) * var_f)
    return float(np.clip(lam, 0.0, 1.0)), None


def _cluster_se(ids: list[npt.NDArray[np.intp]] | list[np.ndarray], psi: list[npt.NDArray[np.float64]]) -> float:
    """Cluster-robust SE from influence values, summed per cluster id across all sets."""
    all_ids = np.concatenate([np.asarray(i) for i in ids])
    all_psi = np.concatenate(psi)
    _, codes = np.unique(all_ids, return_inverse=True)
    sums = np.bincount(codes.ravel(), weights=all_psi)
    g = sums.size
    if g < 2:
        return _NAN
    return float(math.sqrt(g / (g - 1) * float((sums**2).sum())))


def _normal_interval(estimate: float, se: float, level: float) -> tuple[float, float]:
    if not math.isfinite(se):
        return _NAN, _NAN
    z = float(stats.norm.ppf(0.5 + level / 2))
    return estimate - z * se, estimate + z * se


def _vector(func: str, name: str, x: npt.ArrayLike) -> npt.NDArray[np.float64]:
    return finite_vector(func, name, x, nonfinite="has missing values; drop them explicitly first")


def _ids(func: str, name: str, ids: npt.ArrayLike, n: int) -> np.ndarray:
    arr = np.asarray(ids)
    if arr.shape != (n,):
        raise ValueError(f"{func}: {name} must hold one cluster id per row ({n}); got {arr.shape}")
    return arr


# --------------------------------------------------------------------------------------------
# Under a sample design: Hajek means, stratified clusters, raters
# --------------------------------------------------------------------------------------------


def design_mean(
    y: npt.ArrayLike,
    *,
    weights: npt.ArrayLike | None = None,
    clusters: npt.ArrayLike | None = None,
    strata: npt.ArrayLike | None = None,
    rater_level: Any = None,
    interval: RaterScope = "raters",
    level: float = 0.95,
    units: str = "proportion",
) -> Estimate:
    """Hajek mean ``Σ w·y / Σ w`` of human labels with a design-based t interval.

    Args:
        y: Human score per labelled answer (a pass fraction after averaging raters).
        weights: Design weights (1/inclusion probability); ``None`` gives the plain mean.
        clusters: Sampling cluster (task) per answer; ``None`` makes each answer its own.
        strata: Design stratum per answer (clusters nested in strata), or ``None``.
        rater_level: Per-rater labels (``answer`` = row position, ``rater``, ``score``) to
            generalise over raters; see :mod:`judgelab.calibration.stats._raters`.
        interval: ``"raters"`` or ``"panel"``.
        level: Confidence level.
        units: Units label (values are not rescaled).

    Returns:
        An :class:`Estimate` with ``extra`` ``se``, ``df``, ``interval``, ``scope`` and
        ``unreliable``. Degenerate case: one cluster gives a ``nan`` interval.

    Raises:
        ValueError: On no labels, missing values, bad weights or clusters spanning strata.
    """
    func = "design_mean"
    check_level(func, level)
    values = _vector(func, "y", y)
    if values.size == 0:
        raise ValueError(f"{func}: no labels")
    w = _design_weights(func, weights, values.size)
    total = w.sum()
    mean = float(w @ values / total)
    ids = np.arange(values.size) if clusters is None else _ids(func, "clusters", clusters, values.size)
    design = cluster_design(ids, strata, weights=None if weights is None else w, func=func)
    psi = w * (values - mean) / total
    var, df, g, h = design_variance(psi, design)
    raters = rater_terms(w / total, rater_level, values.size, interval)
    scope = raters.scope
    parts = VarianceParts(var, df, raters.variance, raters.df, g, h)
    if raters.refused is not None:
        # Two raters: a mean of their labels moves with their mean leniency, seen on no df.
        parts = parts.refuse(raters.refused, level)
    lo, hi = t_interval(mean, parts, level)
    mean_kind = "design-weighted (Hajek) mean" if not np.allclose(w, w[0]) else "mean"
    how = f"t interval with {parts.df:.1f} df" if parts.refused is None else REFUSED_METHOD
    method = (f"{mean_kind} of the human labels; linearised variance over {g} task clusters"
              f"{f' in {h} strata' if h > 1 else ''}, {how}; raters: {scope}")
    return Estimate(mean, lo, hi, int(values.size), method, units, level, _fields(parts, scope))


def design_ppi_mean(
    y_labeled: npt.ArrayLike,
    yhat_labeled: npt.ArrayLike,
    yhat_pool: npt.ArrayLike,
    *,
    weights: npt.ArrayLike | None = None,
    clusters: tuple[npt.ArrayLike, npt.ArrayLike] | None = None,
    strata: npt.ArrayLike | None = None,
    lam: float | None = 1.0,
    rater_level: Any = None,
    interval: RaterScope = "raters",
    level: float = 0.95,
    units: str = "proportion",
) -> Estimate:
    """Prediction-powered mean under a sample design: ``λ·mean(f̃_pool) + Hajek mean(Y − λf)``.

    The judge's verdicts on the **whole pool** (labelled answers included) give the first term;
    the design-weighted mean of the humans' correction on the labelled sample the second. Unlike
    :func:`ppi_mean` (labelled versus unlabelled answers) this stays unbiased when the labels
    were drawn with unequal probabilities, e.g. stratified by the judge's verdict (a difference
    estimator; Särndal, Swensson & Wretman 1992, §6.3).

    Variance: the pool term's from the pool's task clusters, the correction's from the sample's
    stratified clusters (and the raters, with ``interval="raters"``), and their covariance from
    the tasks in both; t interval with Satterthwaite's df.

    Args:
        y_labeled: Human score per labelled answer.
        yhat_labeled: Judge verdict per labelled answer.
        yhat_pool: Judge verdict per pool answer (every judged answer, labelled ones included).
        weights: Design weights of the labelled answers (``None``: equal).
        clusters: ``(labelled task ids, pool task ids)``; ``None``: every answer its own task.
        strata: Design stratum per labelled answer, or ``None``.
        lam: The power-tuning factor: 1 for plain PPI, 0 for the human-only mean, ``None`` for
            the variance-minimising value of the unweighted case (:func:`ppi_mean`), clipped to
            [0, 1].
        rater_level: Per-rater labels (``answer`` = labelled row position, ``rater``, ``score``).
        interval: ``"raters"`` or ``"panel"``.
        level: Confidence level.
        units: Units label.

    Returns:
        An :class:`Estimate` (``n`` = labelled answers) with ``extra`` ``lam``, ``n_pool``,
        ``se``, ``df``, ``interval``, ``scope`` and ``unreliable``.

    Raises:
        ValueError: On empty or mismatched inputs, missing values or bad options.
    """
    func = "design_ppi_mean"
    check_level(func, level)
    y = _vector(func, "y_labeled", y_labeled)
    f = _vector(func, "yhat_labeled", yhat_labeled)
    fp = _vector(func, "yhat_pool", yhat_pool)
    if y.size == 0 or fp.size == 0 or f.shape != y.shape:
        raise ValueError(f"{func}: need labelled answers with one judge verdict each and a non-empty pool")
    w = _design_weights(func, weights, y.size)
    lam_used = _tuned_lambda(y, f, fp)[0] if lam is None else float(lam)
    rect = y - lam_used * f
    total = w.sum()
    rect_mean = float(w @ rect / total)
    estimate = float(lam_used * fp.mean() + rect_mean)
    ids_l, ids_p = (np.arange(y.size), np.arange(y.size, y.size + fp.size)) if clusters is None else (
        _ids(func, "clusters[0]", clusters[0], y.size), _ids(func, "clusters[1]", clusters[1], fp.size))
    psi_rect = w * (rect - rect_mean) / total
    v_rect, df_rect, g, h = design_variance(
        psi_rect, cluster_design(ids_l, strata, weights=None if weights is None else w, func=func), domain=w > 0)
    # Labels that all agree with the judge leave the rectifier (nearly) constant and its variance
    # near 0: PPI covered 82-86% at 15 labelled tasks of a judge agreeing on 95% (7% with no
    # interval). The floor is one disagreement's, not the residuals' three: the pool's part keeps
    # PPI honest from about 30 tasks, where three would widen it by a third (98-99% coverage);
    # with one, 96-97% at 15 tasks and the same width at 30 (chosen by simulation).
    v_rect, floor_units = rare_event_floor(v_rect, w / total, y - f, events=1.0)
    psi_pool = lam_used * (fp - fp.mean()) / fp.size
    v_pool, _, _, _ = design_variance(psi_pool, cluster_design(ids_p, func=func))
    v_pool = 0.0 if not np.isfinite(v_pool) else v_pool
    # Covariance through the tasks that are in the sample and the pool.
    all_ids, codes = np.unique(np.r_[ids_l.astype(str), ids_p.astype(str)], return_inverse=True)
    z_rect = np.bincount(codes[: y.size], weights=psi_rect, minlength=all_ids.size)
    z_pool = np.bincount(codes[y.size:], weights=psi_pool, minlength=all_ids.size)
    cov = float((z_rect * z_pool).sum())
    # The two-way interval (judgelab.calibration.stats._raters): the raters' mean square on their df, less
    # the noise the design's variance already holds, never clipped to "no spread".
    raters = rater_terms(w / total, rater_level, y.size, interval, covariates=f, clusters=ids_l)
    scope = raters.net_scope or raters.scope
    design_var = max(v_rect + v_pool + 2 * cov, v_rect)
    parts = VarianceParts(design_var, df_rect, raters.net, raters.df, g, h, floor_units, raters.clustered,
                          raters.clustered_df)
    if raters.refused is not None:
        # Two raters: a mean of their labels moves with their mean leniency, seen on no df.
        parts = parts.refuse(raters.refused, level)
    lo, hi = t_interval(estimate, parts, level)
    scope += narrower_note(estimate, parts, level)
    weighted = not np.allclose(w, w[0])
    name = f"PPI++ mean (power-tuned λ={lam_used:.2g}, {_PAPER})" if lam is None else f"PPI mean (λ={lam_used:.2g})"
    method = (
        f"{name}: judge pass rate on the whole pool + "
        f"{'design-weighted (Hajek) ' if weighted else ''}mean of human − λ·judge on the labels; "
        f"linearised variance over {g} labelled task clusters{f' in {h} strata' if h > 1 else ''}"
        f"{parts.floor_note(events=1)} and the pool ({_DESIGN_CONVENTION}), "
        f"{f't interval with {parts.df:.1f} df' if parts.refused is None else REFUSED_METHOD}; "
        f"raters: {scope}"
    )
    extra = {"lam": lam_used, "n_pool": int(fp.size), **_fields(parts, scope)}
    return Estimate(estimate, lo, hi, int(y.size), method, units, level, extra)


def _design_weights(func: str, weights: npt.ArrayLike | None, n: int) -> npt.NDArray[np.float64]:
    if weights is None:
        return np.ones(n)
    w = _vector(func, "weights", weights)
    if w.shape != (n,) or (w < 0).any() or not w.sum() > 0:
        raise ValueError(f"{func}: weights must be {n} non-negative numbers with a positive sum")
    return w


def _fields(parts: VarianceParts, scope: str) -> dict[str, Any]:
    who = "raters" if scope.startswith("raters") else "panel"
    short = (f"t({parts.df:.0f}){parts.floor_note(short=True, events=1)}, {who}" if parts.refused is None
             else f"none (2 raters), {who}")
    se = math.sqrt(parts.total) if math.isfinite(parts.total) else _NAN
    return {"se": se, "df": parts.df, "interval": short, "scope": scope, "unreliable": reliability_note(parts)}
