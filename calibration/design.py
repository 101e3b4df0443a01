"""Hand-label sample designs: strata, allocation, inclusion probabilities, power and cost.

Hand labels are the expensive ingredient of a judge calibration (300 answers at two to three
minutes each is ten to fifteen person-hours; seed 000), so *which* answers get labelled matters
more than how many. This module plans that sample for the quantity judgelab cares most about,
the **self-preference gap**: the judge-minus-human residual on the judge's own family minus the
residual on the other family (with several other families, minus their unweighted mean, as in
:func:`calibration.stats.self_preference_gap`). Residuals are on pass verdicts, so every
precision figure is in percentage points.

The plan, in order:

1. **Strata.** Each answer gets a family, a category, a judge-score bin (the judge's pass
   verdict by default) and optionally a length bin (:func:`stratify_pool`).
2. **Sampling unit.** By default whole *tasks* are sampled (the **paired-by-task** design):
   when a task is drawn, every family's answer to it is labelled. The gap is then a mean of
   within-task differences, so whatever makes a task hard for the judge and the humans alike
   cancels (the variance of a difference is ``S_own² + S_other² − 2ρ S_own S_other``, smaller
   than the unpaired ``S_own² + S_other²`` whenever the residuals of one task's answers are
   positively correlated, ρ > 0). The cost is in the inclusion probabilities: an answer's
   probability is its *task's*, ``n_h / N_h`` over the task stratum ``h``, so every answer of a
   task shares one probability and one weight, and family becomes a balanced-by-construction
   property of the sample rather than a stratifier. Task strata are built from the category
   and the *profile* of the task's answers (e.g. ``billing | A:pass B:fail``). ``paired=False``
   samples answers instead, with family as a stratifier.
3. **Allocation** of the label budget over strata (:func:`allocate`, :data:`Allocation`):
   ``proportional``, ``equal`` (equal per family, then proportional), ``neyman`` (for the
   overall mean residual) or ``gap`` (for the self-preference gap). See :func:`allocation_scores`
   for the derivation.
4. **Sampling** without replacement inside each stratum; each sampled answer records its
   inclusion probability π and weight 1/π, so calibration can use Hajek means. A share of the
   sample (the *overlap*) is labelled by two raters for inter-rater reliability.
5. **Precision and cost** from a :class:`PlanningModel` (assumed, or measured on a pilot of
   existing labels): the expected half-width of each family's residual and of the gap, the
   labels a target needs, the standard error of Cohen's kappa on the overlap, person-hours and
   calendar days.

The pool stands for the answers the judge will see in use, so no finite-population correction
is applied anywhere: the intervals are for the judge's behaviour, not for this particular pool.

Everything above the "store-facing" banner is pure: a pool DataFrame in, frozen dataclasses
out, randomness injected through ``rng``. :func:`load_pool` and :func:`apply_design` read and
write the project database through :class:`labeler.store.Store`.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats as sps

from calibration.stats._bootstrap import RngLike, as_rng, check_choice
from labeler.errors import InputError

if TYPE_CHECKING:
    from labeler.store import Store

__all__ = [
    "ALLOCATIONS",
    "STRATIFIERS",
    "Allocation",
    "Cost",
    "Design",
    "PlanningModel",
    "Precision",
    "Stratifier",
    "Target",
    "allocate",
    "allocation_scores",
    "apply_design",
    "budget_labels",
    "cost_of",
    "design_sample",
    "design_table",
    "kappa_se",
    "load_pool",
    "paired_sample_size",
    "plan_assignments",
    "planning_model",
    "stratify_pool",
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


# -- strata --------------------------------------------------------------------------------------


def stratify_pool(
    pool: pd.DataFrame,
    *,
    judge_bins: int = 2,
    length_bins: int = 3,
) -> pd.DataFrame:
    """Add the ``judge_bin`` and ``length_bin`` columns answers are stratified by.

    Args:
        pool: One row per answer with ``answer_id``, ``task_id`` and ``family``; optional
            ``category``, ``n_words``, ``judge_score`` (the judge's score on its scale),
            ``judge_pass`` (its pass verdict, 0/1) and ``human_pass`` (pilot labels).
        judge_bins: 2 bins the judge's pass verdict (``pass`` / ``fail``); more cut the judge's
            score at its quantiles (ties kept together, so fewer bins may result). Answers the
            judge has not scored fall in the bin ``unjudged``.
        length_bins: Number of length bins (quantiles of ``n_words`` over the pool).

    Returns:
        A copy of ``pool`` with ``category`` filled (``uncategorised``), ``judge_bin`` and
        ``length_bin`` as strings.

    Raises:
        InputError: If a required column is missing, ids repeat, or the pool is empty.
    """
    missing = {"answer_id", "task_id", "family"} - set(pool.columns)
    if missing:
        raise InputError(
            f"the pool lacks column(s) {sorted(missing)}",
            fix="pass one row per answer with answer_id, task_id and family.",
        )
    if pool.empty:
        raise InputError(
            "the pool has no answers to sample from",
            fix="import answers first with `judgelab import answers FILE`.",
        )
    if pool["answer_id"].duplicated().any():
        raise InputError("the pool repeats answer ids", column="answer_id",
                         fix="pass one row per answer.")
    if judge_bins < 2 or length_bins < 1:
        raise InputError(
            f"judge_bins must be at least 2 and length_bins at least 1; got {judge_bins}, "
            f"{length_bins}",
            fix="use judge_bins=2 for pass/fail.",
        )
    out = pool.copy().reset_index(drop=True)
    for col in ("judge_score", "judge_pass", "human_pass"):
        if col not in out.columns:
            out[col] = np.nan
        out[col] = pd.to_numeric(out[col], errors="coerce").astype(float)
    if "category" not in out.columns:
        out["category"] = UNCATEGORISED
    out["category"] = out["category"].astype(object).where(out["category"].notna(), UNCATEGORISED)
    out["category"] = out["category"].astype(str)
    out["family"] = out["family"].astype(str)
    out["task_id"] = out["task_id"].astype(str)
    out["answer_id"] = out["answer_id"].astype(str)
    out["judge_bin"] = _judge_bin(out, judge_bins)
    out["length_bin"] = _length_bin(out, length_bins)
    return out


def _judge_bin(pool: pd.DataFrame, bins: int) -> pd.Series:
    label = pd.Series(UNJUDGED, index=pool.index, dtype=object)
    verdict = pool["judge_pass"]
    score = pool["judge_score"]
    if bins == 2 and verdict.notna().any():
        label[verdict == 1] = "pass"
        label[verdict == 0] = "fail"
        return label
    if score.notna().any():
        known = score.dropna()
        cuts = np.unique(np.quantile(known, np.linspace(0, 1, bins + 1)))
        if len(cuts) < 2:
            label[score.notna()] = f"score {cuts[0]:g}"
            return label
        # Cut points sit on observed scores; intervals are (lo, hi] except the first.
        codes = np.searchsorted(cuts[1:-1], known.to_numpy(), side="left")
        names = [
            f"score ≤{cuts[1]:g}" if i == 0 else f"score {cuts[i]:g}–{cuts[i + 1]:g}"
            for i in range(len(cuts) - 1)
        ]
        label.loc[known.index] = np.asarray([names[c] for c in codes], dtype=object)
    return label


def _length_bin(pool: pd.DataFrame, bins: int) -> pd.Series:
    if "n_words" not in pool.columns or pool["n_words"].isna().all() or bins == 1:
        return pd.Series("any length", index=pool.index, dtype=object)
    words = pd.to_numeric(pool["n_words"], errors="coerce").fillna(0)
    cuts = np.unique(np.quantile(words, np.linspace(0, 1, bins + 1)))
    if len(cuts) < 2:
        return pd.Series("any length", index=pool.index, dtype=object)
    codes = np.searchsorted(cuts[1:-1], words.to_numpy(), side="left")
    names = [
        f"≤{cuts[1]:.0f} words" if i == 0 else f"{cuts[i]:.0f}–{cuts[i + 1]:.0f} words"
        for i in range(len(cuts) - 1)
    ]
    return pd.Series([names[c] for c in codes], index=pool.index, dtype=object)


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


# -- results ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Precision:
    """Expected 95% interval half-widths of a design, in percentage points.

    Attributes:
        residual_half_width: Per family (or ``"others (…)"``): half-width of its residual.
        gap_half_width: Half-width of the self-preference gap.
        gap_se: Standard error of the gap (percentage points).
        kappa_se: Approximate standard error of Cohen's kappa on the overlap (``nan`` when the
            overlap is empty).
        n_overlap: Answers labelled twice.
    """

    residual_half_width: dict[str, float]
    gap_half_width: float
    gap_se: float
    kappa_se: float
    n_overlap: int


@dataclass(frozen=True)
class Cost:
    """What a number of labels costs in people's time.

    Attributes:
        labels: Distinct answers labelled.
        ratings: Labels given in all (the overlap counts twice).
        minutes_per_label: Minutes one label takes.
        minutes_source: ``"measured median of N labels"`` or ``"assumed"``.
        person_hours: ``ratings × minutes_per_label / 60``.
        raters: Raters sharing the work.
        hours_per_rater_per_day: Labelling hours each rater gives a day.
        calendar_days: Working days to finish with every rater at that pace.
    """

    labels: int
    ratings: int
    minutes_per_label: float
    minutes_source: str
    person_hours: float
    raters: int
    hours_per_rater_per_day: float
    calendar_days: int


@dataclass(frozen=True)
class Target:
    """The labels a precision target needs under the design's allocation.

    Attributes:
        kind: ``"half_width"`` (the gap's 95% interval half-width) or ``"min_gap"`` (the smallest
            gap to detect at ``alpha``, two-sided, with ``power``).
        value_pp: The target, in percentage points.
        labels_needed: Distinct answers to label.
        units_needed: Sampling units (tasks when paired) to draw.
        cost: Person-hours and days for ``labels_needed``.
        fits_pool: Whether the pool holds that many answers.
        alpha: Test level (``min_gap`` only).
        power: Power (``min_gap`` only).
    """

    kind: Literal["half_width", "min_gap"]
    value_pp: float
    labels_needed: int
    units_needed: int
    cost: Cost
    fits_pool: bool
    alpha: float = 0.05
    power: float = 0.8


@dataclass(frozen=True)
class Design:
    """A planned hand-label sample.

    Attributes:
        design_id: Content hash of the inputs and the sampled answers.
        params: The inputs, JSON-ready (allocation, strata, budget, seed, ...).
        strata: One row per stratum: ``stratum``, ``N_units``, ``n_units``, ``N_answers``,
            ``n_answers``, ``inclusion_prob``, ``weight``, ``planning_sd``, ``gap_var_share``,
            ``half_width_pp``.
        items: One row per sampled answer: ``answer_id``, ``task_id``, ``family``, ``stratum``,
            ``inclusion_prob``, ``weight`` (1/π), ``n_raters`` (2 on the overlap), ``is_overlap``.
        inclusion: One row per pool answer: ``answer_id``, ``task_id``, ``family``, ``unit``
            (its sampling unit: the task when paired), ``stratum``, ``inclusion_prob`` (sums to
            the expected number of labelled answers), and integer ``unit_index`` and
            ``stratum_index`` (row of ``strata``).
        own_family: The judge's family (the gap's first term).
        model: The planning assumptions.
        precision: Expected precision of this sample.
        cost: Its cost.
        target: Labels a target needs, if one was given.
        notes: Things a reader should know (caps, defaults chosen, empty strata).
    """

    design_id: str
    params: dict[str, Any]
    strata: pd.DataFrame
    items: pd.DataFrame
    inclusion: pd.DataFrame
    own_family: str
    model: PlanningModel
    precision: Precision
    cost: Cost
    target: Target | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def n_labels(self) -> int:
        """Distinct answers the design labels."""
        return len(self.items)

    def redraw(self, rng: RngLike = None) -> pd.DataFrame:
        """Another sample from the same design (same strata and counts), for simulations.

        Args:
            rng: Seed or Generator for the draw.

        Returns:
            One row per sampled answer: ``answer_id``, ``task_id``, ``family``, ``stratum``,
            ``inclusion_prob``, ``weight``. No overlap is drawn.
        """
        gen = as_rng(rng)
        inc = self.inclusion
        unit_code = inc["unit_index"].to_numpy()
        stratum_code = inc["stratum_index"].to_numpy()
        _, first = np.unique(unit_code, return_index=True)
        strata_of_unit = stratum_code[first]
        chosen: list[npt.NDArray[np.intp]] = []
        for code, n_h in enumerate(self.strata["n_units"].to_numpy()):
            if n_h > 0:
                members = np.flatnonzero(strata_of_unit == code)
                chosen.append(gen.choice(members, size=int(n_h), replace=False))
        picked = np.concatenate(chosen) if chosen else np.array([], dtype=np.intp)
        keep = np.isin(unit_code, picked)
        out = inc.loc[keep, ["answer_id", "task_id", "family", "stratum", "inclusion_prob"]]
        out = out.assign(weight=1.0 / out["inclusion_prob"])
        return out.reset_index(drop=True)

    def summary(self) -> dict[str, Any]:
        """Expected precision, cost and target as a JSON-ready dict (stored with the design)."""
        out: dict[str, Any] = {
            "design_id": self.design_id,
            "own_family": self.own_family,
            "labels": self.n_labels,
            "units": int(self.strata["n_units"].sum()),
            "precision": _clean(asdict(self.precision)),
            "cost": asdict(self.cost),
            "model": asdict(self.model),
            "notes": list(self.notes),
        }
        if self.target is not None:
            out["target"] = _clean(asdict(self.target))
        return out


def _clean(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


# -- power, precision and cost ------------------------------------------------------------------


def paired_sample_size(
    gap: float,
    *,
    sd_own: float,
    sd_other: float,
    rho: float = 0.0,
    alpha: float = 0.05,
    power: float = 0.8,
) -> int:
    """Tasks needed to detect a self-preference gap with the paired-by-task design.

    Each task contributes ``d_t = r_own,t − r_other,t`` with variance
    ``σ_d² = σ_own² + σ_other² − 2ρ σ_own σ_other``. A two-sided z-test of ``mean(d) = 0`` at
    level ``alpha`` has power ``power`` against ``gap`` when
    ``n = (z_{1−α/2} + z_{power})² σ_d² / gap²`` (rounded up). Labels are ``2n`` with one answer
    per family. With ρ = 0 this is the two-group formula of the research notes,
    ``(z + z)²(σ₁² + σ₂²)/Δ²`` per group.

    Args:
        gap: Smallest gap worth detecting, in the residuals' units (0.10 for 10 points).
        sd_own: Residual sd on the judge's family.
        sd_other: Residual sd on the other family.
        rho: Within-task correlation of the two residuals.
        alpha: Two-sided test level.
        power: Wanted power.

    Returns:
        Tasks needed (at least 2).

    Examples:
        >>> paired_sample_size(0.10, sd_own=0.2 ** 0.5, sd_other=0.2 ** 0.5)
        314
    """
    if gap == 0 or not math.isfinite(gap):
        raise InputError(f"gap must be a non-zero number; got {gap!r}", fix="e.g. 0.10.")
    if not (0 < alpha < 1 and 0 < power < 1):
        raise InputError("alpha and power must lie strictly between 0 and 1",
                         fix="e.g. alpha 0.05, power 0.8.")
    var_d = sd_own**2 + sd_other**2 - 2 * rho * sd_own * sd_other
    z = sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(power)
    return max(2, math.ceil(z * z * var_d / gap**2 - 1e-9))


def kappa_se(n: int, *, kappa: float, prevalence: float) -> float:
    """Approximate standard error of Cohen's kappa for two raters on ``n`` binary items.

    Uses Cohen's (1960) large-sample approximation
    ``SE ≈ sqrt(p_o (1 − p_o) / n) / (1 − p_e)``, with both raters passing a share
    ``prevalence`` (so ``p_e = p² + (1 − p)²``) and observed agreement
    ``p_o = κ(1 − p_e) + p_e``. It ignores the sampling error of ``p_e`` and so runs a little
    small near κ = 0 and a little large near κ = 1 (Fleiss, Cohen & Everitt 1969, DOI
    10.1037/h0028106, give the exact form), which is fine for planning.

    Args:
        n: Items both raters label.
        kappa: Expected kappa.
        prevalence: Share of items passed (by the judge's verdict, a proxy for the humans').

    Returns:
        The standard error; ``nan`` when ``n`` is 0 or the prevalence is 0 or 1 (kappa is
        undefined when every item has one verdict).

    Examples:
        >>> round(kappa_se(100, kappa=0.6, prevalence=0.5), 4)
        0.08
    """
    if n <= 0 or not 0 < prevalence < 1:
        return float("nan")
    p_e = prevalence**2 + (1 - prevalence) ** 2
    p_o = kappa * (1 - p_e) + p_e
    return math.sqrt(p_o * (1 - p_o) / n) / (1 - p_e)


def budget_labels(hours: float, *, minutes_per_label: float, overlap: float) -> int:
    """Distinct answers ``hours`` person-hours pay for: ``⌊60 h / (minutes (1 + overlap))⌋``."""
    if hours <= 0 or minutes_per_label <= 0:
        raise InputError(
            f"budget hours and minutes per label must be positive; got {hours!r}, "
            f"{minutes_per_label!r}",
            fix="e.g. --budget-hours 12 --minutes-per-label 2.5.",
        )
    return math.floor(60 * hours / (minutes_per_label * (1 + overlap)) + 1e-9)


def cost_of(
    labels: int,
    *,
    overlap: float,
    minutes_per_label: float = 2.5,
    raters: int = 1,
    hours_per_rater_per_day: float = 2.0,
    minutes_source: str = "assumed",
    repeats: int | None = None,
) -> Cost:
    """Person-hours and calendar days for ``labels`` distinct answers.

    Person-hours are ``labels × (1 + overlap) × minutes / 60`` (``repeats``, when given, is the
    exact number of second labels instead of ``overlap × labels``). Calendar days assume the
    work splits evenly over ``raters``, each labelling ``hours_per_rater_per_day``.
    """
    extra = round(labels * overlap) if repeats is None else repeats
    ratings = labels + extra
    hours = ratings * minutes_per_label / 60
    raters = max(raters, 1)
    days = math.ceil(hours / (raters * hours_per_rater_per_day) - 1e-9) if hours > 0 else 0
    return Cost(
        labels=labels, ratings=ratings, minutes_per_label=minutes_per_label,
        minutes_source=minutes_source, person_hours=round(hours, 2), raters=raters,
        hours_per_rater_per_day=hours_per_rater_per_day, calendar_days=days,
    )


# -- the design ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Strata:
    """Per-stratum quantities the allocation and the precision need."""

    table: pd.DataFrame            # stratum, N_units, N_answers, m (labels per unit)
    unit_of: pd.Series             # answer_id -> unit id
    stratum_of_unit: pd.Series     # unit id -> stratum
    gap_coef: npt.NDArray[np.float64]
    total_coef: npt.NDArray[np.float64]
    family_coef: dict[str, npt.NDArray[np.float64]]
    family_share: npt.NDArray[np.float64] | None
    unit_sd: npt.NDArray[np.float64]  # sd of a unit's gap contribution (paired) or residual


def design_sample(
    pool: pd.DataFrame,
    *,
    n: int,
    allocation: Allocation = "gap",
    strata: Sequence[Stratifier] = ("family", "category", "judge_bin"),
    paired: bool = True,
    overlap: float = 0.2,
    own_family: str | None = None,
    model: PlanningModel | None = None,
    judge_bins: int = 2,
    length_bins: int = 3,
    min_per_stratum: int = 2,
    min_pilot: int = 5,
    minutes_per_label: float = 2.5,
    minutes_source: str = "assumed",
    raters: int = 1,
    hours_per_rater_per_day: float = 2.0,
    target_half_width: float | None = None,
    min_gap: float | None = None,
    rng: RngLike = None,
) -> Design:
    """Plan and draw a stratified hand-label sample of about ``n`` answers.

    Args:
        pool: One row per answer (see :func:`stratify_pool` for the columns).
        n: Label budget: distinct answers to label. Paired, the sample is ``n / m̄`` tasks, so
            the realised count can differ by a task's worth of answers.
        allocation: See :data:`Allocation` and :func:`allocation_scores`.
        strata: Stratifiers (a subset of :data:`STRATIFIERS`). Paired, ``family`` is balanced by
            construction; unpaired, it is always a stratifier for ``equal`` and ``gap``. When
            the budget cannot give every stratum ``min_per_stratum`` units, ``length_bin``,
            then ``category``, then ``judge_bin`` are dropped (noted; ``params["strata_used"]``).
        paired: Sample whole tasks (the paired-by-task design; see the module docstring).
        overlap: Share of sampled units labelled by two raters.
        own_family: The judge's family; ``None`` takes the first family in sorted order (noted).
        model: Planning assumptions; default :func:`planning_model` on the pool.
        judge_bins: Passed to :func:`stratify_pool`.
        length_bins: Passed to :func:`stratify_pool`.
        min_per_stratum: Units every stratum gets when the budget allows (2 lets a stratum's
            variance be estimated); lowered to 1, then 0, for small budgets.
        min_pilot: Labelled answers of a family in a stratum before that stratum's residual sd
            is taken from the pilot rather than the model.
        minutes_per_label: Minutes one label takes.
        minutes_source: Where that figure came from, for the report.
        raters: Raters sharing the work (for calendar days).
        hours_per_rater_per_day: Labelling hours a rater gives a day.
        target_half_width: Wanted 95% half-width of the gap, percentage points.
        min_gap: Smallest gap worth detecting at alpha 0.05 with power 0.8, percentage points.
        rng: Seed or Generator for the draw.

    Returns:
        The :class:`Design`.

    Raises:
        InputError: On an unknown stratifier or allocation, a budget below 1, or an overlap
            outside [0, 1].
    """
    check_choice("design_sample", "allocation", allocation, ALLOCATIONS)
    for s in strata:
        if s not in STRATIFIERS:
            raise InputError(
                f"unknown stratifier {s!r}",
                fix=f"choose from {', '.join(STRATIFIERS)}.",
            )
    if n < 1:
        raise InputError(f"the label budget must be at least 1; got {n}", fix="e.g. --n 300.")
    if not 0.0 <= overlap <= 1.0:
        raise InputError(f"overlap must be between 0 and 1; got {overlap!r}", fix="e.g. 0.2.")
    gen = as_rng(rng)
    notes: list[str] = []
    frame = stratify_pool(pool, judge_bins=judge_bins, length_bins=length_bins)
    families = sorted(frame["family"].unique())
    if own_family is None or own_family not in families:
        chosen = families[0]
        why = "no judge family given" if own_family is None else f"{own_family!r} is not in the pool"
        notes.append(f"{why}: the gap is {chosen!r} minus the other famil"
                     f"{'y' if len(families) == 2 else 'ies'}")
        own_family = chosen
    if len(families) < 2:
        notes.append("the pool holds one family: there is no self-preference gap to estimate")
    plan_model = model if model is not None else planning_model(frame)
    n_pool = len(frame)
    if n > n_pool:
        notes.append(f"the budget ({n}) exceeds the pool ({n_pool} answers): labelling all of it")
        n = n_pool
    used = list(strata)
    unit_word = "tasks" if paired else "answers"
    while True:
        st = _build_strata(frame, used, paired, own_family, families, allocation, plan_model,
                           min_pilot)
        table = st.table
        m_h = table["m"].to_numpy(float)
        a_h = allocation_scores(
            allocation, sizes=table["N_units"], gap_coef=st.gap_coef, total_coef=st.total_coef,
            family_share=st.family_share, unit_labels=m_h,
        )
        # Units to draw: the continuous optimum spends n labels; its unit count is Σ x_h.
        denom = float((a_h * m_h).sum())
        n_units = round(n * a_h.sum() / denom) if denom > 0 else round(n / m_h.mean())
        n_units = int(min(max(n_units, 1), table["N_units"].sum()))
        # Too many strata for the budget leaves strata empty (and so estimates biased) or
        # forces the minimum onto most of the sample: coarsen, finest stratifier first.
        droppable = [s for s in ("length_bin", "category", "judge_bin") if s in used]
        if len(table) * min_per_stratum <= n_units or not droppable:
            break
        notes.append(
            f"{len(table)} strata need at least {len(table) * min_per_stratum} {unit_word} "
            f"but the budget draws {n_units}: dropped {droppable[0]!r} from the strata"
        )
        used.remove(droppable[0])
    k = len(table)
    minimum = min_per_stratum
    while minimum > 0 and minimum * k > n_units:
        minimum -= 1
    if minimum < min_per_stratum:
        notes.append(
            f"{k} strata and {n_units} units: each stratum gets at least {minimum} "
            f"(not {min_per_stratum}); consider fewer strata"
        )
    n_h = allocate(a_h, n_units, capacity=table["N_units"], minimum=minimum)
    empty = int(((n_h == 0) & (table["N_units"] > 0)).sum())
    if empty:
        notes.append(f"{empty} stratum/strata get no labels: estimates cannot cover them")
    table = table.assign(n_units=n_h, inclusion_prob=n_h / table["N_units"])
    table["weight"] = np.where(n_h > 0, 1 / table["inclusion_prob"].where(n_h > 0, 1), np.nan)

    chosen_units = _draw(st.stratum_of_unit, table, gen)
    overlap_units = _pick_overlap(chosen_units, overlap, gen)
    items = _items(frame, st, table, chosen_units, overlap_units)
    table["n_answers"] = items.groupby("stratum").size().reindex(table["stratum"]).fillna(0) \
        .astype(int).to_numpy()

    precision = _precision(st, table, frame, items, plan_model, own_family, families)
    ppv = np.divide(st.gap_coef, n_h, out=np.zeros(k), where=n_h > 0)
    total_v = ppv.sum()
    table["planning_sd"] = st.unit_sd
    table["gap_var_share"] = ppv / total_v if total_v > 0 else np.nan
    table["half_width_pp"] = np.where(
        n_h > 0, Z95 * table["planning_sd"] / np.sqrt(np.maximum(n_h, 1)) * 100, np.nan
    )
    n_repeat = int(items["is_overlap"].sum())
    cost = cost_of(
        len(items), overlap=overlap, minutes_per_label=minutes_per_label, raters=raters,
        hours_per_rater_per_day=hours_per_rater_per_day, minutes_source=minutes_source,
        repeats=n_repeat,
    )
    target = _target(
        st, a_h, m_h, n_pool, overlap, cost, target_half_width=target_half_width, min_gap=min_gap,
    )
    inclusion = frame[["answer_id", "task_id", "family"]].assign(
        unit=frame["answer_id"].map(st.unit_of).to_numpy()
    )
    inclusion["stratum"] = inclusion["unit"].map(st.stratum_of_unit)
    # Integer codes let Design.redraw draw thousands of samples quickly.
    inclusion["unit_index"] = pd.factorize(inclusion["unit"], sort=True)[0]
    inclusion["stratum_index"] = inclusion["stratum"].map(
        {name: i for i, name in enumerate(table["stratum"])}
    ).astype(int)
    inclusion["inclusion_prob"] = inclusion["stratum"].map(
        table.set_index("stratum")["inclusion_prob"]
    )
    params: dict[str, Any] = {
        "n": n, "allocation": allocation, "strata": list(strata), "strata_used": used,
        "paired": paired,
        "overlap": overlap, "own_family": own_family, "judge_bins": judge_bins,
        "length_bins": length_bins, "min_per_stratum": min_per_stratum,
        "minutes_per_label": minutes_per_label, "raters": raters,
        "hours_per_rater_per_day": hours_per_rater_per_day,
        "target_half_width": target_half_width, "min_gap": min_gap,
        "model": asdict(plan_model),
    }
    digest = hashlib.sha256(
        json.dumps([params, sorted(items["answer_id"]), sorted(items.loc[items["is_overlap"],
                    "answer_id"])], sort_keys=True, default=str).encode()
    ).hexdigest()
    if plan_model.source == "assumed":
        notes.append(
            f"planning figures assumed (disagreement {plan_model.disagreement:.2f}, "
            f"rho {plan_model.rho:.2f}); a pilot of labels will replace them"
        )
    return Design(
        design_id="d" + digest[:11],
        params=params,
        strata=table.reset_index(drop=True),
        items=items,
        inclusion=inclusion,
        own_family=own_family,
        model=plan_model,
        precision=precision,
        cost=cost,
        target=target,
        notes=tuple(notes),
    )


def _gap_coefficients(families: Sequence[str], own: str) -> dict[str, float]:
    """``g_f``: +1 for the judge's family, ``−1/K`` for each of the ``K`` others."""
    others = [f for f in families if f != own]
    g = {own: 1.0}
    for f in others:
        g[f] = -1.0 / len(others)
    return g


