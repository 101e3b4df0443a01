"""``judgelab estimate --detect PP``: the pairs each probe needs to detect an effect, and their cost.

The power calculation is :func:`calibration.stats.pairs_to_detect` (pure); this module knows
which reading each probe makes, how many readings the card adjusts for together, and prices a
probe at the pairs it needs with :func:`~calibration.probes.aestimate_probes` (scaled from the
pairs the dataset has when it has fewer).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from calibration import pricing
from calibration.datasets import PROJECT, load_pairs, project_pairs
from calibration.judges import Judge
from calibration.probes._errors import SENSITIVITY_ROWS
from calibration.probes._plan import parse_biases
from calibration.probes._workflow import aestimate_probes
from calibration.stats import PlanReading, pairs_to_detect, per_test_alpha
from labeler.errors import InputError
from labeler.store import Store

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
    """

    bias: str
    reading: PlanReading
    pairs: int
    available: int
    calls: int
    cost_usd: float | None
    cost_usd_batch: float | None
    scaled_from: int | None

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
    """

    effect: float
    power: float
    alpha: float
    family_size: int
    alpha_per_reading: float
    rows: tuple[DetectRow, ...]
    method: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {**{k: v for k, v in self.__dict__.items() if k != "rows"}, "rows": [r.to_dict() for r in self.rows]}


def _available(store: Store | None, dataset: str) -> int:
    if dataset == PROJECT:
        if store is None:
            raise InputError("--dataset project needs the project database", fix="pass --db FILE.")
        return len(project_pairs(store))
    return len(load_pairs(dataset))


async def adetection_plan(
    judge: Judge,
    store: Store | None,
    *,
    effect: float,
    dataset: str,
    biases: str | Sequence[str],
    seed: int = 0,
    count_tokens: bool = False,
    output_tokens: int = pricing.OUTPUT_TOKENS,
    power: float = 0.8,
    alpha: float = 0.05,
) -> DetectionPlan:
    """The pairs each card probe needs to detect ``effect`` pp with ``power``, and what they cost.

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
    rows = []
    for bias in chosen:
        alone = bias in SENSITIVITY_ROWS
        need = pairs_to_detect(effect, reading=_READING[bias], family_size=1 if alone else family,
                               alpha=alpha, power=power, adjustment="none" if alone else "holm")
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
        ))
    method = (f"two-sided test at alpha/m = {alpha:g}/{family} (Holm's first step; truncation, a sensitivity "
              f"check, at {alpha:g}), {power:.0%} power, binomial variance at 50%, the two orders of a pair "
              "counted as independent replies; cost counted at the pairs needed, or scaled from the pairs the "
              "dataset has")
    return DetectionPlan(effect, power, alpha, family, per_test_alpha(alpha, family), tuple(rows), method)
