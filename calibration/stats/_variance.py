"""Design-based variance by linearisation, and the t interval every design-weighted estimate uses.

A design-weighted (Hajek) mean ``θ̂ = Σ w·x / Σ w`` is a smooth function of totals, so to first
order ``θ̂ − θ ≈ Σ_i ψ_i`` with the *influence values* ``ψ_i = w_i (x_i − θ̂) / Σ w`` (Woodruff
1971; Särndal, Swensson & Wretman 1992, §5.5). Its variance under a stratified sample of whole
clusters (tasks: every answer of a sampled task is labelled) drawn within strata is estimated
from the clusters' totals ``z_c = Σ_{i∈c} ψ_i``::

    V̂ = Σ_h n_h / (n_h − 1) · Σ_{c∈h} (z_c − z̄_h)²

the with-replacement (ultimate cluster) estimator of R's ``survey`` package (Lumley 2010,
§2.2), without a finite-population correction: the pool stands for the answers the judge will
see, so the intervals are for the judge's behaviour, not for one pool. The pool is then itself a
sample, and when the strata were formed on it (the judge's verdicts) their shares ``W_h = N_h/N``
vary from pool to pool. The with-replacement term already holds the within-stratum part of that
(it omits the ``1 − n_h/N_h`` correction by exactly that much); the between-strata part of double
sampling for stratification (Cochran 1977, §12.2; Särndal, Swensson & Wretman 1992, §9.4),
``Σ_h W_h (ȳ_h − ȳ)² / N``, is added as ``Σ_h Z_h² / N_h`` from the strata's totals
``Z_h = Σ_{c∈h} z_c`` when the design weights are known (``N_h = Σ_{c∈h} 1/π_c``). Without it
judge-stratified samples of a quarter of the pool covered 91-93% for the residuals
(``bench/coverage.py``); with one stratum it is zero, as simple random sampling needs.

A stratum holding a single sampled cluster cannot show its own spread; its cluster is centred
on zero instead (``survey``'s ``lonely.psu = "adjust"``), which errs wide. With no strata this
is the usual cluster-robust variance with the factor ``G/(G − 1)``.

The interval is ``θ̂ ± t_{df} √V̂`` with ``df`` Satterthwaite's over the strata, at most
clusters − strata (the ``survey`` convention, counted over the clusters the estimate touches),
which is what keeps it honest at 15 tasks where a normal interval covers 91-93% and the
percentile task bootstrap 88-92% (``bench/coverage.py --compare``). When a
second, independent variance component is added (the raters', :mod:`judgelab.calibration.stats._raters`)
the degrees of freedom are Satterthwaite's (1946) for the sum.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import special

__all__ = [
    "MIN_CLUSTERS",
    "MIN_DF",
    "REFUSED_METHOD",
    "VarianceParts",
    "cluster_design",
    "design_variance",
    "narrower_note",
    "rare_event_floor",
    "rare_event_variance",
    "reliability_note",
    "t_interval",
]

#: Fewest clusters (tasks) at which the t interval is trusted: the coverage suite holds at 15
#: tasks and up; at 8 and 10 tasks (``bench/coverage.py --small``) coverages spread from 86% to 99%.
MIN_CLUSTERS = 15
#: Fewest degrees of freedom at which the interval is trusted (a 2-rater panel gives about 1).
MIN_DF = 3.0
#: What a refused interval's method says (:meth:`VarianceParts.refuse`; the note gives the reason).
REFUSED_METHOD = "no interval for raters like these (2 raters: their leniency spread rests on 1 df)"

_NAN = float("nan")


@dataclass(frozen=True)
class VarianceParts:
    """The variance of an estimate, by component, with the degrees of freedom of each.

    Attributes:
        design: Variance from sampling clusters (tasks) within strata.
        design_df: Its degrees of freedom: clusters minus strata, over the clusters the estimate
            touches.
        raters: Variance from which raters happened to be on the panel (0 when not generalised
            over raters). With ``raters_clustered`` it may be negative: the raters' mean square
            less the noise ``design`` already holds (:mod:`judgelab.calibration.stats._raters`).
        raters_df: Its degrees of freedom (``nan`` when ``raters`` is not estimated).
        n_clusters: Clusters the estimate touches.
        n_strata: Strata among them.
        floor_units: When ``design`` was raised to the rule of three's floor
            (:func:`rare_event_variance`), the units it counted; else 0.
        raters_clustered: The part of ``total`` that rests on the raters' ``raters_df``
            degrees of freedom: the spread of the panel's rater means, their noise included
            (:mod:`judgelab.calibration.stats._raters`); the rest of ``total`` rests on ``design_df``.
            ``nan``: ``raters`` alone rests on ``raters_df``.
        raters_clustered_df: The df of ``raters_clustered`` (raters minus one).
        refused: Why no interval is given, with the fix (e.g. two raters cannot speak for raters
            like these: :func:`judgelab.calibration.stats._raters.two_rater_refusal`); ``None`` otherwise.
            :func:`t_interval` then gives ``(nan, nan)`` and :func:`reliability_note` the reason.
    """

    design: float
    design_df: float
    raters: float = 0.0
    raters_df: float = _NAN
    n_clusters: int = 0
    n_strata: int = 1
    floor_units: float = 0.0
    raters_clustered: float = _NAN
    raters_clustered_df: float = _NAN
    refused: str | None = None

    @property
    def total(self) -> float:
        """The variance of the estimate (never below ``raters_clustered``, which is never below 0)."""
        if math.isfinite(self.raters_clustered):
            return max(self.design + self.raters, self.raters_clustered)
        return self.design + self.raters

    def floor_note(self, *, short: bool = False, events: int = 3) -> str:
        """What the report says when ``design`` stands at the rare-event floor ("" if not)."""
        if not self.floor_units:
            return ""
        n = f"{self.floor_units:.0f}"
        if short:
            return f", rule of three in {n}" if events == 3 else f", floor of {events} in {n}"
        floor = "the rule of three's floor" if events == 3 else "its floor"
        return f" (at {floor}: as if {events} of {n} had disagreed)"

    @property
    def df(self) -> float:
        """Satterthwaite's degrees of freedom of ``total`` (``design_df`` when raters add nothing).

        With ``raters_clustered`` the split is by what each part rests on, not by source: the
        raters' mean square (``raters_clustered``, on ``raters_df``) and the rest of ``total``
        (on ``design_df``). A spread estimated near 0 then still leaves the interval the few df
        of few raters, where the split by source would hand it the design's many.
        """
        by_source = self._by_source_df()
        if math.isfinite(self.raters_clustered) and self.raters_clustered > 0 and self.total > 0:
            clustered = min(self.raters_clustered, self.total)
            denom = ((self.total - clustered) ** 2 / max(self.design_df, 1.0)
                     + clustered**2 / max(self.raters_clustered_df, 1.0))
            # Either split can hand the interval more df than it has (the shares are estimated
            # from few raters): keep the fewer. Where the raters' mean square carries half the
            # variance or more, their own R − 1 df, the textbook's conservative answer to Welch's
            # problem: Satterthwaite's df from such shares ran liberal (100 tasks, one label per
            # answer, a spread of 0.4 points: 92-93% -> 94-96%).
            df = min(float(self.total**2 / denom), by_source)
            return min(df, max(self.raters_clustered_df, 1.0)) if clustered >= self.total / 2 else df
        return by_source

    def panel_only(self) -> VarianceParts:
        """These parts without the raters' component: this panel's own interval's variance."""
        return dataclasses.replace(self, raters=0.0, raters_df=_NAN, raters_clustered=_NAN, raters_clustered_df=_NAN,
                                   refused=None)

    def refuse(self, reason: str, level: float) -> VarianceParts:
        """These parts with no interval, for ``reason``; the panel's own half-width is added to it.

        The reason names the fix; the this-panel-only interval is one, so its half-width is given
        beside it (a reader sees what ``--interval panel`` would print without running it).

        Args:
            reason: Why no interval can be given (e.g. :func:`judgelab.calibration.stats._raters.two_rater_refusal`).
            level: Confidence level of the panel's half-width.

        Returns:
            A copy with :attr:`refused` set to the reason, the fix and that half-width.

        Examples:
            >>> VarianceParts(0.01, 99.0).refuse("only 2 raters", 0.95).refused
            "only 2 raters; this panel's own interval (±0.198 here) is `--interval panel`, or add a third rater"
        """
        panel = self.panel_only()
        half = _half_width(panel, level)
        where = f" (±{half:.3g} here)" if math.isfinite(half) else ""
        return dataclasses.replace(self, refused=f"{reason}; this panel's own interval{where} is "
                                                 "`--interval panel`, or add a third rater")

    def _by_source_df(self) -> float:
        """Satterthwaite's df of ``design`` plus ``raters`` (clipped at 0), split by source."""
        raters = max(self.raters, 0.0)
        if not raters > 0:
            return self.design_df
        denom = self.design**2 / max(self.design_df, 1.0) + raters**2 / max(self.raters_df, 1.0)
        return float((self.design + raters) ** 2 / denom) if denom > 0 else self.design_df