def _stratum_sd(row: pd.Series, model: PlanningModel, min_pilot: int) -> float:
    """Residual sd of one family inside one stratum: pilot if enough labels, else model.

    ``row`` holds the stratum-family aggregates ``judge_share``, ``n_pilot`` and ``sd_pilot``.
    """
    modelled = model.residual_sd(float(row["judge_share"]))
    if row["n_pilot"] >= max(min_pilot, 2):
        # A pilot stratum with no disagreement at all would get no labels; keep a floor so a
        # lucky pilot cannot switch a stratum off.
        return max(float(row["sd_pilot"]), 0.5 * modelled)
    return modelled


def _build_strata(
    frame: pd.DataFrame,
    strata: Sequence[Stratifier],
    paired: bool,
    own: str,
    families: Sequence[str],
    allocation: Allocation,
    model: PlanningModel,
    min_pilot: int,
) -> _Strata:
    g = _gap_coefficients(families, own)
    bins = [s for s in ("judge_bin", "length_bin") if s in strata]
    if paired:
        unit_of = pd.Series(frame["task_id"].to_numpy(), index=frame["answer_id"])
        order = [own, *[f for f in families if f != own]]
        if bins:
            tok = frame[bins[0]].astype(str)
            for b in bins[1:]:
                tok = tok.str.cat(frame[b].astype(str), sep="/")
            tok_list = tok.tolist()
        else:
            tok_list = ["✓"] * len(frame)
        # Plain dicts: this runs once per design and pandas' row-wise apply is slow.
        per_task: dict[str, dict[str, list[str]]] = {}
        category: dict[str, str] = {}
        for task, fam, cat, t in zip(
            frame["task_id"], frame["family"], frame["category"], tok_list, strict=True
        ):
            per_task.setdefault(task, {}).setdefault(fam, []).append(t)
            category.setdefault(task, cat)
        profile = {
            task: " ".join(
                f"{f}:{'+'.join(sorted(fams[f])) if f in fams else '-'}" for f in order
            )
            for task, fams in per_task.items()
        }
        same_profile = len(set(profile.values())) <= 1
        keys = {}
        for task in per_task:
            parts = [category[task]] if "category" in strata else []
            if not same_profile:
                parts.append(profile[task])
            keys[task] = " | ".join(parts) if parts else "all"
        stratum_of_unit = pd.Series(keys, name="stratum")
    else:
        unit_of = pd.Series(frame["answer_id"].to_numpy(), index=frame["answer_id"])
        cols = [s for s in STRATIFIERS if s in strata]
        if allocation in ("equal", "gap") and "family" not in cols:
            cols = ["family", *cols]
        if cols:
            key = frame[cols[0]].astype(str)
            for col in cols[1:]:
                key = key.str.cat(frame[col].astype(str), sep=" | ")
        else:
            key = pd.Series("all", index=frame.index)
        stratum_of_unit = pd.Series(key.to_numpy(), index=frame["answer_id"], name="stratum")

    frame = frame.assign(_unit=frame["answer_id"].map(unit_of))
    frame["_stratum"] = frame["_unit"].map(stratum_of_unit)
    names = sorted(frame["_stratum"].unique())
    units_per = frame.groupby("_stratum")["_unit"].nunique().reindex(names)
    answers_per = frame.groupby("_stratum").size().reindex(names)
    table = pd.DataFrame({
        "stratum": names,
        "N_units": units_per.to_numpy(int),
        "N_answers": answers_per.to_numpy(int),
    })
    table["m"] = table["N_answers"] / table["N_units"]

    # Units per family: tasks containing the family (paired) or the family's answers.
    fam_units = frame.groupby("family")["_unit"].nunique()
    agg = frame.assign(_resid=frame["judge_pass"] - frame["human_pass"]).groupby(
        ["_stratum", "family"]
    ).agg(
        n_ans=("answer_id", "size"),
        n_units=("_unit", "nunique"),
        judge_share=("judge_pass", "mean"),
        n_pilot=("_resid", "count"),
        sd_pilot=("_resid", "std"),
    )
    index_of = {name: i for i, name in enumerate(names)}
    n_units_h = table["N_units"].to_numpy(float)
    k = len(names)
    fam_coef = {f: np.zeros(k) for f in families}
    sd_f = {f: np.full(k, np.nan) for f in families}
    w_f = {f: np.zeros(k) for f in families}
    m_of = {f: np.zeros(k) for f in families}
    for (name, f), row in agg.iterrows():
        i = index_of[name]
        s = _stratum_sd(row, model, min_pilot)
        m_f = row["n_ans"] / row["n_units"]
        # Several answers of one family in a task: their mean has the within-task
        # correlation's variance (1 + (m − 1)ρ) / m.
        sd_f[f][i] = s * math.sqrt(max((1 + (m_f - 1) * model.rho) / m_f, 0.0))
        w_f[f][i] = row["n_units"] / fam_units[f]
        fam_coef[f][i] = (w_f[f][i] * sd_f[f][i]) ** 2
        m_of[f][i] = row["n_ans"] / n_units_h[i]
    # Variance of a unit's total residual (Neyman for the overall mean residual).
    total_var = np.zeros(k)
    for i in range(k):
        present = [f for f in families if not math.isnan(sd_f[f][i])]
        for f in present:
            for f2 in present:
                c = 1.0 if f == f2 else model.rho
                total_var[i] += m_of[f][i] * m_of[f2][i] * c * sd_f[f][i] * sd_f[f2][i]
    n_answers = float(table["N_answers"].sum())
    total_coef = (table["N_units"].to_numpy(float) / n_answers) ** 2 * total_var
    gap_coef = np.zeros(k)
    unit_sd = np.zeros(k)
    for i in range(k):
        present = [f for f in families if not math.isnan(sd_f[f][i])]
        v = u = 0.0
        for f in present:
            for f2 in present:
                c = 1.0 if f == f2 else model.rho
                v += g[f] * g[f2] * w_f[f][i] * w_f[f2][i] * c * sd_f[f][i] * sd_f[f2][i]
                u += g[f] * g[f2] * c * sd_f[f][i] * sd_f[f2][i]
        gap_coef[i] = max(v, 0.0)
        # Unpaired, a stratum holds one family: report its plain residual sd.
        unit_sd[i] = math.sqrt(max(u, 0.0)) if paired else sd_f[present[0]][i]
    family_share = None
    if not paired:
        fam_of_stratum = frame.groupby("_stratum")["family"].first().reindex(names)
        family_share = (
            table["N_units"].to_numpy(float) / fam_of_stratum.map(fam_units).to_numpy(float)
        )
    return _Strata(
        table=table,
        unit_of=unit_of,
        stratum_of_unit=stratum_of_unit,
        gap_coef=gap_coef,
        total_coef=total_coef,
        family_coef=fam_coef,
        family_share=family_share,
        unit_sd=unit_sd,
    )


