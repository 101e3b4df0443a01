"""How much a different panel of raters would move an estimate: the raters' variance component.

Raters are *crossed* with answers: the same few people label answers of every task. A rater who
is persistently lenient moves every answer they label, so the panel's mean leniency is one
shared error in every human mean, which resampling tasks cannot see. To say something about
"judge minus human" rather than "judge minus these five people", the interval adds the
variance of that shared error over panels drawn from the same population of raters::

    V_raters = σ²_rater · Σ_r π_r²

where ``σ²_rater`` is the variance of the raters' leniencies (their main effects) and ``π_r``
is rater ``r``'s share of the estimate: the sum over their labels of ``∂θ̂/∂y`` (for a
family's residual, ``−w_a / (m_a Σ w)`` per label). Leniency cancels where every rater labels
both families alike (the self-preference gap of a fully crossed panel), and ``π`` says so.

Resampling tasks already carries the spread *within* answers (a rater's noise on one answer is
independent across tasks), so nothing else is added: resampling raters inside answers as well,
the former two-stage bootstrap, counted that spread twice (Davison & Hinkley 1997, §3.8).

``σ²_rater`` is estimated from the labels (:func:`rater_spread`):

* **within answers** (when every rater shares answers with others and the raters are connected
  through them): least squares with a fixed effect per answer and per rater, so each answer's
  quality cancels; ``σ̂² = (Σ (β̂_r − β̄)² − s² tr C⁺) / (R − 1)`` removes the estimation noise of
  the ``β̂`` (``C`` the reduced normal matrix of the rater effects, ``s²`` the residual variance);
* **between raters** otherwise (one label per answer): the one-way random-effects ANOVA of labels
  by rater, ``σ̂² = (MS_between − MS_within) / n₀``, which needs answers dealt to raters at random.
  Given the labels' covariates (the judge's reading of each answer and its family, as the
  residuals and PPI pass them), the same moments as within answers come from least squares on
  rater effects and the covariates: what the judge sees of an answer's quality no longer counts
  as noise in a rater's mean (a fifth less noise in the coverage model's 1-5 scores). With the
  labels' tasks the noise is the task-clustered sandwich's (CR1): what the covariates leave of a
  task's quality is shared by its answers, which different raters label.

Either way ``σ̂²`` rests on ``R − 1`` degrees of freedom at most (Satterthwaite's for the
difference of mean squares), so five raters give a wide rater component; with one rater it is not
estimable and the interval can only speak for that rater.

**The two-way interval: never "no spread".** With few raters the difference ``gross − noise``
(``gross`` the raters' mean square, ``noise`` the part of it the labels' own noise makes) is often
negative; cut off at zero (at 30 tasks, one label per answer and a real spread of 0.4 points, a
quarter of the four-rater panels) the "raters like these" interval equalled the this-panel-only
one and covered the population truth 82-83%. The residuals and PPI therefore add ``π``-weighted
``gross − noise`` *unclipped* to the design variance, and read the total as two parts by what each
rests on (:attr:`judgelab.calibration.stats.VarianceParts.raters_clustered`): the raters' mean square
``Σ π_r² · gross`` on ``R − 1`` df, and the rest (the design variance less the rater noise it
holds) on the design's df, with Satterthwaite's df for the sum (or the split by source, if fewer),
and the raters' own ``R − 1`` df where their mean square carries half the variance or more:
shares estimated from four raters made Satterthwaite's df liberal (92-93% at 100 tasks). That is the method-of-moments
variance of a sample crossed by tasks and raters (Cameron, Gelbach & Miller 2011, two-way
clustering), and never below ``Σ π_r² · gross``. A spread estimated at or below its noise is thus
not read as none: the interval leans on the spread of the raters' own means and their few df,
and the report line says so ("... within the noise of 4 raters' means: not read as none, ..."). When
the raters' means agree more closely than their noise predicts, the total is below the design
variance and the interval narrower than this panel's own; it is kept (forcing it wider covered
96-99.5% where there is no spread) and the line gives both half-widths
(:func:`judgelab.calibration.stats._variance.narrower_note`).
Simulated (``bench/coverage.py --rater-study``, 400 datasets a cell): with one label per answer
from four raters the former floor (below) covered 97.5-99.7% with no spread and up to 99% at 15
tasks with one; the two-way interval covers 93-97% there except a few 15-task figures at 97-98%,
where the this-panel-only interval itself covers 97-99%.

**Two raters: refused where the panel's mean leniency enters.** With two raters the spread of
their leniency rests on one squared difference, 1 df, and no interval built on it is both honest
and of use: an estimate the raters move together (a family's residual, a PPI mean: the raters'
shares ``π_r`` sum to ``±1``) is off by the panel's mean leniency ``(ℓ₁ + ℓ₂)/2``, which the data
cannot see, and its ratio to the one difference the data show, ``(ℓ₁ − ℓ₂)/2``, is Cauchy: the
honest interval is a t(1), 12.7 standard errors wide (±2.8-3.4 points on a 1-5 scale at 100 tasks,
marked unreliable in 58-84% of datasets); read on more df where the two raters happened to agree,
unmarked, it covered 43-71% (100 tasks, one label per answer, a spread of 0.4 points; 300 datasets a
cell). Such an interval is therefore refused
(:func:`two_rater_refusal`): the line says why, and that this panel's own interval
(``interval="panel"``) or a third rater is the fix. A contrast whose shares sum to 0 (the
self-preference gap: each family's labels carry ``±1``) does not see the panel's mean leniency at
all, only the difference between the two raters weighted by how unevenly they labelled the two
families; it keeps the two-way interval (93-97% in ``bench/coverage.py --two-raters``), unless
the two raters' labels fall so unevenly on the two families that their difference carries half its
variance or more (its df are then the raters' one), or that their leniencies cannot be told from
the families': it is refused too (:data:`TWO_RATERS_UNEVEN`; where one rater labelled each family
the former interval was a t(1) marked unreliable, ±2.5-5.5 points on 1-5, or, where the two
raters' means happened to agree, unmarked and ±0.0-0.3).

**The floor** (kept for :func:`rater_part`'s callers, the active design). ``σ̂²`` clipped at 0 is
raised to ``noise/√(R−1)``, 0.71 of the estimate's standard error under no spread
(``√(2/(R−1)) · noise``), with ``R − 1`` df, and :meth:`RaterSpread.note` says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import sparse, stats

__all__ = [
    "RATER_SCOPES",
    "TWO_RATERS_UNEVEN",
    "RaterPart",
    "RaterScope",
    "RaterSpread",
    "rater_part",
    "rater_spread",
    "rater_terms",
    "rater_variance",
    "two_rater_refusal",
]

RaterScope = Literal["raters", "panel"]
"""Which raters an interval speaks for.

