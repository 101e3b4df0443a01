"""The planning model and the allocation of a label budget over strata (pure functions).

See :mod:`judgelab.calibration.design` for the plan these pieces serve.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats as sps

from judgelab.calibration.stats._bootstrap import check_choice
from judgelab.labeler.errors import InputError

__all__ = [
    "ALLOCATIONS",
    "STRATIFIERS",
    "UNCATEGORISED",
    "UNJUDGED",
    "Z95",
    "Allocation",
    "PlanningModel",
    "Stratifier",
    "allocate",
    "allocation_scores",
    "planning_model",
]

Allocation = Literal["proportional", "equal", "neyman", "gap"]
"""How the label budget is spread over strata.

``"proportional"``: ``n_h ∝ N_h``. ``"equal"``: the same number of labels for every family, then
proportional inside each family (in the paired design every sampled task already carries every
family, so this equals ``proportional``). ``"neyman"``: ``n_h ∝ N_h S_h``, the least variance for
the overall mean residual. ``"gap"``: the least variance for the self-preference gap.
"""

Stratifier = Literal["family", "category", "judge_bin", "length_bin"]
"""What an answer can be stratified by."""

ALLOCATIONS: tuple[Allocation, ...] = ("proportional", "equal", "neyman", "gap")
STRATIFIERS: tuple[Stratifier, ...] = ("family", "category", "judge_bin", "length_bin")

#: Two-sided 95% normal quantile, used for every expected half-width.
Z95 = float(sps.norm.ppf(0.975))

UNCATEGORISED = "uncategorised"
UNJUDGED = "unjudged"


# -- planning model ----------------------------------------------------------------------------


@dataclass(frozen=True)
class PlanningModel:
    """What the plan assumes about residuals before (or from a pilot of) human labels.

    Without labels, the human verdict is modelled as disagreeing with the judge's verdict with
    probability ``disagreement`` in every stratum. A residual ``r = judge − human`` on pass
    verdicts is then ``+1`` (judge passes, human fails) or ``−1`` with probability
    ``disagreement`` and 0 otherwise, so in a stratum where the judge passes a share ``π`` its
    variance is ``d − d²(2π − 1)²``: ``d(1 − d)`` inside a judge-verdict bin, up to ``d`` in a
    stratum that mixes verdicts. That difference is what stratifying by the judge's verdict buys.

    Attributes:
        disagreement: Share of answers where a human's pass verdict differs from the judge's.
            The default 0.2 is the planning value in the research notes (σ² ≈ 0.2).
        rho: Correlation, within a task, of the residuals of two families' answers. 0 is the
            conservative default: it claims no gain from pairing until a pilot measures one.
        kappa: Inter-rater Cohen's kappa expected on the double-labelled overlap.
        source: Where the figures came from, in words (``"assumed"`` or ``"pilot of N labels"``).
        n_pilot: Labelled answers the pilot figures rest on (0 when assumed).
    """

    disagreement: float = 0.2
    rho: float = 0.0
    kappa: float = 0.6
    source: str = "assumed"
    n_pilot: int = 0

    def __post_init__(self) -> None:
        """Refuse planning assumptions outside their ranges."""
        if not 0.0 < self.disagreement <= 1.0:
            raise InputError(
                f"disagreement must be in (0, 1]; got {self.disagreement!r}",
                fix="pass the share of answers where humans and the judge disagree, e.g. 0.2.",
            )
        if not -1.0 < self.rho < 1.0:
            raise InputError(f"rho must be in (-1, 1); got {self.rho!r}", fix="e.g. 0 or 0.3.")
        if not -1.0 < self.kappa < 1.0:
            raise InputError(f"kappa must be in (-1, 1); got {self.kappa!r}", fix="e.g. 0.6.")

    def residual_sd(self, judge_pass_share: float) -> float:
        """Modelled sd of a residual in a stratum where the judge passes ``judge_pass_share``.

        An unknown share (``nan``: nobody judged the stratum) is treated as 0.5, the largest sd.
        """
        share = 0.5 if math.isnan(judge_pass_share) else judge_pass_share
        d = self.disagreement
        return math.sqrt(max(d - d * d * (2 * share - 1) ** 2, 0.0))


def planning_model(
    pool: pd.DataFrame,
    *,
    disagreement: float | None = None,
    rho: float | None = None,
    kappa: float = 0.6,
    min_pilot: int = 20,
) -> PlanningModel:
    """The planning model, measured on the pool's pilot labels where there are enough.

    Args:
        pool: A pool as :func:`stratify_pool` takes it; rows with both ``judge_pass`` and
            ``human_pass`` (the mean pass verdict of the answer's human labels) form the pilot.
        disagreement: Override for the disagreement rate (else pilot, else 0.2).
        rho: Override for the within-task residual correlation (else pilot, else 0).
        kappa: Expected inter-rater kappa.
        min_pilot: Labelled answers needed before pilot figures replace the defaults; ρ also
            needs that many tasks with both the judge's family and another family labelled.

    Returns:
        A :class:`PlanningModel` whose ``source`` says which figures were measured.
    """
    measured: list[str] = []
    d_val, rho_val, n_pilot = 0.2, 0.0, 0
    if {"judge_pass", "human_pass"} <= set(pool.columns):
        pilot = pool.dropna(subset=["judge_pass", "human_pass"])
        n_pilot = len(pilot)
        if n_pilot >= min_pilot:
            resid = pilot["judge_pass"].astype(float) - pilot["human_pass"].astype(float)
            # Mean |r| is the disagreement rate for 0/1 verdicts, and stays meaningful when
            # human_pass is a fraction from several raters.
            d_val = float(np.clip(resid.abs().mean(), 0.01, 1.0))
            measured.append("disagreement")
            wide = pilot.assign(r=resid).pivot_table(
                index="task_id", columns="family", values="r", aggfunc="mean"
            )
            if wide.shape[1] >= 2:
                first, rest = wide.iloc[:, 0], wide.iloc[:, 1:].mean(axis=1)
                both = pd.concat([first, rest], axis=1).dropna()
                if len(both) >= min_pilot and both.std().min() > 0:
                    corr = float(both.iloc[:, 0].corr(both.iloc[:, 1]))
                    rho_val = min(max(corr, -0.9), 0.9)
                    measured.append("rho")
    if disagreement is not None:
        d_val = disagreement
        measured = [m for m in measured if m != "disagreement"]
    if rho is not None:
        rho_val = rho
        measured = [m for m in measured if m != "rho"]
    source = f"pilot of {n_pilot} labels ({', '.join(measured)})" if measured else "assumed"
    return PlanningModel(
        disagreement=d_val, rho=rho_val, kappa=kappa, source=source,
        n_pilot=n_pilot if measured else 0,
    )



# -- allocation -------------------------------------------------------------------------------


def allocation_scores(
    method: Allocation,
    *,
    sizes: npt.ArrayLike,
    gap_coef: npt.ArrayLike | None = None,
    total_coef: npt.ArrayLike | None = None,
    family_share: npt.ArrayLike | None = None,
    unit_labels: npt.ArrayLike | None = None,
) -> npt.NDArray[np.float64]:
    """Relative allocation scores ``a_h``: stratum ``h`` gets ``n_h ∝ a_h`` sampling units.

    Derivation. Every estimate the plan cares about is (to first order) a stratified mean
    ``θ̂ = Σ_h ȳ_h·w_h``, whose variance is ``V = Σ_h c_h / n_h`` for a stratum coefficient
    ``c_h``. Spending ``L`` labels with ``m_h`` labels per sampling unit, minimise ``V`` subject
    to ``Σ_h n_h m_h = L``. The Lagrangian gives ``c_h / n_h² = λ m_h``, so

        ``n_h ∝ sqrt(c_h / m_h)``   and   ``V_min = (Σ_h sqrt(c_h m_h))² / L``

    (equivalently, by Cauchy–Schwarz). With one label per unit this is Neyman's rule.

    * ``neyman`` targets the overall mean residual: ``c_h = (N_h/N)² S_h²``, so
      ``n_h ∝ N_h S_h`` (``total_coef`` passes ``c_h``).
    * ``gap`` targets ``Δ = r̄_own − r̄_other``. Unpaired, ``Δ̂`` is a difference of two
      independent family means, ``V = Σ_f Σ_{h∈f} (N_h/N_f)² S_h² / n_h``: so
      ``n_h ∝ (N_h/N_f) S_h``. Summed over a family's strata, the family's share of the budget
      is ∝ its stratified residual sd ``Σ_h (N_h/N_f) S_h`` (between families ∝ residual sd, not
      ∝ pool size), and inside the family it is Neyman. With ``K`` other families the gap uses
      their mean, each other family's coefficient is ``1/K`` and its share shrinks with it.
      Paired by task, ``c_h`` is the variance of the task's contribution
      ``Σ_f g_f (N_h/N_f) r_f``, which carries the within-task covariance ``ρ S_own S_other``.
      ``gap_coef`` passes these ``c_h``.
    * ``proportional``: ``a_h = N_h``. ``equal``: ``a_h = N_h / N_{family(h)}`` (each family's
      scores sum to 1, so each family gets the same budget; ``family_share`` passes the ratio).

    Args:
        method: One of :data:`ALLOCATIONS`.
        sizes: ``N_h``, sampling units per stratum.
        gap_coef: ``c_h`` of the gap (for ``gap``).
        total_coef: ``c_h`` of the overall mean residual (for ``neyman``).
        family_share: ``N_h / N_{family(h)}`` (for ``equal``; ``None`` means proportional).
        unit_labels: ``m_h``, labels per sampling unit (default 1).

    Returns:
        Non-negative scores, one per stratum (not normalised).
    """
    check_choice("allocation_scores", "method", method, ALLOCATIONS)
    n_h = np.asarray(sizes, dtype=float)
    m_h = np.ones_like(n_h) if unit_labels is None else np.asarray(unit_labels, dtype=float)
    if method == "proportional" or (method == "equal" and family_share is None):
        return n_h.copy()
    if method == "equal":
        return np.asarray(family_share, dtype=float).copy()
    coef = gap_coef if method == "gap" else total_coef
    if coef is None:
        raise ValueError(f"allocation_scores: method {method!r} needs its variance coefficients")
    return np.sqrt(np.maximum(np.asarray(coef, dtype=float), 0.0) / m_h)


def allocate(
    scores: npt.ArrayLike,
    n: int,
    *,
    capacity: npt.ArrayLike,
    minimum: int | npt.ArrayLike = 0,
) -> npt.NDArray[np.int64]:
    """Whole numbers of units per stratum: ``n_h ≈ n·a_h/Σa``, within ``[minimum, capacity]``.

    Strata whose share exceeds their capacity are fixed at capacity and the rest re-shared; then
    strata below the minimum are fixed at it and the rest re-shared, until no bound is broken.
    The shares are then rounded by largest remainder (ties to the earlier stratum), so the
    counts sum to exactly ``n``. A stratum whose scores are all zero among the free ones shares
    by capacity.

    Args:
        scores: Allocation scores ``a_h`` (see :func:`allocation_scores`).
        n: Units to allocate in total.
        capacity: Units available per stratum (``N_h``).
        minimum: Smallest count per stratum (capped at its capacity).

    Returns:
        Integer counts per stratum summing to ``n``.

    Raises:
        ValueError: If ``n`` is negative or exceeds the total capacity, or shapes differ.

    Examples:
        >>> allocate([1, 1, 2], 8, capacity=[10, 10, 10]).tolist()
        [2, 2, 4]
        >>> allocate([1, 1, 8], 8, capacity=[10, 10, 3]).tolist()
        [3, 2, 3]
    """
    a = np.asarray(scores, dtype=float)
    cap = np.asarray(capacity, dtype=float)
    lo = np.minimum(np.broadcast_to(np.asarray(minimum, dtype=float), a.shape), cap)
    if a.shape != cap.shape:
        raise ValueError("allocate: scores and capacity must have the same length")
    if n < 0 or n > cap.sum() + 1e-9:
        raise ValueError(f"allocate: n={n} is outside 0..{int(cap.sum())} (the total capacity)")
    if (a < 0).any() or not np.isfinite(a).all():
        raise ValueError("allocate: scores must be finite and non-negative")
    x = np.zeros_like(a)
    fixed = np.zeros(a.shape, dtype=bool)
    lo = np.minimum(lo, n) if lo.sum() > n else lo
    for _ in range(2 * len(a) + 2):
        free = ~fixed
        remaining = n - x[fixed].sum()
        weight = a[free] if a[free].sum() > 0 else cap[free]
        share = np.zeros(free.sum()) if weight.sum() == 0 else remaining * weight / weight.sum()
        x[free] = share
        over = free & (x > cap + 1e-12)
        if over.any():
            x[over], fixed[over] = cap[over], True
            continue
        under = free & (x < lo - 1e-12)
        if under.any() and lo.sum() <= n:
            x[under], fixed[under] = lo[under], True
            continue
        break
    counts = np.floor(x + 1e-9)
    short = round(float(n - counts.sum()))
    if short > 0:
        room = counts < cap
        frac = np.where(room, x - counts, -np.inf)
        order = np.argsort(-frac, kind="stable")
        counts[order[:short]] += 1
    return counts.astype(np.int64)