@dataclass(frozen=True)
class ClusterDesign:
    """Integer codes of a stratified cluster sample, one entry per row.

    Attributes:
        cluster: Cluster code of each row, ``0..G-1``.
        stratum_of_cluster: Stratum code of each cluster, ``0..H-1``.
        stratum_pool: Clusters of the pool in each stratum (``Σ 1/π`` over the stratum's sampled
            clusters), or ``None`` when the sample is not stratified or the weights are unknown.
    """

    cluster: npt.NDArray[np.intp]
    stratum_of_cluster: npt.NDArray[np.intp]
    stratum_pool: npt.NDArray[np.float64] | None = None

    @property
    def n_clusters(self) -> int:
        """Clusters in the sample."""
        return int(self.stratum_of_cluster.size)


def cluster_design(
    clusters: npt.ArrayLike,
    strata: npt.ArrayLike | None = None,
    *,
    weights: npt.ArrayLike | None = None,
    func: str = "cluster_design",
) -> ClusterDesign:
    """Codes for clusters nested in strata.

    Args:
        clusters: Cluster id per row (e.g. the task id of each answer).
        strata: Stratum per row, or ``None`` for an unstratified sample. Every row of one cluster
            must be in the same stratum (clusters are drawn within strata).
        weights: Design weight (``1/π`` of the row's cluster) per row; with ``strata`` it gives
            each stratum's size in the pool, which the pool's own variance needs
            (:func:`design_variance`).
        func: Name of the public function, for error messages.

    Returns:
        A :class:`ClusterDesign`.

    Raises:
        ValueError: If the lengths differ, ids are missing, or a cluster spans two strata.
    """
    ids = np.asarray(clusters)
    n = ids.shape[0] if ids.ndim == 1 else -1
    if ids.ndim != 1:
        raise ValueError(f"{func}: clusters must be one id per row; got shape {ids.shape}")
    _, cluster = np.unique(ids, return_inverse=True)
    cluster = cluster.ravel().astype(np.intp)
    n_clusters = int(cluster.max()) + 1 if n else 0
    if strata is None:
        return ClusterDesign(cluster, np.zeros(n_clusters, dtype=np.intp))
    st = np.asarray(strata)
    if st.shape != (n,):
        raise ValueError(f"{func}: strata must be one stratum per row ({n}); got shape {st.shape}")
    _, st_codes = np.unique(st.astype(str), return_inverse=True)
    st_codes = st_codes.ravel().astype(np.intp)
    of_cluster = np.full(n_clusters, -1, dtype=np.intp)
    of_cluster[cluster] = st_codes
    if (of_cluster[cluster] != st_codes).any():
        bad = ids[of_cluster[cluster] != st_codes][0]
        bad = bad.item() if isinstance(bad, np.generic) else bad
        raise ValueError(
            f"{func}: cluster {bad!r} spans more than one stratum; clusters must be drawn within "
            "strata (pass strata=None, or clusters that nest in them)"
        )
    if weights is None:
        return ClusterDesign(cluster, of_cluster)
    w = np.asarray(weights, dtype=float)
    rows = np.bincount(cluster, minlength=n_clusters)
    w_cluster = np.bincount(cluster, weights=w, minlength=n_clusters) / np.maximum(rows, 1)
    pool = np.bincount(of_cluster, weights=w_cluster, minlength=int(of_cluster.max()) + 1 if n_clusters else 0)
    return ClusterDesign(cluster, of_cluster, pool.astype(float))