``"raters"`` (default): raters like these, drawn from the same population; the interval adds the
raters' variance component (:mod:`judgelab.calibration.stats._raters`). ``"panel"``: this panel only;
the interval resamples tasks and treats the raters' leniencies as fixed.
"""

RATER_SCOPES: tuple[RaterScope, ...] = ("raters", "panel")

_NAN = float("nan")
#: Below this p-value two raters' shares of a contrast are more uneven than dealing them at random
#: would make them (:func:`two_rater_refusal`): about 1 contrast in 100 dealt at random is refused.
_UNEVEN_P = 0.01


@dataclass(frozen=True)
class RaterSpread:
    """The variance of raters' leniencies (main effects), estimated from their labels.

    Attributes:
        variance: ``σ̂²_rater`` in squared score units (clipped at 0; ``nan`` with one rater).
        df: Its Satterthwaite degrees of freedom (at most ``n_raters − 1``).
        n_raters: Raters with labels.
        how: ``"within answers"``, ``"between raters"`` or ``"one rater"``.
        floored: ``variance`` is the floor (module docstring), not the estimate, which was lower.
        estimate: The estimate before the floor (clipped at 0).
        adjusted: Between raters, the labels' covariates (the judge's reading of each answer)
            were taken out before the raters were compared.
        gross: The raters' mean square in the units of ``variance``: the spread of their
            estimated effects, estimation noise included (``σ̂²`` plus the noise term), on
            ``n_raters − 1`` df; ``nan`` when not estimated.
        noise: The part of ``gross`` that the labels' own noise makes with no spread at all.
        effects: Each rater's estimated effect, centred (``β̂_r``, in the order of the sorted
            rater ids), when estimated by least squares; ``()`` otherwise.
        effect_noise: The variance of each ``β̂_r`` from the labels' noise alone (``Var β̂_r``
            with no spread), beside ``effects``.
    """

    variance: float
    df: float
    n_raters: int
    how: Literal["within answers", "between raters", "one rater"]
    floored: bool = False
    estimate: float = _NAN
    adjusted: bool = False
    gross: float = _NAN
    noise: float = _NAN
    effects: tuple[float, ...] = ()
    effect_noise: tuple[float, ...] = ()

    def note(self, *, net: bool = False) -> str:
        """How the spread was estimated, in words for the report line.

        Args:
            net: Describe the two-way interval (module docstring), which uses ``gross − noise``
                unclipped, rather than ``variance`` (clipped and floored).
        """
        how = f"{self.how} after the judge's reading" if self.adjusted else self.how
        if net:
            if not self.gross < self.noise:
                return f"leniency spread estimated {how}"
            # Not read as no spread: below its noise, the interval leans on the raters' means.
            return (f"leniency spread estimated {how} at {self.gross - self.noise:.2g}, within the noise of "
                    f"{self.n_raters} raters' means: not read as none, the interval carries their spread on "
                    f"{self.n_raters - 1} df")
        if not self.floored:
            return f"leniency spread estimated {how}"
        return (f"leniency spread estimated {how} at {self.estimate:.2g}, raised to the floor "
                f"{self.variance:.2g} that {self.n_raters} raters cannot rule out")


def rater_spread(
    answer: npt.ArrayLike,
    rater: npt.ArrayLike,
    score: npt.ArrayLike,
    *,
    covariates: npt.ArrayLike | None = None,
    clusters: npt.ArrayLike | None = None,
) -> RaterSpread:
    """Estimate the variance of raters' leniencies from a long label table.

    Args:
        answer: Answer id of each label.
        rater: Rater id of each label.
        score: The label (0/1 pass verdict or a score).
        covariates: Optional answer-level predictors of the label, one row per label (a vector
            or a ``(labels, k)`` array): the judge's score and the answer's family. Between
            raters they are taken out before the rater effects are compared (module docstring);
            within answers the answers' own effects already hold them.
        clusters: Optional sampling cluster (task) of each label, with ``covariates``: what is
            left of a task's quality after them is shared by its answers, which different raters
            label, so the noise in the raters' effects is the task-clustered sandwich's, not
            independent labels'.

    Returns:
        A :class:`RaterSpread` (module docstring for the two estimators). Degenerate case: one
        rater gives ``variance = nan`` and ``how = "one rater"``.

    Raises:
        ValueError: On unequal lengths or missing scores.

    Examples:
        >>> # Two raters on the same four answers; rater b is always one point higher.
        >>> s = rater_spread([1, 2, 3, 4] * 2, ["a"] * 4 + ["b"] * 4, [1, 2, 4, 5, 2, 3, 5, 6])
        >>> s.how, round(s.variance, 6), s.n_raters
        ('within answers', 0.5, 2)
    """
    ans = np.unique(np.asarray(answer), return_inverse=True)[1].ravel()
    rat = np.unique(np.asarray(rater), return_inverse=True)[1].ravel()
    y = np.asarray(score, dtype=float)
    if not (ans.shape == rat.shape == y.shape):
        raise ValueError("rater_spread: answer, rater and score must have one entry per label")
    if not np.isfinite(y).all():
        raise ValueError("rater_spread: scores must not be missing")
    n_raters = int(rat.max()) + 1 if rat.size else 0
    if n_raters < 2:
        return RaterSpread(_NAN, _NAN, n_raters, "one rater")
    within = _within_answers(ans, rat, y, n_raters)
    if within is not None:
        return within
    if covariates is None:
        return _between_raters(rat, y, n_raters)
    x = np.asarray(covariates, dtype=float)
    x = x.reshape(y.size, -1) if x.size else np.empty((y.size, 0))
    if x.shape[0] != y.size or not np.isfinite(x).all():
        raise ValueError("rater_spread: covariates must be finite, one row per label")
    cl = None if clusters is None else np.unique(np.asarray(clusters), return_inverse=True)[1].ravel()
    if cl is not None and cl.shape != y.shape:
        raise ValueError("rater_spread: clusters must hold one id per label")
    adjusted = _between_raters_adjusted(rat, y, n_raters, x, cl)
    return adjusted if adjusted is not None else _between_raters(rat, y, n_raters)


def rater_variance(
    gradient: npt.ArrayLike, rater: npt.ArrayLike, spread: RaterSpread, *,
    part: Literal["spread", "gross", "net"] = "spread",
) -> float:
    """``σ̂²_rater · Σ_r π_r²``: the variance a different panel would add to the estimate.

    Args:
        gradient: ``∂θ̂/∂y_k`` per label (how much the estimate moves per point of that label).
        rater: Rater id of each label.
        spread: :func:`rater_spread` of the same labels.
        part: Which ``σ̂²``: ``"spread"`` (:attr:`RaterSpread.variance`, clipped and floored),
            ``"gross"`` (the raters' mean square, noise included: the part of the two-way
            variance that rests on the raters' df) or ``"net"`` (``gross − noise``, unclipped).

    Returns:
        The variance (``nan`` when ``spread`` is not estimable).
    """
    codes = np.unique(np.asarray(rater), return_inverse=True)[1].ravel()
    share = np.bincount(codes, weights=np.asarray(gradient, dtype=float))
    if part != "spread" and len(spread.effects) == share.size:
        # Each rater's own deviation and noise, at their own share: a rater with two labels has a
        # noisy effect, which averaged over the panel took the noise of the raters who carry the
        # estimate far above theirs (the demo with one such rater: ±4.0 against the panel's ±12.0).
        # E[β̂_r² − Var β̂_r] = σ² (R − 1)/R for centred effects, so each is unbiased after R/(R − 1).
        scale = share.size / (share.size - 1) * share**2
        gross = float((scale * np.square(spread.effects)).sum())
        return gross if part == "gross" else gross - float((scale * np.asarray(spread.effect_noise)).sum())
    sigma2 = {"spread": spread.variance, "gross": spread.gross, "net": spread.gross - spread.noise}[part]
    return float(sigma2 * (share**2).sum())


TWO_RATERS_UNEVEN = ("only 2 raters, whose labels fall unevenly on what this estimate compares: the difference "
                     "between their leniencies rests on 1 degree of freedom and carries much of this estimate's "
                     "error, so no interval can speak for raters like these")
"""Why a contrast (the gap) is refused with two raters: their shares sum to 0, but the two-way
variance leans on their one df for half or more (:attr:`judgelab.calibration.stats.VarianceParts.df`), or
their leniencies cannot be told from the families' (one rater labelled each family: the spread is
then compared without the family and judge taken out)."""


def two_rater_refusal(gradient: npt.ArrayLike, rater: npt.ArrayLike, spread: RaterSpread) -> str | None:
    """Why two raters cannot give this estimate an interval for raters like these, or ``None``.

    With two raters the spread of their leniency rests on 1 df (module docstring): an estimate
    whose raters' shares do not sum to 0 moves with the panel's mean leniency, which the data
    cannot see, so its interval is refused. A contrast (shares summing to 0, as the gap's do) is
    free of that mean and keeps the two-way interval.

    Args:
        gradient: ``∂θ̂/∂y_k`` per label, as :func:`rater_variance`.
        rater: Rater id of each label.
        spread: :func:`rater_spread` of the same labels.

    Returns:
        The reason, in words for the report line (the caller adds the fix and the panel's
        half-width: :meth:`judgelab.calibration.stats.VarianceParts.refuse`); ``None`` when the estimate may
        have its interval (three raters or more, one rater, or a contrast whose labels the two
        raters share about as evenly as dealing them at random would: a χ²(1) test at 1%).

    Examples:
        >>> s = rater_spread([1, 2, 3, 4] * 2, ["a"] * 4 + ["b"] * 4, [1, 2, 4, 5, 2, 3, 5, 6])
        >>> two_rater_refusal([-0.125] * 8, ["a"] * 4 + ["b"] * 4, s)[:60]  # a residual: shares sum to -1
        'only 2 raters: the spread of their leniency rests on 1 degre'
        >>> two_rater_refusal([-0.25, 0.25] * 4, ["a"] * 4 + ["b"] * 4, s) is None  # a contrast, dealt evenly
        True
    """
    if spread.n_raters != 2:
        return None
    g = np.asarray(gradient, dtype=float)
    codes = np.unique(np.asarray(rater), return_inverse=True)[1].ravel()
    share = np.bincount(codes, weights=g)
    # The panel's mean leniency moves the estimate by Σ_r π_r; rounding leaves ~1e-16 of a gap's 0.
    together = float(share.sum())
    if not abs(together) > 1e-9 * max(float(np.abs(g).sum()), 1e-300):
        # A contrast: free of the mean leniency, not of the two raters' difference, which the design's
        # variance carries only as far as the raters were dealt to the labels at random. Dealt at
        # random, rater a's share has variance p(1 − p)·Σg² (p their share of the labels), so
        # share² / that is χ²(1); beyond its 99th centile the labels fall unevenly (at 75/25 by family
        # the gap's interval covered 89% at 100 tasks).
        p = float(np.mean(codes == 0))
        spread_if_random = p * (1.0 - p) * float((g**2).sum())
        if spread_if_random > 0 and stats.chi2.sf(share[0] ** 2 / spread_if_random, 1) < _UNEVEN_P:
            return TWO_RATERS_UNEVEN
        return None
    return ("only 2 raters: the spread of their leniency rests on 1 degree of freedom and their mean "
            "leniency moves this estimate, so no interval can speak for raters like these (on 1 df it "
            "would be a t(1), 12.7 standard errors wide)")


def _within_answers(
    ans: npt.NDArray[np.intp], rat: npt.NDArray[np.intp], y: npt.NDArray[np.float64], n_raters: int
) -> RaterSpread | None:
    """Fixed answer and rater effects, when the answers shared by raters connect them all."""
    n_answers = int(ans.max()) + 1
    m = np.bincount(ans, minlength=n_answers)
    shared = m[ans] >= 2
    if not shared.any() or np.unique(rat[shared]).size < n_raters:
        return None
    a, r, v = ans[shared], rat[shared], y[shared]
    # C = diag(labels per rater) − Σ_a 1_a 1_aᵀ / m_a, the reduced normal matrix of rater effects.
    inc = sparse.csr_array((np.ones(a.size), (a, r)), shape=(n_answers, n_raters))
    scaled = sparse.csr_array((1.0 / m[a], (a, r)), shape=(n_answers, n_raters))
    c = np.diag(np.bincount(r, minlength=n_raters).astype(float)) - (scaled.T @ inc).toarray()
    # The raters are connected through shared answers iff C has rank R - 1 (one null vector).
    eig = np.linalg.eigvalsh(c)
    if (eig > 1e-9 * max(eig.max(), 1.0)).sum() != n_raters - 1:
        return None
    n_used = int(np.unique(a).size)
    dfe = a.size - n_used - (n_raters - 1)
    if dfe < 1:
        return None
    answer_mean = np.bincount(a, weights=v, minlength=n_answers) / np.maximum(m, 1)
    q = np.bincount(r, weights=v - answer_mean[a], minlength=n_raters)
    # C is a Laplacian with null vector 1 (connected): C⁺ = (C + 11ᵀ/R)⁻¹ − 11ᵀ/R exactly, where
    # a numerical pinv can keep the rounding-size null eigenvalue and blow up.
    ones = np.full((n_raters, n_raters), 1.0 / n_raters)
    c_plus = np.linalg.inv(c + ones) - ones
    beta = c_plus @ q
    # Residuals of the two-way fit, within answers.
    beta_answer = np.bincount(a, weights=beta[r], minlength=n_answers) / np.maximum(m, 1)
    resid = v - answer_mean[a] - beta[r] + beta_answer[a]
    s2 = float((resid**2).sum() / dfe)
    gross = float(((beta - beta.mean()) ** 2).sum() / (n_raters - 1))
    noise = s2 * float(np.trace(c_plus)) / (n_raters - 1)
    return _floored(gross, noise, _difference_df(gross, noise, n_raters - 1, dfe), n_raters, "within answers",
                    effects=beta - beta.mean(), effect_noise=s2 * np.diag(c_plus))


def _between_raters(rat: npt.NDArray[np.intp], y: npt.NDArray[np.float64], n_raters: int) -> RaterSpread:
    """One-way random-effects ANOVA of labels by rater (answers dealt to raters at random)."""
    n_r = np.bincount(rat, minlength=n_raters).astype(float)
    total = float(y.size)
    means = np.bincount(rat, weights=y, minlength=n_raters) / np.maximum(n_r, 1)
    msb = float((n_r * (means - y.mean()) ** 2).sum() / (n_raters - 1))
    dfw = total - n_raters
    msw = float(((y - means[rat]) ** 2).sum() / dfw) if dfw > 0 else 0.0
    n0 = (total - float((n_r**2).sum()) / total) / (n_raters - 1)
    if not n0 > 0:
        return RaterSpread(0.0, float(n_raters - 1), n_raters, "between raters", estimate=0.0, gross=0.0, noise=0.0)
    return _floored(msb / n0, msw / n0, _difference_df(msb, msw, n_raters - 1, max(dfw, 1.0)), n_raters,
                    "between raters")


def _between_raters_adjusted(
    rat: npt.NDArray[np.intp],
    y: npt.NDArray[np.float64],
    n_raters: int,
    x: npt.NDArray[np.float64],
    clusters: npt.NDArray[np.intp] | None = None,
) -> RaterSpread | None:
    """Rater fixed effects after the covariates: least squares of the labels on both.

    The same moments as :func:`_within_answers` with the covariates (and an intercept) in place
    of the answers' effects: ``C = Zᵀ M Z`` with ``M`` the projection off the covariates, ``β̂ = C⁺
    Zᵀ M y``, and ``σ̂² = (Σ (β̂_r − β̄)² − s² tr C⁺) / (R − 1)``. ``None`` when the fit leaves no
    residual df or the raters are not all identified.
    """
    q_basis = _orthonormal(np.column_stack([np.ones(y.size), x]))
    z = np.zeros((y.size, n_raters))
    z[np.arange(y.size), rat] = 1.0
    z_res = z - q_basis @ (q_basis.T @ z)
    y_res = y - q_basis @ (q_basis.T @ y)
    c = z_res.T @ z_res
    eig = np.linalg.eigvalsh(c)
    if (eig > 1e-9 * max(eig.max(), 1.0)).sum() != n_raters - 1:
        return None
    dfe = y.size - q_basis.shape[1] - (n_raters - 1)
    if dfe < 1:
        return None
    ones = np.full((n_raters, n_raters), 1.0 / n_raters)
    c_plus = np.linalg.inv(c + ones) - ones
    beta = c_plus @ (z_res.T @ y_res)
    resid = y_res - z_res @ beta
    s2 = float((resid**2).sum() / dfe)
    gross = float(((beta - beta.mean()) ** 2).sum() / (n_raters - 1))
    noise = s2 * float(np.trace(c_plus)) / (n_raters - 1)
    effect_noise = s2 * np.diag(c_plus)
    if clusters is not None and (g := int(clusters.max()) + 1) > 1:
        # A task's answers share what the covariates leave of its quality, and go to different
        # raters: their effects' noise is correlated, which independent labels overstate (and the
        # spread, their difference, comes out too small). The task-clustered sandwich (CR1).
        lever = z_res @ c_plus  # (labels, R): ∂β̂/∂y
        per_task = np.stack([np.bincount(clusters, weights=lever[:, r] * resid, minlength=g) for r in range(n_raters)],
                            axis=1)
        small = g / (g - 1) * (y.size - 1) / dfe
        effect_noise = small * (per_task**2).sum(axis=0)
        noise = float(effect_noise.sum()) / (n_raters - 1)
    return _floored(gross, noise, _difference_df(gross, noise, n_raters - 1, dfe), n_raters, "between raters",
                    adjusted=True, effects=beta - beta.mean(), effect_noise=effect_noise)


def _orthonormal(design: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """An orthonormal basis of the columns of ``design`` (dependent columns dropped)."""
    u, sv, _ = np.linalg.svd(design, full_matrices=False)
    return u[:, : int((sv > 1e-10 * max(sv.max(initial=0.0), 1.0)).sum())]


def _floor_share(n_raters: int) -> float:
    """The floor as a share of the noise term (module docstring)."""
    return 1.0 / math.sqrt(n_raters - 1)


def _floored(
    gross: float,
    noise: float,
    df: float,
    n_raters: int,
    how: Literal["within answers", "between raters"],
    *,
    adjusted: bool = False,
    effects: npt.NDArray[np.float64] | None = None,
    effect_noise: npt.NDArray[np.float64] | None = None,
) -> RaterSpread:
    """``gross − noise`` clipped at 0 and raised to the few-raters floor (module docstring)."""
    estimate = max(gross - noise, 0.0)
    floor = noise * _floor_share(n_raters)
    fx = () if effects is None else tuple(map(float, effects))
    fx_noise = () if effect_noise is None else tuple(map(float, effect_noise))
    if estimate >= floor:
        return RaterSpread(estimate, df, n_raters, how, estimate=estimate, adjusted=adjusted, gross=gross,
                           noise=noise, effects=fx, effect_noise=fx_noise)
    # The floor stands in for an estimate on R − 1 df: the t interval keeps that many for it.
    return RaterSpread(floor, float(n_raters - 1), n_raters, how, floored=True, estimate=estimate,
                       adjusted=adjusted, gross=gross, noise=noise, effects=fx, effect_noise=fx_noise)


def _difference_df(gross: float, noise: float, df_gross: float, df_noise: float) -> float:
    """Satterthwaite's df of ``gross − noise`` (two independent mean squares), at most ``df_gross``."""
    if not gross > noise:
        return float(df_gross)
    denom = gross**2 / df_gross + noise**2 / df_noise
    return float(min(df_gross, (gross - noise) ** 2 / denom)) if denom > 0 else float(df_gross)


@dataclass(frozen=True)
class RaterPart:
    """The raters' part of an estimate's variance (:func:`rater_terms`).

    Attributes:
        variance: ``σ̂²_rater · Σ_r π_r²`` (0 when the interval speaks for the panel only).
        df: Its degrees of freedom (``nan`` when not estimated).
        scope: Which raters the interval speaks for, in words.
        clustered: ``Σ_r π_r²`` times the raters' mean square, for
            :attr:`judgelab.calibration.stats.VarianceParts.raters_clustered` (``nan`` when not estimated).
        clustered_df: The mean square's df: raters minus one.
        net: ``Σ_r π_r²`` times ``gross − noise`` (may be negative), for
            :attr:`judgelab.calibration.stats.VarianceParts.raters` beside ``clustered``.
        net_scope: ``scope`` for that two-way interval.
        refused: Why the interval for raters like these is refused (:func:`two_rater_refusal`),
            else ``None``.
    """

    variance: float
    df: float
    scope: str
    clustered: float = _NAN
    clustered_df: float = _NAN
    net: float = 0.0
    net_scope: str = ""
    refused: str | None = None


def rater_part(
    gradient: npt.ArrayLike, rater_level: object, n: int, scope: RaterScope, *,
    covariates: npt.ArrayLike | None = None,
) -> tuple[float, float, str]:
    """:func:`rater_terms` as ``(variance, df, scope in words)``.

    Args:
        gradient: As :func:`rater_terms`.
        rater_level: As :func:`rater_terms`.
        n: Answers.
        scope: ``"raters"`` or ``"panel"``.
        covariates: As :func:`rater_terms`.

    Returns:
        ``(variance, df, scope in words)``.
    """
    part = rater_terms(gradient, rater_level, n, scope, covariates=covariates)  # legacy: no clusters
    return part.variance, part.df, part.scope


def rater_terms(
    gradient: npt.ArrayLike, rater_level: object, n: int, scope: RaterScope, *,
    covariates: npt.ArrayLike | None = None, clusters: npt.ArrayLike | None = None,
) -> RaterPart:
    """The raters' variance of an estimate over ``n`` answers, its df and the scope in words.

    Args:
        gradient: ``∂θ̂/∂h_a`` per answer: how the estimate moves with the answer's human score
            (a label moves its answer's mean-rule score by ``1/m_a``).
        rater_level: ``None`` or a DataFrame with ``answer`` (row position ``0..n−1``),
            ``rater`` and ``score``. A row whose ``rater`` is missing is a settled score (an
            adjudicated label): part of its answer's score, outside the raters' spread. An
            optional ``people`` column (missing: 1) says how many people a row's score is the
            mean of: the row weighs that much in its answer's mean, and a row of more than one
            person (an imported annotator mean) is no rater's label, so it is settled too.
        n: Answers.
        scope: ``"raters"`` or ``"panel"``.
        covariates: Optional predictors of the human score per answer (``n`` rows), e.g. the
            judge's verdict, taken out before raters are compared (:func:`rater_spread`).
        clusters: Optional task of each answer (``n`` entries), for :func:`rater_spread`.

    Returns:
        A :class:`RaterPart`; its variance is 0 when the interval speaks for the panel only
        (asked for, no per-rater labels, or one rater).
    """
    if scope == "panel":
        return RaterPart(0.0, _NAN, "this panel only")
    if not isinstance(rater_level, pd.DataFrame) or not {"answer", "rater", "score"} <= set(rater_level.columns):
        return RaterPart(0.0, _NAN, "this panel only (no per-rater labels to generalise from)")
    rows = rater_level["answer"].to_numpy().astype(np.intp)
    if rows.size == 0 or rows.min() < 0 or rows.max() >= n:
        raise ValueError(f"rater_level['answer'] must be row positions 0..{n - 1}")
    # A row without a rater is a settled score (an admin's adjudication): it counts in its
    # answer's score, but no panel of raters would redraw it, so it enters neither the spread
    # nor the panel's share.
    people = (pd.to_numeric(rater_level["people"]).fillna(1).to_numpy(dtype=float) if "people" in rater_level.columns
              else np.ones(rows.size))
    rated = rater_level["rater"].notna().to_numpy() & (people == 1)
    if not rated.any():
        return RaterPart(0.0, _NAN, "this panel only (no per-rater labels to generalise from)")
    raters = rater_level["rater"].to_numpy()[rated].astype(str)
    x = None if covariates is None else np.asarray(covariates, dtype=float).reshape(n, -1)[rows[rated]]
    cl = None if clusters is None else np.asarray(clusters)[rows[rated]]
    spread = rater_spread(rows[rated], raters, rater_level["score"].to_numpy(float)[rated], covariates=x, clusters=cl)
    if not np.isfinite(spread.variance):
        return RaterPart(0.0, _NAN, "this panel only (one rater: their leniency cannot be told from the judge's)")
    # A label moves its answer's mean by its share of the answer's people (1/m_a with one each).
    per_answer = np.bincount(rows, weights=people, minlength=n)
    g = np.asarray(gradient, dtype=float)[rows[rated]] * people[rated] / per_answer[rows[rated]]
    return RaterPart(rater_variance(g, raters, spread), spread.df,
                     f"raters like these ({spread.n_raters} raters, {spread.note()})",
                     rater_variance(g, raters, spread, part="gross"), float(spread.n_raters - 1),
                     rater_variance(g, raters, spread, part="net"),
                     f"raters like these ({spread.n_raters} raters, {spread.note(net=True)})",
                     two_rater_refusal(g, raters, spread))