def _draw(stratum_of_unit: pd.Series, table: pd.DataFrame, gen: np.random.Generator) -> pd.Series:
    """Simple random samples without replacement inside each stratum: unit id -> stratum."""
    members: dict[str, list[Any]] = {}
    for unit, name in stratum_of_unit.items():
        members.setdefault(str(name), []).append(unit)
    picked: list[Any] = []
    for name, n_h in zip(table["stratum"], table["n_units"], strict=True):
        if n_h <= 0:
            continue
        units = sorted(members[str(name)])
        idx = gen.choice(len(units), size=int(n_h), replace=False)
        picked.extend(units[i] for i in idx)
    return stratum_of_unit.loc[picked]


def _pick_overlap(chosen: pd.Series, overlap: float, gen: np.random.Generator) -> set[Any]:
    """A systematic sample of the chosen units, spread over strata, to label twice."""
    k = round(overlap * len(chosen))
    if k <= 0:
        return set()
    ordered = pd.DataFrame({"unit": chosen.index, "stratum": chosen.to_numpy(),
                            "u": gen.random(len(chosen))}).sort_values(["stratum", "u"])
    step = len(ordered) / k
    start = gen.random() * step
    idx = np.floor(start + step * np.arange(k)).astype(int)
    return set(ordered["unit"].to_numpy()[np.minimum(idx, len(ordered) - 1)])