def design_variance(
    psi: npt.ArrayLike, design: ClusterDesign, *, domain: npt.ArrayLike | None = None
) -> tuple[float, float, int, int]:
    """Stratified with-replacement variance of ``Σ ψ`` from cluster totals (module docstring).

    Args:
        psi: Influence value per row.
        design: The rows' clusters and strata.
        domain: Whether each row is in the estimate (e.g. the family's answers for a family's
            residual); default: the rows with a non-zero influence value. Give it where a row in
            the estimate can have a zero influence (a residual of 0 where every answer agrees).

    Returns:
        ``(variance, df, n_clusters, n_strata)`` over the clusters with a row in the domain (the
        clusters the estimate touches). ``df`` is Satterthwaite's for the
        sum of the strata's variances, ``(Σ v_h)² / Σ v_h² / (n_h − 1)`` (Kish 1965, §8.4), at
        most clusters − strata: a few small strata that carry most of the variance leave few
        degrees of freedom. Degenerate case: fewer than two such clusters gives
        ``(nan, 0, G, H)``.

    Examples:
        >>> d = cluster_design([0, 1, 2, 3])
        >>> v, df, g, h = design_variance([1.0, -1.0, 2.0, -2.0], d)
        >>> round(v, 6), df  # 4/3 * (1 + 1 + 4 + 4)
        (13.333333, 3.0)
    """
    values = np.asarray(psi, dtype=float)
    n_clusters = design.n_clusters
    z = np.bincount(design.cluster, weights=values, minlength=n_clusters)
    inside = values != 0 if domain is None else np.asarray(domain, dtype=bool)
    touched = np.bincount(design.cluster, weights=inside.astype(float), minlength=n_clusters) > 0
    strata = design.stratum_of_cluster
    n_strata = int(strata.max()) + 1 if n_clusters else 0
    n_h = np.bincount(strata[touched], minlength=n_strata).astype(float)
    g, h = int(touched.sum()), int((n_h > 0).sum())
    if g < 2:
        return _NAN, 0.0, g, h
    # Clusters the estimate does not touch are in the sample with z = 0 (domain estimation), so
    # they count in their stratum's mean and size.
    n_all = np.bincount(strata, minlength=n_strata).astype(float)
    total_h = np.bincount(strata, weights=z, minlength=n_strata)
    mean_h = total_h / np.maximum(n_all, 1)
    lonely = n_all[strata] < 2
    dev = np.where(lonely, z, z - mean_h[strata])
    factor = np.where(lonely, 1.0, n_all[strata] / np.maximum(n_all[strata] - 1, 1))
    v_h = np.bincount(strata, weights=factor * dev**2, minlength=n_strata)
    variance = float(v_h.sum())
    pool = design.stratum_pool
    if pool is not None and n_strata > 1:
        # The pool's stratum shares are themselves a sample (module docstring): Σ_h Z_h² / N_h.
        variance += float((total_h**2 / np.maximum(pool, 1.0)).sum())
    df_max = float(max(g - h, 1))
    usable = n_h >= 2
    denom = float((v_h[usable] ** 2 / (n_h[usable] - 1)).sum())
    df = min(df_max, variance**2 / denom) if denom > 0 else df_max
    return variance, float(max(df, 1.0)), g, h


