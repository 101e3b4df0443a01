"""``judgelab estimate --detect PP``: the pairs each probe needs to detect an effect, and their cost.

The power calculation is :func:`judgelab.calibration.stats.pairs_to_detect` (pure); this module knows
which reading each probe makes, how many readings the card adjusts for together, and prices a
probe at the pairs it needs with :func:`~judgelab.calibration.probes.aestimate_probes` (scaled from the
pairs the dataset has when it has fewer).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from judgelab.calibration import pricing
from judgelab.calibration.datasets import PROJECT, load_pairs, project_pairs
from judgelab.calibration.judges import Judge
from judgelab.calibration.probes._errors import SENSITIVITY_ROWS
from judgelab.calibration.probes._plan import parse_biases
from judgelab.calibration.probes._workflow import aestimate_probes
from judgelab.calibration.stats import (
    THRESHOLDS,
    PlanReading,
    fail_power,
    pairs_to_detect,
    pairs_to_fail,
    per_test_alpha,
)
from judgelab.labeler.errors import InputError
from judgelab.labeler.store import JudgeRole

__all__ = ["DetectRow", "DetectionPlan", "adetection_plan", "card_family_size"]

# The reading each card row makes; the format study is no card row.
_READING: dict[str, PlanReading] = {"position": "position", "verbosity": "lift", "formatting": "lift",
                                    "tone": "lift", "citations": "lift", "truncation": "lift", "byline": "lift"}


def card_family_size(biases: Sequence[str]) -> int:
    """Readings the card (with ``--mitigate``) adjusts for together, for these probes.

    Each lift row's raw and after-swap readings, position's raw reading (after swap-averaging it
    reads a cost, outside the family), the pointwise padding gap; truncation is a sensitivity
    check outside the family.

    >>> card_family_size(["position", "verbosity", "formatting"])
    6
    """
    size = 0
    for bias in biases:
        if bias in SENSITIVITY_ROWS or bias not in _READING:
            continue
        size += 1 if bias == "position" else 2
        size += bias == "verbosity"
    return max(size, 1)


@dataclass(frozen=True)
class DetectRow:
    """One probe's pairs and cost to detect the effect.

    Attributes:
        bias: The probe.
        reading: ``position`` or ``lift``.
        pairs: Pairs it needs.
        available: Pairs the dataset has.
        calls: Judge calls at ``pairs`` (scaled when the dataset has fewer).
        cost_usd: At list price, the padding rewrites included (``None``: unpriced model).
        cost_usd_batch: As a Message Batch (the rewrites through the batch too).
        scaled_from: The pairs the price was counted on, when fewer than ``pairs``.
        fail_power: At ``pairs``, the chance the card marks this true effect FAIL (the test
            significant AND the estimate at the FAIL threshold or past it).
        pairs_to_fail: Pairs at which FAIL itself has the plan's power for the plan's
            ``fail_effect``.
        asked_pairs: The pairs the probe reads at the ``--n`` asked for (the dataset's, when it
            has fewer); ``None`` when no ``n`` was given.
        fail_power_asked: At ``asked_pairs``, the chance the card marks this true effect FAIL.
    """

    bias: str
    reading: PlanReading
    pairs: int
    available: int
    calls: int
    cost_usd: float | None
    cost_usd_batch: float | None
    scaled_from: int | None
    fail_power: float
    pairs_to_fail: int
    asked_pairs: int | None = None
    fail_power_asked: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return dict(self.__dict__)


@dataclass(frozen=True)
class DetectionPlan:
    """What ``--detect`` prints.

    Attributes:
        effect: The effect to detect, in percentage points.
        power: The power.
        alpha: The card's error rate.
        family_size: Readings adjusted together.
        alpha_per_reading: The level each reading must beat (``alpha / family_size``).
        rows: One per probe.
        method: The calculation, in words.
        fail_threshold: The card's FAIL threshold on the estimate, in percentage points.
        fail_effect: The true effect the rows' ``pairs_to_fail`` is for: ``effect`` when it is
            above the threshold, else one and a half times the threshold (at or below it FAIL
            never has more than about even odds).
    """

    effect: float
    power: float
    alpha: float
    family_size: int
    alpha_per_reading: float
    rows: tuple[DetectRow, ...]
    method: str
    fail_threshold: float
    fail_effect: float

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {**{k: v for k, v in self.__dict__.items() if k != "rows"}, "rows": [r.to_dict() for r in self.rows]}


def _available(store: JudgeRole | None, dataset: str) -> int:
    if dataset == PROJECT:
        if store is None:
            raise InputError("--dataset project needs the project database", fix="pass --db FILE.")
        return len(project_pairs(store))
    return len(load_pairs(dataset))


async def adetection_plan(
    judge: Judge,
    store: JudgeRole | None,
    *,
    effect: float,
    dataset: str,
    biases: str | Sequence[str],
    seed: int = 0,
    count_tokens: bool = False,
    output_tokens: int = pricing.OUTPUT_TOKENS,
    power: float = 0.8,
    alpha: float = 0.05,
    n: int | None = None,
) -> DetectionPlan:
    """The pairs each card probe needs to detect ``effect`` pp with ``power``, and what they cost.

    With ``n`` (the ``--n`` the user asked for) each row also gives the chance of FAIL at the
    pairs that ``n`` reads, beside the chance at the pairs needed.

    Raises:
        InputError: On a bad effect, biases or dataset.
    """
    if not 0 < effect < 100:
        raise InputError(f"--detect must be between 0 and 100 percentage points; got {effect:g}",
                         fix="pass --detect 10, say.")
    chosen = [b for b in parse_biases(biases) if b in _READING]
    if not chosen:
        raise InputError("--detect needs a probe the card reads (position, verbosity, formatting, tone, "
                         "citations, truncation, byline)", fix="add one to --biases.")
    family = card_family_size(chosen)
    available = _available(store, dataset)
    # Position and the decoration lifts share one FAIL threshold (10 pp by default).
    threshold = THRESHOLDS["decoration"].fail
    fail_effect = effect if effect > threshold else 1.5 * threshold
    asked = None if n is None else max(min(n, available), 1)
    rows = []
    for bias in chosen:
        alone = bias in SENSITIVITY_ROWS
        test = {"reading": _READING[bias], "family_size": 1 if alone else family, "alpha": alpha,
                "adjustment": "none" if alone else "holm"}
        need = pairs_to_detect(effect, power=power, **test)  # type: ignore[arg-type]
        for_fail = pairs_to_fail(fail_effect, threshold=threshold, power=power, **test)  # type: ignore[arg-type]
        assert for_fail is not None  # fail_effect is above the threshold by construction
        counted = min(need, available)
        est = (await aestimate_probes(judge, store, dataset=dataset, n=counted, biases=[bias], seed=seed,
                                      count_tokens=count_tokens, output_tokens=output_tokens)).cost
        scale = need / counted
        # The padding rewrites are part of what the probe costs (list price here; a batch halves them).
        pad = est.padding_cost_usd or 0.0
        rows.append(DetectRow(
            bias, _READING[bias], need, available, round(est.calls * scale),
            None if est.cost_usd is None else (est.cost_usd + pad) * scale,
            None if est.cost_usd_batch is None else (est.cost_usd_batch + pad / 2) * scale,
            None if counted == need else counted,
            fail_power(effect, need, threshold=threshold, **test),  # type: ignore[arg-type]
            for_fail,
            asked,
            None if asked is None else fail_power(effect, asked, threshold=threshold, **test),  # type: ignore[arg-type]
        ))
    method = (f"two-sided test at alpha/m = {alpha:g}/{family} (Holm's first step; truncation, a sensitivity "
              f"check, at {alpha:g}), {power:.0%} power, binomial variance at 50%, the two orders of a pair "
              "counted as independent replies; cost counted at the pairs needed, or scaled from the pairs the "
              "dataset has")
    return DetectionPlan(effect, power, alpha, family, per_test_alpha(alpha, family), tuple(rows), method,
                         threshold, fail_effect)