def _items(
    frame: pd.DataFrame,
    st: _Strata,
    table: pd.DataFrame,
    chosen: pd.Series,
    overlap_units: set[Any],
) -> pd.DataFrame:
    unit = frame["answer_id"].map(st.unit_of)
    keep = frame[unit.isin(set(chosen.index))].copy()
    keep["unit"] = keep["answer_id"].map(st.unit_of)
    keep["stratum"] = keep["unit"].map(st.stratum_of_unit)
    probs = table.set_index("stratum")["inclusion_prob"]
    keep["inclusion_prob"] = keep["stratum"].map(probs).astype(float)
    keep["weight"] = 1.0 / keep["inclusion_prob"]
    keep["is_overlap"] = keep["unit"].isin(overlap_units)
    keep["n_raters"] = np.where(keep["is_overlap"], 2, 1)
    cols = ["answer_id", "task_id", "family", "category", "judge_bin", "length_bin", "stratum",
            "inclusion_prob", "weight", "n_raters", "is_overlap"]
    return keep[cols].sort_values(["task_id", "answer_id"]).reset_index(drop=True)


def _precision(
    st: _Strata,
    table: pd.DataFrame,
    frame: pd.DataFrame,
    items: pd.DataFrame,
    model: PlanningModel,
    own: str,
    families: Sequence[str],
) -> Precision:
    n_h = table["n_units"].to_numpy(float)
    sampled = n_h > 0

    def hw(coef: npt.NDArray[np.float64]) -> float:
        v = float((coef[sampled] / n_h[sampled]).sum())
        return Z95 * math.sqrt(v) * 100

    resid: dict[str, float] = {}
    others = [f for f in families if f != own]
    resid[own] = hw(st.family_coef[own])
    if len(others) == 1:
        resid[others[0]] = hw(st.family_coef[others[0]])
    elif others:
        # The unweighted mean of the other families' residuals (their strata do not overlap
        # unpaired; paired, this ignores their within-task covariance, a slight overstatement).
        coef = sum(st.family_coef[f] for f in others) / len(others) ** 2
        resid[f"others ({', '.join(others)})"] = hw(np.asarray(coef))
    gap_v = float((st.gap_coef[sampled] / n_h[sampled]).sum())
    n_overlap = int(items["is_overlap"].sum())
    prevalence = float(frame["judge_pass"].mean()) if frame["judge_pass"].notna().any() else 0.5
    return Precision(
        residual_half_width=resid,
        gap_half_width=Z95 * math.sqrt(gap_v) * 100 if len(families) > 1 else float("nan"),
        gap_se=math.sqrt(gap_v) * 100 if len(families) > 1 else float("nan"),
        kappa_se=kappa_se(n_overlap, kappa=model.kappa, prevalence=prevalence),
        n_overlap=n_overlap,
    )