def t_interval(estimate: float, parts: VarianceParts, level: float) -> tuple[float, float]:
    """``estimate ± t_{df, (1+level)/2} · √variance``; ``(nan, nan)`` when undefined or refused."""
    if parts.refused is not None or not math.isfinite(estimate):
        return _NAN, _NAN
    half = _half_width(parts, level)
    return estimate - half, estimate + half


def _half_width(parts: VarianceParts, level: float) -> float:
    """``t_{df, (1+level)/2} · √variance`` (``nan`` when the variance is undefined)."""
    var = parts.total
    if not (math.isfinite(var) and var >= 0):
        return _NAN
    return float(special.stdtrit(max(parts.df, 1.0), 0.5 + level / 2)) * math.sqrt(var)


def narrower_note(estimate: float, parts: VarianceParts, level: float) -> str:
    """What the line adds when the raters' two-way interval is narrower than this panel's own.

    The two-way variance takes the raters' noise out of the design variance and puts back the
    spread of their means; when those means agree more closely than their noise predicts the
    interval for raters like these comes out narrower than the this-panel-only one. Forcing it
    wider over-covers where there is no spread (``bench/coverage.py --rater-study``), so it is
    kept, and said ("" when it is not narrower).
    """
    if not math.isfinite(parts.raters_clustered) or parts.refused is not None:
        return ""
    lo, hi = t_interval(estimate, parts, level)
    panel_lo, panel_hi = t_interval(estimate, parts.panel_only(), level)
    if not hi - lo < panel_hi - panel_lo:
        return ""
    half, panel_half = (hi - lo) / 2, (panel_hi - panel_lo) / 2
    # Both to the same decimals, three significant digits of the wider ("±11.3 against ±12.0").
    digits = max(0, 2 - math.floor(math.log10(panel_half))) if panel_half > 0 else 3
    return (f"; narrower than this panel's own interval (±{half:.{digits}f} against ±{panel_half:.{digits}f}): "
            "the raters' means agree more closely than their labels' noise predicts")


