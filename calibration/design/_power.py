"""Precision, power and cost of a hand-label sample: what the labels buy and what they cost.

Pure functions; see :mod:`judgelab.calibration.design` for the plan they serve.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from scipy import stats as sps

from judgelab.labeler.errors import InputError
from judgelab.labeler.timing import DEFAULT_MINUTES_PER_LABEL

__all__ = [
    "Cost",
    "Precision",
    "Target",
    "budget_labels",
    "cost_of",
    "kappa_se",
    "paired_sample_size",
]


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
        quality_ratings: Of ``ratings``, the gold items and attention checks mixed into the
            raters' queues (:func:`judgelab.calibration.design._quality.with_quality`); 0 without them.
    """

    labels: int
    ratings: int
    minutes_per_label: float
    minutes_source: str
    person_hours: float
    raters: int
    hours_per_rater_per_day: float
    calendar_days: int
    quality_ratings: int = 0


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
    minutes_per_label: float = DEFAULT_MINUTES_PER_LABEL,
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