def _target(
    st: _Strata,
    a_h: npt.NDArray[np.float64],
    m_h: npt.NDArray[np.float64],
    n_pool: int,
    overlap: float,
    cost: Cost,
    *,
    target_half_width: float | None,
    min_gap: float | None,
) -> Target | None:
    if target_half_width is not None and min_gap is not None:
        raise InputError("give a target half-width or a smallest gap, not both",
                         fix="drop --target-half-width or --min-gap.")
    if target_half_width is None and min_gap is None:
        return None
    value = target_half_width if target_half_width is not None else min_gap
    assert value is not None
    if value <= 0:
        raise InputError(f"the target must be positive percentage points; got {value!r}",
                         fix="e.g. --target-half-width 5 or --min-gap 10.")
    # Under the allocation's continuous shares x_h = L a_h / A (A = Σ a m), the gap variance
    # is V(L) = (A / L) Σ c_h / a_h, so L = A Σ(c_h / a_h) (z / target)².
    use = st.gap_coef > 0
    v1 = (
        float("inf") if (a_h[use] <= 0).any()
        else float((a_h * m_h).sum() * (st.gap_coef[use] / a_h[use]).sum())
    )
    alpha, power = 0.05, 0.8
    z = Z95 if target_half_width is not None else float(
        sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(power))
    labels_f = v1 * (z * 100 / value) ** 2
    labels = math.ceil(labels_f - 1e-9) if math.isfinite(labels_f) else -1
    units = math.ceil(labels / (a_h * m_h).sum() * a_h.sum() - 1e-9) if labels > 0 else -1
    tcost = cost_of(
        max(labels, 0), overlap=overlap, minutes_per_label=cost.minutes_per_label,
        raters=cost.raters, hours_per_rater_per_day=cost.hours_per_rater_per_day,
        minutes_source=cost.minutes_source,
    )
    return Target(
        kind="half_width" if target_half_width is not None else "min_gap",
        value_pp=float(value),
        labels_needed=labels,
        units_needed=units,
        cost=tcost,
        fits_pool=0 < labels <= n_pool,
    )