def reliability_note(parts: VarianceParts) -> str | None:
    """Why an interval is unreliable (too few clusters or degrees of freedom), or ``None``.

    The coverage suite (``tests/stats/test_coverage.py``, ``bench/coverage.py``) shows the t
    interval within 93-97% from 15 tasks up; below :data:`MIN_CLUSTERS` tasks, or with fewer than
    :data:`MIN_DF` degrees of freedom (e.g. a panel of two raters who differ in leniency), it is
    printed but marked unreliable. An interval refused (:attr:`VarianceParts.refused`) gives its
    reason.
    """
    if parts.refused is not None:
        return parts.refused
    if parts.n_clusters < MIN_CLUSTERS:
        return (
            f"only {parts.n_clusters} tasks: intervals are checked from {MIN_CLUSTERS} tasks up, so "
            "this one is unreliable"
        )
    if math.isfinite(parts.df) and parts.df < MIN_DF:
        return (
            f"only {parts.df:.1f} degrees of freedom (few raters or strata carry the variance): "
            "this interval is unreliable"
        )
    return None


def rare_event_variance(n: npt.ArrayLike, *, events: float = 3.0, scale: float = 100.0) -> npt.NDArray[np.float64]:
    """The variance of a mean of ``n`` terms if ``events`` of them were ``±scale`` and the rest 0.

    The floor under the design variance of the report's residuals and gap
    (:func:`judgelab.calibration.stats.family_residuals`), under the pool's own variance in an active
    design's looks (:func:`judgelab.calibration.active.look_statistics`) and, for a sample read without a
    design, under a look's whole variance (``min_variance`` of
    :func:`judgelab.calibration.active.repeated_intervals`): with no disagreement among ``n`` labelled units the
    data cannot tell a rate of 0 from one of ``3/n`` (the "rule of three", the 95% upper bound after ``n``
    clean trials; Hanley & Lippman-Hand 1983, JAMA 249:1743-1745), so the interval should not be
    narrower than that rate allows. It falls as ``1/n²``, so it only binds while disagreements
    are rarer than ``events`` in ``n``.

    Args:
        n: Units (e.g. tasks) in the sample at each look.
        events: Pseudo-disagreements (3: the rule of three).
        scale: Size of one (100: a residual of one verdict in percentage points).

    Examples:
        >>> rare_event_variance([15, 150]).round(2).tolist()
        [133.33, 1.33]

        The rule of three against scipy's exact one-sided 95% bound after ``n`` clean trials:

        >>> from scipy.stats import binomtest
        >>> [round(binomtest(0, n).proportion_ci(0.90).high * n, 2) for n in (15, 30, 150)]
        [2.72, 2.85, 2.97]
    """
    size = np.maximum(np.asarray(n, dtype=float), 1.0)
    return np.asarray(events * scale**2 / size**2, dtype=float)


def rare_event_floor(
    variance: float, coef: npt.ArrayLike, disagreement: npt.ArrayLike, *, scale: float = 1.0, events: float = 3.0
) -> tuple[float, float]:
    """``variance`` raised to the rule of three's for an estimate ``Σ c_i x_i`` of disagreements.

    The floor is the variance if ``events`` of the estimate's units, drawn at random, had
    disagreed by as much as the disagreements seen (by one when none were):
    ``events · E[c²] · size²``. A unit is then ``1/rms(c)`` rows (an answer of a mean over
    answers; fewer with unequal design weights: Kish's effective size), and the floor is
    :func:`rare_event_variance` of that many units. A ``nan`` variance (too few clusters) stays.

    Args:
        variance: The estimate's variance from the data.
        coef: ``c_i`` of the rows in the estimate.
        disagreement: Each row's disagreement (e.g. judge − human), in the units of one.
        scale: Factor on the estimate (100 for percentage points).
        events: Pseudo-disagreements (3: the rule of three).

    Returns:
        ``(variance, units)``: the larger of the two, and the units the floor counted when it was
        raised (else 0, for :meth:`VarianceParts.floor_note`).

    Examples:
        >>> rare_event_floor(0.0, np.full(30, 1 / 30), np.zeros(30), scale=100.0)  # no disagreement in 30
        (33.333333333333336, 30.0)
        >>> rare_event_floor(0.0, np.full(30, 1 / 30), np.r_[0.5, np.zeros(29)], scale=100.0)  # half a verdict
        (8.333333333333334, 30.0)
        >>> rare_event_floor(50.0, np.full(30, 1 / 30), np.zeros(30), scale=100.0)  # the data's is larger
        (50.0, 0.0)
    """
    c = np.asarray(coef, dtype=float)
    size_of = np.abs(np.asarray(disagreement, dtype=float))
    if c.size == 0 or not (c != 0).any() or math.isnan(variance):
        return variance, 0.0
    units = float(1.0 / np.sqrt(np.mean(c**2)))
    seen = size_of[size_of > 0]
    size = float(seen.mean()) if seen.size else 1.0
    floor = float(rare_event_variance(units, events=events, scale=scale * size))
    return (floor, units) if variance < floor else (variance, 0.0)
