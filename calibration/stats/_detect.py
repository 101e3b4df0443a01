"""What a card could have seen: the smallest detectable effect, and the pairs a target effect needs.

A WARN on a report card can mean "a moderate bias" or "too few pairs to tell". These functions
say which, in the reading's own units, with the usual normal-approximation power calculation:
an effect ``d`` is detected with power ``1 - beta`` by a two-sided test at level ``alpha'`` when

    d >= (z[1 - alpha'/2] + z[1 - beta]) * se,

where ``alpha'`` is the per-reading level after the card's multiplicity adjustment. Holm's
procedure tests its first (smallest-p) reading at ``alpha / m``; that is the level a single
bias must beat when nothing else on the card is found, so ``alpha' = alpha / m`` (Bonferroni,
the conservative end of Holm and of Benjamini-Hochberg).

The standard error of a reading is taken from its own interval (half its width over the normal
quantile of its level): it is what the data at this n actually resolved. Planning ahead (no data
yet) uses the binomial variance at 50%, the widest a win rate can have, with the replies of a
pair counted as independent (design effect 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from scipy import stats

from judgelab.calibration.stats._result import Estimate

__all__ = [
    "Detectable", "PlanReading", "detectable_effect", "fail_power", "pairs_to_detect", "pairs_to_fail",
    "per_test_alpha",
]

PlanReading = Literal["position", "lift"]
"""How a probe's reading is made: ``position`` (one share over both orders of each pair) or
``lift`` (a decorated arm's win rate minus the placebo arm's, both orders of each pair in each)."""


@dataclass(frozen=True)
class Detectable:
    """The smallest effect a reading could detect.

    Attributes:
        effect: The smallest true effect detected with ``power`` (reading's units); ``nan`` when
            the reading has no interval.
        se: The reading's standard error.
        alpha: The per-reading two-sided level after the adjustment.
        power: The power.
        family_size: Readings the card adjusts for together.
        units: The reading's units.
        n: The reading's n.
    """

    effect: float
    se: float
    alpha: float
    power: float
    family_size: int
    units: str
    n: int

    def to_dict(self) -> dict[str, float | int | str | None]:
        """A JSON-ready dict (``nan`` as ``None``)."""
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in self.__dict__.items()}


def per_test_alpha(alpha: float, family_size: int, adjustment: str = "holm") -> float:
    """The level one reading must beat: ``alpha / m`` under an adjustment, ``alpha`` under none.

    >>> per_test_alpha(0.05, 10), per_test_alpha(0.05, 10, "none")
    (0.005, 0.05)
    """
    if not 0 < alpha < 1:
        raise ValueError(f"per_test_alpha: alpha must be in (0, 1); got {alpha!r}")
    if family_size < 1:
        raise ValueError(f"per_test_alpha: family_size must be at least 1; got {family_size!r}")
    return alpha if adjustment == "none" else alpha / family_size


def _z_sum(alpha: float, power: float) -> float:
    if not 0 < power < 1:
        raise ValueError(f"power must be in (0, 1); got {power!r}")
    return float(stats.norm.isf(alpha / 2) + stats.norm.ppf(power))


def detectable_effect(
    estimate: Estimate, *, family_size: int = 1, alpha: float = 0.05, power: float = 0.8,
    adjustment: str = "holm",
) -> Detectable:
    """The smallest effect ``estimate``'s reading could detect at its n.

    Args:
        estimate: A reading with its interval (the interval gives the standard error).
        family_size: Readings tested together on the card.
        alpha: The card's error rate.
        power: The power wanted (80% by default).
        adjustment: The card's adjustment (``holm``, ``bh`` or ``none``).

    Returns:
        A :class:`Detectable` in the estimate's units.

    Examples:
        A reading of 20 pairs whose 95% interval is ±19.6 pp (se 10 pp), alone on its card:
        (1.96 + 0.84) x 10 = 28 pp.

        >>> d = detectable_effect(Estimate(5.0, -14.6, 24.6, 20, "", "percentage points"))
        >>> round(d.effect, 1), round(d.se, 2)
        (28.0, 10.0)
        >>> round(detectable_effect(Estimate(5.0, -14.6, 24.6, 20, "", "pp"), family_size=12).effect, 1)
        37.1
    """
    a = per_test_alpha(alpha, family_size, adjustment)
    lo, hi = estimate.ci_low, estimate.ci_high
    if any(math.isnan(x) for x in (lo, hi)) or hi <= lo:
        se = math.nan
    else:
        se = (hi - lo) / (2 * float(stats.norm.isf((1 - estimate.level) / 2)))
    effect = _z_sum(a, power) * se if not math.isnan(se) else math.nan
    return Detectable(effect, se, a, power, family_size, estimate.units, estimate.n)


def pairs_to_detect(
    effect: float, *, reading: PlanReading, family_size: int = 1, alpha: float = 0.05, power: float = 0.8,
    adjustment: str = "holm",
) -> int:
    """Pairs a probe needs to detect ``effect`` percentage points with ``power``.

    Each pair is judged in both orders. ``position`` reads one win share over a pair's two
    replies (se = 50 / sqrt(2n) pp); ``lift`` the difference of two such shares, the decorated
    arm's and the placebo's (se = 50 / sqrt(n) pp). Binomial variance at 50%, replies independent.

    Args:
        effect: The effect to detect, in percentage points (> 0).
        reading: ``position`` or ``lift``.
        family_size: Readings the card adjusts for together.
        alpha: The card's error rate.
        power: The power wanted.
        adjustment: The card's adjustment.

    Returns:
        The smallest whole number of pairs.

    Examples:
        >>> pairs_to_detect(10, reading="position"), pairs_to_detect(10, reading="lift")
        (99, 197)
        >>> pairs_to_detect(10, reading="lift", family_size=12)
        344
    """
    if not effect > 0:
        raise ValueError(f"pairs_to_detect: effect must be positive; got {effect!r}")
    z = _z_sum(per_test_alpha(alpha, family_size, adjustment), power)
    replies_share = (z * 50.0 / effect) ** 2  # replies whose share has se = effect / z
    pairs = replies_share / 2 if reading == "position" else replies_share
    return max(1, math.ceil(pairs - 1e-9))


def _plan_se(pairs: float, reading: PlanReading) -> float:
    """A planned reading's standard error in pp: binomial at 50%, both orders of each pair."""
    return 50.0 / math.sqrt(2 * pairs) if reading == "position" else 50.0 / math.sqrt(pairs)


def fail_power(
    effect: float, pairs: int, *, reading: PlanReading, threshold: float, family_size: int = 1,
    alpha: float = 0.05, adjustment: str = "holm",
) -> float:
    """The chance the card marks FAIL for a true ``effect`` pp read on ``pairs`` pairs.

    :func:`pairs_to_detect`'s power is the chance the adjusted test is significant. The card's
    FAIL needs more: the estimate itself at ``threshold`` or beyond, with the interval excluding
    0. With the estimate normal around ``effect`` (se from :func:`pairs_to_detect`'s model), FAIL
    happens when the estimate passes ``max(threshold, z * se)`` on either side; a true effect at
    the threshold is marked FAIL about half the time however many pairs are read.

    Examples:
        At the 99 pairs that give a 10 pp position effect 80% power alone, FAIL (10 pp) has 50%:

        >>> round(fail_power(10, 99, reading="position", threshold=10), 3)
        0.5
        >>> round(fail_power(15, 99, reading="position", threshold=10), 3)
        0.92
    """
    se = _plan_se(pairs, reading)
    bar = max(threshold, float(stats.norm.isf(per_test_alpha(alpha, family_size, adjustment) / 2)) * se)
    return float(stats.norm.sf((bar - effect) / se) + stats.norm.cdf((-bar - effect) / se))


def pairs_to_fail(
    effect: float, *, reading: PlanReading, threshold: float, family_size: int = 1, alpha: float = 0.05,
    power: float = 0.8, adjustment: str = "holm",
) -> int | None:
    """Pairs at which the card's FAIL itself has ``power`` for a true ``effect`` pp.

    Both conditions of a FAIL must hold with that power: the test significant
    (``se <= effect / (z_alpha + z_beta)``) and the estimate past the threshold
    (``se <= (effect - threshold) / z_beta``); the smaller standard error decides. The se is
    the plan's, binomial at 50% (the widest), so the power reached is at least ``power``: a
    seeded Monte Carlo of 4,000 cards at the 44 pairs for a true 15 pp position effect marked
    85.6% of them FAIL (``tests/probes/test_detectable.py``).

    Returns:
        The smallest whole number of pairs, or ``None`` when ``effect <= threshold``: FAIL
        then never reaches ``power`` above one half, at any n.

    Examples:
        >>> pairs_to_fail(15, reading="position", threshold=10), pairs_to_fail(10, reading="position", threshold=10)
        (44, None)
        >>> pairs_to_fail(15, reading="lift", threshold=10, family_size=6)
        135
    """
    if not effect > threshold:
        return None
    z_beta = float(stats.norm.ppf(power))
    se = min(effect / _z_sum(per_test_alpha(alpha, family_size, adjustment), power), (effect - threshold) / z_beta)
    replies = (50.0 / se) ** 2
    pairs = max(1, math.ceil((replies / 2 if reading == "position" else replies) - 1e-9))
    while fail_power(effect, pairs, reading=reading, threshold=threshold, family_size=family_size,
                     alpha=alpha, adjustment=adjustment) < power:
        pairs += 1
    return pairs