# -- tables ------------------------------------------------------------------------------------


def design_table(design: Design) -> pd.DataFrame:
    """The per-stratum table an admin reads before applying a design.

    Columns: ``stratum``; ``pool_units`` and ``pool_answers`` (in the pool); ``sampled_units``
    and ``sampled_answers``; ``inclusion_prob`` and ``weight`` (1/π); ``planning_sd`` (sd of the
    stratum's contribution to the gap, in proportion units); ``half_width_pp`` (expected 95%
    half-width of the stratum's own gap estimate); ``gap_var_share`` (its share of the overall
    gap variance); ``hours`` (person-hours, overlap included). A last row ``total`` sums the
    counts and hours and carries the design's gap half-width.
    """
    s = design.strata
    minutes = design.cost.minutes_per_label
    repeats = design.items.groupby("stratum")["is_overlap"].sum().reindex(s["stratum"]).fillna(0)
    hours = (s["n_answers"].to_numpy() + repeats.to_numpy()) * minutes / 60
    out = pd.DataFrame({
        "stratum": s["stratum"],
        "pool_units": s["N_units"],
        "pool_answers": s["N_answers"],
        "sampled_units": s["n_units"],
        "sampled_answers": s["n_answers"],
        "inclusion_prob": s["inclusion_prob"].round(4),
        "weight": s["weight"].round(3),
        "planning_sd": s["planning_sd"].round(4),
        "half_width_pp": s["half_width_pp"].round(1),
        "gap_var_share": s["gap_var_share"].round(3),
        "hours": np.round(hours, 2),
    })
    total = {
        "stratum": "total",
        "pool_units": int(s["N_units"].sum()),
        "pool_answers": int(s["N_answers"].sum()),
        "sampled_units": int(s["n_units"].sum()),
        "sampled_answers": int(s["n_answers"].sum()),
        "inclusion_prob": round(float(s["n_answers"].sum() / s["N_answers"].sum()), 4),
        "weight": np.nan,
        "planning_sd": np.nan,
        "half_width_pp": round(design.precision.gap_half_width, 1),
        "gap_var_share": 1.0,
        "hours": round(design.cost.person_hours, 2),
    }
    return pd.concat([out, pd.DataFrame([total])], ignore_index=True)


# -- assignment ----------------------------------------------------------------------------------


def plan_assignments(
    design: Design,
    raters: Sequence[int],
    *,
    rng: RngLike = 0,
    spread: int = 3,
    tails: Mapping[int, tuple[int, Sequence[str]]] | None = None,
    exclude: set[tuple[int, str]] | None = None,
) -> pd.DataFrame:
    """Who labels which sampled answer, in which queue position.

    Rules, in the order they are applied:

    * **Answers to one task go to the same rater(s).** Then a rater's own leniency cancels out
      of that task's within-family difference, which is what the paired design estimates. An
      overlap task goes to two raters, who both label all its answers.
    * **Families in equal measure.** Tasks are dealt largest (and overlap) first, each to the
      rater(s) holding the fewest answers of the task's families (ties broken at random), so
      every family's answers spread over the raters within ±1, and with a family-balanced
      design each rater's count of one family is within 1 of another's.
    * **Spread.** Each rater's queue is a seeded shuffle in which no two answers of one task sit
      within ``spread`` positions of each other when that is possible (the rater should not
      read one prompt's answers back to back and compare them).

    Args:
        design: The design (its ``items``).
        raters: Rater ids, at least 2 when the design has an overlap.
        rng: Seed or Generator for the deal and the shuffles.
        spread: Minimum distance minus one between answers of one task in a queue.
        tails: Per rater, ``(next queue position, task ids of the last few queued answers)``:
            new positions start after the existing ones and keep away from their tasks.
        exclude: ``(rater_id, answer_id)`` pairs a rater already has; such a rater is skipped
            for that task.

    Returns:
        One row per assignment: ``rater_id``, ``answer_id``, ``task_id``, ``family``,
        ``queue_pos``, ``is_overlap``.

    Raises:
        InputError: With no raters, or fewer than two when the design has an overlap.
    """
    gen = as_rng(rng)
    raters = list(dict.fromkeys(int(r) for r in raters))
    items = design.items
    if not raters:
        raise InputError("a design needs at least one rater to apply",
                         fix="add raters with `judgelab raters add NAME`.")
    if len(items) and int(items["n_raters"].max()) > len(raters):
        raise InputError(
            f"the overlap needs two raters per item but only {len(raters)} rater(s) were given",
            fix="name at least two raters, or pass --overlap 0.",
        )
    tails = dict(tails or {})
    exclude = set(exclude or ())
    families = sorted(items["family"].unique())
    load = {r: dict.fromkeys(families, 0) for r in raters}
    given: dict[int, list[tuple[str, str, str, bool]]] = {r: [] for r in raters}
    groups = [g for _, g in items.groupby("task_id", sort=True)]
    order = gen.permutation(len(groups))
    groups = [groups[i] for i in order]
    groups.sort(key=lambda g: (-int(g["n_raters"].max()), -len(g)))
    for g in groups:
        need = int(g["n_raters"].max())
        fams = g["family"].value_counts()
        answers = set(g["answer_id"])
        noise = gen.random(len(raters))
        ranked = sorted(
            range(len(raters)),
            key=lambda i: (
                any((raters[i], a) in exclude for a in answers),
                sum(load[raters[i]][f] * c for f, c in fams.items()),
                sum(load[raters[i]].values()),
                noise[i],
            ),
        )
        for i in ranked[:need]:
            r = raters[i]
            for f, c in fams.items():
                load[r][f] += int(c)
            for row in g.itertuples(index=False):
                if (r, row.answer_id) not in exclude:
                    given[r].append(
                        (str(row.answer_id), str(row.task_id), str(row.family),
                         bool(row.is_overlap))
                    )
    rows = []
    for r in raters:
        start, recent = tails.get(r, (0, ()))
        queue = _spread_order(given[r], spread, list(recent), gen)
        for pos, (answer_id, task_id, family, is_overlap) in enumerate(queue, start=start):
            rows.append((r, answer_id, task_id, family, pos, is_overlap))
    return pd.DataFrame(
        rows, columns=["rater_id", "answer_id", "task_id", "family", "queue_pos", "is_overlap"]
    )


def _spread_order(
    entries: list[tuple[str, str, str, bool]],
    spread: int,
    recent: list[str],
    gen: np.random.Generator,
) -> list[tuple[str, str, str, bool]]:
    """A random order with no two entries of one task within ``spread`` positions, if possible.

    Greedy: at each position draw an entry at random (tasks weighted by their remaining
    entries) among tasks not used in the last ``spread`` positions; when the tasks with the most
    remaining entries would otherwise run out of room ((c−1)(spread+1) + #such tasks ≥ places
    left), draw only among them. If every task is cooling down, the one used longest ago goes.
    """
    by_task: dict[str, list[tuple[str, str, str, bool]]] = {}
    for e in entries:
        by_task.setdefault(e[1], []).append(e)
    for lst in by_task.values():
        gen.shuffle(lst)  # type: ignore[arg-type]
    last_seen: dict[str, int] = {}
    offset = len(recent)
    for i, t in enumerate(recent):
        last_seen[t] = i - offset
    out: list[tuple[str, str, str, bool]] = []
    while by_task:
        pos = len(out)
        left = sum(len(v) for v in by_task.values())
        cool = {t for t, p in last_seen.items() if pos - p <= spread}
        avail = [t for t in sorted(by_task) if t not in cool]
        if not avail:
            pick = min(by_task, key=lambda t: (last_seen.get(t, -10**9), t))
        else:
            top = max(len(by_task[t]) for t in avail)
            n_top = sum(1 for t in by_task if len(by_task[t]) == top)
            if top > 1 and (top - 1) * (spread + 1) + n_top >= left:
                avail = [t for t in avail if len(by_task[t]) == top]
            w = np.array([len(by_task[t]) for t in avail], dtype=float)
            pick = avail[int(gen.choice(len(avail), p=w / w.sum()))]
        out.append(by_task[pick].pop())
        last_seen[pick] = pos
        if not by_task[pick]:
            del by_task[pick]
    return out


# -- store-facing ---------------------------------------------------------------------------------


def load_pool(
    store: Store,
    *,
    run_id: str | None = None,
    variant: str | None = "original",
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The pool to design over, from the project database.

    Args:
        store: The project database.
        run_id: Judge run whose latest pointwise score per answer bins the answers; ``None``
            takes the newest run with pointwise scores (none at all: every answer is
            ``unjudged``).
        variant: Only answers of this variant (probe rewrites are not what humans calibrate);
            ``None`` keeps all.

    Returns:
        ``(pool, info)``: one row per answer with ``answer_id``, ``task_id``, ``category``,
        ``family``, ``n_words``, ``judge_score``, ``judge_pass``, ``human_pass`` (mean current
        human pass verdict, ``nan`` when unlabelled); ``info`` holds ``run_id``,
        ``judge_family``, ``rubric_id``, ``rubric_version``, ``n_judged``, ``n_pilot``.
    """
    answers = store.answers(variant=variant)
    if answers.empty:
        raise InputError(
            "there are no answers to design a sample over"
            + (f" (variant {variant!r})" if variant else ""),
            fix="import answers first with `judgelab import answers FILE`.",
        )
    run = store.judge_run_info(run_id)
    pool = answers[["answer_id", "task_id", "category", "family", "model", "n_words"]].copy()
    if run is not None:
        scores = store.judge_scores(run["run_id"])
        pool = pool.merge(
            scores[["answer_id", "value", "passed"]].rename(
                columns={"value": "judge_score", "passed": "judge_pass"}),
            on="answer_id", how="left",
        )
        # A nullable boolean with gaps (answers the run did not score) -> 0/1/nan floats.
        pool["judge_pass"] = [np.nan if pd.isna(v) else float(v) for v in pool["judge_pass"]]
        pool["judge_score"] = pd.to_numeric(pool["judge_score"], errors="coerce").astype(float)
        if pool["judge_pass"].isna().any() and pool["judge_score"].notna().any():
            rubric = store.rubric(run["rubric_id"], run["rubric_version"]) if run["rubric_id"] \
                else None
            if rubric is not None:
                fill = pool["judge_score"].map(
                    lambda v: float(rubric.passes(v)) if pd.notna(v) else np.nan)
                pool["judge_pass"] = pool["judge_pass"].fillna(fill)
    else:
        pool["judge_score"] = np.nan
        pool["judge_pass"] = np.nan
    human = store.human_verdicts()
    pool = pool.merge(human[["answer_id", "human_pass"]], on="answer_id", how="left")
    info = {
        "run_id": None if run is None else run["run_id"],
        "judge_family": None if run is None else run["family"],
        "rubric_id": None if run is None else run["rubric_id"],
        "rubric_version": None if run is None else run["rubric_version"],
        "n_judged": int(pool["judge_score"].notna().sum()),
        "n_pilot": int(pool["human_pass"].notna().sum()),
    }
    return pool, info


def apply_design(
    store: Store,
    design: Design,
    raters: int | Sequence[str],
    *,
    rng: RngLike = 0,
    spread: int = 3,
    rubric: tuple[str, int] | None = None,
) -> pd.DataFrame:
    """Store a design and give its answers to raters as ``score`` assignments.

    One transaction: the design and its items are saved (a no-op when already saved), the
    assignments planned by :func:`plan_assignments` are appended after each rater's existing
    queue, and the design is marked applied. Applying a design twice is refused.

    Args:
        store: The project database.
        design: The design to apply.
        raters: Rater names (each must exist and be active), or a count: that many active
            non-admin raters, those with the shortest queues first.
        rng: Seed or Generator for the deal and the queue shuffles.
        spread: See :func:`plan_assignments`.
        rubric: ``(rubric_id, version)`` the raters score against; ``None`` takes the newest
            stored rubric (none stored: the assignments name no rubric).

    Returns:
        The assignments created, with ``rater`` names.

    Raises:
        InputError: Unknown, revoked or too few raters, or the design was already applied.
    """
    with store.connection():
        if rubric is None:
            # Raters score against the rubric the judge used, else the newest one stored.
            newest = store.rubric()
            rubric = None if newest is None else (newest.rubric_id, newest.version)
        ids = store.design_raters(raters)
        store.save_design(design.design_id, design.params, design.summary(), design.items)
        if store.design_applied(design.design_id):
            raise InputError(
                f"design {design.design_id} was applied already",
                fix="draw a new design (e.g. another --seed) to add more assignments.",
            )
        tails = store.queue_tails(ids, depth=spread)
        exclude = store.assigned_answers(ids, list(design.items["answer_id"]))
        plan = plan_assignments(design, ids, rng=rng, spread=spread, tails=tails, exclude=exclude)
        store.add_design_assignments(design.design_id, plan, rubric=rubric)
        names = store.raters().set_index("rater_id")["name"]
    return plan.assign(rater=plan["rater_id"].map(names))
